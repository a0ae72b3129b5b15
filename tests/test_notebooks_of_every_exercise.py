"""Every exercise that cuts its lesson into a notebook (its declaration's ``lesson_parts``), read
from the registry: its committed notebook is the generator's, generating it leaves every other
file alone (a hand-written lesson page, the other exercises' files), its setup cell chooses its
exercise, and, in a kernel, its stubs grade at the stub's score and its solution at full marks.

Each exercise's notebook is made in a process of its own (``python -m grader notebook
--exercise NAME``): one process grades one exercise (grader/seam/registry.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from grader.seam import registry
from grading import REPO_ROOT

WITH_NOTEBOOKS = [name for name in registry.names() if registry.exercise(name).lesson_parts is not None]
# The exercise this process grades has its notebook checked in this process (tests/test_notebook.py);
# the others are checked by a process of their own (one process grades one exercise).
OTHERS = [name for name in WITH_NOTEBOOKS if name != registry.exercise().name]
# A kernel that chose nothing grades the course's first exercise: the setup cell's choice shows
# on the exercises after it.
AFTER_THE_FIRST = [name for name in WITH_NOTEBOOKS if name != registry.course_order()[0]]


def chosen_by_nobody() -> dict[str, str]:
    """This process's environment without a chosen exercise: each command names its own."""
    return {key: value for key, value in os.environ.items() if key != registry.CHOSEN}


def run_grader(*arguments: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", *arguments], cwd=cwd, env=chosen_by_nobody(), capture_output=True,
        text=True, timeout=300, stdin=subprocess.DEVNULL,
    )


def test_more_than_the_first_exercise_has_a_notebook():
    assert len(WITH_NOTEBOOKS) >= 2, f"only {WITH_NOTEBOOKS} declare lesson_parts"


@pytest.mark.parametrize("name", OTHERS)
def test_the_committed_notebook_and_lesson_are_what_the_generator_makes(name):
    finished = run_grader("notebook", "--exercise", name, "--check")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert (REPO_ROOT / "exercises" / registry.exercise(name).notebook).is_file()


@pytest.mark.slow  # a copy of the repository, and every exercise's notebook made again in it
def test_generating_every_notebook_leaves_hand_written_lessons_and_the_other_exercises_files_alone(tmp_path):
    # A copy of the repository's grader, solutions and exercises (the generator writes beside grader/).
    shutil.copytree(REPO_ROOT / "grader", tmp_path / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("solutions", "exercises"):
        shutil.copytree(REPO_ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    before = {path.name: path.read_bytes() for path in (tmp_path / "exercises").iterdir() if path.is_file()}
    for name in WITH_NOTEBOOKS:
        finished = run_grader("notebook", "--exercise", name, cwd=tmp_path)
        assert finished.returncode == 0, finished.stdout + finished.stderr
    after = {path.name: path.read_bytes() for path in (tmp_path / "exercises").iterdir() if path.is_file()}
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    # Every committed file is current, so generating them all again changes none of them.
    assert changed == [], f"generating the notebooks rewrote {changed}"


@pytest.mark.parametrize("name", AFTER_THE_FIRST)
def test_the_setup_cell_chooses_the_notebooks_own_exercise(name):
    nb = nbformat.read(REPO_ROOT / "exercises" / registry.exercise(name).notebook, as_version=4)
    setup = next(cell.source for cell in nb.cells if cell.id == "setup")
    # Run from the exercises' folder as Jupyter runs it, in a process that chose no exercise: the
    # checks it starts are of the notebook's own exercise, not of the course's first.
    script = setup + "\nfrom grader import scoring\nprint('graded:', scoring.EXERCISE.name)\n"
    finished = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT / "exercises", env=chosen_by_nobody(), capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stderr
    assert f"graded: {name}" in finished.stdout, finished.stdout + finished.stderr


# --- in a kernel, as Jupyter runs it ---------------------------------------------------------


def execute(nb) -> nbformat.NotebookNode:
    """Run every cell as Jupyter would, from exercises/ (where the notebooks live)."""
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO_ROOT / "exercises")}})
    client.execute()
    return nb


def last_check(nb) -> str:
    checks = [cell for cell in nb.cells if cell.cell_type == "code" and "grader-check" in cell.metadata.get("tags", [])]
    return "".join(output.get("text", "") for output in checks[-1].outputs if output.output_type == "stream")


def score_shown(text: str) -> tuple[int, int]:
    found = re.search(r"Score so far: (\d+)/(\d+)", text)
    assert found, text
    return int(found[1]), int(found[2])


@pytest.mark.slow  # the chosen exercise's notebooks run in a kernel in tests/test_notebook.py
@pytest.mark.parametrize("name", OTHERS)
def test_in_a_kernel_the_stubs_grade_at_the_stubs_score_and_the_solution_at_full_marks(name, tmp_path):
    declaration = registry.exercise(name)
    filled_path = tmp_path / "filled.ipynb"
    made = run_grader("notebook", "--exercise", name, "--filled", str(filled_path), cwd=_scratch_copy(tmp_path))
    assert made.returncode == 0, made.stdout + made.stderr
    committed = nbformat.read(REPO_ROOT / "exercises" / declaration.notebook, as_version=4)
    with ThreadPoolExecutor(max_workers=2) as pool:
        filled, stubs = pool.map(execute, [nbformat.read(filled_path, as_version=4), committed])
    earned, out_of = score_shown(last_check(filled))
    assert earned == out_of and "Every check passes." in last_check(filled), last_check(filled)

    # The notebooks as handed in, graded by `pytest grader` beside the .py stub and the solution.
    handed_in = tmp_path / "handed_in"
    handed_in.mkdir()
    nbformat.write(filled, handed_in / "filled_notebook.ipynb")
    nbformat.write(stubs, handed_in / "stub_notebook.ipynb")
    shutil.copy(REPO_ROOT / "exercises" / declaration.student_file, handed_in / "stub_file.py")
    shutil.copy(REPO_ROOT / "solutions" / declaration.solution, handed_in / "solution_file.py")
    results = tmp_path / "results.json"
    graded = subprocess.run(
        [sys.executable, "-m", "pytest", "grader", "-q", "-p", "no:cacheprovider", "--results-json", str(results),
         *(f"--submission={path}" for path in sorted(handed_in.iterdir()))],
        cwd=REPO_ROOT, env={**chosen_by_nobody(), registry.CHOSEN: name}, capture_output=True, text=True,
        timeout=600, stdin=subprocess.DEVNULL,
    )
    assert results.is_file(), graded.stdout[-3000:] + graded.stderr[-3000:]
    scores = {key: result["score"] for key, result in json.loads(results.read_text())["submissions"].items()}
    assert scores["filled_notebook"] == scores["solution_file"] == out_of, scores
    assert scores["stub_notebook"] == scores["stub_file"], scores
    # What the stub notebook's last check showed in the kernel is the stub's score too.
    assert score_shown(last_check(stubs)) == (scores["stub_file"], out_of), (scores, last_check(stubs))


def _scratch_copy(tmp_path: Path) -> Path:
    """A copy of the repository's grader and solutions, where the generator may write (its
    exercises/ folder too), so that making the filled notebook touches nothing committed."""
    root = tmp_path / "repository"
    shutil.copytree(REPO_ROOT / "grader", root / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("solutions", "exercises"):
        shutil.copytree(REPO_ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return root
