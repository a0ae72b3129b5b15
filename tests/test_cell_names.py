"""One name for a notebook cell wherever the notebook is graded.

A message about a notebook names the cell as the student's front end shows it: ``In [8]``
when the cell has run (its execution count), else ``code cell 5`` (its place among the code
cells, as the words say), and always its first line. The same rule holds at the desk
(``pytest grader --submission nb.ipynb``), in the batch (and so on Gradescope and
PrairieLearn, which grade through it), and in the notebook's own check cells under a real
kernel; no message names a line of the joined file the student never saw.
"""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from grader.handout import notebook
from grader.class_view import class_results
from grading import REPO_ROOT, grade

BROKEN = ("return model_dim // num_heads", "return model_dim // num_heads // 0")
FIRST_LINE = "def head_dimension("


def broken_notebook(execution_counts: bool) -> dict:
    """The filled-in notebook with an error in head_dimension; with ``execution_counts``, each
    code cell carries the count of a run out of order (3, 5, 7, ...), as a saved notebook does."""
    document = json.loads(notebook.notebook_text(filled=True).replace(*BROKEN))
    code = [cell for cell in document["cells"] if cell["cell_type"] == "code"]
    for number, cell in enumerate(code):
        cell["execution_count"] = 3 + 2 * number if execution_counts else None
    return document


def label_of_broken_cell(document: dict, execution_counts: bool) -> str:
    code = [cell for cell in document["cells"] if cell["cell_type"] == "code"]
    number, cell = next((n, c) for n, c in enumerate(code, start=1) if "".join(c["source"]).startswith(FIRST_LINE))
    assert number < document["cells"].index(cell) + 1, "the notebook must have markdown cells before the broken one"
    return f"In [{cell['execution_count']}]" if execution_counts else f"code cell {number}"


def messages_of(submission: dict) -> list[str]:
    return [test["message"] for test in submission["tests"] if test["outcome"] != "passed"]


def expect_named(messages: list[str], label: str) -> None:
    assert messages and not any("multi_head_attention.py:" in message for message in messages), messages[:2]
    assert any(f"{label} (the cell starting `{FIRST_LINE}" in message for message in messages), messages[:2]


@pytest.mark.parametrize("execution_counts", [True, False], ids=["run", "never-run"])
def test_the_desk_names_a_cell_by_its_execution_count_or_its_place_among_code_cells(tmp_path, execution_counts):
    document = broken_notebook(execution_counts)
    path = tmp_path / "student.ipynb"
    path.write_text(json.dumps(document), encoding="utf-8")
    run = grade([path], tmp_path)
    expect_named(messages_of(run.results["student"]), label_of_broken_cell(document, execution_counts))


def batch_result(document: dict, tmp_path) -> dict:
    """The notebook handed in as nina.ipynb and graded by `python -m grader batch`: her result."""
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "nina.ipynb").write_text(json.dumps(document), encoding="utf-8")
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(tmp_path / "out"), "--quiet"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return class_results.read_class_results(tmp_path / "out" / "results.json")["submissions"]["nina"]


@pytest.mark.slow
def test_the_batch_names_the_cell_as_the_desk_does(tmp_path):
    document = broken_notebook(execution_counts=True)
    expect_named(messages_of(batch_result(document, tmp_path)), label_of_broken_cell(document, True))


@pytest.mark.slow
def test_the_check_cells_name_a_cell_by_the_number_the_kernel_gave_its_run():
    nb = nbformat.reads(notebook.notebook_text(filled=True).replace(*BROKEN), as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(REPO_ROOT / "exercises")}})
    client.execute()
    broken = next(cell for cell in nb.cells if cell.cell_type == "code" and cell.source.startswith(FIRST_LINE))
    shown = "".join(output.get("text", "") for cell in nb.cells if cell.cell_type == "code" for output in cell.outputs
                    if output.output_type == "stream")
    assert f"(the cell starting `{FIRST_LINE}" in shown, shown[-2000:]
    assert f"In [{broken.execution_count}] (the cell starting `{FIRST_LINE}" in shown, shown[-2000:]


@pytest.mark.slow
def test_the_batch_names_the_cell_of_a_syntax_error_and_why_a_name_is_missing_never_the_joined_file(tmp_path):
    # A cell that does not compile is that cell's error, as in a kernel: the notebook's other
    # cells still run, and the checks that need head_dimension say which cell failed to define it.
    document = json.loads(json.dumps(broken_notebook(execution_counts=True)).replace(
        "return model_dim // num_heads // 0", "return model_dim // num_heads +"))
    label = label_of_broken_cell(document, True)
    result = batch_result(document, tmp_path)
    assert "multi_head_attention.py" not in json.dumps(result)
    assert result["notebook"] == [
        f"{label} (the cell starting `{FIRST_LINE}model_dim: int, num_heads: int) -> int:`) raised SyntaxError: "
        "invalid syntax at line 19; the grading ran the cells after it, as a kernel does."
    ]
    missing = [message for message in messages_of(result) if message.startswith("`head_dimension` is not defined")]
    assert missing and all(f"its cell, {label} (the cell starting `{FIRST_LINE}" in message for message in missing), missing
    assert not any("renamed" in message for message in messages_of(result))
