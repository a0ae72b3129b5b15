"""What the exercise teaches at the desk, and how a student's work reaches the grader.

* the visible reference group: its shipped data is current, and the lesson's mistakes cost
  visible points (the desk score tells the truth about the numbers);
* the grader's messages: a constructor not written, a wrong layout of parameters, a
  constructor that does not raise, shapes named with their context, groups that never ran;
* the hand-in: a folder holding both the .py file and the notebook is graded on the one that
  holds the work, the results say which (a notebook's cells are named as tests/test_cell_names.py says).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from grader.handout import notebook, reference_examples, stubs
from grading import REPO_ROOT, grade

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
VISIBLE_MAX = 85
# The lesson's mistakes the issue names, and the least each must cost at the desk.
DESK_LOSSES = {
    "missing_scale": 10,
    "mask_after_softmax": 10,
    "no_output_projection": 5,
    "doubled_output_projection": 5,
}
# The lesson's mistakes and the others read here are the catalogue's mutants: catalogue_run
# (tests/conftest.py), the whole catalogue graded once per test run.


# --- the visible reference group -----------------------------------------------------------


def test_the_shipped_reference_examples_are_what_the_solution_gives():
    assert reference_examples.stale_part() == "", "grader/exercises/multi_head_attention/reference_examples.json is stale: run `python -m grader examples`"


def test_the_examples_check_fails_on_a_stale_file(tmp_path):
    stale = json.loads(reference_examples.examples_path().read_text(encoding="utf-8"))
    example = stale["examples"]["module-lesson"]
    example["expected_output"]["values"][3] += 1e-3
    path = tmp_path / "reference_examples.json"
    path.write_text(json.dumps(stale), encoding="utf-8")
    assert reference_examples.stale_part(examples=path) == "/examples/module-lesson/expected_output/values"
    changed = SOLUTION.read_text(encoding="utf-8").replace("combined = self.output_projection(concatenated)",
                                                           "combined = self.output_projection(concatenated) * 2")
    (tmp_path / "solution.py").write_text(changed, encoding="utf-8")
    assert reference_examples.stale_part(solution=tmp_path / "solution.py"), "a changed solution leaves the file current"


def test_the_examples_command_checks_the_committed_file():
    finished = subprocess.run([sys.executable, "-m", "grader", "examples", "--check"], cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stdout + finished.stderr


@pytest.mark.parametrize("name", list(DESK_LOSSES))
def test_the_lessons_mistakes_cost_visible_points_at_the_desk(catalogue_run, name):
    groups = catalogue_run.results[name]["groups"]
    visible = sum(points["earned"] for group, points in groups.items() if group != "reference")
    assert sum(points["max"] for group, points in groups.items() if group != "reference") == VISIBLE_MAX
    assert groups["reference_examples"]["earned"] < groups["reference_examples"]["max"], groups
    assert VISIBLE_MAX - visible >= DESK_LOSSES[name], f"{name} scores {visible}/{VISIBLE_MAX} at the desk"


def test_a_doubled_output_projection_is_explained_after_the_heads(catalogue_run):
    messages = [test["message"] for test in catalogue_run.failed_tests("doubled_output_projection")
                if test["group"] == "reference_examples"]
    assert messages and all("output_projection applied twice" in message for message in messages), messages


# --- messages ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "expected"), [
    ("heads_in_a_plain_list", ["missing heads.<h>.query.weight (4, 8) for h = 0, 1", "use nn.ModuleList"]),
    # Graded around (the biases held at zero): the layout check alone says it.
    ("projections_with_bias", ["unexpected heads.<h>.key.bias (4,) for h = 0, 1, 2", "heads.<h>.query.bias (4,) for h = 0, 1, 2",
                               "expected: heads.<h>.query.weight (4, 12) for h = 0, 1, 2", "held at zero"]),
])
def test_a_wrong_parameter_layout_names_the_expected_names_and_shapes(catalogue_run, name, expected):
    messages = [test["message"] for test in catalogue_run.failed_tests(name)]
    assert not any("KeyError" in message for message in messages), messages
    layout = [message for message in messages if "could not load its weights" in message or "the contract's parameters" in message]
    assert layout, messages
    assert any(all(text in message for text in expected) for message in layout), layout[:2]


def test_a_constructor_that_does_not_raise_is_not_said_to_return_none(catalogue_run):
    (failure,) = [test for test in catalogue_run.failed_tests("no_divisibility_check")
                  if test["name"].startswith("test_an_indivisible_width")]
    assert "returned None" not in failure["message"], failure["message"]
    assert "no error: the module was built" in failure["message"], failure["message"]


def test_a_wrong_shape_says_whose_weights_and_how_they_are_laid_out(catalogue_run):
    messages = [test["message"] for test in catalogue_run.failed_tests("weights_stacked_heads_first")]
    assert not any(message.startswith("the weights has") for message in messages), messages
    causal = [test["message"] for test in catalogue_run.failed_tests("weights_stacked_heads_first")
              if test["group"] == "causal_masking"]
    assert causal and all(m.startswith("MultiHeadSelfAttention weights for batch=") and "hint:" in m for m in causal)


def test_groups_that_never_ran_under_x_say_not_run(tmp_path):
    run = grade([REPO_ROOT / "exercises"], tmp_path, "-x")
    table = run.output.split("= score =")[-1]
    assert "1. shapes                0/15" in table, table
    assert "7. reference examples  not run (of 15)" in table, table
    assert table.strip().splitlines()[-1].startswith(f"Not written yet (in the 1 of {len(run.results['exercises']['tests'])} tests that ran): ")


# --- the hand-in -----------------------------------------------------------------------------


def student_folder(tmp_path, name: str, py_source: str, notebook_text: str):
    folder = tmp_path / name / "exercises"
    folder.mkdir(parents=True)
    (folder / "multi_head_attention.py").write_text(py_source, encoding="utf-8")
    (folder / "multi_head_attention.ipynb").write_text(notebook_text, encoding="utf-8")
    return folder.parent


def test_the_file_that_holds_the_work_is_graded_and_the_results_say_which(tmp_path):
    stub = (REPO_ROOT / "exercises" / "multi_head_attention.py").read_text(encoding="utf-8")
    finished_notebook = notebook.notebook_text(filled=True)
    untouched_notebook = notebook.notebook_text()
    in_notebook = student_folder(tmp_path, "in_notebook", stub, finished_notebook)
    in_py = student_folder(tmp_path, "in_py", SOLUTION.read_text(encoding="utf-8"), untouched_notebook)
    run = grade([in_notebook, in_py], tmp_path)
    assert run.score("in_notebook") == 100, run.failed_tests("in_notebook")[:3]
    assert run.results["in_notebook"]["graded_file"] == "exercises/multi_head_attention.ipynb"
    assert run.score("in_py") == 100
    assert run.results["in_py"]["graded_file"] == "exercises/multi_head_attention.py"
    document = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert document["scaffolding"] == "standard"


def test_the_feedback_page_starts_with_what_the_others_build_on():
    from grader.feedback.markdown import render_markdown
    from grader.scoring import SubmissionResult, TestRecord

    result = SubmissionResult("zoe")
    for name, count in (("MultiHeadSelfAttention.__init__", 30), ("causal_mask", 2), ("AttentionHead.forward", 5)):
        for index in range(count):
            result.tests.append(TestRecord(f"test_{name}_{index}", "shapes", "zoe", 1, "failed",
                                           f"{name} is not written yet: this test needs it (it still raises NotImplementedError)."))
    page = render_markdown(result)
    # Names in code spans: in Markdown, a bare __init__ renders as a bold "init".
    assert ("Not written yet: `causal_mask` (2 tests), `AttentionHead.forward` (5 tests), "
            "`MultiHeadSelfAttention.__init__` (30 tests). Start with `causal_mask`.") in page, page
