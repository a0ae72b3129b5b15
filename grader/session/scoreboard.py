"""The pytest plugin that keeps the score: each test's outcome into its record
(grader/scoring.py) and, at the end of a session, the score table a student reads. The other
plugins read and fill the records through it (``scoreboard_key``); grader/hidden/'s diagnosis
finds it by its name.
"""

from __future__ import annotations

import pytest

from grader.feedback import attention_comparison
from grader.seam.failing import AttentionMismatch
from grader.scoring import ATTENTION_PROPERTY, GROUP_TITLES, GROUPS, HIDDEN_GROUP, HIDDEN_TESTS, SubmissionResult, TestRecord, describe_not_written
from grader.untrusted import printable


@pytest.hookimpl(tryfirst=True)  # before the other plugins' configure, which fill its records
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "points(n): the points a test is worth")
    scoreboard = Scoreboard()
    config.stash[scoreboard_key] = scoreboard
    config.pluginmanager.register(scoreboard, "grader-scoreboard")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if call.excinfo is not None and isinstance(call.excinfo.value, AttentionMismatch):
        # The matrices, as plain data, travel with the report to the test's result (and
        # across pytest-xdist's workers): grader/feedback/attention_comparison.py.
        report.user_properties.append((ATTENTION_PROPERTY, call.excinfo.value.picture))
    return report


def group_of(item: pytest.Item) -> str:
    module_name = item.module.__name__.rsplit(".", 1)[-1]
    group = module_name.removeprefix("test_")
    if group not in GROUP_TITLES:
        raise pytest.UsageError(f"{item.nodeid}: module {module_name} is not one of the groups {GROUPS}")
    return group


def points_of(item: pytest.Item) -> int:
    marker = item.get_closest_marker("points")
    if marker is None or not marker.args:
        raise pytest.UsageError(f"{item.nodeid} has no @pytest.mark.points(n) marker")
    return int(marker.args[0])


class Scoreboard:
    """Collects every test's outcome, per submission, and prints the score table."""

    def __init__(self) -> None:
        self.records: dict[str, TestRecord] = {}
        self.results: dict[str, SubmissionResult] = {}
        self.last_test: dict[str, str] = {}  # submission -> nodeid of its last test
        self.on_submission_done = lambda result: None

    def submission_result(self, name: str) -> SubmissionResult:
        return self.results.setdefault(name, SubmissionResult(name))

    def record_import_error(self, name: str, message: str) -> None:
        self.submission_result(name).import_error = message

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            submission = item.callspec.params.get("submission", "") if hasattr(item, "callspec") else ""
            record = TestRecord(item.name, group_of(item), str(submission), points_of(item))
            self.records[item.nodeid] = record
            self.submission_result(record.submission).tests.append(record)
            self.last_test[record.submission] = item.nodeid  # items are already in grading order

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = self.records.get(report.nodeid)
        if record is None:
            return
        record.duration += report.duration
        if report.when == "call" or report.failed or report.skipped:
            if record.outcome in ("not run", "passed"):
                record.outcome = "passed" if report.passed else report.outcome
                if not report.passed:
                    record.message = _message_of(report)
                    record.attention = dict(report.user_properties).get(ATTENTION_PROPERTY)
        if report.when == "teardown" and self.last_test.get(record.submission) == report.nodeid:
            self.on_submission_done(self.results[record.submission])

    def pytest_terminal_summary(self, terminalreporter) -> None:
        # After pytest's failures: the first failed weights check's matrices, side by side.
        for result in self.results.values():
            first = next((test for test in result.tests if test.outcome == "failed" and test.attention), None)
            if first is not None:
                terminalreporter.section(f"attention weights: {printable(first.name)}", sep="-")
                for line in attention_comparison.text_lines(first.attention):
                    terminalreporter.write_line(printable(line))
        for result in self.results.values():
            if result.import_error:
                # The student's text, on an instructor's terminal too (pytest grader --submission ...).
                terminalreporter.section(f"{printable(result.submission)} could not be imported", sep="!")
                terminalreporter.write_line(printable(result.import_error, keep_newlines=True))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """The score table goes last, after pytest's own summary, so it is what a student sees."""
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if terminal is None or not self.results or not any(r.tests for r in self.results.values()):
            return
        terminal.write_sep("=", "score")
        if len(self.results) == 1:
            self._write_single_table(terminal.write_line, next(iter(self.results.values())))
        else:
            self._write_class_table(lambda line: terminal.write_line(printable(line)))

    def _write_single_table(self, write, result: SubmissionResult) -> None:
        points = result.group_points()
        width = max(len(GROUP_TITLES[group]) for group in GROUPS)
        write(f"{'group':<{width}}  points")
        not_run = result.groups_not_run()
        for group, (earned, total) in points.items():
            write(f"{GROUP_TITLES[group]:<{width}}  " + (f"not run (of {total})" if group in not_run else f"{earned:>3}/{total}"))
        if HIDDEN_GROUP not in points and not HIDDEN_TESTS.is_dir():
            write(f"{GROUP_TITLES[HIDDEN_GROUP]:<{width}}  run when your work is graded")
        write(f"Score: {result.score}/{result.max_score}")
        if missing := result.not_written():
            ran = sum(test.outcome != "not run" for test in result.tests)
            partial = f" (in the {ran} of {len(result.tests)} tests that ran)" if ran < len(result.tests) else ""
            write(describe_not_written(missing, partial))

    def _write_class_table(self, write) -> None:
        names = [group for group in GROUPS if any(group in r.group_points() for r in self.results.values())]
        width = max(len(name) for name in self.results) + 2
        write(f"{'submission':<{width}}" + "".join(f"{g[:12]:>13}" for g in names) + f"{'score':>10}")
        for name in sorted(self.results):
            result = self.results[name]
            points = result.group_points()
            cells = "".join(f"{f'{points[g][0]}/{points[g][1]}':>13}" for g in names)
            write(f"{name:<{width}}{cells}{f'{result.score}/{result.max_score}':>10}")
        for name in sorted(self.results):
            write(f"Score {name}: {self.results[name].score}/{self.results[name].max_score}")


scoreboard_key = pytest.StashKey[Scoreboard]()


def _message_of(report: pytest.TestReport) -> str:
    text = report.longreprtext.strip()
    if report.skipped and isinstance(report.longrepr, tuple):
        text = str(report.longrepr[2])
    return text

