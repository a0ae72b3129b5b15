"""Group 2 — probabilities: attention weights are distributions over key positions."""

from __future__ import annotations

import math

import pytest
import torch

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
    rng = data.generator(seed)
    return submission.run_attention(
        model_dim=config.model_dim,
        num_heads=config.num_heads,
        inputs=data.random_inputs(config, rng, scale=scale),
        parameters=data.attention_parameters(config, rng),
    )


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_weights_are_never_negative(submission, config):
    weights = run_module(submission, config)["weights"]
    checks.expect_non_negative(weights, f"MultiHeadSelfAttention weights for {config.describe()}", ROW_HINT)


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_every_row_of_every_head_sums_to_one(submission, config):
    weights = run_module(submission, config)["weights"]
    checks.expect_rows_sum_to_one(weights, f"MultiHeadSelfAttention weights for {config.describe()}", ROW_HINT)


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_head_rows_sum_to_one_under_a_custom_mask(submission, config):
    rng = data.generator(22)
    result = submission.run_head(
        model_dim=config.model_dim,
        head_dim=config.head_dim,
        parameters=data.head_parameters(config, rng),
        inputs=data.random_inputs(config, rng),
        allowed_mask=data.scattered_allowed(config, rng),
    )
    checks.expect_rows_sum_to_one(
        result["weights"], f"AttentionHead weights under a custom mask, {config.describe()}", ROW_HINT
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
    queries = inputs.double() @ parameters["query.weight"].double().T  # (batch, seq, head_dim)
    keys = inputs.double() @ parameters["key.weight"].double().T  # (batch, seq, head_dim)
    scores = (queries @ keys.transpose(-2, -1)) / math.sqrt(config.head_dim)  # (batch, seq, seq)
    expected = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    checks.expect_close(
        weights,
        expected,
        f"AttentionHead weights ({config.describe()})",
        "weights = softmax(queries @ keys^T / sqrt(head_dim)) over the last axis, with the mask "
        "applied to the scores before the softmax: divide by math.sqrt(self.head_dim) (not by "
        "head_dim or model_dim, and do not multiply).",
        compared_with="the weights the grader computes from your projections",
    )
