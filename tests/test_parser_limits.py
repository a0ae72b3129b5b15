"""Code too deeply nested for Python's parser (grader/reading/parser_limits.py), wherever a
submission is read: the student's own message, naming the line or the cell, never a grader
failure, never "not a valid notebook", never a file passed over as unreadable.

Python 3.11 raises MemoryError or RecursionError on such code, not SyntaxError: the first
test holds that premise, so that a Python that changes it is noticed. The platforms' own runs
are in tests/test_gradescope.py, tests/test_prairielearn.py and tests/test_classroom50.py.
"""

from __future__ import annotations

import ast
import codeop
import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader.batch import intake
from grader.term.status import status_of
from grader.feedback.errors import describe_exception
from grader.platforms.autograder import choose_submission_file
from grader.reading import loading, notebooks, parser_limits, work_held

REPO_ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (REPO_ROOT / "solutions" / "multi_head_attention.py").read_text()
# Each too deep in its own way (measured with Python 3.11: see parser_limits' docstring).
TOO_DEEP = {
    "signs": "x = " + "-" * 100_000 + "1",  # the parser's stack: MemoryError
    "tuples": "x = " + "(1," * 300 + ")" * 300,  # the parser's stack: MemoryError
    "not": "x = " + "not " * 5_000 + "1",  # RecursionError during ast construction or compilation
    "sum": "x = " + "+".join(["1"] * 100_000),  # RecursionError
}
DEEP_LINE = TOO_DEEP["signs"]


def notebook(*sources: str) -> str:
    cells = [{"cell_type": "code", "execution_count": None, "id": f"c{number}", "metadata": {}, "outputs": [],
              "source": source} for number, source in enumerate(sources)]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize("kind", sorted(TOO_DEEP))
def test_python_itself_raises_memory_or_recursion_error_on_such_code_not_syntax_error(kind):
    for read in (ast.parse, lambda code: compile(code, "f.py", "exec"), lambda code: codeop.Compile()(code, "f.py", "exec")):
        with pytest.raises((MemoryError, RecursionError)):
            read(TOO_DEEP[kind])


@pytest.mark.parametrize("kind", sorted(TOO_DEEP))
def test_parsing_says_too_deeply_nested_at_the_line_of_the_statement(kind):
    source = SOLUTION + "\n" + TOO_DEEP[kind] + "\n"
    line = source.split("\n").index(TOO_DEEP[kind]) + 1
    with pytest.raises(parser_limits.TooDeeplyNested) as raised:
        parser_limits.parse(source, "multi_head_attention.py")
    error = raised.value
    assert isinstance(error, SyntaxError) and error.raised in ("MemoryError", "RecursionError")
    assert error.lineno == line and "too deeply nested for Python's parser" in str(error)
    assert len(error.text) <= parser_limits.SHOWN_LINE_CHARACTERS and error.text.startswith("x = ")


@pytest.mark.parametrize(
    ("code", "line"),
    [
        pytest.param("def f():\n    if True:\n        y = 1\n        " + DEEP_LINE + "\n", 4, id="in a function's block"),
        pytest.param("if False:\n    pass\nelif " + "-" * 100_000 + "1:\n    pass\n", 3, id="an elif's condition"),
        pytest.param("@decorate(" + "-" * 100_000 + "1)\ndef f():\n    pass\n", 1, id="a decorator"),
        pytest.param("y = 1\nx = [\n    1,\n    " + "-" * 100_000 + "1,\n]\n", 2, id="a statement over several lines"),
        pytest.param("try:\n    pass\nexcept (" + "-" * 100_000 + "1):\n    pass\n", 3, id="an except clause"),
        pytest.param("while " + "-" * 100_000 + "1: pass\n", 1, id="a block on one line"),
    ],
)
def test_the_line_named_is_the_statement_python_gives_up_on_wherever_it_stands(code, line):
    with pytest.raises(parser_limits.TooDeeplyNested) as raised:
        parser_limits.parse(code)
    assert raised.value.lineno == line


def test_a_plain_syntax_error_stays_pythons_own():
    with pytest.raises(SyntaxError) as raised:
        parser_limits.parse("def f(:\n")
    assert not isinstance(raised.value, parser_limits.TooDeeplyNested)


def test_a_file_too_deep_holds_a_part_that_does_not_parse_not_an_unreadable_file():
    work = work_held.work_in_code(SOLUTION + "\n" + DEEP_LINE + "\n")
    assert work.readable and work.syntax_error and work.too_deep and not work.written
    # Nothing of it was read: what it defines is not known, so never "defines none" (it defines all 7).
    assert work.describe() == (
        "does not parse (code too deeply nested for Python's parser), so which of the exercise's 7 functions it writes cannot be told"
    )
    cells = work_held.work_in_cells([SOLUTION, DEEP_LINE])  # a notebook: the other cells still count
    assert cells.written == frozenset(work_held.EXERCISE_FUNCTIONS) and cells.too_deep


def test_a_notebook_with_such_a_cell_is_a_notebook_and_its_other_cells_keep_their_magics():
    code, spans = notebooks.notebook_code_with_spans(notebook("%matplotlib inline\nimport torch", DEEP_LINE, SOLUTION))
    assert "%matplotlib" not in code and DEEP_LINE in code and len(spans) == 3
    assert notebooks.defined_names(code, spans[1]) == set()


def test_intake_stages_such_a_notebook_and_grades_the_file_holding_the_work(tmp_path):
    submissions, staging = tmp_path / "submissions", tmp_path / "staging"
    submissions.mkdir()
    (submissions / "alice.ipynb").write_text(notebook(SOLUTION, DEEP_LINE))
    folder = submissions / "bob"
    folder.mkdir()
    (folder / "multi_head_attention.py").write_text(SOLUTION + DEEP_LINE + "\n")
    (folder / "multi_head_attention.ipynb").write_text(notebook(SOLUTION))
    (submissions / "carol.py").write_text(SOLUTION + DEEP_LINE + "\n")
    (submissions / "carol.ipynb").write_text(notebook(SOLUTION))
    students = intake.one_entry_per_student(intake.list_entries(submissions))
    assert [path.name for path in students.entries] == ["alice.ipynb", "bob", "carol.ipynb"]
    [(kept, attempts)] = students.attempts.items()
    assert "does not parse (code too deeply nested for Python's parser)" in attempts.not_graded[0].reason
    staged = {entry.student_id: entry for entry in (intake.stage_entry(path, staging) for path in students.entries)}
    assert {sid: entry.problem for sid, entry in staged.items()} == {"alice": "", "bob": "", "carol": ""}
    assert staged["bob"].graded_file == "multi_head_attention.ipynb"
    assert DEEP_LINE in staged["alice"].source_path.read_text()  # graded: the kernel's run says which cell


def test_every_platform_chooses_the_complete_notebook_over_such_a_py_and_says_why(tmp_path):
    (tmp_path / "multi_head_attention.py").write_text(SOLUTION + DEEP_LINE + "\n")
    (tmp_path / "multi_head_attention.ipynb").write_text(notebook(SOLUTION))
    chosen, found = choose_submission_file(tmp_path)
    assert chosen == tmp_path / "multi_head_attention.ipynb"
    assert "multi_head_attention.py does not parse (code too deeply nested for Python's parser), so which of" in found
    assert loading.choose_work(tmp_path) == chosen  # the desk's choice, by the same rule


def test_importing_such_a_file_is_the_students_syntax_problem_at_its_line(tmp_path):
    source = tmp_path / "multi_head_attention.py"
    source.write_text(SOLUTION + "\n" + DEEP_LINE + "\n")
    line = SOLUTION.count("\n") + 2
    loaded_before = set(sys.modules)
    with pytest.raises(parser_limits.TooDeeplyNested) as raised:
        loading.import_source(source)
    described = describe_exception(raised.value, source)
    assert described.type_name == "MemoryError"
    assert described.message.startswith("too deeply nested for Python's parser")
    assert described.location == f"multi_head_attention.py:{line}: {raised.value.text}"
    assert status_of({"import_error": described.for_student(), "tests": []}) == "syntax error"
    assert not [name for name in set(sys.modules) - loaded_before if name.endswith("multi_head_attention")]


def test_a_runtime_recursion_error_at_import_is_not_called_too_deeply_nested(tmp_path):
    source = tmp_path / "multi_head_attention.py"
    source.write_text("def f():\n    return f()\n\nf()\n")
    with pytest.raises(RecursionError) as raised:
        loading.import_source(source)
    described = describe_exception(raised.value, source)
    assert "too deeply nested" not in described.message and described.location.startswith("multi_head_attention.py:2")
    assert status_of({"import_error": described.for_student(), "tests": []}) == "import error"


def test_a_notebook_cell_too_deep_is_that_cells_error_and_the_next_cells_run(tmp_path):
    code, spans = notebooks.notebook_code_with_spans(notebook("x = 1", "y = 2\n" + DEEP_LINE, "z = x + 1"))
    source = tmp_path / "multi_head_attention.py"
    source.write_text(code)
    module, failures = loading.import_cells(source, notebooks.cells_to_run(spans))
    assert module.z == 2 and not hasattr(module, "y")
    [(first, error)] = failures
    assert first == spans[1].first_line and isinstance(error, parser_limits.TooDeeplyNested)
    described = describe_exception(error, source)
    said = notebooks.failed_cell(spans, first, described.type_name, described.message, described.location)
    assert said.startswith("code cell 2 (the cell starting `y = 2`) raised MemoryError: too deeply nested for Python's parser")
    assert " at line 2;" in said


def test_at_the_desk_such_a_file_gets_its_message_and_such_a_notebook_its_score(tmp_path):
    (tmp_path / "deep.py").write_text(SOLUTION + "\n" + DEEP_LINE + "\n")
    (tmp_path / "deep.ipynb").write_text(notebook(SOLUTION, DEEP_LINE))
    graded = subprocess.run(
        [sys.executable, "-m", "pytest", "grader", "--submission", str(tmp_path / "deep.py"), "--submission", str(tmp_path / "deep.ipynb"),
         "-q", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert graded.returncode == 1, graded.stdout[-3000:] + graded.stderr[-3000:]  # failed tests, not a crash (3)
    line = SOLUTION.count("\n") + 2
    assert f"MemoryError: too deeply nested for Python's parser" in graded.stdout
    assert f"(deep.py, line {line})" in graded.stdout
    assert "code cell 2 (the cell starting `x = ----" in graded.stdout
    assert "INTERNALERROR" not in graded.stdout + graded.stderr
