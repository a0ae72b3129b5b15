"""The diagnosis in a grading session: a pytest plugin, registered only where grader/hidden/ exists.

After a submission's last check, while its handle is still open, it diagnoses the
functions that the failed checks used (grader/hidden/diagnosis.py) and puts the result on
the submission's result (``SubmissionResult.diagnoses``, after the root causes the grader
found on its own: grader/feedback/root_causes.py, whose checks it leaves alone), from which the
results files, the feedback page, Gradescope and the notebook read it. grader/session/summary.py
prints it before pytest's failures; a failure it explains shrinks to its first line.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading

import pytest

from grader.feedback import diagnosis_text, root_causes
from grader.hidden import diagnosis
from grader.hidden.unproven import Unproven
from grader.scoring import NOT_WRITTEN
from grader.seam import registry
from grader.submission import InProcessBackend
from grader.timeouts import CallTimedOut

log = logging.getLogger(__name__)
# In-process student code has no per-call limit of its own (the sandbox's worker has one).
DIAGNOSIS_SECONDS = 10.0


class DiagnosisPlugin:
    def __init__(self, scoreboard, grading_seed: int = 0) -> None:
        self.scoreboard = scoreboard
        self.grading_seed = grading_seed  # the probes are drawn from it, as the hidden checks' data
        self.operations: dict[tuple[str, str], frozenset[str]] = {}  # (submission, test name) -> calls made
        self.keys: dict[str, tuple[str, str]] = {}  # nodeid -> (submission, test name)
        self.failed_reports: dict[tuple[str, str], list[pytest.TestReport]] = {}
        self.calls: dict[tuple[str, str], tuple] = {}  # (test function, its arguments): to run a check again
        self.said_undiagnosed = False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        handle = item.funcargs.get("submission")
        if handle is None:
            return (yield)
        self.keys[item.nodeid] = _key(item)
        if isinstance(item, pytest.Function):
            # As pytest itself calls a test function (_pytest/python.py, pytest_pyfunc_call: the
            # arguments are item._fixtureinfo.argnames, looked up in item.funcargs), kept now:
            # pytest empties funcargs when the item is torn down.
            self.calls[_key(item)] = (item.obj, {n: item.funcargs[n] for n in item._fixtureinfo.argnames if n in item.funcargs})
        handle.operations_called.clear()
        try:
            return (yield)
        finally:
            self.operations[_key(item)] = frozenset(handle.operations_called)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and report.nodeid in self.keys:
            self.failed_reports.setdefault(self.keys[report.nodeid], []).append(report)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None):
        # Before the fixtures are torn down: the submission's handle is still open here.
        name = _submission_of(item)
        handle = item.funcargs.get("submission")
        if handle is not None and (nextitem is None or _submission_of(nextitem) != name):
            self._diagnose(handle, self.scoreboard.submission_result(name))
            self.calls = {key: call for key, call in self.calls.items() if key[0] != name}  # its checks are done
        return (yield)

    def _diagnose(self, handle, result) -> None:
        if result.import_error:
            return
        explained_already = diagnosis_text.explained_checks(result.diagnoses)  # by a root cause (grader/feedback/root_causes.py)
        checks = {
            test.name: diagnosis.FailedCheck(test.name, self.operations.get((result.submission, test.name), frozenset()))
            for test in result.tests
            if test.outcome == "failed" and not NOT_WRITTEN.match(test.message.strip())
        }
        failed = [check for name, check in checks.items() if name not in explained_already]
        if checks and diagnosis.vocabulary() is None:
            self._say_undiagnosed()
            return
        # A layout slip explains the checks that meet the module as built, as far as the layout
        # goes: the other functions those checks use are probed too, and a check that uses one
        # found wrong would fail with the layout fixed, so it is the layout's no longer.
        layouts = [entry for entry in result.diagnoses if entry.get("mistake") == root_causes.PARAMETER_LAYOUT]
        behind_layout = {
            function
            for entry in layouts
            for name in entry["explains"] if name in checks
            for function in diagnosis.functions_used(checks[name]) - diagnosis.layout_hides(entry["function"])
        }
        if not failed and not behind_layout:
            return
        # The sandbox gives the diagnosis a budget of its own (it runs in the last check's
        # teardown, after pytest-timeout stopped that check's timer); in process, an alarm.
        budget = getattr(handle.backend, "diagnosis_budget", contextlib.nullcontext)
        try:
            with budget(), _time_limit(handle, DIAGNOSIS_SECONDS):
                found = diagnosis.diagnose(handle, failed, self.grading_seed, also_suspect=behind_layout)
                if getattr(handle.backend, "ran_out", {}).get("diagnosis"):
                    raise CallTimedOut("the diagnosis ran out of its budget", pytrace=False)  # probes refused: no verdict
                wrong = {d.function for d in found}
                for entry in layouts:
                    moved = [
                        n for n in entry["explains"]
                        if n in checks and n != entry.get("stated_in") and diagnosis.functions_used(checks[n]) & wrong
                    ]
                    entry["explains"] = [n for n in entry["explains"] if n not in moved]
                    failed += [checks[n] for n in moved]
                # Within the same budget: a check refused for want of it does not pass, so it is
                # not explained, and every check that is explained was shown to be.
                diagnosis.attribute(handle, found, failed, lambda name, replaced: self._passes(result.submission, name, replaced))
        except CallTimedOut:
            log.warning("%s: the diagnosis ran out of the check's time and was dropped", result.submission)
            return
        except (Exception, pytest.fail.Exception):  # noqa: BLE001 - a diagnosis never costs a point
            if getattr(handle.backend, "ran_out", {}).get("diagnosis"):  # its probes were refused
                log.warning("%s: the diagnosis ran out of its budget and was dropped", result.submission)
                return
            # This runs in the last check's teardown: anything escaping would fail that check.
            log.exception("%s: the diagnosis failed and was dropped", result.submission)
            return
        code = diagnosis.student_code(handle.source)
        entries = [entry for d in found for entry in d.entries(code)]
        result.diagnoses = [*result.diagnoses, *entries]
        explained = diagnosis_text.explained_checks(entries)
        for test_name in explained:
            for report in self.failed_reports.get((result.submission, test_name), []):
                report.longrepr = f"{diagnosis_text.compact_message(report.longreprtext)}  [explained by the diagnosis above]"


    def _say_undiagnosed(self) -> None:
        """An exercise without a vocabulary of mistakes is graded, not diagnosed: said once, in
        the grader's log, so that an instructor wondering where the diagnoses went reads why."""
        if not self.said_undiagnosed:
            self.said_undiagnosed = True
            log.warning("%s declares no vocabulary of mistakes (its declaration's mistakes): failed checks keep their own messages, none is diagnosed",
                        registry.exercise().name)

    def _passes(self, submission: str, test_name: str, replaced) -> bool | None:
        """Does the check pass when run again on ``replaced`` (the submission with one function
        the reference's)? The test function itself, with the same arguments (its parameters,
        the grading seed), so the question is exactly the check's; any failure is a no, and a
        counterfactual that could not be run is neither (None)."""
        if (submission, test_name) not in self.calls:
            return False
        function, arguments = self.calls[(submission, test_name)]
        arguments = {**arguments, "submission": replaced}
        try:
            function(**arguments)
        except Unproven:
            return None
        except (Exception, pytest.fail.Exception, pytest.skip.Exception):  # noqa: BLE001 - a failure, whatever its kind
            return False
        return True


def _submission_of(item: pytest.Item) -> str:
    return str(item.callspec.params.get("submission", "")) if hasattr(item, "callspec") else ""


def _key(item: pytest.Item) -> tuple[str, str]:
    return (_submission_of(item), item.name)


@contextlib.contextmanager
def _time_limit(handle, seconds: float):
    """Stop an in-process diagnosis that runs into an endless loop of the student's: after
    ``seconds``, unless the check's own time limit is still pending (it then stops it)."""
    pending = signal.getitimer(signal.ITIMER_REAL)[0] > 0
    if not isinstance(handle.backend, InProcessBackend) or pending or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum, frame):
        raise CallTimedOut(f"the diagnosis ran out of its {seconds:g} s", pytrace=False)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
