"""The test suite's tiers: the markers of the slow tier, and a guard on the fast one.

The fast tier (``make test-fast``) is every test without a marker of the slow tier; ``make test``
runs both. A test that is slow (a fresh environment, a platform's run, a browser, a sweep of the
whole catalogue) carries one of ``SLOW_TIER``'s markers. With ``--unmarked-limit SECONDS`` (the
fast tier's target passes it) each unmarked test's time (its set-up, call and teardown: a module's
fixture costs the test that first asks for it) is recorded, and the session fails naming every
test over the limit: a slow test that lost its marker, or a fast one that became slow, is found
the day it happens, not when the edit loop has become a coffee break. A test's time is judged as
on a quiet machine (``load_factor``) as fast as the one the limit was set on (``speed_factor``):
a loaded or a slower one makes every test slower, and must not fail them.

Loaded by tests/conftest.py (``pytest_plugins``); under pytest-xdist the controller sees every
worker's reports (their durations and keywords, markers included), so it alone judges.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

# marker -> the line pytest --markers shows. One place: tests/conftest.py and the Makefile's
# fast tier (`-m "not slow and not platform and not browser"`) follow it.
SLOW_TIER = {
    "slow": "a sweep or a fresh environment: seconds to minutes (the whole catalogue, a kernel, torch installed)",
    "platform": "a platform's hand-out run as its platform runs it (Gradescope, PrairieLearn, Classroom 50, nbgrader, Colab)",
    "browser": "a page opened in headless Chromium (tests/browser.py)",
}
FAST_TIER_EXPRESSION = " and ".join(f"not {marker}" for marker in SLOW_TIER)


def slow_tier(marker: str):
    """For a fixture that builds something of the slow tier (the catalogue graded, a platform's
    runs): every test that asks for it, directly or through another fixture, carries ``marker``.
    Put it under ``@pytest.fixture``."""
    assert marker in SLOW_TIER, marker

    def mark(function):
        function.slow_tier_marker = marker
        return function

    return mark


def pytest_addoption(parser):
    parser.addoption(
        "--unmarked-limit", type=float, default=None, metavar="SECONDS",
        help="fail the session naming every test without a slow-tier marker (" + ", ".join(SLOW_TIER)
        + ") whose set-up, call and teardown took longer than SECONDS",
    )


def pytest_configure(config):
    for marker, line in SLOW_TIER.items():
        config.addinivalue_line("markers", f"{marker}: {line}")
    limit = config.getoption("unmarked_limit")
    if limit is not None and not hasattr(config, "workerinput"):  # xdist's workers leave it to the controller
        config.pluginmanager.register(UnmarkedLimit(limit), "unmarked-limit")


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        for definitions in (info.name2fixturedefs.values() if info else ()):
            for definition in definitions:
                marker = getattr(definition.func, "slow_tier_marker", None)
                if marker:
                    item.add_marker(marker)


def load_factor() -> float:
    """How many times slower than on a quiet machine a test runs now: the last minute's load
    average per core, at least 1 (the machine's other work, and this run's other workers)."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


# What the limit's seconds assume: a machine whose fresh interpreter imports torch in 1.5 s
# (issue 38's, on which the fast tier's targets were set).
REFERENCE_TORCH_IMPORT_SECONDS = 1.5


def speed_factor() -> float:
    """How many times slower than the reference this machine is, at least 1: the CPU seconds a
    fresh interpreter takes to import torch (a CPU time, so the machine's load leaves it alone),
    over REFERENCE_TORCH_IMPORT_SECONDS. Most of a test's time is such start-ups and torch's own
    work: on a machine that imports torch in 3 s, the same tests took about twice as long."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "import torch"], check=True, stdin=subprocess.DEVNULL, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return max(1.0, seconds / REFERENCE_TORCH_IMPORT_SECONDS)


class UnmarkedLimit:
    """Adds up each unmarked test's phases; at the end, names those over the limit.

    A test's time is judged as on a quiet machine of the reference's speed: divided by the load
    factor at its end and by the machine's speed factor, so that a loaded machine (other work,
    two runs at once) or a slower one fails no test that the quiet reference passes, while a
    test that is slow for itself still fails."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.speed = speed_factor()
        self.seconds: dict[str, float] = {}
        self.load: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if any(marker in report.keywords for marker in SLOW_TIER):
            return
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration
        self.load[report.nodeid] = load_factor()

    def on_the_reference(self, nodeid: str) -> float:
        """The test's seconds as on the quiet reference machine."""
        return self.seconds[nodeid] / (self.load[nodeid] * self.speed)

    def over(self) -> list[str]:
        """Each test over the limit, slowest first."""
        return sorted((nodeid for nodeid in self.seconds if self.on_the_reference(nodeid) > self.limit), key=self.on_the_reference, reverse=True)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.over() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        over = self.over()
        if not over:
            return
        terminalreporter.section(f"unmarked tests over {self.limit:g} s", sep="!", red=True)
        for nodeid in over:
            said = [f"on a machine {self.speed:.1f} times slower than the reference"] if self.speed > 1 else []
            said += [f"at {self.load[nodeid]:.1f} times a quiet machine's load"] if self.load[nodeid] > 1 else []
            judged = f" ({', '.join(said)}: {self.on_the_reference(nodeid):.1f} s)" if said else ""
            terminalreporter.line(f"{self.seconds[nodeid]:7.1f} s  {nodeid}{judged}")
        terminalreporter.line(
            f"Make each faster, or mark it with one of {', '.join(SLOW_TIER)} (tests/tiers.py): "
            "the fast tier is for the edit loop."
        )
