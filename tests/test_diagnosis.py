"""The diagnosis names each known mistake from its numbers, and only then.

Every function of each catalogue entry is probed here directly (the engine of
grader/hidden/diagnosis.py, with the in-process backend), whatever the checks say, so that
a known mistake found in the wrong function, or a diagnosis of a valid rewrite, shows up
even where no check would have asked for one. tests/test_catalogue.py checks the same
through a full grading run.
"""

from __future__ import annotations

import pytest
import torch

import catalogue
from grading import grade
from grader.hidden import diagnosis, mistakes, probes
from grader.submission import InProcessBackend, Submission

# The vocabulary: ids reports and spreadsheets rely on; they must never disappear.
VOCABULARY = {
    mistakes.HEAD_DIMENSION: {"no_divisibility_check", "error_message_without_numbers"},
    mistakes.CAUSAL_MASK: {"upper_triangle_mask", "mask_without_diagonal", "inverted_mask"},
    mistakes.HEAD: {
        "missing_scale", "scaled_by_head_dim", "scaled_by_model_dim", "softmax_over_queries", "mask_after_softmax",
        "mask_not_applied", "head_ignores_given_mask", "mask_polarity_flipped", "returns_scores",
        "values_not_weighted", "projection_detached",
    },
    mistakes.CONCATENATE: {"concatenated_on_wrong_axis", "heads_interleaved"},
    mistakes.MODULE: {
        "shared_head_module", "identically_initialised_heads", "missing_output_projection",
        "repeated_output_projection", "weights_stacked_on_wrong_axis", "one_head_weights_repeated",
        "module_ignores_given_mask", "default_mask_wrong_size",
    },
}


def verdicts(path) -> dict[str, tuple[str, ...]]:
    """Every function's verdict: known ids, () for unknown; functions that behave are left out."""
    submission = Submission(path.stem, path, InProcessBackend(path)).open()
    assert submission.import_error is None, submission.import_error
    found = {}
    for function in mistakes.FUNCTIONS:
        try:
            verdict = diagnosis.diagnose_function(function, submission)
        except probes.Unusable:
            continue
        if verdict is not None:
            found[function] = verdict
    return found


def named(found: dict) -> set[str]:
    return {id for ids in found.values() for id in ids}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    torch.set_num_threads(1)
    return tmp_path_factory.mktemp("diagnosis")


def test_the_vocabulary_is_all_there():
    for function, ids in VOCABULARY.items():
        missing = ids - {mistake.id for mistake in mistakes.of_function(function)}
        assert not missing, f"{function} lacks {sorted(missing)}"


def test_every_mistake_has_words_for_a_student():
    for mistake in mistakes.MISTAKES:
        for text in (mistake.title, mistake.why, mistake.fix):
            assert text and len(text) < 400 and "\n" not in text, mistake.id


def test_the_solution_gets_no_diagnosis():
    path = catalogue.SOLUTION_PATH
    assert verdicts(path) == {}


@pytest.mark.parametrize("variant", catalogue.VARIANTS, ids=[v.name for v in catalogue.VARIANTS])
def test_a_valid_variant_gets_no_diagnosis(folder, variant):
    assert verdicts(catalogue.write_implementation(variant, folder)) == {}


KNOWN = [m for m in catalogue.MUTANTS if m.mistake]
UNLISTED = [m for m in catalogue.MUTANTS if not m.mistake]


@pytest.mark.parametrize("mutant", KNOWN, ids=[m.name for m in KNOWN])
def test_a_known_mistake_is_named_and_nothing_else(folder, mutant):
    found = verdicts(catalogue.write_implementation(mutant, folder))
    assert found, f"{mutant.name}: no function found wrong"
    assert named(found) == {mutant.mistake} and all(found.values()), f"{mutant.name}: {found}"
    assert mistakes.BY_ID[mutant.mistake].function in found


@pytest.mark.parametrize("mutant", UNLISTED, ids=[m.name for m in UNLISTED])
def test_a_mistake_outside_the_vocabulary_gets_no_known_id(folder, mutant):
    found = verdicts(catalogue.write_implementation(mutant, folder))
    assert named(found) == set(), f"{mutant.name} was given {found}"
    assert found, f"{mutant.name}: the diagnosis did not even see a wrong function"


def test_the_catalogue_has_enough_pairs_of_both_kinds():
    by_name = {m.name: m for m in catalogue.MUTANTS}
    same_function = [p for p in catalogue.PAIRS if len({mistakes.BY_ID[by_name[n].mistake].function for n in p}) == 1]
    assert len(catalogue.PAIRS) >= 10
    assert len(same_function) >= 5 and len(catalogue.PAIRS) - len(same_function) >= 5


@pytest.mark.parametrize("pair", catalogue.PAIRS, ids=["+".join(p) for p in catalogue.PAIRS])
def test_both_mistakes_of_a_pair_are_named(folder, pair):
    by_name = {m.name: m for m in catalogue.MUTANTS}
    found = verdicts(catalogue.write_implementation(catalogue.paired(*pair), folder))
    assert named(found) == {by_name[n].mistake for n in pair} and all(found.values()), f"{pair}: {found}"


def test_a_wrong_function_matching_two_explanations_is_unknown(monkeypatch, tmp_path):
    """Two different known mistakes fitting the numbers is no diagnosis: never a guess."""
    missing_scale = mistakes.BY_ID["missing_scale"]
    twin = mistakes.Mistake("twin_of_missing_scale", mistakes.HEAD, "t", "w", "f", missing_scale.forms)
    monkeypatch.setattr(mistakes, "MISTAKES", (*mistakes.MISTAKES, twin))
    mutant = next(m for m in KNOWN if m.mistake == "missing_scale")
    assert verdicts(catalogue.write_implementation(mutant, tmp_path)) == {mistakes.HEAD: ()}


def test_outcomes_are_compared_strictly():
    value = torch.tensor([[0.25, 0.75], [1.0, float("nan")]], dtype=torch.float64)
    assert diagnosis.same(value, value.clone())
    assert not diagnosis.same(value, value + 1e-6)  # float64: far beyond a valid rewrite's 1e-15
    assert diagnosis.same(value.float(), value + 1e-6)  # float32 answers: the grader's float32 tolerance
    assert not diagnosis.same(value, value[:1])
    assert not diagnosis.same(torch.ones(2, dtype=torch.bool), torch.ones(2))  # a float mask is not a bool one
    assert diagnosis.same(None, torch.zeros(3)) and not diagnosis.same(None, torch.ones(3))
    assert not diagnosis.same(("error", "ValueError"), ("error", "TypeError"))


# --- through a grading run: results, terminal, feedback page -----------------------------------------


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("graded")
    by_name = {m.name: m for m in catalogue.MUTANTS}
    paths = [
        catalogue.write_implementation(catalogue.paired("missing_scale", "interleaved_concatenation"), folder),
        catalogue.write_implementation(by_name["softmax_over_batch"], folder),  # outside the vocabulary
        catalogue.write_implementation(catalogue.VARIANTS[0], folder),
    ]
    return grade(paths, folder, "--results-dir", str(folder / "out")), folder / "out"


PAIR = "missing_scale__and__interleaved_concatenation"


def test_results_name_each_mistake_with_the_checks_it_explains(graded):
    run, _ = graded
    entries = run.results[PAIR]["diagnoses"]
    assert [(e["function"], e["mistake"]) for e in entries] == [
        ("AttentionHead.forward", "missing_scale"), ("concatenate_heads", "heads_interleaved"),
    ]
    failed = {t["name"] for t in run.failed_tests(PAIR)}
    for entry in entries:
        assert entry["title"] == mistakes.BY_ID[entry["mistake"]].title
        assert entry["explains"] and set(entry["explains"]) <= failed
    head, concatenation = entries
    assert any(n.startswith("test_concatenation_puts_each_head") for n in concatenation["explains"])
    assert not any(n.startswith("test_concatenation_puts_each_head") for n in head["explains"])
    assert set(head["explains"]) | set(concatenation["explains"]) == failed  # every failure accounted for


def test_a_failing_function_that_matches_nothing_is_called_unknown(graded):
    run, _ = graded
    (entry,) = run.results["softmax_over_batch"]["diagnoses"]
    assert (entry["function"], entry["mistake"], entry["explains"]) == ("AttentionHead.forward", "unknown", [])
    assert entry["first_failing_check"] in {t["name"] for t in run.failed_tests("softmax_over_batch")}


def test_a_submission_with_nothing_wrong_gets_no_diagnosis(graded):
    run, _ = graded
    assert run.results[catalogue.VARIANTS[0].name]["diagnoses"] == []


def test_the_terminal_shows_the_diagnosis_first_and_explained_failures_in_one_line(graded):
    run, _ = graded
    output = run.output
    assert output.index(f"diagnosis: {PAIR}") < output.index("FAILURES")
    explained = output[output.index(f"test_concatenation_puts_each_head_in_its_own_block_in_order[{PAIR}]"):]
    assert explained.splitlines()[1].endswith("[explained by the diagnosis above]")
    assert "hint:" not in explained.split("\n_")[0]
    failures = output[output.index("FAILURES"):]
    unexplained = failures[failures.index("test_every_row_of_every_head_sums_to_one[softmax_over_batch"):]
    assert "  hint:" in unexplained.split("\n_")[0]  # not explained: the whole message stays


def test_the_feedback_page_puts_the_diagnosis_before_the_failing_checks(graded):
    _, out = graded
    page = (out / "feedback" / f"{PAIR}.md").read_text()
    assert page.index("## What went wrong") < page.index("## Failing checks")
    assert mistakes.BY_ID["missing_scale"].fix in page and mistakes.BY_ID["heads_interleaved"].why in page
    assert "hint:" not in page  # every failure is explained: no menu of hints
    unknown = (out / "feedback" / "softmax_over_batch.md").read_text()
    assert "matches none of the known ones" in unknown and "hint:" in unknown
