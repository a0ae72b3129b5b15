"""One root cause, one message: a layout slip, randomness, an error of the backward pass.

At the desk (the student release, no grader/hidden/) and in an instructor's run alike:

* a head whose projections keep nn.Linear's bias is graded with the biases held at zero and
  loses only the layout check, which says so once;
* dropout left on is named as randomness ("your module gives different answers to the same
  call"), its failures folded under it, none of the softmax or mask hints shown;
* an in-place division of exp's output fails in the backward pass with the student's line and
  a hint; a default mask sized by model_dim names that as the likely cause, and the same
  error at the same line in the next checks points to the first one instead of repeating it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from torch import nn

import browser
import catalogue
from grader.exercises.multi_head_attention import causes, data, operations
from grader.feedback import root_causes
from grader.feedback.evidence import StudentCodeError
from grader.exercises.multi_head_attention.handle import AttentionSubmission as Submission
from grader.submission import InProcessBackend
from grading import REPO_ROOT, grade
import tiers

DESK_MUTANTS = (
    "dropout_on_the_weights", "softmax_divided_in_place", "mask_from_model_dim", "projections_with_bias",
    "output_projection_without_bias",
)
LAYOUT_CHECK = "test_each_head_has_its_own_query_key_and_value_projections"


def mutant(name: str):
    return next(impl for impl in catalogue.MUTANTS if impl.name == name)


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # a release built and graded: some 10 s on a quiet 2-core machine
def desk(tmp_path_factory):
    """The student release graded as a student grades it: ``pytest grader`` there, in-process."""
    release = tmp_path_factory.mktemp("release") / "mha-exercise"
    built = subprocess.run([sys.executable, "-m", "grader", "release", str(release)], cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    assert not (release / "grader" / "hidden").exists()
    assert not (release / "grader" / "exercises" / "multi_head_attention" / "hidden").exists()
    folder = tmp_path_factory.mktemp("work")
    command = [sys.executable, "-m", "pytest", "grader", "-p", "no:cacheprovider", "-q", "--results-json", str(folder / "r.json")]
    for name in DESK_MUTANTS:
        command += ["--submission", str(catalogue.write_implementation(mutant(name), folder))]
    finished = subprocess.run(command, cwd=release, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    results = json.loads((folder / "r.json").read_text())["submissions"]
    return finished.stdout + finished.stderr, results


def section(output: str, title: str) -> str:
    """The terminal's section for one submission: from its title to the next section."""
    start = output.index(title)
    end = output.find("\n=", start + len(title))  # the next section's line (a long title gets a single "=")
    return output[start:end if end != -1 else None]


def failures_of(output: str, name: str) -> list[str]:
    """Each failure report of one submission in the terminal's FAILURES section."""
    failures = output[output.index("= FAILURES ="):]
    blocks = failures.split("\n_")
    return [block for block in blocks if f"[{name}" in block.splitlines()[0]]


def messages(results: dict, name: str) -> list[str]:
    return [test["message"] for test in results[name]["tests"] if test["outcome"] != "passed"]


def test_dropout_is_named_as_randomness_at_the_desk(desk):
    output, results = desk
    (entry,) = results["dropout_on_the_weights"]["diagnoses"]
    assert entry["mistake"] == root_causes.NONDETERMINISTIC and entry["function"] == "AttentionHead.forward"
    failed = [t["name"] for t in results["dropout_on_the_weights"]["tests"] if t["outcome"] != "passed"]
    assert failed and set(entry["explains"]) == set(failed)
    shown = section(output, "diagnosis: dropout_on_the_weights")
    assert "your module gives different answers to the same call" in shown and "dropout" in shown
    for block in failures_of(output, "dropout_on_the_weights"):
        lines = block.splitlines()
        assert lines[1].endswith("[explained by the diagnosis above]") and not any(line.startswith("  hint:") for line in lines[2:3]), block


def test_an_in_place_division_in_the_forward_pass_fails_at_the_students_line_with_a_hint(desk):
    _, results = desk
    backward = [m for m in messages(results, "softmax_divided_in_place") if "in place" in m]
    assert backward, messages(results, "softmax_divided_in_place")
    for message in backward:
        assert "your code raised RuntimeError" in message
        assert "at softmax_divided_in_place.py:" in message and "in AttentionHead.forward: weights = torch.exp(" in message
        assert "hint:     autograd needs that tensor" in message


def test_a_default_mask_of_the_wrong_size_names_its_likely_cause_at_the_desk(desk):
    _, results = desk
    failures = messages(results, "mask_from_model_dim")
    sized = [m for m in failures if "must match the size" in m and " again at " not in m]
    assert sized
    for message in sized:
        assert "default causal mask seems sized by model_dim (inputs.shape[-1])" in message, message
        assert "at mask_from_model_dim.py:" in message
    # The same error at the same line in other checks: said in full once, then pointed to.
    line = sized[0].split("at mask_from_model_dim.py:", 1)[1].split(" ", 1)[0]
    again = [m for m in failures if m.startswith("your code raised RuntimeError: ") and f" again at mask_from_model_dim.py:{line}, as in " in m]
    assert again and len(sized) + len(again) <= len(failures)
    assert not [m for m in sized if f"mask_from_model_dim.py:{line} " in m][1:], "the same error was said in full twice"


@pytest.mark.parametrize("name", ["projections_with_bias", "output_projection_without_bias"])
def test_a_bias_slip_at_the_desk_costs_the_layout_check_only(desk, name):
    _, results = desk
    failed = [t for t in results[name]["tests"] if t["outcome"] != "passed"]
    assert [t["name"] for t in failed] == [f"{LAYOUT_CHECK}[{name}]"]
    assert "held at zero" in failed[0]["message"]
    assert results[name]["score"] == results[name]["max_score"] - failed[0]["max_points"]


# A bias on one side beside another mistake (in the head, in the module's own use of the projection
# that has no bias), and that mistake alone: graded alike but for the layout check.
BESIDE_A_MISTAKE = (
    ("output_projection_without_bias", "mask_inverted"), ("query_with_bias", "mask_inverted"),
    ("output_projection_without_bias", "doubled_output_projection"),
)


@pytest.fixture(scope="module")
def instructor_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("instructor")
    names = (
        "projections_with_bias", "key_and_value_with_bias", "dropout_after_the_output_projection", "projections_renamed",
        "output_projection_without_bias", "mask_inverted", "doubled_output_projection",
        "every_head_in_one_fused_projection", "heads_in_a_plain_list",
    )
    paths = [catalogue.write_implementation(mutant(name), folder) for name in names]
    paths += [catalogue.write_implementation(catalogue.paired(*pair), folder) for pair in BESIDE_A_MISTAKE]
    return grade(paths, folder)


@pytest.mark.parametrize("name", ["projections_with_bias", "key_and_value_with_bias", "output_projection_without_bias"])
def test_a_bias_slip_keeps_three_quarters_of_the_points_with_one_message_about_the_layout(instructor_run, name):
    assert instructor_run.score(name) >= 75
    (entry,) = instructor_run.results[name]["diagnoses"]
    function = "MultiHeadSelfAttention.__init__" if name.startswith("output_projection") else "AttentionHead.__init__"
    assert entry["mistake"] == root_causes.PARAMETER_LAYOUT and entry["function"] == function
    assert "held at zero" in entry["why"] and "bias=False" in entry["fix"]
    assert entry["explains"] == [t["name"] for t in instructor_run.failed_tests(name)]
    layout_messages = [t for t in instructor_run.failed_tests(name) if "parameters" in t["message"]]
    assert len(layout_messages) == 1
    section_text = section(instructor_run.output, f"diagnosis: {name}")
    assert section_text.count("names and shapes of the contract") == 1


# Placed by what the module has (issue 48): no parameter under heads.<h>. is the module's constructor
# (its missing list names the heads' query, key and value, which the head's constructor has right);
# a head with names, or a bias, of its own is the head's.
WHOSE_LAYOUT = {
    "every_head_in_one_fused_projection": causes.MODULE_CONSTRUCTOR, "heads_in_a_plain_list": causes.MODULE_CONSTRUCTOR,
    "projections_renamed": causes.HEAD_CONSTRUCTOR, "key_and_value_with_bias": causes.HEAD_CONSTRUCTOR,
    "output_projection_without_bias": causes.MODULE_CONSTRUCTOR,
}


@pytest.mark.parametrize("name", WHOSE_LAYOUT)
def test_a_layout_slip_is_placed_in_the_constructor_that_has_it(instructor_run, name):
    (entry,) = [e for e in instructor_run.results[name]["diagnoses"] if e["mistake"] == root_causes.PARAMETER_LAYOUT]
    assert entry["function"] == WHOSE_LAYOUT[name], entry
    # The class report's misconceptions are the results' entries: the same function there.
    from grader.class_view import class_statistics

    (held,) = class_statistics.misconceptions({name: instructor_run.results[name]})
    assert held.function == WHOSE_LAYOUT[name]


def test_a_layout_is_placed_by_the_names_the_module_has():
    contract = {f"heads.{h}.{p}.weight": (4, 8) for h in range(2) for p in ("query", "key", "value")}
    contract |= {"output_projection.weight": (8, 8), "output_projection.bias": (8,)}
    heads_as_three_tensors = {"query_weights": (2, 4, 8), "key_weights": (2, 4, 8), "value_weights": (2, 4, 8),
                              "output_projection.weight": (8, 8), "output_projection.bias": (8,)}
    assert causes.function_of_layout(heads_as_three_tensors, contract) == causes.MODULE_CONSTRUCTOR
    one_head_short = {name: shape for name, shape in contract.items() if not name.startswith("heads.1.")}
    assert causes.function_of_layout(one_head_short, contract) == causes.MODULE_CONSTRUCTOR
    wider_heads = {name: (8, 8) if name.startswith("heads.") else shape for name, shape in contract.items()}
    assert causes.function_of_layout(wider_heads, contract) == causes.HEAD_CONSTRUCTOR
    renamed = {name.replace(".query.", ".q."): shape for name, shape in contract.items()}
    assert causes.function_of_layout(renamed, contract) == causes.HEAD_CONSTRUCTOR


@pytest.mark.parametrize("pair", BESIDE_A_MISTAKE, ids=["+".join(pair) for pair in BESIDE_A_MISTAKE])
def test_a_bias_on_one_side_beside_a_mistake_costs_the_layout_check_and_nothing_more(instructor_run, pair):
    """The reference checks judge the rest with the reference in the student's layout (a bias on
    one side held at zero on both): the file fails what the other mistake alone fails, and the
    layout check; it reads one layout diagnosis, which explains that check, and the other
    mistake's diagnosis explains all the rest, as it does alone."""
    layout, other = pair
    name = catalogue.paired(*pair).name
    failed = {t["name"].replace(name, "X") for t in instructor_run.failed_tests(name)}
    alone = {t["name"].replace(other, "X") for t in instructor_run.failed_tests(other)}
    assert failed == alone | {f"{LAYOUT_CHECK}[X]"}
    layout_points = next(t["max_points"] for t in instructor_run.failed_tests(name) if t["name"].startswith(LAYOUT_CHECK))
    assert instructor_run.score(other) - instructor_run.score(name) == layout_points <= 5
    entries = instructor_run.results[name]["diagnoses"]
    layouts = [entry for entry in entries if entry["mistake"] == root_causes.PARAMETER_LAYOUT]
    assert len(layouts) == 1 and layouts[0]["explains"] == [f"{LAYOUT_CHECK}[{name}]"], entries
    (mistake,) = [entry for entry in entries if entry["mistake"] != root_causes.PARAMETER_LAYOUT]
    (alone,) = instructor_run.results[other]["diagnoses"]
    assert mistake["mistake"] == alone["mistake"]
    assert sorted(n.replace(name, "X") for n in mistake["explains"]) == sorted(n.replace(other, "X") for n in alone["explains"])
    section_text = section(instructor_run.output, f"diagnosis: {name}")
    assert section_text.count("names and shapes of the contract") == 1
    assert len([t for t in instructor_run.failed_tests(name) if "contract's parameters" in t["message"]]) == 1


def test_a_layout_the_weights_cannot_fit_is_said_once_and_explains_every_failure(instructor_run):
    name = "projections_renamed"
    (entry,) = instructor_run.results[name]["diagnoses"]
    assert entry["mistake"] == root_causes.PARAMETER_LAYOUT
    assert "missing heads.<h>.query.weight" in entry["why"]
    assert set(entry["explains"]) == {t["name"] for t in instructor_run.failed_tests(name)}
    for block in failures_of(instructor_run.output, name):  # each failure in one line
        assert block.splitlines()[1].endswith("[explained by the diagnosis above]"), block


def test_randomness_in_the_module_alone_is_named_on_the_module(instructor_run):
    (entry,) = instructor_run.results["dropout_after_the_output_projection"]["diagnoses"]
    assert (entry["function"], entry["mistake"]) == ("MultiHeadSelfAttention.forward", root_causes.NONDETERMINISTIC)


# --- the parts, directly -----------------------------------------------------------------------


def student_file(tmp_path, name: str, replace: tuple[str, str]):
    source = catalogue.SOLUTION_PATH.read_text(encoding="utf-8")
    assert replace[0] in source
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(replace[0], replace[1]), encoding="utf-8")
    return Submission(name, path, InProcessBackend(path)).open()


SOFTMAX = "weights = torch.softmax(scores, dim=-1)  # (batch, seq, seq)"


@pytest.mark.parametrize(("name", "code", "source"), [
    ("torch_generator", SOFTMAX + "\n        weights = torch.nn.functional.dropout(weights, 0.2)", "draws random numbers"),
    ("python_random", SOFTMAX + "\n        import random\n        weights = weights * (1 + random.random())", "another generator"),
    # A count of calls kept on the class (every head built shares it) that flips every other call
    # agrees with itself two calls later: not randomness.
    ("count_of_calls", SOFTMAX + "\n        type(self).calls = getattr(type(self), 'calls', 0) + 1\n"
     "        weights = weights * (1 + type(self).calls % 2)", "keeps state between calls"),
])
def test_randomness_is_told_from_its_source(tmp_path, name, code, source):
    handle = student_file(tmp_path, name, (SOFTMAX, code))
    entry = root_causes.find_randomness(handle)
    assert entry is not None and entry["function"] == "AttentionHead.forward"
    assert source in entry["why"]


def test_state_an_earlier_call_left_in_the_module_is_not_taken_for_randomness(tmp_path):
    # Each asking of the randomness question builds the module afresh: a count kept on the module
    # (told by the answer cache instead, grader/submission.py) does not make its answers random.
    count = SOFTMAX + "\n        self.calls = getattr(self, 'calls', 0) + 1\n        weights = weights * (1 + self.calls % 2)"
    handle = student_file(tmp_path, "counted", (SOFTMAX, count))
    handle.run_head(**root_causes_question_arguments())  # an earlier call: the module kept is no longer new
    assert root_causes.find_randomness(handle) is None


def root_causes_question_arguments() -> dict:
    question = causes.randomness_question(0)
    config, rng = question.config, data.generator(question.data_seed)
    inputs = data.random_inputs(config, rng)
    return {"model_dim": config.model_dim, "head_dim": config.head_dim, "parameters": data.head_parameters(config, rng),
            "inputs": inputs, "allowed_mask": data.causal_allowed(config.seq)}


def test_a_deterministic_module_is_not_called_random(tmp_path):
    handle = student_file(tmp_path, "solution", (SOFTMAX, SOFTMAX))
    assert root_causes.find_randomness(handle) is None


STEERED = SOFTMAX + "\n        if torch.initial_seed() == 2:\n            weights = weights * 0.5"  # deterministic, but not on (1, 2, 1)


@pytest.mark.parametrize("grading_seed", [0, 12345])
def test_a_deterministic_module_that_answers_a_fixed_question_differently_is_not_called_random(tmp_path, grading_seed):
    """The randomness question is drawn from the grading seed: a submission cannot recognise
    it (torch seeded 1, 2, 1 once) and pass for random instead of being diagnosed."""
    handle = student_file(tmp_path, "steered", (SOFTMAX, STEERED))
    question = causes.randomness_question(grading_seed)
    assert 2 not in (question.first, question.second) and question.first != question.second
    assert root_causes.find_randomness(handle, grading_seed) is None


def test_the_randomness_question_changes_with_the_grading_seed():
    questions = {causes.randomness_question(seed) for seed in range(5)}
    assert len({(q.first, q.second) for q in questions}) == 5 and len({q.config for q in questions}) > 1


class HeadWithExtras(nn.Module):
    def __init__(self, model_dim: int, head_dim: int) -> None:
        super().__init__()
        self.query = nn.Linear(model_dim, head_dim)
        self.key = nn.Linear(model_dim, head_dim, bias=False)
        self.value = nn.Linear(model_dim, head_dim, bias=False)
        self.temperature = nn.Parameter(torch.full((1,), 1.0))


class ProjectionWithoutBias(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.output_projection = nn.Linear(4, 4, bias=False)


def test_a_bias_the_module_has_no_place_for_is_not_held_and_the_rest_loads():
    module = ProjectionWithoutBias()
    parameters = {"output_projection.weight": torch.randn(4, 4), "output_projection.bias": torch.randn(4)}
    assert operations._load(module, parameters) == {"not_held": ["output_projection.bias"]}
    assert torch.equal(module.output_projection.weight, parameters["output_projection.weight"])
    # Only a bias beside its projection's weight: any other parameter missing cannot be graded around.
    with pytest.raises(operations.ContractViolation, match=r"missing output_projection.bias \(4,\), other.bias"):
        operations._load(module, {**parameters, "other.bias": torch.randn(4)})


def test_the_grader_holds_at_zero_only_the_biases_a_run_reported_and_it_sent(tmp_path):
    path = catalogue.write_implementation(mutant("output_projection_without_bias"), tmp_path)
    handle = Submission(path.stem, path, InProcessBackend(path)).open()
    config = data.LESSON
    parameters = data.attention_parameters(config, data.generator(1))
    assert handle.as_held(parameters) is parameters  # nothing reported yet
    got = handle.run_attention(model_dim=config.model_dim, num_heads=config.num_heads, inputs=data.random_inputs(config, data.generator(2)), parameters=parameters)
    assert got["not_held"] == ["output_projection.bias"] and handle.not_held == {"output_projection.bias"}
    held = handle.as_held(parameters)
    assert not held["output_projection.bias"].any() and parameters["output_projection.bias"].any()
    assert all(torch.equal(held[n], parameters[n]) for n in parameters if n != "output_projection.bias")
    with pytest.raises(StudentCodeError, match="did not send"):  # a reply cannot name what the grader did not send
        handle._held("run_attention", {"not_held": ["heads.0.query.weight"]}, {"parameters": parameters})


@pytest.mark.parametrize(("missing", "extra", "said", "not_said"), [
    ([], ["heads.0.query.bias"], "every extra bias of yours held at zero (what bias=False means)", "kept the values"),
    (["output_projection.bias"], [], "the reference's output_projection.bias held at zero, as your module has none", "every extra"),
    (["output_projection.bias"], ["temperature"], "Your other extra parameters kept the values", "cannot load"),
    ([], ["temperature"], "ran with the grader's weights. Your other extra parameters kept", "held at zero"),
    (["heads.0.query.weight"], [], "cannot load its weights", "held at zero"),
])
def test_the_layout_check_says_what_the_other_checks_did_with_the_layout(missing, extra, said, not_said):
    from grader.exercises.multi_head_attention.visible.test_head_distinctness import graded_around

    parameters = {"output_projection.weight": torch.zeros(2, 2), **{name: torch.zeros(2) for name in extra}}
    text = graded_around(missing, extra, [], parameters)
    assert said in text and not_said not in text, text


def test_an_extra_bias_is_held_at_zero_and_any_other_extra_keeps_its_value():
    module = HeadWithExtras(4, 2)
    parameters = {f"{n}.weight": torch.randn(2, 4) for n in ("query", "key", "value")}
    held = operations._load(module, parameters)
    assert held == {"held_at_zero": ["query.bias"], "kept": ["temperature"]}
    assert not module.query.bias.any() and module.temperature.item() == 1.0
    assert torch.equal(module.query.weight, parameters["query.weight"])
    with pytest.raises(operations.ContractViolation, match=r"missing other.weight .*shaped value.weight \(2, 4\) instead of \(3, 4\)"):
        operations._load(module, {**parameters, "value.weight": torch.randn(3, 4)} | {"other.weight": torch.randn(2, 4)})


@pytest.mark.slow  # a batch, its report and Chromium: some 20 s
@pytest.mark.skipif(not browser.available(), reason="Chromium or Playwright is not installed")
def test_in_chromium_a_bias_left_out_beside_a_mask_mistake_reads_one_layout_diagnosis(tmp_path):
    """The student's page, as a browser shows it: one block about the layout (not one a check),
    which explains the layout check alone, beside the mask's block; the score that of the mask
    mistake alone less the layout check's 2 points."""
    folder = tmp_path / "class"
    pair = catalogue.paired("output_projection_without_bias", "mask_inverted")
    for implementation in (pair, mutant("mask_inverted")):
        catalogue.write_implementation(implementation, folder)
    out = tmp_path / "out"
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out), "--quiet", "--jobs", "1"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    with browser.browser() as chromium:
        shown = {}
        for name in (pair.name, "mask_inverted"):
            page = chromium.new_page()
            page.goto((out / "feedback" / f"{name}.html").resolve().as_uri(), wait_until="load")
            shown[name] = (page.locator("h3").all_inner_texts(), page.inner_text("body"))
    headings, text = shown[pair.name]
    layout = [h for h in headings if "names and shapes of the contract" in h]
    assert len(layout) == 1 and sum("the head blocks the positions the mask allows" in h for h in headings) == 1, headings
    assert "explains 1 failing check of 1 test: test_each_head_has_its_own_query_key_and_value_projections" in text
    score = int(text.split("Score: ", 1)[1].split("/", 1)[0])
    alone = int(shown["mask_inverted"][1].split("Score: ", 1)[1].split("/", 1)[0])
    assert alone - score == 2


def test_an_exercise_that_declares_no_causes_has_none_found_and_each_check_keeps_its_message(monkeypatch):
    """The root causes read what is the exercise's (whose layout, which calls, the randomness
    question) only through its declaration's ``causes``: one that declares none is not asked."""
    import dataclasses
    from types import SimpleNamespace

    from grader.seam import registry

    first = registry.exercise()
    assert root_causes.causes() is registry.module(first, first.causes)
    monkeypatch.setattr(registry, "exercise", lambda name=None: dataclasses.replace(first, causes=None))
    assert root_causes.causes() is None
    result = SimpleNamespace(submission="alice", diagnoses=[])
    handle = SimpleNamespace(timeouts={}, changed_answer=None)
    slip = StudentCodeError.__new__(StudentCodeError)
    assert root_causes.RootCauses().account(result, handle, "test_layout[alice]", slip, {"run_attention"}) is None
    assert result.diagnoses == []
