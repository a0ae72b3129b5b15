"""Figures a grading run observes that follow from the checks' points (the honest twins' scores,
the stubs' counts of tests), kept in one file, tests/golden.json, instead of in each test.

A test compares what it observes with the stored figure (``golden`` fixture). After a change to
the checks (a new check, points moved), rerun the tests that read a figure with
``--update-golden``: each stores what it observes instead of comparing, and ``git diff
tests/golden.json`` shows every figure the change moved, for review. Totals that can be computed
from the checks without grading (the groups', the visible and hidden parts) are computed
(grader/scoring.py's grader_checks), not stored.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parent / "golden.json"


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", default=False,
        help="store the figures the tests observe in tests/golden.json instead of comparing them",
    )


def stored(key: str):
    figures = json.loads(PATH.read_text(encoding="utf-8"))
    if key not in figures:
        raise KeyError(f"tests/golden.json holds no {key!r}: run the test that observes it with --update-golden")
    return figures[key]


def _store(key: str, observed) -> None:
    # Two xdist workers may store at once: one writer at a time, each rereading the file.
    with open(PATH, "a", encoding="utf-8") as lock:  # rewritten in place below: the same file, the same lock
        fcntl.flock(lock, fcntl.LOCK_EX)
        figures = json.loads(PATH.read_text(encoding="utf-8") or "{}")
        figures[key] = observed
        PATH.write_text(json.dumps(dict(sorted(figures.items())), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


class Golden:
    def __init__(self, update: bool) -> None:
        self.update = update

    def check(self, key: str, observed, context="") -> None:
        """``observed`` is the stored figure ``key`` (or becomes it, under --update-golden)."""
        if self.update:
            _store(key, observed)
            return
        expected = stored(key)
        assert observed == expected, (
            f"{key}: observed {observed!r}, tests/golden.json holds {expected!r}. If a change to the checks "
            f"moved it, rerun with --update-golden and review `git diff tests/golden.json`. {context}"
        )


@pytest.fixture(scope="session")
def golden(request) -> Golden:
    return Golden(request.config.getoption("update_golden"))
