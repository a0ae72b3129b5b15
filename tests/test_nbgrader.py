"""The nbgrader course (`python -m grader nbgrader COURSE`), driven through the real nbgrader CLI.

One course for the module: written by the command into a temporary folder, released with
`nbgrader generate_assignment`, then four submitted notebooks (the solution, the stubs as
released, two buggy implementations from the catalogue) autograded with `nbgrader autograde`
and read back with `nbgrader export`. The pytest grader grades the same four notebooks, turned
into files by the batch's intake, with the same grading seed; the marks must agree.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

import autograder_harness as harness
import catalogue
from autograder_harness import SECOND, SECOND_SOLUTION
from grader.platforms import nbgrader_course
from grader.handout import notebook, release, stubs
from grader.scoring import GROUPS
from grading import REPO_ROOT
import tiers

ASSIGNMENT = nbgrader_course.ASSIGNMENT
BEGIN_HIDDEN = nbgrader_course.BEGIN_HIDDEN
NOTEBOOK_NAME = nbgrader_course.NOTEBOOK_NAME
GRADING_SEED = 20240611
BUGGY = ("missing_scale", "keys_detached")  # lose points in visible groups and in the hidden one
STUDENTS = ("solution", "stubs", *BUGGY)
SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"


@dataclass
class Course:
    root: Path
    source: nbformat.NotebookNode
    released: nbformat.NotebookNode
    exported: dict[str, dict]  # student -> row of nbgrader's grades.csv
    cell_scores: dict[str, dict[str, float]]  # student -> grade_id -> score, from nbgrader's gradebook
    pytest_results: dict[str, dict]  # student -> the pytest grader's result for the same code
    log: str


def nbgrader_environment(root: Path) -> dict[str, str]:
    """The venv's bin/ first (nbgrader runs `alembic`; the kernel needs torch), no user config."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("JUPYTER", "GRADER_"))}
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    environment["JUPYTER_CONFIG_DIR"] = str(root / "jupyter-config")
    environment["JUPYTER_DATA_DIR"] = str(root / "jupyter-data")
    environment["GRADER_GRADING_SEED"] = str(GRADING_SEED)
    return environment


def nbgrader(course: Path, *arguments: str, environment: dict) -> str:
    finished = subprocess.run(
        [sys.executable, "-m", "nbgrader", *arguments], cwd=course, env=environment, capture_output=True, text=True,
        timeout=600, stdin=subprocess.DEVNULL,
    )
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, f"nbgrader {arguments[0]} exited {finished.returncode}:\n{output[-4000:]}"
    return output


def implementation(student: str, released: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """What the student hands in: the released notebook, answered with that student's code."""
    if student == "stubs":
        return released
    if student == "solution":
        code = SOLUTION.read_text(encoding="utf-8")
    else:
        code = catalogue.implementation_source(next(m for m in catalogue.MUTANTS if m.name == student))
    return nbgrader_course.fill_in(released, nbgrader_course.answer_cells(code))


def cell_scores(course: Path) -> dict[str, dict[str, float]]:
    from nbgrader.api import Gradebook  # imported here: only this module needs it

    scores: dict[str, dict[str, float]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in STUDENTS:
            submitted = gradebook.find_submission_notebook(NOTEBOOK_NAME.removesuffix(".ipynb"), ASSIGNMENT, student)
            scores[student] = {grade.name: grade.score for grade in submitted.grades}
    return scores


@pytest.fixture(scope="module")
@tiers.slow_tier("platform")  # an nbgrader course: generated, submitted, autograded
def course(tmp_path_factory) -> Course:
    root = tmp_path_factory.mktemp("nbgrader")
    environment = nbgrader_environment(root)
    course_dir = root / "course"
    written = subprocess.run(
        [sys.executable, "-m", "grader", "nbgrader", str(course_dir)], cwd=REPO_ROOT, env=environment,
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert written.returncode == 0, written.stdout + written.stderr
    log = nbgrader(course_dir, "generate_assignment", ASSIGNMENT, environment=environment)
    released = nbformat.read(course_dir / "release" / ASSIGNMENT / NOTEBOOK_NAME, as_version=4)

    # The four submissions. The pytest grader grades the same notebooks (as the batch reads them:
    # grader/batch/intake.py), side by side with nbgrader: the machine has two cores.
    submitted = {}
    for student in STUDENTS:
        submitted[student] = course_dir / "submitted" / student / ASSIGNMENT / NOTEBOOK_NAME
        submitted[student].parent.mkdir(parents=True)
        nbformat.write(implementation(student, released), submitted[student])
    copies = root / "copies"  # named after the students: pytest names a submission after its file
    copies.mkdir()
    for student, path in submitted.items():
        shutil.copy(path, copies / f"{student}.ipynb")
    results_path = root / "pytest-results.json"
    pytest_run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "grader", "-q", "-p", "no:cacheprovider", "--grading-seed", str(GRADING_SEED),
         "--results-json", str(results_path), *(f"--submission={copies / f'{student}.ipynb'}" for student in STUDENTS)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
    )
    log += nbgrader(course_dir, "autograde", ASSIGNMENT, environment=environment)
    log += nbgrader(course_dir, "export", "--to", str(root / "grades.csv"), environment=environment)
    pytest_output, _ = pytest_run.communicate(timeout=300)
    assert results_path.is_file(), pytest_output[-3000:]

    with open(root / "grades.csv", newline="") as handle:
        exported = {row["student_id"]: row for row in csv.DictReader(handle)}
    pytest_results = json.loads(results_path.read_text(encoding="utf-8"))["submissions"]
    return Course(
        course_dir, nbformat.read(course_dir / "source" / ASSIGNMENT / NOTEBOOK_NAME, as_version=4), released,
        exported, cell_scores(course_dir), pytest_results, log,
    )


# Fills the second exercise's released notebook with its reference, in a process that grades it
# (this one's nbgrader_course belongs to the first): argv released, implementation, out.
FILL_IN = """
import sys, nbformat
from grader.platforms import nbgrader_course
released = nbformat.read(sys.argv[1], as_version=4)
answers = nbgrader_course.answer_cells(open(sys.argv[2], encoding="utf-8").read())
nbformat.write(nbgrader_course.fill_in(released, answers), sys.argv[3])
"""


@dataclass
class SecondCourse:
    root: Path
    exported: dict[str, dict]  # student -> row of nbgrader's grades.csv
    cell_scores: dict[str, dict[str, float]]  # student -> grade_id -> score
    released: str  # the released notebook's text


@pytest.fixture(scope="module")
@tiers.slow_tier("platform")  # a second nbgrader course: generated, two notebooks autograded
def second_course(tmp_path_factory) -> SecondCourse:
    """The course's second exercise as its own nbgrader course (the command told only the
    exercise), its reference and its stub submitted, autograded and exported in this venv."""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("nbgrader-second")
    environment = nbgrader_environment(root)
    course_dir = root / "course"
    written = subprocess.run(
        [sys.executable, "-m", "grader", "nbgrader", str(course_dir), "--exercise", SECOND.name], cwd=REPO_ROOT,
        env=environment, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert written.returncode == 0, written.stdout + written.stderr
    nbgrader(course_dir, "generate_assignment", SECOND.name, environment=environment)
    released = course_dir / "release" / SECOND.name / SECOND.notebook
    for student in ("solution", "stubs"):
        submitted = course_dir / "submitted" / student / SECOND.name / SECOND.notebook
        submitted.parent.mkdir(parents=True)
        if student == "stubs":
            shutil.copy(released, submitted)
            continue
        filled = subprocess.run(
            [sys.executable, "-c", FILL_IN, str(released), str(SECOND_SOLUTION), str(submitted)], cwd=REPO_ROOT,
            env=os.environ | {"GRADER_EXERCISE": SECOND.name}, capture_output=True, text=True, timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert filled.returncode == 0, filled.stderr[-3000:]
    nbgrader(course_dir, "autograde", SECOND.name, environment=environment)
    nbgrader(course_dir, "export", "--to", str(root / "grades.csv"), environment=environment)
    with open(root / "grades.csv", newline="") as handle:
        exported = {row["student_id"]: row for row in csv.DictReader(handle)}
    scores = {}
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gradebook:
        for student in ("solution", "stubs"):
            graded = gradebook.find_submission_notebook(SECOND.notebook.removesuffix(".ipynb"), SECOND.name, student)
            scores[student] = {grade.name: grade.score for grade in graded.grades}
    return SecondCourse(course_dir, exported, scores, released.read_text(encoding="utf-8"))


def grade_cells(nb) -> dict[str, nbformat.NotebookNode]:
    return {cell.metadata.nbgrader["grade_id"]: cell for cell in nb.cells if cell.metadata.get("nbgrader", {}).get("grade")}


# --- the course --------------------------------------------------------------------------


def test_each_group_has_one_locked_test_cell_worth_the_pytest_graders_points(course):
    cells = grade_cells(course.source)
    pytest_points = {group: points["max"] for group, points in course.pytest_results["solution"]["groups"].items()}
    assert list(cells) == [f"group_{number}_{group}" for number, group in enumerate(GROUPS, start=1)]
    got = {grade_id.split("_", 2)[2]: cell.metadata.nbgrader["points"] for grade_id, cell in cells.items()}
    assert got == pytest_points == {"shapes": 15, "probabilities": 10, "causal_masking": 15, "head_distinctness": 10,
                                    "gradient_flow": 10, "configuration": 10, "reference_examples": 15, "reference": 15}
    assert all(cell.metadata.nbgrader["locked"] for cell in cells.values())


def test_only_the_hidden_group_sits_between_hidden_test_markers(course):
    for grade_id, cell in grade_cells(course.source).items():
        hidden = re.search(r"### BEGIN HIDDEN TESTS\n(.+)\n### END HIDDEN TESTS", cell.source)
        assert bool(hidden) == grade_id.endswith("reference"), cell.source
    cells = grade_cells(course.source)
    assert 'notebook_checks.points("reference", out_of=15)' in cells["group_8_reference"].source


def test_the_only_checksum_warning_is_nbgraders_own_for_the_hidden_tests_cell(course):
    # nbgrader records the hidden-tests cell's checksum before it removes the hidden tests, and
    # autograde compares the release's with it: a warning on every submission, an untouched one
    # included (jupyter/nbgrader#1961). Harmless: autograde puts the instructor's cell back from
    # its database before grading (the scores below match the pytest grader's). docs/platforms/nbgrader.md says so.
    hidden = {grade_id for grade_id, cell in grade_cells(course.source).items() if "### BEGIN HIDDEN TESTS" in cell.source}
    warnings = [line for line in course.log.splitlines() if "has changed!" in line]
    assert warnings, "nbgrader no longer warns: docs/platforms/nbgrader.md can drop its note"
    assert all(re.search(r"for cell (\S+) has changed", line).group(1) in hidden for line in warnings), warnings


def test_solution_regions_are_in_nbgrader_solution_cells_only(course):
    for cell in course.source.cells:
        has_region = stubs.BEGIN_SOLUTION in cell.source
        assert has_region == bool(cell.metadata.get("nbgrader", {}).get("solution")), cell.get("id")


def test_the_released_notebook_holds_no_solution_text_and_no_hidden_test(course):
    # The student release's own check (grader/handout/release.py) on nbgrader's release folder.
    assert release.leaked_solution_lines(course.root / "release") == []
    assert release.leaked_solution_lines(course.root / "source"), "the check finds nothing even in the source"
    released = "\n".join(cell.source for cell in course.released.cells)
    assert "BEGIN SOLUTION" not in released and "HIDDEN TESTS" not in released
    assert 'points("reference"' not in released, "the hidden group's check is in the release"
    stub_line = nbgrader_course.CODE_STUB.splitlines()[-1]
    # The five functions and, at the standard level, the two constructors.
    assert released.count(stub_line) == 7, "each of the seven pieces of student work should be nbgrader's stub"


def test_the_course_finds_this_repository_from_its_config_and_setup_cell(course):
    config = (course.root / "nbgrader_config.py").read_text()
    assert f'os.environ.setdefault("GRADER_ROOT", {str(REPO_ROOT)!r})' in config
    assert re.search(r'os.environ.setdefault\("GRADER_GRADING_SEED", "\d+"\)', config), "no course-wide grading seed"
    setup = next(cell for cell in course.released.cells if cell.get("id") == "setup")
    assert repr(str(REPO_ROOT)) in setup.source and setup.metadata.nbgrader["locked"]
    assert "import torch" in setup.source and not setup.metadata.nbgrader["grade"]


# --- autograded marks ---------------------------------------------------------------------


@pytest.mark.parametrize("student", STUDENTS)
def test_nbgraders_exported_total_is_the_pytest_graders_score_for_the_same_code(course, student):
    expected = course.pytest_results[student]["score"]
    assert float(course.exported[student]["score"]) == expected, course.log[-3000:]
    assert float(course.exported[student]["max_score"]) == 100


def test_the_solution_gets_full_marks_the_stubs_zero_and_the_bugs_partial_credit(course):
    scores = {student: float(row["score"]) for student, row in course.exported.items()}
    assert scores["solution"] == 100 and scores["stubs"] == 0, scores
    assert all(0 < scores[student] < 100 for student in BUGGY), scores
    hidden = {student: course.cell_scores[student]["group_8_reference"] for student in BUGGY}
    assert all(score < 15 for score in hidden.values()), f"the hidden group must cost the bugs points: {hidden}"


@pytest.mark.parametrize("student", STUDENTS)
def test_each_test_cell_scores_the_pytest_graders_points_on_its_group(course, student):
    expected = {f"group_{number}_{group}": course.pytest_results[student]["groups"][group]["earned"]
                for number, group in enumerate(GROUPS, start=1)}
    assert course.cell_scores[student] == pytest.approx(expected), course.log[-3000:]


def test_no_graded_cell_wrote_to_stderr_or_raised(course):
    for student in STUDENTS:
        autograded = nbformat.read(course.root / "autograded" / student / ASSIGNMENT / NOTEBOOK_NAME, as_version=4)
        for cell in grade_cells(autograded).values():
            bad = [output for output in cell.outputs
                   if output.output_type == "error" or output.get("name") == "stderr"]
            assert not bad, f"{student}, {cell.metadata.nbgrader['grade_id']}: {bad}"
            assert any(output.output_type == "execute_result" for output in cell.outputs), (student, cell.outputs)


def test_the_notebook_course_and_exercise_share_the_lesson(course):
    lesson = [cell.source for cell in course.source.cells if cell.cell_type == "markdown"]
    for part in notebook.lesson_parts().PARTS:
        assert notebook.part_lesson(part).strip("\n") in lesson, part.key


def test_a_graded_cell_prints_the_diagnosis_of_its_failures(course):
    """nbgrader's feedback comes from the graded cells' output: the misconception is named there."""
    from grader.exercises.multi_head_attention.hidden import mistakes

    autograded = nbformat.read(course.root / "autograded" / "missing_scale" / ASSIGNMENT / NOTEBOOK_NAME, as_version=4)
    printed = "".join(
        output.get("text", "") for cell in grade_cells(autograded).values() for output in cell.outputs
    )
    assert mistakes.BY_ID["missing_scale"].title in printed and "explained above" in printed


# --- the course's second exercise, through the same nbgrader --------------------------------------


@pytest.mark.parametrize(("student", "full"), [("solution", True), ("stubs", False)])
def test_the_second_exercise_scores_its_reference_full_and_its_stub_zero_cell_by_group_cell(second_course, student, full):
    totals = harness.second_exercise_totals()
    row = second_course.exported[student]
    assert row["assignment"] == SECOND.name
    assert (float(row["score"]), float(row["max_score"])) == ((sum(totals.values()) if full else 0), sum(totals.values()))
    # One graded cell per group of the exercise's own, in its order, each worth that group's points.
    expected = {f"group_{number}_{group}": (totals[group] if full else 0) for number, group in enumerate(SECOND.group_titles, start=1)}
    assert second_course.cell_scores[student] == pytest.approx(expected)


def test_the_second_exercises_hidden_group_is_not_in_its_release(second_course):
    source = nbformat.read(second_course.root / "source" / SECOND.name / SECOND.notebook, as_version=4)
    hidden = [cell.metadata.nbgrader["grade_id"] for cell in grade_cells(source).values() if BEGIN_HIDDEN in cell.source]
    assert hidden == [f"group_{list(SECOND.group_titles).index(SECOND.hidden_group) + 1}_{SECOND.hidden_group}"]
    assert BEGIN_HIDDEN not in second_course.released and f'points("{SECOND.hidden_group}"' not in second_course.released
    assert release.leaked_solution_lines(second_course.root / "release") == []
