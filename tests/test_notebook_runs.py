"""A notebook is graded as its kernel ran it (grader/reading/notebooks.py, grader/reading/loading.py run_cells).

Its cells run one by one, top to bottom: the body of a cell magic that runs Python
(``%%time``, ``%%capture``) is code, a cell magic that runs something else (``%%bash``,
``%%timeit``) is skipped and said to be, a cell that raises or asks for ``input()`` is named
in one line and the next cell runs, and a function defined in two cells is graded from the
later one, saying so. The same at the desk (in-process) and in the batch (the sandbox).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader.handout import notebook
from grader.class_view import class_results
from grading import REPO_ROOT, grade

# A toy model trained at the top level for a fixed amount of CPU time (not of wall time: under
# load it takes longer on the clock, never less work), as real notebooks carry.
TRAINING = (
    "import time\n"
    "started = time.process_time()\n"
    "model = MultiHeadSelfAttention(8, 2)\n"
    "optimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n"
    "while time.process_time() - started < 3:\n"
    "    loss = model(torch.randn(4, 5, 8)).output.pow(2).mean()\n"
    "    optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)


def filled_notebook() -> dict:
    """The filled-in exercise notebook, saved after a run: cell i has execution count 3 + 2 i."""
    document = json.loads(notebook.notebook_text(filled=True))
    for number, cell in enumerate(cell for cell in document["cells"] if cell["cell_type"] == "code"):
        cell["execution_count"] = 3 + 2 * number
    return document


def student_cells(document: dict) -> list[dict]:
    return [cell for cell in document["cells"] if cell["cell_type"] == "code" and not "".join(cell["source"]).startswith("#| grader")]


def code_cell(source: str, count: int) -> dict:
    return {"cell_type": "code", "execution_count": count, "metadata": {}, "outputs": [], "source": source}


def magic_notebook() -> dict:
    """Every cell of the student's under %%time or %%capture; a %%bash cell and a %%timeit cell
    that would break head_dimension if its body were kept."""
    document = filled_notebook()
    for number, cell in enumerate(student_cells(document)):
        cell["source"] = ("%%time\n" if number % 2 else "%%capture captured\n") + "".join(cell["source"])
    document["cells"] += [
        code_cell("%%bash\necho 'a shell, not Python'\n", 90),
        code_cell("%%timeit\ndef head_dimension(model_dim, num_heads):\n    return 0\n", 91),
    ]
    return document


def kernel_notebook() -> dict:
    """A complete notebook that also trains a toy model for 3 s of CPU, asks for input(), has a
    cell left raising, and defines head_dimension a second time (the same, in a later cell)."""
    document = filled_notebook()
    again = next(cell for cell in student_cells(document) if "".join(cell["source"]).startswith("def head_dimension("))
    document["cells"] += [
        code_cell(TRAINING, 92),
        code_cell("name = input('Your name? ')\n", 93),
        code_cell("raise ValueError('a stale experiment')\n", 94),
        code_cell("".join(again["source"]), 95),
    ]
    return document


def write(folder: Path, name: str, document: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def batch(submissions: Path, out: Path, preexec_fn=None) -> dict:
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out), "--quiet"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL, preexec_fn=preexec_fn,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return class_results.read_class_results(out / "results.json")["submissions"]


def expect_magics_read_as_the_kernel_runs_them(result: dict) -> None:
    assert result["score"] == 100, [t["message"] for t in result["tests"] if t["outcome"] != "passed"][:3]
    assert result["notebook"] == [
        "In [90] (the cell starting `%%bash`) was skipped: %%bash: it runs a shell script.",
        "In [91] (the cell starting `%%timeit`) was skipped: %%timeit: it times its body inside a function of "
        "its own, so nothing the body defines is kept.",
    ]


def expect_a_kernels_run(result: dict) -> None:
    assert result["score"] == 100, [t["message"] for t in result["tests"] if t["outcome"] != "passed"][:3]
    said = result["notebook"]
    assert len(said) == 3, said
    assert said[0].startswith("In [93] (the cell starting `name = input('Your name? ')`) raised EOFError: "), said
    assert "input() gets no answer when the notebook is graded" in said[0], said
    assert said[1].startswith("In [94] (the cell starting `raise ValueError('a stale experiment')`) raised ValueError: "
                              "a stale experiment at line 1"), said
    assert all(line.endswith("the grading ran the cells after it, as a kernel does.") for line in said[:2]), said
    assert said[2].startswith("`head_dimension` is defined in 2 cells (In [7] and In [95]): the grader graded the "
                              "definition in In [95] (the cell starting `def head_dimension("), said


@pytest.mark.slow
def test_cell_magics_that_run_python_are_graded_and_the_others_said_skipped_at_the_desk_and_in_the_batch(tmp_path):
    path = write(tmp_path / "class", "magic", magic_notebook())
    expect_magics_read_as_the_kernel_runs_them(grade([path], tmp_path).results["magic"])
    expect_magics_read_as_the_kernel_runs_them(batch(tmp_path / "class", tmp_path / "out")["magic"])


@pytest.mark.slow
def test_training_input_and_raising_cells_run_as_in_a_kernel_at_the_desk_and_in_the_batch(tmp_path):
    path = write(tmp_path / "class", "kernel", kernel_notebook())
    expect_a_kernels_run(grade([path], tmp_path).results["kernel"])
    expect_a_kernels_run(batch(tmp_path / "class", tmp_path / "out")["kernel"])
    feedback = (tmp_path / "out" / "feedback" / "kernel.md").read_text(encoding="utf-8")
    assert "How your notebook ran:" in feedback and "In [93]" in feedback


def test_a_cell_magic_is_only_a_first_line_and_its_body_keeps_its_line_numbers():
    from grader.reading import notebooks

    code, spans = notebooks.join_code_cells_with_spans(["\n%%capture out\nx = 1\n%matplotlib inline\ny = 2", "z = 3"])
    assert code == "x = 1\ny = 2\n\nz = 3\n"
    assert spans[0].line_offsets == (3, 5) and spans[1].line_offsets == (1,)


@pytest.mark.parametrize("magic", ["%%writefile notes.txt", "%%html", "%%javascript", "%%latex", "%%markdown", "%%sh", "%%svg"])
def test_a_cell_magic_that_does_not_run_python_is_skipped_saying_what_it_does(magic):
    from grader.reading import notebooks

    code, (span,) = notebooks.join_code_cells_with_spans([f"{magic}\ndef head_dimension(d, h):\n    return 0\n"])
    assert code.strip() == "" and span.first_line == 0
    assert span.skipped.startswith(magic.split()[0] + ": it ") and "cell magic" not in span.skipped


@pytest.mark.slow
def test_the_check_cells_grade_the_cells_run_as_the_kernel_ran_them(monkeypatch, capsys):
    from grader import notebook_checks

    cells = ["".join(cell["source"]) for cell in student_cells(kernel_notebook())]
    log = notebook_checks._CellLog()
    log.add_history(cells)  # In [1], In [2], ...: the kernel's own numbers for these runs
    monkeypatch.setattr(notebook_checks, "_log", log)
    monkeypatch.setattr(notebook_checks, "_cache", {})
    notebook_checks.check()
    shown = capsys.readouterr().out
    asked = cells.index("name = input('Your name? ')\n") + 1
    assert "Score so far: 100/100" in shown, shown
    assert f"In [{asked}] (the cell starting `name = input('Your name? ')`) raised EOFError" in shown, shown
    assert f"In [{asked + 1}] (the cell starting `raise ValueError('a stale experiment')`) raised ValueError" in shown, shown
