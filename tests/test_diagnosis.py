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
