"""The lesson says what the grader does: its group numbers and titles are the score table's,
it tells a .py student how to see the score (not "the cell below"), and the release's
example.py offers no option that needs a folder the release does not have."""

from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest

from grader.handout import notebook
from grader.scoring import GROUP_TITLES
from grading import REPO_ROOT

LESSON = (REPO_ROOT / "exercises" / "LESSON.md").read_text(encoding="utf-8")
SCORE_CELL = next(cell.source for cell in nbformat.read(notebook.NOTEBOOK_PATH, as_version=4).cells if cell.id == "lesson-score")
TITLES = {int(title.split(".")[0]): title.split(". ", 1)[1] for title in GROUP_TITLES.values()}  # 7 -> "reference examples"
HIDDEN_GROUP = int(GROUP_TITLES["reference"].split(".")[0])


def sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.;])\s+", " ".join(text.split()))


@pytest.mark.parametrize("text", [LESSON, SCORE_CELL], ids=["LESSON.md", "notebook"])
def test_the_groups_the_lesson_names_are_the_score_tables(text):
    named = re.findall(r"[Gg]roup (\d) \(([^)]*)\)", " ".join(text.split()))
    assert named, "the score section names no group"
    for number, title in named:
        assert title.replace(", hidden", " (hidden)") == TITLES[int(number)], (number, title)
    drawn = [sentence for sentence in sentences(text) if "drawn when your work is graded" in sentence]
    # Data drawn at grading time is the hidden group's: the sentence that says so names it.
    assert drawn and all(re.search(rf"[Gg]roup {HIDDEN_GROUP}\b", sentence) for sentence in drawn), drawn


def test_the_lesson_for_the_py_file_says_how_to_see_the_score_and_the_notebook_points_at_its_cell():
    assert "cell below" not in LESSON
    assert "python -m pytest grader" in LESSON.split("## Your score", 1)[1]
    assert "The cell below shows your score" in SCORE_CELL


@pytest.mark.slow
def test_the_releases_example_offers_no_solution_option(tmp_path):
    out = tmp_path / "release"
    finished = subprocess.run([sys.executable, "-m", "grader", "release", str(out)], cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    example = out / "exercises" / "example.py"
    assert "--solution" not in example.read_text(encoding="utf-8").split('"""')[1]  # its docstring, the usage it shows
    shown = subprocess.run([sys.executable, str(example), "--help"], cwd=out, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "--solution" not in shown.stdout, shown.stdout + shown.stderr


def test_the_dtype_contract_is_written_where_students_read_it():
    """Outputs keep the inputs' dtype and device: the lesson, the module's conventions and both
    forward passes' docstrings say so (a visible check holds the code to it)."""
    stub = (REPO_ROOT / "exercises" / "multi_head_attention.py").read_text(encoding="utf-8")
    assert "keeps the inputs' dtype and device" in " ".join(LESSON.split())
    assert "keeps the dtype and device of ``inputs``" in " ".join(stub.split())
    assert " ".join(stub.split()).count("in the dtype and on the device of ``inputs``") == 2
