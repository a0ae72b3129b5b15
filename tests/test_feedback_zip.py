"""Feedback back to Canvas: a class named as Canvas's "Download Submissions" names it, graded, and
exported with ``--feedback-zip``: one file per student, each under the name Canvas's re-upload
matches (canvas-lms, ``infer_comment_context_from_filename``), each the student's own file with
the feedback in front; pages that stand alone; similar pairs listed; a column without its id warned."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile

import nbformat
import pytest

from grader.lms import feedback_zip
from grader.class_view import class_results
from grading import REPO_ROOT
import tiers

SOLUTION = (REPO_ROOT / "solutions" / "multi_head_attention.py").read_text(encoding="utf-8")
STUB = (REPO_ROOT / "exercises" / "multi_head_attention.py").read_text(encoding="utf-8")
ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section\r\n"
    "    Points Possible,,,,\r\n"
    "Smith Jane,1234,s1,jsmith,A\r\n"
    "Lee Bob,2345,s2,blee,A\r\n"
    "Ng Carol,3456,s3,cng,A\r\n"
    "Ray Dan,4567,s4,dray,A\r\n"
)


def canvas_rule(name: str) -> tuple[str, str] | None:
    """Canvas's own rule, as written in canvas-lms: ``filename.split('_').grep(/^\\d+$/).take(2)``."""
    digits = [part for part in name.split("_") if re.fullmatch(r"\d+", part)]
    return (digits[0], digits[1]) if len(digits) >= 2 else None


def _notebook(code: str) -> str:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("My attempt"), nbformat.v4.new_code_cell(code)]
    return nbformat.writes(notebook)


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # a class graded and exported
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("canvas")
    submissions = root / "submissions"
    submissions.mkdir()
    renamed = SOLUTION.replace("queries", "qs").replace("concatenated", "joined")  # still correct
    (submissions / "smithjane_1234_90001_multi_head_attention.py").write_text(SOLUTION)
    (submissions / "leebob_late_2345_90002_multi_head_attention.py").write_text(renamed)  # a copy, renamed
    (submissions / "ngcarol_3456_90003_multi_head_attention.ipynb").write_text(_notebook(STUB))
    (submissions / "dray.py").write_text(STUB)  # not named by Canvas: no file in the zip
    out = root / "out"
    batch = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out), "--quiet", "--jobs", "2"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    assert batch.returncode == 0, batch.stderr
    (root / "roster.csv").write_text(ROSTER)
    export = subprocess.run(
        [sys.executable, "-m", "grader", "export", str(out), "--roster", str(root / "roster.csv"), "--assignment", "HW3",
         "--out", str(root / "grades.csv"), "--feedback-zip", str(root / "feedback.zip")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert export.returncode == 0, export.stderr
    return root, out, export


def test_the_zip_holds_one_file_per_canvas_named_student_matched_by_canvas_rule(exported):
    root, out, export = exported
    with zipfile.ZipFile(root / "feedback.zip") as archive:
        names = sorted(archive.namelist())
    assert names == [
        "leebob_late_2345_90002_multi_head_attention.py",
        "ngcarol_3456_90003_multi_head_attention.ipynb",
        "smithjane_1234_90001_multi_head_attention.py",
    ]
    assert {canvas_rule(name) for name in names} == {("1234", "90001"), ("2345", "90002"), ("3456", "90003")}
    assert "dray" in export.stdout and "not named as Canvas" in export.stdout


def test_each_file_is_the_students_own_with_the_feedback_in_front(exported):
    root, out, _ = exported
    with zipfile.ZipFile(root / "feedback.zip") as archive:
        python = archive.read("smithjane_1234_90001_multi_head_attention.py").decode()
        notebook = nbformat.reads(archive.read("ngcarol_3456_90003_multi_head_attention.ipynb").decode(), as_version=4)
    head, _, rest = python.partition("your file, as you submitted it")
    assert "Feedback from the autograder" in head and all(line.startswith("#") for line in head.splitlines() if line)
    assert rest.split("\n", 2)[2] == SOLUTION  # the student's code, unchanged, after the comment
    compile(python, "annotated.py", "exec")  # still a Python file the student can run
    nbformat.validate(notebook)
    assert notebook.cells[0].cell_type == "markdown" and "Feedback from the autograder" in notebook.cells[0].source
    assert [cell.source for cell in notebook.cells[1:]] == ["My attempt", STUB]


def test_the_zip_is_the_same_every_time_it_is_written(exported, tmp_path):
    root, out, _ = exported
    submissions = class_results.read_class_results(out / "results.json")["submissions"]
    feedback_zip.write_feedback_zip(tmp_path / "again.zip", out, submissions, root / "submissions")
    assert (tmp_path / "again.zip").read_bytes() == (root / "feedback.zip").read_bytes()


def test_a_column_without_canvas_id_is_warned_about(exported):
    _, _, export = exported
    assert "no Canvas assignment id" in export.stderr and "create a new assignment" in export.stderr


def test_feedback_pages_stand_alone(exported):
    _, out, _ = exported
    pages = sorted((out / "feedback").glob("*.html"))
    assert pages
    for page in pages:
        assert "<a " not in page.read_text(encoding="utf-8"), page.name  # no link that breaks outside OUT


def test_the_batch_keeps_what_it_graded_and_lists_the_copied_pair(exported):
    _, out, _ = exported
    document = json.loads((out / "results.json").read_text())
    graded = {path.stem for path in (out / "graded").glob("*.py")}
    assert graded == set(document["submissions"])
    pairs = document["similar_submissions"]["pairs"]
    assert [(pair["first"], pair["second"]) for pair in pairs] == [
        ("leebob_late_2345_90002_multi_head_attention", "smithjane_1234_90001_multi_head_attention")
    ]
    report = (out / "report.html").read_text(encoding="utf-8")
    assert '<section id="similar">' in report


@pytest.mark.parametrize(
    "name, ids",
    [
        ("smithjane_1234_5678_hw.py", ("1234", "5678")),
        ("smithjane_late_1234_5678_hw_3_final.py", ("1234", "5678")),
        ("hw3.py", None),
        ("alice_12.py", None),
    ],
)
def test_canvas_ids_follow_canvas_rule(name, ids):
    assert feedback_zip.canvas_ids(name) == ids == canvas_rule(name)
