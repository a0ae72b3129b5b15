"""The tiers themselves (tests/tiers.py): the fast tier's guard fails a session naming each unmarked
test over its limit, and leaves the slow tier's tests, and sessions without the option, alone.

The inner sessions do not wait for a clock: their conftest sets each test's reported duration
from a ``takes(seconds)`` marker, so what the guard reads is what the test says.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import tiers

TESTS = Path(__file__).resolve().parent

# Each phase of a test reports the seconds its ``takes`` marker gives, a third of them each.
CONFTEST = """
import os

import pytest
import tiers

# The machine's load, as the test says (a quiet machine unless TIERS_TEST_LOAD gives another).
tiers.load_factor = lambda: float(os.environ.get("TIERS_TEST_LOAD", "1"))
# And its speed (the reference's unless TIERS_TEST_SPEED gives another).
tiers.speed_factor = lambda: float(os.environ.get("TIERS_TEST_SPEED", "1"))

def pytest_configure(config):
    config.addinivalue_line("markers", "takes(seconds): the test's reported duration")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    marker = item.get_closest_marker("takes")
    if marker:
        outcome.get_result().duration = marker.args[0] / 3
"""

TESTS_OF_ALL_KINDS = """
import pytest

@pytest.mark.takes(12)
def test_unmarked_and_slow():
    pass

@pytest.mark.takes(3)
def test_unmarked_and_quick():
    pass

@pytest.mark.takes(30)
@pytest.mark.slow
def test_marked_slow():
    pass

@pytest.mark.takes(30)
@pytest.mark.platform
def test_a_platform():
    pass

@pytest.mark.takes(30)
@pytest.mark.browser
def test_a_browser():
    pass

@pytest.fixture(scope="module")
def expensive():
    return 1

@pytest.mark.takes(10.5)
def test_unmarked_with_a_costly_fixture(expensive):
    pass
"""


@pytest.fixture
def suite(pytester, monkeypatch):
    # The inner sessions run in fresh interpreters that find tests/tiers.py as this suite does.
    monkeypatch.setenv("PYTHONPATH", str(TESTS), prepend=":")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_kinds=TESTS_OF_ALL_KINDS)
    return pytester


def run(pytester, *arguments):
    return pytester.runpytest_subprocess("-p", "tiers", "-p", "no:cacheprovider", *arguments)


def named_over(result, limit) -> list[tuple[str, str]]:
    """The (test, seconds) lines of the guard's section, in its order."""
    section = result.stdout.str().split(f"unmarked tests over {limit} s", 1)[1]
    return [(nodeid, seconds) for seconds, nodeid in re.findall(r"^\s*([\d.]+) s  (\S+)", section, re.MULTILINE)]


def test_an_unmarked_test_over_the_limit_fails_the_session_by_name(suite):
    result = run(suite, "--unmarked-limit", "10")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=6)  # every test passed: the tier is what failed
    assert named_over(result, 10) == [
        ("test_kinds.py::test_unmarked_and_slow", "12.0"), ("test_kinds.py::test_unmarked_with_a_costly_fixture", "10.5"),
    ]


def test_under_xdist_the_controller_judges_every_workers_tests(suite):
    result = run(suite, "--unmarked-limit", "10", "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.stdout.str().count("unmarked tests over 10 s") == 1
    assert [nodeid for nodeid, _ in named_over(result, 10)] == [
        "test_kinds.py::test_unmarked_and_slow", "test_kinds.py::test_unmarked_with_a_costly_fixture",
    ]


def test_on_a_loaded_machine_a_test_is_judged_by_its_time_on_a_quiet_one(suite, monkeypatch):
    monkeypatch.setenv("TIERS_TEST_LOAD", "1.25")  # 12 s at 1.25 times the load: 9.6 s when quiet
    result = run(suite, "--unmarked-limit", "10")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    monkeypatch.setenv("TIERS_TEST_LOAD", "1.1")  # 12 s: 10.9 s when quiet
    result = run(suite, "--unmarked-limit", "10")
    assert named_over(result, 10) == [("test_kinds.py::test_unmarked_and_slow", "12.0")]
    assert "(at 1.1 times a quiet machine's load: 10.9 s)" in result.stdout.str()


def test_on_a_slower_machine_a_test_is_judged_by_its_time_on_the_reference(suite, monkeypatch):
    monkeypatch.setenv("TIERS_TEST_SPEED", "1.25")  # 12 s on a machine 1.25 times slower: 9.6 s there
    assert run(suite, "--unmarked-limit", "10").ret == pytest.ExitCode.OK
    monkeypatch.setenv("TIERS_TEST_SPEED", "1.1")
    monkeypatch.setenv("TIERS_TEST_LOAD", "1.2")  # 12 s: 9.1 s on the reference, 10.5 s: 8.0 s
    assert run(suite, "--unmarked-limit", "9").ret == pytest.ExitCode.TESTS_FAILED
    result = run(suite, "--unmarked-limit", "9")
    assert named_over(result, 9) == [("test_kinds.py::test_unmarked_and_slow", "12.0")]
    assert "(on a machine 1.1 times slower than the reference, at 1.2 times a quiet machine's load: 9.1 s)" in result.stdout.str()


def test_within_the_limit_or_without_the_option_the_session_passes(suite):
    assert run(suite, "--unmarked-limit", "15").ret == pytest.ExitCode.OK
    without = run(suite)
    assert without.ret == pytest.ExitCode.OK and "unmarked tests over" not in without.stdout.str()


def test_the_fast_tier_expression_leaves_out_every_slow_tier_test(suite):
    result = run(suite, "-m", tiers.FAST_TIER_EXPRESSION, "--unmarked-limit", "15")
    result.assert_outcomes(passed=3, deselected=3)


def test_make_test_fast_runs_the_fast_tier_under_its_limit_and_make_test_runs_everything():
    def pytest_line(target: str) -> str:  # make's dry run: what the target would run
        finished = subprocess.run(["make", "-n", "-C", str(TESTS.parent), target], capture_output=True, text=True, timeout=60)
        assert finished.returncode == 0, finished.stderr
        return next(line for line in finished.stdout.splitlines() if "-m pytest tests" in line)

    fast = pytest_line("test-fast")
    assert f'-m "{tiers.FAST_TIER_EXPRESSION}"' in fast and "--unmarked-limit 10" in fast and "--durations" in fast, fast
    everything = pytest_line("test")
    assert " -m \"" not in everything and "--unmarked-limit" not in everything and "--durations" in everything, everything


def test_a_test_of_a_slow_tier_fixture_carries_its_marker_even_through_another_fixture(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(TESTS), prepend=":")
    pytester.makepyfile(test_fixtures="""
import pytest
import tiers

@pytest.fixture(scope="module")
@tiers.slow_tier("platform")
def a_platforms_runs():
    return {}

@pytest.fixture
def one_run(a_platforms_runs):
    return a_platforms_runs

def test_direct(a_platforms_runs):
    pass

def test_through_another(one_run):
    pass

def test_without():
    pass
""")
    fast = pytester.runpytest_subprocess("-p", "tiers", "-p", "no:cacheprovider", "-m", tiers.FAST_TIER_EXPRESSION, "-v")
    fast.assert_outcomes(passed=1, deselected=2)
    assert "test_without PASSED" in fast.stdout.str()
    pytester.runpytest_subprocess("-p", "tiers", "-p", "no:cacheprovider", "-m", "platform").assert_outcomes(passed=2, deselected=1)
