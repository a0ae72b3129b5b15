"""One root cause, one message (grader/feedback/root_causes.py): a failure a cause the grader
can name explains (a layout slip, randomness, answers that change) is folded under that cause
and shows its first line; an error raised again at the same line as an earlier check is said
in full once, there; and each failure is reported once, not again in pytest's short summary.
"""

from __future__ import annotations

import pytest

from grader.feedback import diagnosis_text, root_causes
from grader.session.scoreboard import scoreboard_key
from grader.session.targets import in_its_terms
from grader.submission import Submission

causes_key = pytest.StashKey[root_causes.RootCauses]()
folded_key = pytest.StashKey[list]()  # failure reports a root cause explains, shortened in the terminal


def pytest_configure(config: pytest.Config) -> None:
    _one_report_per_failure(config)
    config.stash[causes_key] = root_causes.RootCauses(config.getoption("grading_seed"))
    config.stash[folded_key] = []


def _one_report_per_failure(config: pytest.Config) -> None:
    """Each failure shows its name and its message once; pytest's short summary would list
    every failing test a second time. Left alone when the user asked for a summary (-r)."""
    if getattr(config.option, "reportchars", None) != "fE":  # pytest's default (absent without its terminal)
        return
    config.option.reportchars = "N"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.reportchars = reporter.reportchars.replace("f", "").replace("E", "")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Record which calls into the submission this check makes (a root cause explains the
    checks that made the calls it spoils)."""
    handle = item.funcargs.get("submission")
    if isinstance(handle, Submission):
        handle.operations_called.clear()
        handle.current_check = check_label(item, handle.name)  # the evidence, should an answer it reuses have changed
    return (yield)


def check_label(item: pytest.Item, submission: str) -> str:
    """The check's name without the submission's id (the student's text): ``test_x[b1-s4-d8-h2]``."""
    name = getattr(item, "originalname", item.name)
    given = item.callspec.id if hasattr(item, "callspec") else ""
    if given.startswith(f"{submission}-"):  # the submission's id first (pytest_generate_tests), then the check's own
        return f"{name}[{given.removeprefix(f'{submission}-')}]"
    return name


# tryfirst: the outer wrapper, so that its message replaces the summary plugin's student message.
@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failure a root cause explains, as its first line under that cause."""
    report = yield
    handle = item.funcargs.get("submission") if hasattr(item, "funcargs") else None
    if call.when in ("call", "teardown") and isinstance(handle, Submission) and handle.changed_answer is not None:
        # Its answers change from call to call: said once, with the question asked twice.
        item.config.stash[causes_key].answers_changed(item.config.stash[scoreboard_key].submission_result(handle.name), handle)
    if report.failed and call.when == "call" and call.excinfo is not None and isinstance(handle, Submission):
        result = item.config.stash[scoreboard_key].submission_result(handle.name)
        explained = item.config.stash[causes_key].account(
            result, handle, item.name, call.excinfo.value, set(handle.operations_called)
        )
        if explained:  # the results keep the whole message; the terminal shows its first line
            item.config.stash[folded_key].append(report)
        elif first := item.config.stash[causes_key].repeated_error(handle.name, item.name, call.excinfo.value):
            # The same error at the same line as an earlier check: said in full once, there.
            described = call.excinfo.value.error
            where = described.location.split(" in ", 1)[0].split(": ", 1)[0]  # "file.py:57"
            said = described.message.splitlines()[0] if described.message else ""
            said = said if len(said) <= 100 else said[:97] + "..."
            report.longrepr = in_its_terms(
                item.config, handle.name, f"your code raised {described.type_name}: {said} again at {where}, as in {first} (its whole message is there)"
            )
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """Before pytest's own FAILURES section: each folded failure shrunk to its first line."""
    # Folded only if a cause still explains it: the diagnosis takes from a layout slip the checks
    # a mistake elsewhere would fail with the layout fixed (grader/hidden/plugin.py).
    still = {name for r in terminalreporter.config.stash[scoreboard_key].results.values() for name in diagnosis_text.explained_checks(r.diagnoses)}
    for report in terminalreporter.config.stash[folded_key]:
        if report.nodeid.rsplit("::", 1)[-1] in still and not report.longreprtext.endswith(root_causes.EXPLAINED):
            report.longrepr = diagnosis_text.compact_message(report.longreprtext) + root_causes.EXPLAINED
    return (yield)
