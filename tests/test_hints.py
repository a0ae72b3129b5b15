"""A hint speaks only where its premise holds.

Every hint of the grader's checks names a cause ("you divided by head_dim", "your mask marks
the future"). Here each hint is matched by a phrase, and the submissions it may appear in are
those whose code has that cause: catalogue mutants, and a few more written the way students
write them (a hand-written softmax, torch.where for the mask, heads averaged). A hint shown
to code without its cause fails the test; so does a hint missing where its cause is.
All of them are graded in one grader run.
"""

from __future__ import annotations

import pytest

import catalogue
from catalogue import Edit, Implementation
from grading import GradingRun, grade

_SOFTMAX_LINE = "weights = torch.softmax(scores, dim=-1)"
_MASK_LINE = 'scores = scores.masked_fill(~allowed_mask, float("-inf"))'
_CONCAT_LINE = "return torch.cat(outputs, dim=-1)"
_HEADS_CALL = "head_results = [head(inputs, allowed_mask) for head in self.heads]"

# In a student's own style: each has one cause, and so one hint.
STYLES = (
    Implementation(
        name="softmax_by_hand_unstable",
        description="A softmax written by hand without subtracting the row maximum (exp overflows).",
        edits=(Edit(_SOFTMAX_LINE, "exps = torch.exp(scores)\n        weights = exps / exps.sum(dim=-1, keepdim=True)"),),
    ),
    Implementation(
        name="softmax_by_hand_over_queries",
        description="A stable softmax written by hand, normalised over the queries (dim=1).",
        edits=(Edit(_SOFTMAX_LINE, (
            "exps = torch.exp(scores - scores.amax(dim=1, keepdim=True))\n"
            "        weights = exps / exps.sum(dim=1, keepdim=True)"
        )),),
    ),
    Implementation(
        name="heads_averaged",
        description="Averaged the heads' outputs instead of concatenating them.",
        edits=(Edit(_CONCAT_LINE, "return torch.stack(outputs).mean(dim=0)"),),
    ),
    Implementation(
        name="head_builds_causal_mask_with_where",
        description="The head builds its own causal mask with torch.where and ignores the one it is given.",
        edits=(Edit(_MASK_LINE, (
            "seq = scores.shape[-1]\n"
            "        scores = torch.where(torch.ones(seq, seq, dtype=torch.bool).tril(), scores, float('-inf'))"
        )),),
    ),
    Implementation(
        name="dropout_left_on",
        description="Dropout on the weights in training mode: every call gives other numbers (no hint may guess why).",
        edits=(Edit(_SOFTMAX_LINE, "weights = torch.nn.functional.dropout(torch.softmax(scores, dim=-1), p=0.1, training=True)"),),
    ),
    Implementation(
        name="module_passes_causal_mask_to_heads",
        description="The module gives its heads the causal mask whatever mask it is given.",
        edits=(Edit(_HEADS_CALL, "head_results = [head(inputs, causal_mask(inputs.shape[1])) for head in self.heads]"),),
    ),
)

# hint phrase -> the submissions whose code has the hint's cause. The hint must appear in each
# of them and in no other submission graded here.
PREMISES = {
    "overflow exp()": {"softmax_by_hand_unstable"},
    "math.sqrt(head_dim)": {"missing_scale", "scale_by_head_dim", "scale_power_half"},
    "head_dim ** 0.5": {"scale_power_half"},
    "multiplying the scores by sqrt(head_dim)": {"scale_multiplied"},
    "dividing by sqrt(model_dim)": {"scale_by_model_dim"},
    "dividing by sqrt(seq_len)": {"scale_by_seq_len"},
    "sequence axis": {"concatenated_on_seq_axis"},
    "that is one head's width": {"heads_averaged"},
    "instead of building a causal mask": {"custom_mask_ignored", "head_builds_causal_mask_with_where"},
    "must pass its allowed_mask to every head": {"module_passes_causal_mask_to_heads"},
    "zeroed afterwards": {"mask_after_softmax"},
    "filling the hidden scores with 0": {"mask_filled_with_zero"},
    "with no mask at all": {"no_mask", "masked_fill_result_discarded", "no_default_causal_mask"},
    "over the query positions": {"softmax_over_queries", "softmax_by_hand_over_queries"},
    "keys @ queries^T": {"queries_and_keys_swapped"},
    # NaN where the student's own mask leaves a row empty reproduces too (0/0 in both).
    "follow your causal_mask": {"anti_causal_mask", "mask_one_step_ahead", "mask_without_diagonal"},
    "give 0/0 under the softmax": {"mask_without_diagonal"},
    "over the batch axis": {"softmax_over_batch"},
    "the scaled scores themselves": {"scores_returned_as_weights"},
    "allows no position": {"mask_without_diagonal"},
    "leaves out the diagonal": {"mask_without_diagonal"},
    "lets each position see the next one": {"mask_one_step_ahead"},
    "dtype=torch.bool": {"float_causal_mask"},
    "the graph is cut": {"keys_detached", "inputs_detached_for_keys", "values_under_no_grad"},
    "does not use it": {"no_output_projection", "values_from_queries", "values_from_keys", "scores_from_queries_only",
                        "weights_concatenated"},
    "weights @ queries": {"values_from_queries"},
    "weights @ keys": {"values_from_keys"},
    "without output_projection": {"no_output_projection"},
    "applied twice": {"doubled_output_projection"},
    "reverse order": {"heads_concatenated_in_reverse"},
    "interleaved": {"interleaved_concatenation"},
    "no residual connection": {"residual_added"},
    "stacked on axis 0": {"weights_stacked_heads_first"},
    "is not axis 1": {"weights_heads_axis_misplaced"},
    "repeats one module": {"shared_head_module", "one_head_module_for_all"},
    "manual_seed": {"reseeded_heads", "reseeded_before_each_head"},
    "yet return the same matrices": {"first_head_weights_repeated"},
    "is an assert": {"assert_instead_of_raise"},
    "right and a float": {"true_division_head_dim"},
    "before any check of the configuration": {"no_divisibility_check"},
    "nn.ModuleList": {"heads_in_a_plain_list"},
    "seems sized by the batch": {"default_mask_sized_by_batch"},
    "three nn.Linear layers": {"query_key_value_share_one_linear"},
    "compute in the inputs' dtype": {"head_computes_in_float64"},
}
# Sentences of the problem line that state a fact about the student's code (which tensors are
# shared and where, which dtype came back, which heads are alike): phrase -> the submissions
# of which it is true. Checked over whole messages, like the hints.
FACTS = {
    "hold the very same parameter tensor": {"shared_head_module", "one_head_module_for_all", "key_and_value_shared_across_heads"},
    "inside each of heads 0, 1 and 2, query, key and value are the very same parameter tensor": {"query_key_value_share_one_linear"},
    # Every shared projection named: the key's and the value's, not the first group only.
    "tensors, one as their key.weight and one as their value.weight": {"key_and_value_shared_across_heads"},
    "one as their query.weight, one as their key.weight and one as their value.weight": {"shared_head_module", "one_head_module_for_all"},
    # NaN weights are never "the same" (mask_without_diagonal gives a row of NaN)
    "return the same attention matrix": {"shared_head_module", "one_head_module_for_all", "reseeded_heads",
                                         "reseeded_before_each_head", "first_head_weights_repeated"},
    "came back float64 for float32 inputs": {"head_computes_in_float64"},
}
CATALOGUE_NAMES = sorted(set().union(*PREMISES.values()) - {impl.name for impl in STYLES}) + [
    # Wrong in ways no hint here names: every hint must stay silent on them.
    "scale_after_softmax", "sigmoid_instead_of_softmax", "mask_inverted", "key_and_value_shared_across_heads",
    "mask_transposed_for_heads", "output_for_first_batch_only",
    "softmax_sum_without_keepdim", "scale_power_half",
    # Valid rewrites: no failure, so no hint at all.
    "softmax_by_hand", "einsum_everywhere", "where_with_finfo_min", "softmax_in_float64",
]


def hints_of(run, name: str) -> list[str]:
    return [line.strip() for test in run.failed_tests(name) for line in test["message"].splitlines()
            if line.strip().startswith("hint:")]


@pytest.fixture(scope="module")
def graded(catalogue_run, tmp_path_factory):
    """The catalogue's entries from the run's grading of the whole catalogue (tests/conftest.py), and
    the styles graded here on the same seed: (each submission's result, the names read here)."""
    folder = tmp_path_factory.mktemp("hints")
    styles = grade([catalogue.write_implementation(impl, folder) for impl in STYLES], folder,
                   "--grading-seed", str(catalogue_run.seed))
    results = {name: catalogue_run.results[name] for name in CATALOGUE_NAMES} | styles.results
    return GradingRun(0, "", results), [*CATALOGUE_NAMES, *(impl.name for impl in STYLES)]


@pytest.fixture(scope="module")
def hints(graded):
    run, names = graded
    return {name: hints_of(run, name) for name in names}


@pytest.fixture(scope="module")
def messages(graded):
    run, names = graded
    return {name: [test["message"] for test in run.failed_tests(name)] for name in names}


@pytest.mark.parametrize("phrase", list(FACTS))
def test_a_fact_about_the_code_is_said_exactly_where_it_is_true(messages, phrase):
    said = {name for name, texts in messages.items() if any(phrase in text for text in texts)}
    wrongly = {name: next(text for text in messages[name] if phrase in text)[:300] for name in said - FACTS[phrase]}
    assert not wrongly, f"{phrase!r} said where it is false: {wrongly}"
    assert FACTS[phrase] <= said, f"{phrase!r} missing where it is true: {sorted(FACTS[phrase] - said)}"


@pytest.mark.parametrize("phrase", list(PREMISES))
def test_a_hint_appears_exactly_where_its_premise_holds(hints, phrase):
    shown = {name for name, lines in hints.items() if any(phrase in line for line in lines)}
    wrongly = {name: [line for line in hints[name] if phrase in line][:1] for name in shown - PREMISES[phrase]}
    assert not wrongly, f"{phrase!r} shown where its premise is false: {wrongly}"
    assert PREMISES[phrase] <= shown, f"{phrase!r} missing where its premise holds: {sorted(PREMISES[phrase] - shown)}"


def test_code_that_uses_torch_softmax_is_never_told_to_use_it(hints):
    """The issue's first case: the overflow hint shown to code that calls torch.softmax."""
    by_name = {impl.name: impl for impl in (*catalogue.MUTANTS, *catalogue.VARIANTS, *STYLES)}
    uses_softmax = {name for name in hints if "torch.softmax(" in catalogue.implementation_source(by_name[name])}
    told = {name for name in uses_softmax if any("torch.softmax" in line and "exp" in line for line in hints[name])}
    assert uses_softmax and not told, told


def test_valid_rewrites_get_no_hint(hints):
    assert not any(hints[name] for name in ("softmax_by_hand", "einsum_everywhere", "where_with_finfo_min"))
