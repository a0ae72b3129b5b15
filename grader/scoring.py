"""Points, groups and the score table: a pytest plugin that watches the test outcomes.

A test's points come from its ``@pytest.mark.points(n)`` marker; its group from the
module it lives in (``test_causal_masking.py`` is the group ``causal_masking``). A test
earns its points only when its setup, call and teardown all pass.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

import pytest

from grader.feedback import attention_comparison
from grader.untrusted import printable
from grader.reading.work_held import EXERCISE_FUNCTIONS

GROUP_TITLES = {
    "shapes": "1. shapes",
    "probabilities": "2. probabilities",
    "causal_masking": "3. causal masking",
    "head_distinctness": "4. head distinctness",
    "gradient_flow": "5. gradient flow",
    "configuration": "6. configuration",
    "reference_examples": "7. reference examples",
    "reference": "8. reference (hidden)",
}
GROUPS = tuple(GROUP_TITLES)
HIDDEN_TESTS = Path(__file__).resolve().parent / "hidden"  # absent from the student release
# The name under which a failed weights check's matrices ride on its pytest report.
ATTENTION_PROPERTY = "attention"
# How a test stopped by a stub reads (grader/conftest.py, student_error_message).
NOT_WRITTEN = re.compile(r"^(?P<name>[\w.]+) is not written yet: this test needs it")
# The order in which the student's functions build on each other: "Start with" the first
# one not written yet (MultiHeadSelfAttention calls all the others).
WRITING_ORDER = EXERCISE_FUNCTIONS


@dataclass
class TestRecord:
    __test__ = False  # a record of a test, not one: pytest must not collect it where a test imports it
    name: str
    group: str
    submission: str
    max_points: int
    outcome: str = "not run"
    message: str = ""
    duration: float = 0.0
    # A failed check about attention weights: the student's matrix beside the reference's,
    # as plain data (grader/feedback/attention_comparison.py); None otherwise.
    attention: dict | None = None

    @property
    def points(self) -> int:
        return self.max_points if self.outcome == "passed" else 0


TEST_FIELDS = tuple(f.name for f in fields(TestRecord))


@dataclass
class SubmissionResult:
    submission: str
    tests: list[TestRecord] = field(default_factory=list)
    import_error: str = ""
    output: str = ""  # what the student's code printed (captured by the worker), for instructors
    # What the failing checks reveal, per function (grader/hidden/diagnosis.py; plain entries,
    # read through grader/feedback/diagnosis_text.py); [] when nothing is wrong or nothing was diagnosed.
    diagnoses: list[dict] = field(default_factory=list)
    graded_file: str = ""  # the file graded, when a submission offered several (grader.reading.loading.choose_work)
    # With --isolate: the wall-clock budgets (grader/sandbox/isolated.py) and, per budget that
    # ran out ("submission", "diagnosis"), why; {} at the desk.
    time_budget: dict = field(default_factory=dict)
    # A notebook's run, one line each (grader/conftest.py, _how_the_notebook_ran): cells skipped
    # for their cell magic, cells that raised (the run went on), functions defined in several
    # cells and which definition was graded; [] for a .py file.
    notebook: list[str] = field(default_factory=list)

    @property
    def score(self) -> int:
        return sum(test.points for test in self.tests)

    @property
    def max_score(self) -> int:
        return sum(test.max_points for test in self.tests)

    def not_written(self) -> dict[str, int]:
        return not_written([test.message for test in self.tests if test.outcome != "passed"])

    def groups_not_run(self) -> set[str]:
        """Groups none of whose tests ran (``pytest -x`` stopped before them)."""
        ran = {test.group for test in self.tests if test.outcome != "not run"}
        return {test.group for test in self.tests} - ran

    def group_points(self) -> dict[str, tuple[int, int]]:
        totals = {group: [0, 0] for group in GROUPS}
        for test in self.tests:
            totals[test.group][0] += test.points
            totals[test.group][1] += test.max_points
        return {group: (earned, total) for group, (earned, total) in totals.items() if total}

    def to_dict(self) -> dict:
        return {
            "submission": self.submission,
            "score": self.score,
            "max_score": self.max_score,
            "groups": {group: {"earned": e, "max": m} for group, (e, m) in self.group_points().items()},
            "import_error": self.import_error,
            "graded_file": self.graded_file,
            "output": self.output,
            "diagnoses": self.diagnoses,
            "time_budget": self.time_budget,
            "notebook": self.notebook,
            # Field by field, not dataclasses.asdict: that deep-copies every picture's matrices,
            # which the caller only serialises.
            "tests": [{name: getattr(test, name) for name in TEST_FIELDS} | {"points": test.points} for test in self.tests],
        }


def not_written(messages: Iterable[str]) -> dict[str, int]:
    """The functions still raising the stub's NotImplementedError, each with the number of
    failed tests that stopped there, in the order they build on each other (WRITING_ORDER)."""
    counts = Counter(match["name"] for message in messages if (match := NOT_WRITTEN.match(message.strip())))
    return dict(sorted(counts.items(), key=lambda item: _writing_rank(item[0])))


def _writing_rank(name: str) -> tuple[int, str]:
    return (WRITING_ORDER.index(name) if name in WRITING_ORDER else len(WRITING_ORDER), name)


def describe_not_written(counts: dict[str, int], scope: str = "", name_format=str) -> str:
    """One line for students: what to write, in the order the functions build on each other
    (``scope``: which tests the counts come from, when not all of them ran; ``name_format``:
    how a function's name is written, e.g. a Markdown code span, where ``__init__`` would be bold)."""
    needs = ", ".join(f"{name_format(name)} ({count} test{'s' if count != 1 else ''})" for name, count in counts.items())
    return f"Not written yet{scope}: {needs}. Start with {name_format(next(iter(counts)))}."


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
        if "reference" not in points and not HIDDEN_TESTS.is_dir():
            write(f"{GROUP_TITLES['reference']:<{width}}  run when your work is graded")
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


def _message_of(report: pytest.TestReport) -> str:
    text = report.longreprtext.strip()
    if report.skipped and isinstance(report.longrepr, tuple):
        text = str(report.longrepr[2])
    return text

