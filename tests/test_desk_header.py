"""The header of `pytest grader --submission PATH`, as the student's terminal shows it: the
session is rooted at the grader's folder wherever the submission lies, and "grading:" names
what the student named (a notebook, not the staged copy of its code)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from grader.handout import notebook
from grading import REPO_ROOT

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"


def header_of(path) -> list[str]:
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "grader", "-p", "no:cacheprovider", "--submission", str(path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr
    return finished.stdout.split("collected", 1)[0].splitlines()


@pytest.mark.parametrize("kind", ["py", "ipynb"])
def test_a_submission_outside_the_folder_keeps_the_root_and_the_name_it_was_given(tmp_path, kind):
    path = tmp_path / f"work.{kind}"
    path.write_text(SOLUTION.read_text() if kind == "py" else notebook.notebook_text(filled=True), encoding="utf-8")
    header = header_of(path)
    assert f"rootdir: {REPO_ROOT}" in header, header
    assert f"grading: {path}" in header, header
