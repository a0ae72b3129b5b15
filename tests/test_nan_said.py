"""NaN and infinities are said as what they are, in every check the student meets.

A few submissions whose weights or outputs hold NaN or an infinity in places (at the hidden
positions only, in whole rows, in one head only, everywhere; in the head and in the module)
are graded once, by every check, visible and hidden, beside the solution. Not one of them
gives a hidden position a number other than 0, so no sentence the student reads (a check's
message and hint, the diagnosis, a picture's caption, the feedback page, the terminal) may
call those entries weight, a change or a difference, or call them the same as anything.
"""

from __future__ import annotations

import re

import pytest

import catalogue
from grading import grade
from sentences import misnamed_non_numbers

from grader.class_view import attention_picture
from grader.feedback import attention_comparison, diagnosis_text

E = catalogue.Edit
# Each: the edits, and whether its outputs (not only its weights) hold values that are not numbers.
SUBMISSIONS = {
    # The weights reported NaN where the mask hides; the output computed from the right weights.
    "nan_at_hidden_positions": ([E(catalogue._OUTPUT_LINE, catalogue._OUTPUT_LINE
                                   + "\n        weights = weights.masked_fill(~allowed_mask, float('nan'))")], False),
    # A causal mask without its diagonal: the first row of every head is 0/0, NaN, and so its output.
    "nan_rows": ([E(catalogue._TRIL_LINE, "return torch.tril(ones, diagonal=-1)")], True),
    # One head's matrix NaN in the module's weights; the output right.
    "nan_in_one_head": ([E(catalogue._STACK_LINE, catalogue._STACK_LINE + "\n        weights = weights.clone()\n"
                                                  "        weights[:, 0] = float('nan')")], False),
    # The masked scores returned as the weights: -inf at every hidden position.
    "minus_inf_at_hidden_positions": ([E("return HeadResult(output=output, weights=weights)",
                                         "return HeadResult(output=output, weights=scores)")], False),
    # Everything NaN, the head's weights and so every output.
    "nan_everywhere": ([E(catalogue._SOFTMAX_LINE, catalogue._SOFTMAX_LINE + " * float('nan')")], True),
    # The module's output divided by zero: infinite (NaN where it was 0).
    "infinite_outputs": ([E(catalogue._PROJECTION_LINE, catalogue._PROJECTION_LINE + " / 0.0")], True),
    # A softmax over the batch axis: 0/0 where every sequence hides a key.
    "softmax_over_batch": ([E(catalogue._SOFTMAX_LINE, "weights = torch.softmax(scores, dim=0)")], True),
}

# Sentences that would call a NaN or an infinity weight, a change, a difference or a match. None
# of these submissions gives any hidden position a number other than 0.
MISNAMED = {
    "weight": [r"gives weight to key position", r"hidden positions have weight", r"weight at \d+ hidden positions",
               r"give later positions weight", r"zero weight on every one of them"],
    "a change": [r"do not match the output before the change", r"changed with the inputs after them",
                 r"largest (difference|change) (nan|NaN|-?inf|0)(?![.\d])"],
    "a match": [r"expected: +(nan|NaN|-?inf)\b", r"return the same attention matrix"],
    "vague": [r"contains NaN or infinite", r"NaN or infinite values \("],
}
# Said only of outputs that are numbers (and of those, not of these submissions').
MATCHED_OUTPUTS = [r"your outputs match the reference"]


def sentences(run, out, name: str) -> list[tuple[str, str]]:
    """(where, text) for everything the student reads about ``name``."""
    result = run.results[name]
    found = []
    for test in result["tests"]:
        if test["outcome"] == "passed":
            continue
        found.append((test["name"], test.get("message") or ""))
        if test.get("attention"):
            found.append((f"{test['name']} picture", attention_picture.label(test["attention"])))
            found.append((f"{test['name']} text picture", "\n".join(attention_comparison.text_lines(test["attention"]))))
    found.append(("diagnosis", "\n".join(diagnosis_text.text_lines(result["diagnoses"]))))
    found.append(("feedback page", (out / "feedback" / f"{name}.md").read_text(encoding="utf-8")))
    terminal = run.output
    found.append(("terminal", "\n".join(line for line in terminal.splitlines() if f"[{name}" in line or name in line)))
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nan")
    solution = catalogue.SOLUTION_PATH.read_text(encoding="utf-8")
    paths = []
    for name, (edits, _) in SUBMISSIONS.items():
        path = folder / "class" / f"{name}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(catalogue.apply_edits(solution, edits, name), encoding="utf-8")
        paths.append(path)
    reference = folder / "class" / "solution.py"
    reference.write_text(solution, encoding="utf-8")
    run = grade([*paths, reference], folder, "--results-dir", str(folder / "out"), "--grading-seed", "37")
    return run, folder / "out"


def test_every_check_ran_on_every_submission(graded):
    run, _ = graded
    every_check = {test["name"].replace("[solution", "[") for test in run.results["solution"]["tests"]}
    assert run.score("solution") == 100 and {"reference", "reference_examples"} <= set(run.results["solution"]["groups"])
    for name in SUBMISSIONS:
        assert {test["name"].replace(f"[{name}", "[") for test in run.results[name]["tests"]} == every_check, name
        assert run.score(name) < 100, name


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_no_sentence_calls_a_nan_or_an_infinity_weight_a_change_or_a_match(graded, name):
    run, out = graded
    patterns = [(kind, pattern) for kind, listed in MISNAMED.items() for pattern in listed]
    if SUBMISSIONS[name][1]:
        patterns += [("a match", pattern) for pattern in MATCHED_OUTPUTS]
    wrong = [
        f"{where}: calls it {kind}: {line.strip()}"
        for where, text in sentences(run, out, name)
        for line in text.splitlines()
        for kind, pattern in patterns if re.search(pattern, line)
    ] + [f"{test['name']}: {problem}" for test in run.failed_tests(name) for problem in misnamed_non_numbers(test["message"])]
    assert wrong == [], "\n".join(wrong[:12])


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_what_is_not_a_number_is_said_as_such(graded, name):
    run, _ = graded
    told = "\n".join(test["message"] for test in run.failed_tests(name))
    assert re.search(r"\b(NaN|infinite values|-?inf) at\b", told), told[:3000]


def test_nan_at_a_hidden_position_is_said_with_where_it_is(graded):
    run, _ = graded
    messages = {t["name"].split("[")[0]: t["message"] for t in run.failed_tests("nan_at_hidden_positions")}
    future = messages["test_future_positions_get_zero_weight"]
    assert "query position 0 has NaN at key position 1, which the mask hides." in future, future
    assert re.search(r"got: +NaN \(NaN at \d+ hidden positions\)", future), future
    # The output is the reference's: no check of the output fails, and none says it changed.
    assert "test_output_at_a_position_ignores_later_inputs" not in messages


def test_an_output_nan_before_and_after_a_change_is_neither_changed_nor_the_same(graded):
    run, _ = graded
    messages = [t["message"] for t in run.failed_tests("nan_rows") if t["name"].startswith("test_output_at_a_position")]
    assert messages
    for message in messages:
        assert "before the change and after it, so whether they depend on the inputs after them cannot be told" in message
        assert re.search(r": NaN at \d+ of \d+ entries, before the change", message), message
        # The premise of the hint checked on the student's numbers: the NaN are in the rows their
        # own causal mask leaves empty.
        assert "a softmax over nothing but -inf is 0/0, NaN" in message, message
    infinite = [t["message"] for t in run.failed_tests("infinite_outputs") if t["name"].startswith("test_output_at_a_position")]
    assert infinite and all("infinite values at" in message for message in infinite), infinite
