"""What the terminal shows: the header (what is graded, on which seed, where the student's code
runs), a student's exception as one readable paragraph rather than a grader traceback (in a
notebook's cell terms), and, before pytest's own failures, how a notebook ran and the diagnosis
(root causes, and the known mistakes where grader/hidden/ runs). The score table is the
scoreboard's (scoreboard.py).
"""

from __future__ import annotations

import pytest

from grader import untrusted
from grader.feedback import diagnosis_text
from grader.feedback.errors import ErrorDescription
from grader.reading import notebooks
from grader.session.sandbox import sandbox_key
from grader.session.scoreboard import scoreboard_key
from grader.session.targets import Target, targets_key
from grader.feedback.evidence import StudentCodeError
from grader.seam import registry
from grader.submission import Submission


def pytest_report_header(config: pytest.Config) -> list[str]:
    targets = config.stash[targets_key]
    # What the user named (a notebook, or its folder), never the staged copy of a notebook's code.
    shown = ", ".join(str(t.given or t.path) for t in list(targets.values())[:3]) + (" ..." if len(targets) > 3 else "")
    sandbox, fallback = config.stash[sandbox_key]
    exercise = registry.exercise()  # chosen before the session's modules were imported (grader/session/choice.py)
    lines = [f"exercise: {exercise.title} ({exercise.name})", f"grading: {shown}", f"grading seed: {config.getoption('grading_seed')}",
             f"student code runs: {sandbox}"]
    if len(targets) == 1 and (target := next(iter(targets.values()))).graded_file.endswith(".ipynb"):
        lines.append(f"graded file: {target.graded_file} (the notebook holds the work; see `choose_work` in grader/reading/loading.py)")
    return lines + ([f"note: {fallback}"] if fallback else [])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item._traceback_filter = _message_only_failures_skip_the_traceback(item._traceback_filter)


def _message_only_failures_skip_the_traceback(traceback_filter):
    """An item's traceback filter that leaves out the work for a failure shown as its message
    alone (``pytest.fail(..., pytrace=False)``: every StudentCodeError, every comparison of the
    checks). pytest then prints only the exception's text, taken from the traceback's last entry
    whatever the filter keeps (_pytest/_code/code.py, ``repr_traceback`` with style "value"), yet
    it still cut and filtered the whole traceback first (``Function._traceback_filter``, a path
    and a source lookup per frame): 1.6 ms a failure under cProfile, 0.85 s of a 40-student shard."""
    def keep_what_is_shown(excinfo):
        if isinstance(excinfo.value, pytest.fail.Exception) and not excinfo.value.pytrace:
            return excinfo.traceback[-1:]
        return traceback_filter(excinfo)
    return keep_what_is_shown


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Show a student's exception as one readable paragraph, not a grader traceback."""
    report = yield
    if call.excinfo is not None and isinstance(call.excinfo.value, StudentCodeError):
        report.longrepr = student_error_message(call.excinfo.value)
        submission = item.callspec.params.get("submission") if hasattr(item, "callspec") else None
        target = item.config.stash[targets_key].get(submission)
        if target is not None and target.cells:
            report.longrepr = _in_notebook_terms(target, item.funcargs.get("submission"), call.excinfo.value.error, report.longrepr)
    return report


def _in_notebook_terms(target: Target, handle, error: ErrorDescription, message: str) -> str:
    """A message about a notebook, in its cells' terms: its lines named as cells, and a name
    the notebook does not define because the cell that defines it raised said to be so (not
    "renamed or deleted")."""
    if error.type_name == "NotDefined" and isinstance(handle, Submission):
        failed = {line for line, _ in getattr(handle.backend, "cell_failures", [])}
        try:
            code = target.path.read_text(encoding="utf-8")
        except OSError:
            code = ""
        message = notebooks.why_not_defined(error.function, code, list(target.cells), failed) or message
    return notebooks.in_cell_terms(message, list(target.cells))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """How each notebook ran and the diagnosis, before pytest's own FAILURES section (tryfirst
    among wrappers)."""
    _teardown_reports_looked_up_once(terminalreporter)
    for result in terminalreporter.config.stash[scoreboard_key].results.values():
        if result.notebook:
            terminalreporter.section(f"how the notebook ran: {untrusted.printable(result.submission)}", sep="=")
            for line in result.notebook:
                terminalreporter.write_line(untrusted.printable(line))
        if result.diagnoses:
            terminalreporter.section(f"diagnosis: {untrusted.printable(result.submission)}", sep="=")
            for line in diagnosis_text.text_lines(result.diagnoses):
                terminalreporter.write_line(untrusted.printable(line))
    return (yield)


def _teardown_reports_looked_up_once(terminalreporter) -> None:
    """pytest's FAILURES section looks up each failure's teardown report by reading every
    report of the session again (``TerminalReporter._get_teardown_reports``, _pytest/terminal.py;
    the quadratic of pytest-dev/pytest#13360): some 15 % of a 60-submission session's CPU at a
    desk, more with each submission. The same reports, indexed by test once, in the same order."""
    by_test: dict[str, list] = {}
    for report in terminalreporter.getreports(""):
        if report.when == "teardown":
            by_test.setdefault(report.nodeid, []).append(report)
    if hasattr(terminalreporter, "_get_teardown_reports"):  # a pytest without it keeps its own way
        terminalreporter._get_teardown_reports = lambda nodeid: by_test.get(nodeid, [])


def student_error_message(error: StudentCodeError) -> str:
    described = error.error
    if described.kind == "not_written":
        function = described.function
        if function and function not in described.message:  # a stub of its own words (nbgrader's)
            return f"{function} is not written yet: this test needs it (it still raises NotImplementedError)."
        return f"{described.message}: this test needs it (it still raises NotImplementedError)."
    if described.kind in ("contract", "timeout", "crashed"):
        return described.message
    return (
        f"your code raised {described.type_name}: {described.message}"
        + (f"\n  at {described.location}" if described.location else "")
    )
