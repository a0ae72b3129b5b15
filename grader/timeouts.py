"""Per-test time limits: pytest-timeout's settings, with a message written for students.

pytest-timeout decides *how long* a test may run (its ``timeout`` option, ini value or
``@pytest.mark.timeout`` marker). We take over its ``signal`` method for two reasons: to replace
its dump of every thread's stack with one sentence a student can act on, and to count the
limit in CPU time, so that a grade does not depend on the machine's load.

pytest-timeout's signal method arms ``ITIMER_REAL``, wall-clock time, which neighbours stretch:
on a loaded machine a test that computes for a second takes many on the clock. Here the limit
is the process's CPU time (``ITIMER_PROF``: "decrements both when the process executes and when
the system is executing on behalf of the process", setitimer(2)), which load does not change:
at the desk the student's code runs in this very process, so an endless computation is stopped
after the same work whatever the load. Code that waits without computing (``time.sleep`` in a
loop, ``input()``) uses no CPU: a wall-clock limit of ``WALL_CLOCK_MARGIN`` times the CPU limit
stops it, unless the code computed all along (``STILL_COMPUTING``), which only load made slow.

Only the student's code runs on these clocks (``DeskClock``): the grader's own work in the test
(its references, comparisons, reading what the code keeps: outside grader/student_clock.py's
``running``) has an allowance of its own, so a file that keeps a logger or a figure, or a busy
machine, never turns the grader's work into the student's time-out. With ``--isolate`` the
student's code runs in the worker, whose own limits stop it (grader/sandbox/isolated.py); this
timer then only guards the grader's own work, in CPU time.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from grader import student_clock

DEFAULT_TIMEOUT_SECONDS = 10.0  # CPU seconds per test
WALL_CLOCK_MARGIN = 3  # the wall-clock limit, in multiples of the CPU limit
# Past the wall-clock limit, code that used at least this share of it in CPU time was computing,
# only slowly (a loaded machine gives a process its share of the cores): it is not stopped.
# Waiting code (time.sleep, input(), a lock) uses next to none.
STILL_COMPUTING = 0.02


class CallTimedOut(pytest.fail.Exception):
    """A test ran past its time limit (raised from the alarm handler)."""


def apply_default_timeout(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test a limit unless the user chose one (--timeout or the ini value)."""
    if config.getoption("timeout", None) is not None or config.getini("timeout"):
        return
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DEFAULT_TIMEOUT_SECONDS))


GRADER_SECONDS = 60.0  # CPU seconds of the grader's own work a test may take: reaching it is the grader's fault


class GraderTimedOut(pytest.fail.Exception):
    """The grader's own work in a test ran past its allowance (raised from the alarm handler): not the student's."""


class DeskClock:
    """pytest's timer for one test, split by the student's clock (grader/student_clock.py): the test's
    CPU limit (and, for code that waits, its wall-clock limit) runs only while the student's code
    runs; the grader's own work (references, comparisons, reading what the code keeps) has
    ``GRADER_SECONDS`` of CPU of its own, and reaching it says so as the grader's fault."""

    def __init__(self, cpu_seconds: float, wall_limit: bool) -> None:
        self.cpu_seconds = cpu_seconds
        self.wall_seconds = cpu_seconds * WALL_CLOCK_MARGIN if wall_limit else 0.0
        self.student_cpu_left = cpu_seconds
        self.student_wall_left = self.wall_seconds
        self.grader_allowance = max(GRADER_SECONDS, cpu_seconds)
        self.grader_cpu_left = self.grader_allowance
        self.function = ""  # the student's, while it runs
        self.computed_until = 0.0  # process time when the wall-clock window began

    def start(self) -> None:
        signal.signal(signal.SIGPROF, self.stop)
        if self.wall_seconds:
            signal.signal(signal.SIGALRM, self.stop)
        signal.setitimer(signal.ITIMER_PROF, self.grader_cpu_left)

    def entered(self, function: str) -> None:
        self.function = function
        self.grader_cpu_left = _left(signal.setitimer(signal.ITIMER_PROF, self.student_cpu_left))
        if self.wall_seconds:
            self.computed_until = time.process_time()
            signal.setitimer(signal.ITIMER_REAL, self.student_wall_left)

    def left(self) -> None:
        self.function = ""
        if self.wall_seconds:
            self.student_wall_left = _left(signal.setitimer(signal.ITIMER_REAL, 0))
        self.student_cpu_left = _left(signal.setitimer(signal.ITIMER_PROF, self.grader_cpu_left))

    def stop(self, signum, frame) -> None:
        if signum == signal.SIGALRM:
            computed = time.process_time() - self.computed_until
            if computed >= STILL_COMPUTING * self.wall_seconds:
                # It computed all along, only slowly (the neighbours had the cores): not a
                # wait. The CPU limit stops it if it never ends; here it gets another window.
                self.computed_until = time.process_time()
                signal.setitimer(signal.ITIMER_REAL, self.wall_seconds)
                return
            spent = f"{self.wall_seconds:g} s on the clock"
            advice = "It was waiting, not computing: look for time.sleep, input() or a lock in a loop."
        elif not self.function:
            self.cancel()
            raise GraderTimedOut(
                f"not graded: the grader's own work on this check ran past {self.grader_allowance:g} s of "
                "computing. This is the grader's fault, not your code's: please tell your instructor.", pytrace=False,
            )
        else:
            spent = f"{self.cpu_seconds:g} s of computing"
            advice = ("Look for a loop whose condition never changes (while True, a counter never "
                      "updated) or work that grows far faster than the input.")
        function = _students_function(frame) or self.function
        where = f" in your {function}" if function not in ("", "import") else ""
        self.cancel()
        raise CallTimedOut(f"timed out after {spent}{where}: the code did not finish. {advice}", pytrace=False)

    def cancel(self) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        previous = student_clock.use(None)
        if previous is not self:  # another test's clock: not this one's to end
            student_clock.use(previous)


_NOT_THE_STUDENTS = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(__file__).resolve().parent)})


def _students_function(frame) -> str:
    """The innermost function of the student's own file in the interrupted stack ("" if none): the
    first frame out from where the code was stopped that is not a library's, Python's or the grader's."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(("<", *_NOT_THE_STUDENTS)):
            name = frame.f_code.co_qualname
            return "" if name == "<module>" else name
        frame = frame.f_back
    return ""


def _left(timer: tuple[float, float]) -> float:
    """What a timer had left; a timer that has just run out (0) keeps the least it can, so that
    setting it again arms it (0 would disarm it) and it fires at once."""
    return max(timer[0], 1e-6)


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings) -> bool | None:
    if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
        return None  # let pytest-timeout handle its other methods itself
    # At a desk the student's code runs in this very process: it may wait forever without
    # computing, hence a wall-clock limit too. (With --isolate it runs in the worker, whose
    # per-call limit and budget end a wait, and this process waits on it, computing nothing:
    # its timer then guards the grader's own work alone.)
    clock = DeskClock(settings.timeout, wall_limit=not item.config.getoption("isolate", False))
    item.cancel_timeout = clock.cancel  # pytest-timeout's own cancel hook calls this
    student_clock.use(clock)
    clock.start()
    return True
