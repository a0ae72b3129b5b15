"""Per-test time limits: pytest-timeout's settings, with a message written for students.

pytest-timeout decides *when* a test has run too long (its ``timeout`` option, ini value
or ``@pytest.mark.timeout`` marker). We take over the ``signal`` method's handler only to
replace its dump of every thread's stack with one sentence a student can act on.
"""

from __future__ import annotations

import signal
import threading

import pytest

DEFAULT_TIMEOUT_SECONDS = 10.0


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

    def on_alarm(signum, frame):
        raise CallTimedOut(
            f"timed out after {settings.timeout:g} s: the code did not finish. "
            "Look for a loop whose condition never changes (while True, a counter never "
            "updated) or work that grows far faster than the input.",
            pytrace=False,
        )

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    item.cancel_timeout = cancel  # pytest-timeout's own cancel hook calls this
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, settings.timeout)
    return True
