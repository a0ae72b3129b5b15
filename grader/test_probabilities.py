"""Group 2 — probabilities: attention weights are distributions over key positions."""

from __future__ import annotations

import pytest

from grader import checks, data
from grader.data import PROPERTY_CONFIGS

CONFIG_IDS = [config.id for config in PROPERTY_CONFIGS]

ROW_HINT = (
    "take the softmax over the key positions (dim=-1) after masking the scores; "
    "scores themselves, a softmax over dim=-2, or weights multiplied by the mask after "
    "the softmax are not distributions."
)
FINITE_HINT = (
    "large scores overflow exp(): use torch.softmax (it subtracts each row's maximum) and "
    "make sure no row is entirely masked (the causal mask keeps the diagonal)."
)


def run_module(submission, config, scale=1.0, seed=21):
    """The module's result on seeded data, with the reference's weights on that data
    (``reference_weights``: shown beside the student's when a check fails)."""
    rng = data.generator(seed)
    inputs = data.random_inputs(config, rng, scale=scale)
    parameters = data.attention_parameters(config, rng)
    result = submission.run_attention(
        model_dim=config.model_dim, num_heads=config.num_heads, inputs=inputs, parameters=parameters
    )
    reference = data.reference_weights(inputs, parameters, data.causal_allowed(config.seq), config.num_heads)
    return dict(result, reference_weights=reference)


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_weights_are_never_negative(submission, config):
    result = run_module(submission, config)
    checks.expect_non_negative(
        result["weights"], f"MultiHeadSelfAttention weights for {config.describe()}", ROW_HINT, result["reference_weights"]
    )


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_every_row_of_every_head_sums_to_one(submission, config):
    result = run_module(submission, config)
    checks.expect_rows_sum_to_one(
        result["weights"], f"MultiHeadSelfAttention weights for {config.describe()}", ROW_HINT,
        result["reference_weights"], data.causal_allowed(config.seq),
    )


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_head_rows_sum_to_one_under_a_custom_mask(submission, config):
    rng = data.generator(22)
    parameters, inputs = data.head_parameters(config, rng), data.random_inputs(config, rng)
    allowed = data.scattered_allowed(config, rng)
    result = submission.run_head(
        model_dim=config.model_dim, head_dim=config.head_dim, parameters=parameters, inputs=inputs, allowed_mask=allowed
    )
    checks.expect_rows_sum_to_one(
        result["weights"], f"AttentionHead weights under a custom mask, {config.describe()}", ROW_HINT,
        data.reference_weights(inputs, parameters, allowed), allowed,
    )


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_large_inputs_give_finite_outputs_and_weights(submission, config):
    result = run_module(submission, config, scale=30.0)
    what = f"with inputs of magnitude ~30, {config.describe()}:"
    checks.expect_finite(result["weights"], f"{what} the weights", FINITE_HINT)
    checks.expect_finite(result["output"], f"{what} the output", FINITE_HINT)


@pytest.mark.points(2)
def test_weights_are_the_softmax_of_scores_scaled_by_sqrt_head_dim(submission):
    """The grader computes the expected weights itself: softmax(q k^T / sqrt(head_dim))."""
    config = PROPERTY_CONFIGS[0]
    rng = data.generator(24)
    parameters = data.head_parameters(config, rng)
    inputs = data.random_inputs(config, rng, scale=2.0)
    allowed = data.causal_allowed(config.seq)
    weights = submission.run_head(
        model_dim=config.model_dim, head_dim=config.head_dim, parameters=parameters, inputs=inputs, allowed_mask=allowed
    )["weights"]
    expected = data.reference_weights(inputs, parameters, allowed)  # softmax(q k^T / sqrt(head_dim)), masked first
    checks.expect_close(
        weights,
        expected,
        f"AttentionHead weights ({config.describe()})",
        "weights = softmax(queries @ keys^T / sqrt(head_dim)) over the last axis, with the mask "
        "applied to the scores before the softmax: divide by math.sqrt(self.head_dim) (not by "
        "head_dim or model_dim, and do not multiply).",
        compared_with="the weights the grader computes from your projections",
        attention=True,
        allowed=allowed,
    )
