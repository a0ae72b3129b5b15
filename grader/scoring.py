"""Points and groups: what a test's record and a submission's result hold, as plain data.

A test's points come from its ``@pytest.mark.points(n)`` marker; its group from the
module it lives in (``test_causal_masking.py`` is the group ``causal_masking``). A test
earns its points only when its setup, call and teardown all pass. The pytest plugin that
fills these records and prints the score table is ``grader/session/scoreboard.py``: this module
does not import pytest, so that the batch's coordinator and the platforms' scripts, which
only read results, start without it.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

from grader.seam import registry

EXERCISE = registry.exercise()  # the exercise this grader grades (its declaration)
GROUP_TITLES = EXERCISE.group_titles
GROUPS = tuple(GROUP_TITLES)
HIDDEN_GROUP = EXERCISE.hidden_group  # run only when the work is graded; never shown before grades are
HIDDEN_TESTS = EXERCISE.hidden_checks  # absent from the student release
VISIBLE_TESTS = EXERCISE.visible_checks  # the exercise's visible checks (test_<group>.py)
# The name under which a failed weights check's matrices ride on its pytest report.
ATTENTION_PROPERTY = "attention"
# How a test stopped by a stub reads (grader/session/summary.py, student_error_message).
NOT_WRITTEN = re.compile(r"^(?P<name>[\w.]+) is not written yet: this test needs it")
# The order in which the student's functions build on each other: "Start with" the first
# one not written yet (the exercise's last function calls the others).
WRITING_ORDER = EXERCISE.functions


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

    @classmethod
    def from_dict(cls, test: dict, submission: str = "") -> TestRecord:
        """A record as ``SubmissionResult.to_dict`` wrote it (the class file's tests carry no id)."""
        return cls(**{name: test[name] for name in TEST_FIELDS if name in test} | {"submission": test.get("submission", submission)})


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
    # A notebook's run, one line each (grader/session/handles.py, _how_the_notebook_ran): cells skipped
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

    @classmethod
    def from_dict(cls, document: dict) -> SubmissionResult:
        """A result as ``to_dict`` wrote it (its figures follow from its tests, and are not read)."""
        submission = str(document.get("submission", ""))
        return cls(
            submission, [TestRecord.from_dict(test, submission) for test in document.get("tests", [])],
            **{name: document[name] for name in _RESULT_TEXTS if name in document},
        )

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


_RESULT_TEXTS = ("import_error", "output", "diagnoses", "graded_file", "time_budget", "notebook")


def _check_modules() -> list[tuple[str, Path]]:
    """(group, path) of each of this grader's modules of checks, the hidden one only where this
    copy has it: ``test_causal_masking.py`` is the group ``causal_masking``."""
    paths = sorted([*VISIBLE_TESTS.glob("test_*.py"), *HIDDEN_TESTS.glob("test_*.py")])
    return [(path.stem.removeprefix("test_"), path) for path in paths]


@functools.cache
def grader_points() -> dict[tuple[str, str], int]:
    """Each check's points as this grader's test modules mark them: (group, test function) ->
    the n of its ``@pytest.mark.points(n)`` (what grader/session/scoreboard.py's points_of reads from
    pytest), read from the modules' source without importing pytest or running anything; the
    hidden module only where this copy has it. A check ``test_x[case]`` is the function ``test_x``."""
    table: dict[tuple[str, str], int] = {}
    for group, path in _check_modules():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                for decorator in node.decorator_list:
                    if (
                        isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.points"
                        and len(decorator.args) == 1 and isinstance(decorator.args[0], ast.Constant)
                    ):
                        table[(group, node.name)] = int(decorator.args[0].value)
    return table


@dataclass(frozen=True)
class Check:
    """One check function of the grader: it runs ``cases`` times per submission (its
    parametrizations), each case worth ``points``."""

    group: str
    function: str
    cases: int
    points: int
    hidden: bool  # run only when the work is graded (grader/hidden/, absent from the release)


@functools.cache
def grader_checks() -> tuple[Check, ...]:
    """Every check of this grader with its cases and points: the one source of every total (the
    groups', the visible and hidden parts' in the release's README). Imports the modules of
    checks (and so pytest and torch), which grader_points does not."""
    import importlib

    root = Path(__file__).resolve().parent.parent
    points = grader_points()
    found = []
    for group, path in _check_modules():
        module = importlib.import_module(".".join(path.relative_to(root).with_suffix("").parts))
        for (of_group, function), worth in points.items():
            if of_group == group:
                cases = 1
                for mark in getattr(getattr(module, function), "pytestmark", []):
                    if mark.name == "parametrize":
                        cases *= len(mark.args[1])
                found.append(Check(group, function, cases, worth, path.parent == HIDDEN_TESTS))
    return tuple(found)


def group_totals() -> dict[str, int]:
    """Each group's points, in GROUPS' order (the hidden group only where this copy has it)."""
    checks = grader_checks()
    totals = {group: sum(c.cases * c.points for c in checks if c.group == group) for group in GROUPS}
    return {group: total for group, total in totals.items() if total}


def visible_and_hidden_points() -> tuple[int, int]:
    """The points a student's own run can earn, and those only a grading run can."""
    checks = grader_checks()
    return sum(c.cases * c.points for c in checks if not c.hidden), sum(c.cases * c.points for c in checks if c.hidden)

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
