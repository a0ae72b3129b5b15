"""Group 3 — causal masking: no position looks at the future, and given masks are obeyed."""

from __future__ import annotations

import pytest
import torch

from grader import checks, data
from grader.data import PROPERTY_CONFIGS

CONFIG_IDS = [config.id for config in PROPERTY_CONFIGS]

CAUSAL_HINT = (
    "mask the scores before the softmax: scores.masked_fill(~allowed_mask, float('-inf')), "
    "with allowed_mask True on and below the diagonal (key <= query)."
)
CUSTOM_MASK_HINT = (
    "use the allowed_mask you are given (True = may attend) instead of building a causal "
    "mask inside the head; MultiHeadSelfAttention must pass its allowed_mask to every head."
)


@pytest.mark.points(2)
@pytest.mark.parametrize("seq", [1, 5])
def test_causal_mask_is_the_lower_triangle_with_the_diagonal(submission, seq):
    mask = submission.causal_mask(seq)
    expected = data.causal_allowed(seq)
    checks.expect_shape(mask, (seq, seq), f"causal_mask({seq})", "the mask is (seq_len, seq_len).")
    if mask.dtype != torch.bool:
        checks.fail(
            f"causal_mask({seq}) has dtype {mask.dtype}.",
            "torch.bool (True = may attend)",
            str(mask.dtype),
            "create it with dtype=torch.bool, or compare positions, e.g. keys <= queries.",
        )
    if not torch.equal(mask, expected):
        query, key = (int(i) for i in (mask != expected).nonzero()[0])
        checks.fail(
            f"causal_mask({seq}) is wrong at [query={query}, key={key}].",
            f"{bool(expected[query, key])} (a query may attend to itself and to earlier keys)",
            str(bool(mask[query, key])),
            "torch.tril keeps the lower triangle and the diagonal; torch.triu(..., diagonal=1) "
            "marks the future, so its negation is the allowed part.",
        )


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_future_positions_get_zero_weight(submission, config):
    rng = data.generator(31)
    inputs, parameters = data.random_inputs(config, rng), data.attention_parameters(config, rng)
    weights = submission.run_attention(
        model_dim=config.model_dim, num_heads=config.num_heads, inputs=inputs, parameters=parameters
    )["weights"]
    checks.expect_shape(
        weights, (config.batch, config.num_heads, config.seq, config.seq),
        f"MultiHeadSelfAttention weights for {config.describe()}", checks.MODULE_WEIGHTS_SHAPE_HINT,
    )
    checks.expect_zero_where_disallowed(
        weights,
        data.causal_allowed(config.seq),
        f"with allowed_mask=None (causal), {config.describe()}",
        CAUSAL_HINT,
        data.reference_weights(inputs, parameters, data.causal_allowed(config.seq), config.num_heads),
    )


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_output_at_a_position_ignores_later_inputs(submission, config):
    rng = data.generator(32)
    parameters = data.attention_parameters(config, rng)
    inputs = data.random_inputs(config, rng)
    original = submission.run_attention(
        model_dim=config.model_dim, num_heads=config.num_heads, inputs=inputs, parameters=parameters
    )["output"]
    checks.expect_shape(
        original, (config.batch, config.seq, config.model_dim),
        f"MultiHeadSelfAttention output for {config.describe()}", checks.MODULE_OUTPUT_SHAPE_HINT,
    )
    for first_changed in (config.seq // 2, config.seq - 1):
        perturbed_inputs = inputs.clone()
        perturbed_inputs[:, first_changed:] += data.random_inputs(config, rng)[:, first_changed:] * 3
        perturbed = submission.run_attention(
            model_dim=config.model_dim, num_heads=config.num_heads, inputs=perturbed_inputs, parameters=parameters
        )["output"]
        checks.expect_close(
            perturbed[:, :first_changed],
            original[:, :first_changed],
            f"after changing the inputs at positions {first_changed} and later, the output at "
            f"positions before {first_changed}",
            "earlier positions must not see later ones: " + CAUSAL_HINT,
            tolerance={"atol": 1e-6, "rtol": 1e-5},
            compared_with="the output before the change",
        )


@pytest.mark.points(4)
def test_head_honours_a_custom_allowed_mask(submission):
    config = PROPERTY_CONFIGS[1]
    rng = data.generator(33)
    allowed = data.scattered_allowed(config, rng)
    parameters, inputs = data.head_parameters(config, rng), data.random_inputs(config, rng)
    weights = submission.run_head(
        model_dim=config.model_dim, head_dim=config.head_dim, parameters=parameters, inputs=inputs, allowed_mask=allowed
    )["weights"]
    checks.expect_shape(
        weights, (config.batch, config.seq, config.seq), f"AttentionHead weights for {config.describe()}",
        "a head's weights are one (seq, seq) matrix per batch element: (batch, seq, seq), [query, key].",
    )
    checks.expect_zero_where_disallowed(
        weights, allowed, "AttentionHead with a custom (batch, seq, seq) mask", CUSTOM_MASK_HINT,
        data.reference_weights(inputs, parameters, allowed),
    )
    must_attend = allowed & ~data.causal_allowed(config.seq)  # allowed keys in the future
    if not (weights[must_attend] > 0).any():
        checks.fail(
            "AttentionHead with a custom mask that allows some later positions gives them no weight.",
            "positive weight on allowed later keys (the mask says they may be attended)",
            "zero weight on every one of them",
            CUSTOM_MASK_HINT,
        )


@pytest.mark.points(3)
def test_module_honours_a_custom_allowed_mask(submission):
    config = PROPERTY_CONFIGS[0]
    rng = data.generator(34)
    allowed = data.scattered_allowed(config, rng)
    inputs, parameters = data.random_inputs(config, rng), data.attention_parameters(config, rng)
    weights = submission.run_attention(
        model_dim=config.model_dim, num_heads=config.num_heads, inputs=inputs, parameters=parameters, allowed_mask=allowed
    )["weights"]
    checks.expect_shape(
        weights, (config.batch, config.num_heads, config.seq, config.seq),
        f"MultiHeadSelfAttention weights for {config.describe()}", checks.MODULE_WEIGHTS_SHAPE_HINT,
    )
    checks.expect_zero_where_disallowed(
        weights, allowed[:, None], "MultiHeadSelfAttention with a custom (batch, seq, seq) mask", CUSTOM_MASK_HINT,
        data.reference_weights(inputs, parameters, allowed, config.num_heads),
    )
    must_attend = (allowed & ~data.causal_allowed(config.seq))[:, None].expand_as(weights)
    if not (weights[must_attend] > 0).any():
        checks.fail(
            "MultiHeadSelfAttention ignores a custom mask that allows later positions.",
            "positive weight on allowed later keys",
            "zero weight on every one of them",
            CUSTOM_MASK_HINT,
        )
