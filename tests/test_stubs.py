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
from grader.reading.work_held import EXERCISE_FUNCTIONS
from grader.handout.stubs import SolutionMarkupError, find_regions, make_stub, solution_lines

REPO = Path(__file__).resolve().parent.parent
SOLUTION_FILE = REPO / "solutions" / "multi_head_attention.py"
EXERCISE_FILE = REPO / "exercises" / "multi_head_attention.py"
EXAMPLE_FILE = REPO / "exercises" / "example.py"
# At the standard level, in the order of the file: the grader's own list (its "Start with" order).
STUDENT_FUNCTIONS = list(EXERCISE_FUNCTIONS)
GUIDED_FUNCTIONS = [name for name in STUDENT_FUNCTIONS if not name.endswith("__init__")]


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


def test_stub_keeps_every_todo_of_the_solution():
    todos = [line for line in SOLUTION_FILE.read_text(encoding="utf-8").splitlines()
             if line.strip().startswith("# TODO")]
    stub = EXERCISE_FILE.read_text(encoding="utf-8").splitlines()
    assert len(todos) == len(STUDENT_FUNCTIONS), f"expected one TODO per function, found {todos}"
    missing = [todo.strip() for todo in todos if todo not in stub]
    assert not missing, f"TODOs missing from the stub: {missing}"


def test_solution_regions_are_exactly_the_student_functions():
    regions = find_regions(SOLUTION_FILE.read_text(encoding="utf-8"))
    assert [region.function for region in regions] == STUDENT_FUNCTIONS
    guided = find_regions(stubs.resolve_level(SOLUTION_FILE.read_text(encoding="utf-8"), "guided"))
    assert [region.function for region in guided] == GUIDED_FUNCTIONS


# (b2) scaffolding levels: standard leaves the constructors and the thinking to the student -----


def stub_at(level: str) -> str:
    return make_stub(SOLUTION_FILE.read_text(encoding="utf-8"), level)


# The calls the guided hints name; a standard stub states goals, not these.
API_HINTS = ("torch.tril", "torch.cat", "torch.stack", "masked_fill", "-inf", "nn.ModuleList(", "% num_heads")


def test_the_committed_stub_is_the_standard_level():
    assert EXERCISE_FILE.read_text(encoding="utf-8") == stub_at("standard")
    assert stubs.DEFAULT_LEVEL == "standard"


@pytest.mark.parametrize("constructor", ["AttentionHead.__init__", "MultiHeadSelfAttention.__init__"])
def test_standard_stub_leaves_the_constructors_to_the_student(constructor):
    stub = stub_at("standard")
    assert f'raise NotImplementedError("{constructor} is not written yet")' in stub
    for built in ("self.query = nn.Linear", "self.heads = nn.ModuleList", "self.output_projection = nn.Linear"):
        assert built not in stub, f"the standard stub still builds {built}"


def test_standard_stub_states_goals_and_the_contract_not_the_calls():
    stub = stub_at("standard")
    todos = "\n".join(line for line in stub.splitlines() if line.strip().startswith("#"))
    named = [call for call in API_HINTS if call in todos]
    assert not named, f"the standard stub's comments dictate calls: {named}"
    assert "# HINT:" not in stub
    comments = " ".join(line.strip().lstrip("#").strip() for line in stub.splitlines() if line.strip().startswith("#"))
    for reason in ("the softmax saturates", "caught when the model is built", "must not see it",
                   "*before* turning each query's scores into probabilities",
                   "one way of retrieving instead of several", "head 0's first"):
        assert reason in comments, f"a lesson's reason is missing from the TODOs: {reason!r}"
    # The layout the grader loads its weights into is stated in the constructors' docstrings.
    for contract in ("``query``, ``key``, ``value``: each ``nn.Linear(model_dim, head_dim, bias=False)``",
                     "an ``nn.ModuleList`` of ``num_heads`` ``AttentionHead(model_dim, head_dim)``",
                     "``output_projection``: ``nn.Linear(model_dim, model_dim)``",
                     "``True`` = may\n", "head ``h`` at index ``h``"):
        assert contract in stub, f"the contract is missing from the docstrings: {contract!r}"


def test_guided_stub_gives_the_constructors_and_the_api_hints():
    stub = stub_at("guided")
    assert "self.heads = nn.ModuleList(" in stub and "self.query = nn.Linear(model_dim, head_dim, bias=False)" in stub
    assert "__init__ is not written yet" not in stub
    assert all(call in stub for call in ("torch.tril", "torch.cat", "-inf", "a new axis 1")), stub
    assert "The lesson is in LESSON.md" in stub


def test_an_unknown_level_is_refused():
    with pytest.raises(ValueError, match="unknown scaffolding level"):
        stub_at("easy")


def test_stubs_command_writes_and_records_the_level_and_check_follows_it(tmp_path):
    copy = repository_copy(tmp_path)
    written = run_python("-m", "grader", "stubs", "--level", "guided", cwd=copy)
    assert written.returncode == 0, written.stderr
    assert (copy / "grader" / "scaffolding.txt").read_text().strip() == "guided"
    assert "AttentionHead.__init__ is not written yet" not in (copy / "exercises" / EXERCISE_FILE.name).read_text()
    assert run_python("-m", "grader", "stubs", "--check", cwd=copy).returncode == 0  # the recorded level
    assert run_python("-m", "grader", "stubs", "--check", "--level", "standard", cwd=copy).returncode == 1
    back = run_python("-m", "grader", "stubs", "--level", "standard", cwd=copy)
    assert back.returncode == 0 and not (copy / "grader" / "scaffolding.txt").exists()


def repository_copy(tmp_path: Path) -> Path:
    """What the generating commands need: grader/, solutions/ and exercises/ (REPO_ROOT follows grader/)."""
    copy = tmp_path / "repository"
    shutil.copytree(REPO / "grader", copy / "grader", ignore=shutil.ignore_patterns("__pycache__", "scaffolding.txt"))
    shutil.copytree(REPO / "solutions", copy / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "exercises", copy / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.fixture(scope="module")
def stub_module():
    return load(EXERCISE_FILE, "stub_under_test_multi_head_attention")


def call_stub(stub, function: str):
    inputs = torch.zeros(1, 3, 8)
    if function == "head_dimension":
        return stub.head_dimension(8, 2)
    if function == "causal_mask":
        return stub.causal_mask(3)
    if function == "AttentionHead.__init__":
        return stub.AttentionHead(8, 4)
    if function == "AttentionHead.forward":
        bare = stub.AttentionHead.__new__(stub.AttentionHead)  # its __init__ is a stub too
        return stub.AttentionHead.forward(bare, inputs, torch.ones(3, 3, dtype=torch.bool))
    if function == "MultiHeadSelfAttention.__init__":
        return stub.MultiHeadSelfAttention(8, 2)
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


@pytest.mark.slow
def test_example_on_the_stubs_names_head_dimension_without_a_traceback():
    finished = run_python(str(EXAMPLE_FILE))
    output = finished.stdout + finished.stderr
    assert finished.returncode == 1, f"example.py exited {finished.returncode} on the stubs:\n{output}"
    assert "✗ not written yet: head_dimension" in finished.stdout, output
    assert "Traceback" not in output, output


@pytest.mark.slow
def test_example_runs_the_one_head_experiment():
    finished = run_python(str(EXAMPLE_FILE), "--solution", "--heads", "1")
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, output
    assert "not applicable" in finished.stdout and "Experiment" in finished.stdout, output
    assert "✗" not in output, output


@pytest.mark.slow
def test_example_shows_the_value_error_for_a_width_that_does_not_divide_as_expected():
    finished = run_python(str(EXAMPLE_FILE), "--solution", "--heads", "3")
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, output
    ticks = [line for line in finished.stdout.splitlines() if line.startswith("✓")]
    assert len(ticks) == 2 and all("raises the expected ValueError" in tick and "num_heads=3" in tick for tick in ticks), output
    assert "✗" not in output and "Traceback" not in output, output


def example_on(tmp_path: Path, old: str, new: str, *arguments: str) -> subprocess.CompletedProcess:
    """example.py on the solution with one edit, as a student's exercises/ folder."""
    folder = tmp_path / "exercises"
    folder.mkdir()
    shutil.copy(EXAMPLE_FILE, folder / EXAMPLE_FILE.name)
    source = SOLUTION_FILE.read_text(encoding="utf-8")
    assert source.count(old) == 1, old
    (folder / EXERCISE_FILE.name).write_text(source.replace(old, new), encoding="utf-8")
    return run_python(str(folder / EXAMPLE_FILE.name), *arguments, cwd=tmp_path)


@pytest.mark.slow
def test_example_does_not_pass_a_row_of_nan_as_summing_to_one(tmp_path):
    finished = example_on(tmp_path, "output = weights @ values  # (batch, seq, head_dim)",
                          "weights = weights * float('nan')\n        output = weights @ values")
    assert finished.returncode == 1, finished.stdout
    assert "✗ every probability row sums to one" in finished.stdout, finished.stdout


@pytest.mark.slow
def test_example_says_when_no_value_error_is_raised_for_a_width_that_does_not_divide(tmp_path):
    finished = example_on(tmp_path, "if num_heads < 1 or model_dim % num_heads != 0:", "if num_heads < 1:",
                          "--heads", "3")
    assert finished.returncode == 1, finished.stdout
    assert "✗ head_dimension(8, 3) raised no ValueError" in finished.stdout, finished.stdout


@pytest.mark.slow
def test_example_says_the_grader_checks_more_once_all_checks_pass():
    finished = run_python(str(EXAMPLE_FILE), "--solution")
    assert "All checks pass." in finished.stdout and "the grader" in finished.stdout.split("All checks pass.")[1]


@pytest.mark.slow
def test_example_says_when_there_is_no_solutions_folder(tmp_path):
    release = tmp_path / "exercises"  # the student release: exercises/ without solutions/
    release.mkdir()
    shutil.copy(EXAMPLE_FILE, release / EXAMPLE_FILE.name)
    shutil.copy(EXERCISE_FILE, release / EXERCISE_FILE.name)
    finished = run_python(str(release / EXAMPLE_FILE.name), "--solution", cwd=tmp_path)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert "absent" in finished.stdout and "Traceback" not in finished.stderr, finished.stdout


@pytest.mark.slow
def test_example_plot_draws_each_heads_matrix_with_the_future_left_blank(tmp_path):
    matplotlib_image = pytest.importorskip("matplotlib.image")
    finished = run_python(str(EXAMPLE_FILE), "--solution", "--plot", str(tmp_path / "attention.png"))
    assert finished.returncode == 0 and "picture:" in finished.stdout, finished.stdout + finished.stderr
    pixels = matplotlib_image.imread(tmp_path / "attention.png")  # (height, width, rgba)
    # Where the heatmaps are: columns and rows that are neither background nor an axis. The
    # future (query 0, keys 1..3: the top row but its first cell) is blank, white as the page.
    painted = (pixels[..., :3] < 0.9).any(axis=-1)
    rows = painted.any(axis=1).nonzero()[0]
    top_row = rows[len(rows) // 8]  # well inside the first query's row of cells
    row = painted[top_row]
    first = row.nonzero()[0].min()  # query 0 attends to key 0: a coloured cell...
    cell = (~row[first:]).nonzero()[0].min()
    after = row[first + cell:].nonzero()[0].min()  # ...then blank until the next head's axes
    assert after > 2 * cell, f"query 0's masked future (3 cells) should be blank: {cell} px coloured, then {after} px blank"


@pytest.mark.slow
def test_example_plot_without_matplotlib_says_how_to_get_it(tmp_path):
    code = (f"import runpy, sys; sys.modules['matplotlib'] = None; sys.argv = [{str(EXAMPLE_FILE)!r}, '--solution', "
            f"'--plot', {str(tmp_path / 'unused.png')!r}]; runpy.run_path({str(EXAMPLE_FILE)!r}, run_name='__main__')")
    finished = run_python("-c", code)
    assert finished.returncode == 2 and "--plot needs matplotlib" in finished.stdout, finished.stdout + finished.stderr
    assert not (tmp_path / "unused.png").exists()
