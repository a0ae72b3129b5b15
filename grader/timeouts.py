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
With ``--isolate`` the student's code runs in the worker, whose own limits stop it
(grader/sandbox/isolated.py); this limit then only guards the grader's own work, in CPU time.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

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


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings) -> bool | None:
    if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
        return None  # let pytest-timeout handle its other methods itself

    wall_seconds = settings.timeout * WALL_CLOCK_MARGIN
    computed_until = [time.process_time()]

    def stop(signum, frame):
        if signum == signal.SIGALRM:
            computed = time.process_time() - computed_until[0]
            if computed >= STILL_COMPUTING * wall_seconds:
                # It computed all along, only slowly (the neighbours had the cores): not a
                # wait. The CPU limit stops it if it never ends; here it gets another window.
                computed_until[0] = time.process_time()
                signal.setitimer(signal.ITIMER_REAL, wall_seconds)
                return
            spent = f"{wall_seconds:g} s on the clock"
            advice = "It was waiting, not computing: look for time.sleep, input() or a lock in a loop."
        else:
            spent = f"{settings.timeout:g} s of computing"
            advice = ("Look for a loop whose condition never changes (while True, a counter never "
                      "updated) or work that grows far faster than the input.")
        cancel()
        raise CallTimedOut(f"timed out after {spent}: the code did not finish. {advice}", pytrace=False)

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    item.cancel_timeout = cancel  # pytest-timeout's own cancel hook calls this
    signal.signal(signal.SIGPROF, stop)
    signal.setitimer(signal.ITIMER_PROF, settings.timeout)
    if not item.config.getoption("isolate", False):
        # The student's code runs in this process: it may wait forever without computing.
        # (With --isolate it runs in the worker, whose per-call limit and budget end a wait,
        # and this process waits on it, computing nothing: a wall limit here would count
        # the student's time against the grader's, at the mercy of the load.)
        signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, wall_seconds)
    return True
