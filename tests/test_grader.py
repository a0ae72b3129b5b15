"""The grader's behaviour on whole submissions: full marks, zero, broken files, loops."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader import scoring
from grader.handout import stubs
from grading import REPO_ROOT, grade

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
# What the stubs' failures name: every test needs one of these first (the two constructors
# stand before the forward passes, which no test of the stubs reaches).
STUDENT_FUNCTIONS = (
    "head_dimension", "causal_mask", "AttentionHead.__init__", "concatenate_heads", "MultiHeadSelfAttention.__init__"
)


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return path


def solution_with(old: str, new: str) -> str:
    source = SOLUTION.read_text()
    assert source.count(old) == 1, old
    return source.replace(old, new)


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    """The solution (as a file of another name, and as a folder) and the stubs, in one run."""
    folder = tmp_path_factory.mktemp("submissions")
    renamed = write(folder, "alice_attempt.py", SOLUTION.read_text())
    in_folder = write(folder, "bob/src/multi_head_attention.py", SOLUTION.read_text())
    only_forward_missing = stubs.make_stub(
        SOLUTION.read_text().replace(stubs.BEGIN_SOLUTION, "#", 6).replace(stubs.END_SOLUTION, "#", 6)
    )
    partial = write(folder, "only_forward_missing.py", only_forward_missing)
    return grade([renamed, folder / "bob", REPO_ROOT / "exercises", partial], tmp_path_factory.mktemp("results"))


def test_points_add_up_to_100_in_the_eight_groups(reference_run):
    """The points live on the checks (@pytest.mark.points): every group of the score table has
    some, the groups a run reports are the checks' own totals, and they add up to 100."""
    totals = scoring.group_totals()
    assert tuple(totals) == scoring.GROUPS and sum(totals.values()) == 100, totals
    groups = reference_run.results["alice_attempt"]["groups"]
    assert {name: points["max"] for name, points in groups.items()} == totals
    assert reference_run.results["alice_attempt"]["max_score"] == 100


def test_the_solution_scores_full_marks_under_any_file_name_or_folder(reference_run):
    assert reference_run.score("alice_attempt") == 100, reference_run.failed_tests("alice_attempt")
    assert reference_run.score("bob") == 100, reference_run.failed_tests("bob")


def test_the_stubs_score_zero_and_every_failure_names_what_is_not_written(reference_run):
    assert reference_run.score("exercises") == 0
    messages = [test["message"] for test in reference_run.failed_tests("exercises")]
    assert all("not written yet" in message for message in messages), messages
    named = {function for function in STUDENT_FUNCTIONS if any(function in m for m in messages)}
    assert named == set(STUDENT_FUNCTIONS)


def test_a_stub_whose_message_names_no_function_is_named_from_where_it_raised(tmp_path):
    """nbgrader's code stub is one text for every cell ("not written yet"): the grader names the
    function from where it raised, and the summary still says where to start."""
    from grader.platforms import nbgrader_course

    source = SOLUTION.read_text()
    region = next(region for region in stubs.find_regions(source) if region.function == "AttentionHead.forward")
    lines = source.splitlines()
    stub = [region.indent + line for line in nbgrader_course.CODE_STUB.splitlines()]
    nbgrader_like = "\n".join(lines[: region.begin - 1] + stub + lines[region.end :]) + "\n"
    run = grade([write(tmp_path, "nbgrader_like.py", nbgrader_like)], tmp_path)
    messages = [test["message"] for test in run.failed_tests("nbgrader_like")]
    assert messages and all(m.startswith("AttentionHead.forward is not written yet") for m in messages), messages[:3]
    assert "Start with AttentionHead.forward." in run.output


def test_a_missing_forward_is_named_as_not_written(reference_run):
    messages = " ".join(test["message"] for test in reference_run.failed_tests("only_forward_missing"))
    assert "MultiHeadSelfAttention.forward is not written yet" in messages
    assert 0 < reference_run.score("only_forward_missing") < 100  # the head and helpers still earn points


def test_a_run_on_the_stubs_lists_what_to_write_in_the_order_the_functions_build_on(tmp_path):
    run = grade([REPO_ROOT / "exercises"], tmp_path)
    last = run.output.strip().splitlines()[-1]
    named = re.findall(r"([\w.]+) \(\d+ tests?\)", last)
    assert named == list(STUDENT_FUNCTIONS), last  # head_dimension, causal_mask, AttentionHead, ...
    assert last.endswith("Start with head_dimension."), last
    counts = [int(n) for n in re.findall(r"\((\d+) tests?\)", last)]
    assert sum(counts) == len(run.results["exercises"]["tests"]), last


def test_start_with_follows_the_dependency_order_even_when_the_module_waits_on_more_tests():
    from grader import scoring

    messages = [f"{name} is not written yet: this test needs it" for name in
                ["MultiHeadSelfAttention.forward"] * 30 + ["concatenate_heads"] * 2 + ["AttentionHead.forward"] * 5]
    line = scoring.describe_not_written(scoring.not_written(messages))
    assert line.startswith("Not written yet: AttentionHead.forward (5 tests), concatenate_heads (2 tests), "), line
    assert line.endswith("Start with AttentionHead.forward."), line


def test_the_stubs_show_each_failing_test_once_and_no_summary_repeats_them(reference_run):
    failing = [test["name"] for test in reference_run.failed_tests("exercises")]
    assert failing
    assert "short test summary info" not in reference_run.output
    for name in failing:
        assert reference_run.output.count(name) == 1, f"{name} appears {reference_run.output.count(name)} times"


def test_unwritten_constructors_are_named_and_cost_what_depends_on_them(reference_run):
    result = reference_run.results["exercises"]
    messages = [test["message"] for test in result["tests"]]
    assert any(m.startswith("AttentionHead.__init__ is not written yet") for m in messages)
    assert any(m.startswith("MultiHeadSelfAttention.__init__ is not written yet") for m in messages)
    assert result["groups"]["head_distinctness"]["earned"] == 0  # nothing given away any more


def test_a_finished_submission_gets_no_list_of_what_to_write(tmp_path):
    run = grade([SOLUTION], tmp_path)
    assert "Not written yet" not in run.output


def test_the_run_ends_with_a_score_line(reference_run):
    last_lines = reference_run.output.strip().splitlines()[-4:]
    assert any(re.fullmatch(r"Score \w+: \d+/100", line) for line in last_lines), last_lines


@pytest.mark.parametrize(
    ("name", "source", "reason"),
    [
        ("syntax_error", "def head_dimension(:\n    pass\n", "SyntaxError"),
        ("raises_at_import", "import torch\nraise RuntimeError('boom at import')\n", "RuntimeError: boom at import"),
        ("exits_at_import", "import sys\nsys.exit(3)\n", "SystemExit"),
    ],
)
def test_a_submission_that_does_not_import_scores_zero_with_the_error_shown_once(tmp_path, name, source, reason):
    run = grade([write(tmp_path, f"{name}.py", source)], tmp_path)
    assert run.score(name) == 0
    assert run.results[name]["import_error"], "the reason is recorded"
    assert run.output.count(reason) == 1, run.output[-2500:]
    assert "Traceback" not in run.output
    assert "Score: 0/100" in run.output.splitlines()[-1]


def test_missing_names_are_reported_as_such(tmp_path):
    source = solution_with("def concatenate_heads(", "def concat_heads(")
    run = grade([write(tmp_path, "renamed.py", source)], tmp_path)
    messages = [test["message"] for test in run.failed_tests("renamed")]
    assert messages and all("concatenate_heads" in m for m in messages), messages
    assert any("expected your file to define `concatenate_heads`" in m for m in messages), messages


@pytest.mark.slow
def test_an_endless_loop_fails_with_a_timeout_and_the_run_goes_on(tmp_path):
    looping = solution_with("def concatenate_heads(head_results: list[HeadResult]) -> torch.Tensor:\n",
                            "def concatenate_heads(head_results: list[HeadResult]) -> torch.Tensor:\n    while True:\n        pass\n")
    run = grade([write(tmp_path, "loops.py", looping), SOLUTION], tmp_path, "--timeout", "3")
    failures = run.failed_tests("loops")
    assert failures and all("timed out" in test["message"] for test in failures)
    # Only the tests that concatenate are lost; the head and the configuration still count.
    assert run.results["loops"]["groups"]["configuration"]["earned"] == 10
    assert run.score("multi_head_attention") == 100
    # Counted by what happened, not by the clock: each kind of call that loops times out at
    # most twice, and the grader refuses it at once after that.
    timed_out = [test for test in failures if "timed out after" in test["message"]]
    assert 1 <= len(timed_out) <= 2 * 3, "gave up on each looping call after two timeouts"
    assert any("already timed out" in test["message"] for test in failures), [test["message"] for test in failures]


def test_a_tensor_subclass_cannot_make_comparisons_lie(tmp_path):
    forger = textwrap.dedent(
        """
        class AlwaysClose(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func in (torch.allclose, torch.equal):
                    return True
                return super().__torch_function__(func, types, args, kwargs or {})
        """
    )
    source = solution_with("@dataclass\nclass HeadResult:", forger + "\n\n@dataclass\nclass HeadResult:")
    source = source.replace(
        "        return HeadResult(output=output, weights=weights)\n",
        "        return HeadResult(output=output.as_subclass(AlwaysClose), weights=weights.as_subclass(AlwaysClose))\n",
    )
    run = grade([write(tmp_path, "forger.py", source)], tmp_path)
    head_tests = [t for t in run.failed_tests("forger") if "head" in t["name"]]
    assert head_tests and any("expected a plain torch.Tensor" in t["message"] for t in head_tests)
    assert run.score("forger") < 100


@pytest.mark.parametrize("shadow", ["torch.py", "numpy/__init__.py"])
def test_at_the_desk_a_file_hiding_a_library_the_grader_imports_is_reported_before_it_runs(tmp_path, shadow):
    """``pytest grader`` run from a folder holding a student's torch.py would import it in place
    of torch (the folder is first on sys.path): the grader names it and stops instead."""
    desk = tmp_path / "desk"
    desk.mkdir()
    (desk / "grader").symlink_to(REPO_ROOT / "grader")
    (desk / "multi_head_attention.py").write_text((REPO_ROOT / "solutions" / "multi_head_attention.py").read_text())
    (desk / shadow).parent.mkdir(parents=True, exist_ok=True)
    (desk / shadow).write_text("print('the shadowing file ran')\n")
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "grader", "-q", "-p", "no:cacheprovider", "--submission", "multi_head_attention.py"],
        cwd=desk, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    said = finished.stdout + finished.stderr
    name = shadow.split("/")[0].removesuffix(".py")
    assert finished.returncode == 4, said
    assert f"{desk / shadow.split('/')[0]} hides a library the grader and your code import ({name})" in said, said
    assert "the shadowing file ran" not in said and "Traceback" not in said


def test_a_grader_installed_beside_the_libraries_finds_nothing_hiding_them():
    """The student wheel installs grader/ into site-packages, beside the real torch/ and
    pytest_timeout.py: those are the libraries, not files hiding them."""
    import sysconfig

    from grader.reading import shadowing

    installed = Path(sysconfig.get_paths()["purelib"])
    assert (installed / "pytest_timeout.py").is_file() or (installed / "torch").is_dir()
    assert installed.resolve() not in [folder.resolve() for folder in shadowing.searched_first(installed / "grader")]
