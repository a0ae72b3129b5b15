"""An nbgrader course for the exercise: ``python -m grader nbgrader COURSE_DIR``.

Writes ``COURSE_DIR/nbgrader_config.py`` and
``COURSE_DIR/source/multi_head_attention/multi_head_attention.ipynb``, built from the same
solution and lesson as the exercise notebook (``grader.notebook``):

* the solution's code cells; those holding ``### BEGIN SOLUTION`` regions are nbgrader
  solution cells (``generate_assignment`` replaces each region with a stub);
* a locked setup cell that finds this repository (its absolute path is written into the
  cell and into nbgrader_config.py, which the kernel inherits as ``GRADER_ROOT``) and imports
  torch, so that no graded cell ever shows torch's start-up messages on stderr;
* one graded, locked test cell per group of the pytest grader, worth that group's points.
  Its value is ``notebook_checks.points(group, out_of)``: the points the pytest grader gives
  the notebook's code on that group, which nbgrader takes as the cell's partial credit. The
  grader runs once per notebook, in a fresh process, and the seven cells share its result,
  so nbgrader's scores are the pytest grader's scores (grader/notebook_checks.py). The
  hidden group's call sits between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``.

nbgrader runs the student's cells and its test cells in one kernel, so a student's code can
tamper with the checks there; the batch grader (``python -m grader batch``) does not have
that weakness.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_notebook

from grader import notebook_checks
from grader.handout import notebook, stubs
from grader.reading.notebooks import is_grader_cell
from grader.scoring import EXERCISE, GROUP_TITLES, GROUPS, HIDDEN_TESTS
from grader.seam import registry

REPO_ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT = EXERCISE.name  # the assignment is the exercise, by its name
NOTEBOOK_NAME = EXERCISE.notebook
ROOT_VARIABLE = "GRADER_ROOT"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
CODE_STUB = '# YOUR CODE HERE\nraise NotImplementedError("not written yet")'
SCHEMA_VERSION = 3

HOW_IT_WORKS = """\
## How this notebook works

* **Run the setup cell first** (just below): it finds the grader and imports torch.
* Write the code where a cell says `# YOUR CODE HERE` and raises `NotImplementedError`; the
  `# TODO` above it says what to do, and the docstrings state the conventions.
* The cells at the end grade your code, one group of checks per cell, with exactly the checks
  of the pytest grader. Each shows the points you earn on its group and what to fix. The last
  one (the reference group) is filled in when your work is graded.
* Everything except the setup cell and the grading cells is your submission. Keep quick
  experiments under `if __name__ == "__main__":` or delete them before you submit.
"""

GRADING_LESSON = """\
## Grading

Each cell below runs the grader's checks of one group on the code you have run above (the
grader runs once; later cells reuse its result) and shows the points you earn on that group.
"""

CONFIG_TEMPLATE = '''\
"""nbgrader settings for one exercise of the course (written by `python -m grader nbgrader`).

Run nbgrader in this folder with the grader's environment first on PATH: nbgrader runs
`alembic` from PATH, and the kernel that grades runs in nbgrader's own Python, which needs
torch. For example:

    PATH={bin_folder}:$PATH nbgrader generate_assignment {assignment}
    PATH={bin_folder}:$PATH nbgrader autograde {assignment}
"""

import os

c = get_config()  # noqa: F821 - nbgrader provides get_config()

# The repository holding the grader, its hidden tests and the reference solution: the
# notebook's setup cell looks there first (the kernel inherits this variable). If the
# repository moves, change this line; the course need not be regenerated.
os.environ.setdefault("{root_variable}", {root!r})
# The seed of the data the hidden checks draw, drawn when the course was written: every
# student is graded on the same data, and a rerun gives the same marks (as one batch run does).
os.environ.setdefault("{seed_variable}", "{seed}")
# The exercise this course grades (grader/exercises/{assignment}): the kernel's checks grade it.
os.environ["{exercise_variable}"] = "{assignment}"

c.CourseDirectory.course_id = "{assignment}"
c.ClearSolutions.code_stub = {{"python": {code_stub!r}}}
# The first graded cell runs the whole grader once: seconds, or minutes when a submission loops.
c.Execute.timeout = 600
'''


# --- the grader's points ------------------------------------------------------------------


def group_points(repo_root: Path = REPO_ROOT) -> dict[str, int]:
    """The points of every group, as the pytest grader counts them (it is asked, not copied)."""
    with tempfile.TemporaryDirectory(prefix="grader-points-") as folder:
        results_path = Path(folder) / "points.json"
        finished = subprocess.run(
            [
                sys.executable, "-m", "pytest", "grader", "--collect-only", "-q", "-p", "no:cacheprovider",
                "-p", "pytest_timeout", "--results-json", str(results_path), "--exercise", EXERCISE.name,
            ],
            cwd=repo_root, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
            env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        )
        if not results_path.is_file():
            raise RuntimeError(f"could not collect the grader's tests:\n{(finished.stdout + finished.stderr)[-2000:]}")
        (result,) = json.loads(results_path.read_text(encoding="utf-8"))["submissions"].values()
    return {group: points["max"] for group, points in result["groups"].items()}


def hidden_groups() -> set[str]:
    return {path.stem.removeprefix("test_") for path in HIDDEN_TESTS.glob("test_*.py")}


# --- the source notebook ------------------------------------------------------------------


def _nbgrader(grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False, points: int | None = None) -> dict:
    fields = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA_VERSION,
              "solution": solution, "task": False}
    return {"nbgrader": fields | ({"points": points} if points is not None else {})}


def grading_cell_source(group: str, points: int, hidden: bool) -> str:
    call = f'notebook_checks.points("{group}", out_of={points})'
    if hidden:
        call = f"{BEGIN_HIDDEN}\n{call}\n{END_HIDDEN}"
        comment = f"# {GROUP_TITLES[group]}: {points} points, checked when your work is graded."
    else:
        comment = f"# {GROUP_TITLES[group]}: {points} points. This cell's value is the points your code earns."
    return f"{notebook.CHECK_SOURCE.splitlines()[0]}\n{comment}\n{call}\n"


def build_source_notebook(
    solution: str, points: dict[str, int], root: Path = REPO_ROOT, hidden: set[str] | None = None,
    level: str = stubs.DEFAULT_LEVEL, install_from: str | None = None,
):
    """The instructor's version, solutions and hidden tests included; nbgrader releases it.
    ``level``: the scaffolding (grader.handout.stubs), which decides what the solution cells hold.
    ``install_from``: where a student's copy, alone on Colab or a hosted Jupyter, installs the
    student grader from (grader.handout.notebook.setup_source); the course's own autograding finds
    this repository first, hidden tests included."""
    hidden = hidden_groups() if hidden is None else hidden
    solution = stubs.resolve_level(solution, level)
    unknown = set(points) - set(GROUPS)
    if unknown:
        raise ValueError(f"groups the notebook does not know: {sorted(unknown)}")
    pieces = notebook.definitions(solution)
    root_place = f'Path(os.environ.get("{ROOT_VARIABLE}", {str(root)!r}))'
    cells = [notebook.intro_cells(solution)[0], notebook.markdown("how-it-works", HOW_IT_WORKS)]
    cells.append(notebook.code("setup", notebook.setup_source((root_place,), install_from), tags=(notebook.SETUP_TAG,), **_nbgrader("setup", locked=True)))
    for part in notebook.parts(solution):
        cells.append(notebook.markdown(f"lesson-{part.key}", notebook.part_lesson(part, level)))
        for name in part.names:
            text = pieces[name]
            if stubs.BEGIN_SOLUTION in text:
                cells.append(notebook.code(f"code-{name}", text, **_nbgrader(f"answer_{name}", solution=True)))
            else:
                cells.append(notebook.code(f"code-{name}", text))
    cells.append(notebook.markdown("lesson-grading", GRADING_LESSON))
    for number, group in enumerate((group for group in GROUPS if group in points), start=1):
        grade_id = f"group_{number}_{group}"
        cells.append(
            notebook.code(
                f"test-{group}", grading_cell_source(group, points[group], group in hidden), tags=(notebook.CHECK_TAG,),
                **_nbgrader(grade_id, grade=True, locked=True, points=points[group]),
            )
        )
    return new_notebook(cells=cells, metadata=notebook.NOTEBOOK_METADATA)


def write_course(
    course_dir: Path, repo_root: Path = REPO_ROOT, points: dict[str, int] | None = None, level: str = stubs.DEFAULT_LEVEL,
    install_from: str | None = None,
) -> Path:
    course_dir = Path(course_dir).resolve()
    points = group_points(repo_root) if points is None else points
    solution = (repo_root / "solutions" / EXERCISE.solution).read_text(encoding="utf-8")
    source = course_dir / "source" / ASSIGNMENT / NOTEBOOK_NAME
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(notebook.dumps(build_source_notebook(solution, points, repo_root, level=level, install_from=install_from)), encoding="utf-8")
    config = CONFIG_TEMPLATE.format(
        bin_folder=Path(sys.executable).parent, assignment=ASSIGNMENT, root_variable=ROOT_VARIABLE,
        root=str(repo_root), code_stub=CODE_STUB, seed_variable=notebook_checks.SEED_VARIABLE,
        seed=secrets.randbelow(2**31),
        exercise_variable=registry.CHOSEN,
    )
    (course_dir / "nbgrader_config.py").write_text(config, encoding="utf-8")
    return course_dir


# --- submissions made from code (the tests grade the course with them) ---------------------


def answer_cells(implementation: str) -> dict[str, str]:
    """The code cells a student who wrote ``implementation`` would hand in, by cell id."""
    pieces = notebook.definitions(notebook.exercise_source(implementation, filled=True))
    return {f"code-{name}": text for name, text in pieces.items()}


def fill_in(released: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with its code cells replaced by ``answers`` (by cell id)."""
    filled = nbformat.from_dict(json.loads(json.dumps(released)))
    for cell in filled.cells:
        if cell.cell_type == "code" and not is_grader_cell(cell.source) and cell.get("id") in answers:
            cell.source = answers[cell.id]
    return filled


def add_arguments(parser) -> None:
    parser.add_argument("course_dir", type=Path, help="the course folder to write (created if missing)")
    stubs.add_level_argument(parser)
    notebook.add_install_from_argument(parser)


def run(arguments) -> int:
    level = arguments.level or stubs.recorded_level()
    course = write_course(arguments.course_dir, level=level, install_from=arguments.install_from)
    print(f"wrote the nbgrader course in {course} ({level} scaffolding): nbgrader_config.py and source/{ASSIGNMENT}/{NOTEBOOK_NAME}")
    print(f"next: cd {course} && PATH={Path(sys.executable).parent}:$PATH nbgrader generate_assignment {ASSIGNMENT}")
    return 0
