"""The student stubs: generated from the solution, leaking none of it, and runnable.

Also covers exercises/example.py, the lesson's focused example, on the solution and on
the stubs.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from grader.handout import stubs
from grader.handout.stubs import SolutionMarkupError, find_regions, make_stub, solution_lines

REPO = Path(__file__).resolve().parent.parent
SOLUTION_FILE = REPO / "solutions" / "multi_head_attention.py"
EXERCISE_FILE = REPO / "exercises" / "multi_head_attention.py"
EXAMPLE_FILE = REPO / "exercises" / "example.py"
STUDENT_FUNCTIONS = [
    "head_dimension",
    "causal_mask",
    "AttentionHead.forward",
    "concatenate_heads",
    "MultiHeadSelfAttention.forward",
]


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def run_python(*arguments: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, *arguments], cwd=cwd, env=environment,
        capture_output=True, text=True, encoding="utf-8", timeout=120,
    )


# (a) the committed stub is exactly what the generator makes ------------------------------


def test_committed_stub_is_what_make_stub_generates_from_the_solution():
    expected = make_stub(SOLUTION_FILE.read_text(encoding="utf-8"))
    assert EXERCISE_FILE.read_text(encoding="utf-8") == expected, (
        "exercises/multi_head_attention.py is stale: run `python -m grader stubs`"
    )


# (b) the stub leaks nothing, keeps the hints, and every stub says what to write ----------


def test_stub_contains_no_line_from_inside_a_solution_region():
    stub_lines = {line.strip() for line in EXERCISE_FILE.read_text(encoding="utf-8").splitlines()}
    # Lines of bare punctuation, such as a closing ")", also occur outside the regions.
    telling = [line for line in solution_lines(SOLUTION_FILE.read_text(encoding="utf-8"))
               if re.search(r"\w", line)]
    assert telling, "solution_lines found nothing to look for: are the markers still there?"
    leaked = [line.strip() for line in telling if line.strip() in stub_lines]
    assert not leaked, f"the stub leaks solution lines: {leaked}"


def test_stub_keeps_every_todo_hint_of_the_solution():
    hints = [line for line in SOLUTION_FILE.read_text(encoding="utf-8").splitlines()
             if line.strip().startswith("# TODO")]
    stub = EXERCISE_FILE.read_text(encoding="utf-8").splitlines()
    assert len(hints) == len(STUDENT_FUNCTIONS), f"expected one TODO per function, found {hints}"
    missing = [hint.strip() for hint in hints if hint not in stub]
    assert not missing, f"TODO hints missing from the stub: {missing}"


def test_solution_regions_are_exactly_the_five_student_functions():
    regions = find_regions(SOLUTION_FILE.read_text(encoding="utf-8"))
    assert [region.function for region in regions] == STUDENT_FUNCTIONS


@pytest.fixture(scope="module")
def stub_module():
    return load(EXERCISE_FILE, "stub_under_test_multi_head_attention")


def call_stub(stub, function: str):
    inputs = torch.zeros(1, 3, 8)
    if function == "head_dimension":
        return stub.head_dimension(8, 2)
    if function == "causal_mask":
        return stub.causal_mask(3)
    if function == "AttentionHead.forward":
        return stub.AttentionHead(8, 4)(inputs, torch.ones(3, 3, dtype=torch.bool))
    if function == "concatenate_heads":
        return stub.concatenate_heads([])
    if function == "MultiHeadSelfAttention.forward":
        # Its __init__ calls the stubbed head_dimension, so call forward on a bare instance.
        bare = stub.MultiHeadSelfAttention.__new__(stub.MultiHeadSelfAttention)
        return stub.MultiHeadSelfAttention.forward(bare, inputs)
    raise AssertionError(f"no way to call {function}")


@pytest.mark.parametrize("function", STUDENT_FUNCTIONS)
def test_each_stubbed_function_raises_not_implemented_naming_itself(stub_module, function):
    with pytest.raises(NotImplementedError) as raised:
        call_stub(stub_module, function)
    assert str(raised.value) == f"{function} is not written yet", (
        f"{function} raised NotImplementedError({str(raised.value)!r})"
    )


# (c) find_regions rejects unbalanced or misplaced markers --------------------------------

BEGIN, END = stubs.BEGIN_SOLUTION, stubs.END_SOLUTION


@pytest.mark.parametrize(
    "source, complaint",
    [
        pytest.param(f"def f():\n    {BEGIN}\n    {BEGIN}\n    x = 1\n    {END}\n", "nested",
                     id="nested-begin"),
        pytest.param(f"def f():\n    x = 1\n    {END}\n", "without a BEGIN", id="end-without-begin"),
        pytest.param(f"def f():\n    {BEGIN}\n    x = 1\n", "never closed", id="unclosed-begin"),
        pytest.param(f"{BEGIN}\nx = 1\n{END}\n", "inside a function", id="region-outside-a-function"),
        pytest.param(f"class C:\n    {BEGIN}\n    x = 1\n    {END}\n", "inside a function",
                     id="region-in-a-class-body"),
    ],
)
def test_find_regions_rejects_bad_markup(source, complaint):
    with pytest.raises(SolutionMarkupError, match=complaint):
        find_regions(source)


def test_find_regions_names_the_method_that_holds_a_region():
    source = f"class C:\n    def m(self):\n        # TODO: hint\n        {BEGIN}\n        return 1\n        {END}\n"
    (region,) = find_regions(source)
    assert (region.function, region.begin, region.end, region.indent) == ("C.m", 4, 6, " " * 8)
    assert '        raise NotImplementedError("C.m is not written yet")' in make_stub(source)


# (d) `python -m grader stubs --check` ----------------------------------------------------


def test_stubs_check_command_exits_zero_on_the_committed_stub():
    finished = run_python("-m", "grader", "stubs", "--check")
    assert finished.returncode == 0, f"stubs --check failed:\n{finished.stdout}{finished.stderr}"


def test_stubs_are_current_tells_a_stale_copy_from_a_fresh_one(tmp_path):
    solution, exercise = tmp_path / "solution.py", tmp_path / "exercise.py"
    shutil.copy(SOLUTION_FILE, solution)
    assert not stubs.stubs_are_current(solution, exercise), "a missing stub counts as current"
    stubs.write_stubs(solution, exercise)
    assert stubs.stubs_are_current(solution, exercise), "a freshly written stub counts as stale"
    solution.write_text(solution.read_text(encoding="utf-8") + "\nEXTRA = 1\n", encoding="utf-8")
    assert not stubs.stubs_are_current(solution, exercise), "a stub of an older solution counts as current"


def test_stubs_check_command_exits_one_on_a_stale_copy(tmp_path):
    # A copy of the repository (REPO_ROOT follows grader/'s location), with a stale stub.
    shutil.copytree(REPO / "grader", tmp_path / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "solutions").mkdir()
    (tmp_path / "exercises").mkdir()
    shutil.copy(SOLUTION_FILE, tmp_path / "solutions" / SOLUTION_FILE.name)
    stale = EXERCISE_FILE.read_text(encoding="utf-8").replace("is not written yet", "is to do")
    (tmp_path / "exercises" / EXERCISE_FILE.name).write_text(stale, encoding="utf-8")

    finished = run_python("-m", "grader", "stubs", "--check", cwd=tmp_path)
    assert finished.returncode == 1, f"a stale stub passed --check:\n{finished.stdout}{finished.stderr}"
    assert "stale" in finished.stderr


# exercises/example.py -------------------------------------------------------------------


def test_example_passes_all_six_checks_on_the_solution():
    finished = run_python(str(EXAMPLE_FILE), "--solution")
    output = finished.stdout + finished.stderr
    ticks = [line for line in finished.stdout.splitlines() if line.startswith("✓")]
    assert finished.returncode == 0, f"example.py --solution exited {finished.returncode}:\n{output}"
    assert len(ticks) == 6, f"expected six ✓ lines, got {len(ticks)}:\n{output}"
    assert "✗" not in output and "Traceback" not in output, output


def test_example_on_the_stubs_names_head_dimension_without_a_traceback():
    finished = run_python(str(EXAMPLE_FILE))
    output = finished.stdout + finished.stderr
    assert finished.returncode == 1, f"example.py exited {finished.returncode} on the stubs:\n{output}"
    assert "✗ not written yet: head_dimension" in finished.stdout, output
    assert "Traceback" not in output, output


def test_example_runs_the_one_head_experiment():
    finished = run_python(str(EXAMPLE_FILE), "--solution", "--heads", "1")
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, output
    assert "not applicable" in finished.stdout and "Experiment" in finished.stdout, output
    assert "✗" not in output, output


def test_example_shows_the_value_error_for_a_width_that_does_not_divide():
    finished = run_python(str(EXAMPLE_FILE), "--solution", "--heads", "3")
    output = finished.stdout + finished.stderr
    assert finished.returncode == 1, output
    assert "✗ configuration" in finished.stdout and "num_heads=3" in finished.stdout, output
    assert "Traceback" not in output, output


def test_example_says_when_there_is_no_solutions_folder(tmp_path):
    release = tmp_path / "exercises"  # the student release: exercises/ without solutions/
    release.mkdir()
    shutil.copy(EXAMPLE_FILE, release / EXAMPLE_FILE.name)
    shutil.copy(EXERCISE_FILE, release / EXERCISE_FILE.name)
    finished = run_python(str(release / EXAMPLE_FILE.name), "--solution", cwd=tmp_path)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert "absent" in finished.stdout and "Traceback" not in finished.stderr, finished.stdout
