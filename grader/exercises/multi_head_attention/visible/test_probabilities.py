"""Group 2 — probabilities: attention weights are distributions over key positions."""

from __future__ import annotations

import pytest
import torch

from grader.exercises.multi_head_attention import checks, data
from grader.exercises.multi_head_attention import premises
from grader.exercises.multi_head_attention.data import PROPERTY_CONFIGS

CONFIG_IDS = [config.id for config in PROPERTY_CONFIGS]

# Each hint below speaks only when the grader has checked its premise on the student's numbers
# (grader/exercises/multi_head_attention/premises.py): when nothing checked explains them, expected / got stands alone.
OVERFLOW_HINT = (
    "your weights are finite for inputs of magnitude ~1 and not for ~30: large scores overflow exp(). "
    "Subtract each row's maximum before exp, as torch.softmax does."
)


MODULE = "probabilities-module"


def module_inputs(config, scale=1.0) -> dict:
    given = data.drawn(data.Draw(data.DRAWS[MODULE].seed, "module", "causal", scale), config)
    return {"inputs": given["inputs"], "parameters": given["parameters"]}


def run_module(submission, config, scale=1.0):
    return submission.run_attention(model_dim=config.model_dim, num_heads=config.num_heads, **module_inputs(config, scale))


def module_reference_weights(config):
    """The reference's weights on run_module's data (shipped, see data.DRAWS): shown beside the
    student's when a check fails."""
    return data.expected_weights(MODULE, config)


def module_weights_hint(submission, config, weights) -> str:
    """The slip that reproduces the module's weights on run_module's data, if one does."""
    given = module_inputs(config)
    return premises.weights_hint(
        weights, given["inputs"], given["parameters"], data.causal_allowed(config.seq),
        correct=module_reference_weights(config), model_dim=config.model_dim, num_heads=config.num_heads,
        other_masks=premises.default_mask_slips(submission, config.seq, config.batch),
    )


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_weights_are_never_negative(submission, config):
    result = run_module(submission, config)
    weights = result["weights"]
    what = f"MultiHeadSelfAttention weights for {config.describe()}"
    if isinstance(weights, torch.Tensor) and bool((weights < 0).any()):
        checks.expect_non_negative(weights, what, module_weights_hint(submission, config, weights), module_reference_weights(config))


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_every_row_of_every_head_sums_to_one(submission, config):
    result = run_module(submission, config)
    weights = result["weights"]
    what = f"MultiHeadSelfAttention weights for {config.describe()}"
    if not checks.rows_sum_to_one(weights):
        checks.expect_rows_sum_to_one(
            weights, what, module_weights_hint(submission, config, weights),
            module_reference_weights(config), data.causal_allowed(config.seq),
        )


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_head_rows_sum_to_one_under_a_custom_mask(submission, config):
    name = "probabilities-head-custom-mask"
    given = data.drawn(data.DRAWS[name], config)
    parameters, inputs, allowed = given["parameters"], given["inputs"], given["allowed"]
    weights = submission.run_head(
        model_dim=config.model_dim, head_dim=config.head_dim, parameters=parameters, inputs=inputs, allowed_mask=allowed,
    )["weights"]
    if not checks.rows_sum_to_one(weights):
        expected = data.expected_weights(name, config)
        hint = premises.weights_hint(
            weights, inputs, parameters, allowed, correct=expected, model_dim=config.model_dim,
            other_masks=premises.given_mask_slips(allowed, "inside the head"),
        )
        checks.expect_rows_sum_to_one(
            weights, f"AttentionHead weights under a custom mask, {config.describe()}", hint, expected, allowed,
        )


def finite_hint(submission, config, weights) -> str:
    """Why the outputs are not finite on large inputs, when the grader can tell: the same
    call on inputs of magnitude ~1 is finite (overflow), or the student's causal mask has a
    row that allows nothing, where the ``weights`` returned are NaN."""
    if empty_row := premises.empty_row_hint(submission, config.seq, weights):
        return empty_row
    small = premises.asked(lambda: run_module(submission, config))
    if small and all(isinstance(t, torch.Tensor) and bool(torch.isfinite(t).all()) for t in (small["weights"], small["output"])):
        return OVERFLOW_HINT
    return ""


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_large_inputs_give_finite_outputs_and_weights(submission, config):
    result = run_module(submission, config, scale=30.0)
    what = f"with inputs of magnitude ~30, {config.describe()}:"
    for name in ("weights", "output"):
        if not bool(torch.isfinite(result[name]).all()):
            checks.expect_finite(result[name], f"{what} the {name}", finite_hint(submission, config, result["weights"]))


@pytest.mark.points(2)
def test_weights_are_the_softmax_of_scores_scaled_by_sqrt_head_dim(submission):
    """The expected weights are the reference's, softmax(q k^T / sqrt(head_dim)), on this check's
    own data (shipped: data.DRAWS)."""
    config = PROPERTY_CONFIGS[0]
    name = "probabilities-head-scaled-inputs"
    given = data.drawn(data.DRAWS[name], config)
    parameters, inputs, allowed = given["parameters"], given["inputs"], given["allowed"]
    weights = submission.run_head(
        model_dim=config.model_dim, head_dim=config.head_dim, parameters=parameters, inputs=inputs, allowed_mask=allowed
    )["weights"]
    expected = data.expected_weights(name, config)  # softmax(q k^T / sqrt(head_dim)), masked first
    hint = "" if premises.close(weights, expected) else premises.weights_hint(
        weights, inputs, parameters, allowed, correct=expected, model_dim=config.model_dim,
        other_masks=premises.default_mask_slips(submission, config.seq, config.batch),
    )
    checks.expect_close(
        weights,
        expected,
        f"AttentionHead weights ({config.describe()})",
        hint,
        compared_with="the reference's weights for these projections",
        attention=True,
        allowed=allowed,
    )
