"""The student's clock: time limits count the student's own code, never the grader's work.

Every place where the grader calls into the student's code (grader/exercises/multi_head_attention/operations.py, the
import of a submission) runs inside ``running(function)``; everything else the grader does
beside it (reading what the code keeps, copying weights and answers, comparing, drawing) runs
outside. What entering and leaving do is the host's:

- at a desk, pytest's timer for the test runs the student's time limit only inside, and a
  separate allowance for the grader's own work outside (grader/timeouts.py);
- in the sandbox's child, the grader is told when the student's code starts and stops
  (grader/sandbox/worker.py), and the per-call limit and the submission's budgets count only
  those stretches (grader/sandbox/isolated.py).

Only the outermost entry counts: the student's forward calling the student's head is one stretch.
"""

from __future__ import annotations

from typing import Protocol


class Host(Protocol):
    def entered(self, function: str) -> None:
        """The student's ``function`` starts running (its clock starts)."""

    def left(self) -> None:
        """Back in the grader's own work (the student's clock stops)."""


_host: Host | None = None
_depth = 0
_function = ""


def use(host: Host | None) -> Host | None:
    """Make ``host`` the one told from now on; the one it replaces is returned."""
    global _host
    previous, _host = _host, host
    return previous


def running_now() -> str:
    """The student's function running now (the outermost), "" while the grader works."""
    return _function if _depth else ""


class running:
    """The student's ``function`` runs inside (its name as the contract gives it: "AttentionHead.forward").
    A class rather than a generator: entered around every call of the student's code, it must cost little."""

    __slots__ = ("function",)

    def __init__(self, function: str) -> None:
        self.function = function

    def __enter__(self) -> None:
        global _depth, _function
        _depth += 1
        if _depth == 1:
            _function = self.function
            if _host is not None:
                try:
                    _host.entered(self.function)
                except BaseException:
                    _depth -= 1
                    raise

    def __exit__(self, *exc) -> None:
        global _depth
        _depth -= 1
        if _depth == 0 and _host is not None:
            _host.left()
