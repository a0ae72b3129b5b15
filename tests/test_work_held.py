"""Which of the exercise's functions a file defines and writes (grader/reading/work_held.py), read from
its syntax tree: the rule by which the batch, the desk and every platform choose the file to grade."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.reading import work_held

REPO_ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (REPO_ROOT / "solutions" / "multi_head_attention.py").read_text()
STUB = (REPO_ROOT / "exercises" / "multi_head_attention.py").read_text()
ALL = frozenset(work_held.EXERCISE_FUNCTIONS)


def test_the_reference_writes_every_function_and_the_stub_defines_every_one_and_writes_none():
    assert work_held.work_in_code(SOLUTION) == work_held.Work(ALL, ALL)
    assert work_held.work_in_code(STUB) == work_held.Work(ALL, frozenset())


def test_the_exercise_functions_are_the_ones_the_stub_leaves_to_write():
    assert work_held.EXERCISE_FUNCTIONS == tuple(
        line.split('"')[1].removesuffix(" is not written yet")
        for line in STUB.splitlines() if "raise NotImplementedError(" in line
    )


@pytest.mark.parametrize(
    ("body", "written"),
    [
        ('    """Docs."""\n    raise NotImplementedError\n', False),
        ("    # YOUR CODE HERE\n    raise NotImplementedError()\n", False),  # nbgrader's stub
        ("    pass\n", False),
        ("    ...\n", False),
        ('    """Only a docstring."""\n', False),
        ("    result = 1\n    raise NotImplementedError('not done')\n", False),  # still raises whatever it did first
        ("    return model_dim // num_heads\n", True),
        ('    """Docs."""\n    if num_heads <= 0:\n        raise NotImplementedError\n    return 1\n', True),
    ],
)
def test_a_function_is_written_when_its_body_does_more_than_a_stub(body, written):
    work = work_held.work_in_code(f"def head_dimension(model_dim, num_heads):\n{body}")
    assert (work.defined, work.written) == ({"head_dimension"}, {"head_dimension"} if written else set())


def test_a_helpers_module_defines_none_of_the_exercise():
    work = work_held.work_in_code("def scaled(scores, d):\n    return scores / d ** 0.5\n\nclass Helper:\n    def forward(self):\n        return 1\n")
    assert work == work_held.Work() and work.describe() == "defines none of the exercise's 7 functions"


def test_a_file_that_does_not_parse_is_never_said_to_define_none_of_the_exercise():
    """Once "defines none of the exercise's 7 functions and has a syntax error" of a complete
    file with one typo: nothing of it was read, so what it defines is not known."""
    work = work_held.work_in_code(SOLUTION + "\ndef broken(:\n")
    assert work.syntax_error and work.unparsed and not work.defined
    assert work.describe() == "does not parse (a syntax error), so which of the exercise's 7 functions it writes cannot be told"
    # A notebook's other cells were read: what they define is known, and said.
    cells = work_held.work_in_cells(["def helper():\n    return 1\n", "def broken(:\n"])
    assert not cells.unparsed and cells.describe() == "defines none of the exercise's 7 functions and has a syntax error"


def test_cells_run_in_order_a_later_definition_wins_and_a_broken_cell_hides_nothing_else():
    cells = [SOLUTION, "def causal_mask(seq_len):\n    raise NotImplementedError\n", "def broken(:\n"]
    work = work_held.work_in_cells(cells)
    assert work.written == ALL - {"causal_mask"} and work.defined == ALL and work.syntax_error


def test_a_class_defined_again_replaces_all_its_methods():
    redefined = SOLUTION + "\n\nclass AttentionHead:\n    pass\n"
    assert work_held.work_in_code(redefined).defined == ALL - {"AttentionHead.__init__", "AttentionHead.forward"}


def test_a_notebook_is_read_in_the_cells_the_grader_grades():
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "def head_dimension(a, b):\n    return 1\n"},
            {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": "%matplotlib inline\n" + SOLUTION},
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    assert work_held.work_in_notebook(json.dumps(notebook)).written == ALL
    assert work_held.work_in_notebook("{ not json") == work_held.UNREADABLE


def test_most_work_prefers_written_functions_then_a_syntax_error_then_the_py_then_the_first():
    complete, stub, one_line = (work_held.work_in_code(code) for code in (SOLUTION, STUB, "x = 1\n"))
    broken = work_held.work_in_code("def head_dimension(:\n")
    assert work_held.most_work([("a.py", one_line), ("b.ipynb", complete)]) == 1
    assert work_held.most_work([("a.ipynb", stub), ("b.py", broken)]) == 1  # where the student was writing
    assert work_held.most_work([("a.ipynb", complete), ("b.py", complete)]) == 1
    assert work_held.most_work([("a.py", stub), ("b.py", stub)]) == 0
    assert work_held.most_work([("a.py", work_held.UNREADABLE), ("b.py", one_line)]) == 1


def test_at_the_desk_a_one_line_py_beside_a_complete_notebook_does_not_hide_it(tmp_path):
    from grader.reading import loading
    from grader.handout import notebook

    (tmp_path / "multi_head_attention.py").write_text("import torch\n")
    (tmp_path / "multi_head_attention.ipynb").write_text(notebook.notebook_text(filled=True))
    assert loading.choose_work(tmp_path) == tmp_path / "multi_head_attention.ipynb"
    (tmp_path / "multi_head_attention.py").write_text(STUB)  # neither written: the .py, as before
    (tmp_path / "multi_head_attention.ipynb").write_text(notebook.notebook_text())
    assert loading.choose_work(tmp_path) == tmp_path / "multi_head_attention.py"


def test_an_exercise_name_bound_another_way_counts_as_written_so_the_file_is_never_set_aside():
    code = (
        "import torch\nfrom mine import concatenate_heads\n"
        "head_dimension = lambda model_dim, num_heads: model_dim // num_heads\n"
        "if True:\n    def causal_mask(seq_len):\n        return torch.ones(seq_len, seq_len).tril().bool()\n"
        "AttentionHead = torch.nn.Linear\n"
    )
    assert work_held.work_in_code(code).written == {
        "head_dimension", "causal_mask", "concatenate_heads", "AttentionHead.__init__", "AttentionHead.forward",
    }
