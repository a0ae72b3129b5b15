"""Group 3 — causal masking: no position looks at the future, and given masks are obeyed."""

from __future__ import annotations

import pytest
import torch

from grader.exercises.multi_head_attention import checks, data
from grader.exercises.multi_head_attention import premises
from grader.exercises.multi_head_attention.data import PROPERTY_CONFIGS

CONFIG_IDS = [config.id for config in PROPERTY_CONFIGS]
# Every hint here is the one of a slip the grader reproduced on the student's numbers
# (grader/exercises/multi_head_attention/premises.py); when none reproduces them, expected / got stands alone.


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
            premises.causal_mask_hint(mask),
        )


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_future_positions_get_zero_weight(submission, config):
    name = "masking-module-future"
    given = data.drawn(data.DRAWS[name], config)
    inputs, parameters = given["inputs"], given["parameters"]
    weights = submission.run_attention(
        model_dim=config.model_dim, num_heads=config.num_heads, inputs=inputs, parameters=parameters,
    )["weights"]
    checks.expect_module_weights_shape(weights, config, f"MultiHeadSelfAttention weights for {config.describe()}")
    allowed = data.causal_allowed(config.seq)
    if leaks(weights, allowed):
        expected = data.expected_weights(name, config)
        hint = default_mask_hint(submission, config, weights, inputs, parameters, expected)
        checks.expect_zero_where_disallowed(
            weights, allowed, f"with allowed_mask=None (causal), {config.describe()}", hint, expected,
        )


def leaks(weights, allowed) -> bool:
    """Anything but 0 where the mask hides: weight, NaN or an infinity (the check says which)."""
    return bool(((~allowed.expand_as(weights)) & (weights != 0)).any())


def gives_weight(weights, allowed) -> bool:
    """Weight (a number other than 0) where the mask hides: NaN is no weight."""
    return bool(((~allowed.expand_as(weights)) & (weights != 0) & weights.isfinite()).any())


def default_mask_hint(submission, config, weights, inputs, parameters, expected) -> str:
    """With allowed_mask=None: the slip (no mask, the student's own wrong causal_mask, a
    mask after the softmax...) that reproduces the module's weights, if one does (``expected``:
    the reference's weights on this data)."""
    return premises.weights_hint(
        weights, inputs, parameters, data.causal_allowed(config.seq), correct=expected, model_dim=config.model_dim,
        num_heads=config.num_heads, other_masks=premises.default_mask_slips(submission, config.seq, config.batch),
    )


@pytest.mark.points(1)
@pytest.mark.parametrize("config", PROPERTY_CONFIGS, ids=CONFIG_IDS)
def test_output_at_a_position_ignores_later_inputs(submission, config):
    name = "masking-module-later-inputs"
    given = data.drawn(data.DRAWS[name], config)
    parameters, inputs, rng = given["parameters"], given["inputs"], given["rng"]
    result = submission.run_attention(
        model_dim=config.model_dim, num_heads=config.num_heads, inputs=inputs, parameters=parameters
    )
    original = result["output"]
    checks.expect_module_output_shape(original, config, f"MultiHeadSelfAttention output for {config.describe()}")
    for first_changed in (config.seq // 2, config.seq - 1):
        perturbed_inputs = inputs.clone()
        perturbed_inputs[:, first_changed:] += data.random_inputs(config, rng)[:, first_changed:] * 3
        perturbed = submission.run_attention(
            model_dim=config.model_dim, num_heads=config.num_heads, inputs=perturbed_inputs, parameters=parameters
        )["output"]
        unchanged = perturbed[:, :first_changed]
        if tuple(unchanged.shape) == tuple(original[:, :first_changed].shape) and torch.allclose(
            unchanged.double(), original[:, :first_changed].double(), atol=1e-6, rtol=1e-5
        ) and bool(unchanged.isfinite().all()):  # an infinity equal to itself tells nothing either
            continue
        checks.expect_unchanged(
            unchanged,
            original[:, :first_changed],
            f"after changing the inputs at positions {first_changed} and later, the output at "
            f"positions before {first_changed}",
            later_inputs_hint(submission, config, result["weights"], inputs, parameters, name),
            tolerance={"atol": 1e-6, "rtol": 1e-5},
        )


def later_inputs_hint(submission, config, weights, inputs, parameters, name: str) -> str:
    """The hint speaks only when the weights the module returned show the cause: weight where
    the causal mask hides (a leak), or NaN exactly in the rows the student's own causal mask
    leaves empty (0/0, before and after any change)."""
    if tuple(weights.shape) != (config.batch, config.num_heads, config.seq, config.seq):
        return ""
    if gives_weight(weights, data.causal_allowed(config.seq)):
        found = default_mask_hint(submission, config, weights, inputs, parameters, data.expected_weights(name, config))
        return "your weights give later positions weight (see the test of future positions)" + (f": {found}" if found else ".")
    return premises.empty_row_hint(submission, config.seq, weights)


@pytest.mark.points(4)
def test_head_honours_a_custom_allowed_mask(submission):
    config = PROPERTY_CONFIGS[1]
    name = "masking-head-custom-mask"
    given = data.drawn(data.DRAWS[name], config)
    allowed, parameters, inputs = given["allowed"], given["parameters"], given["inputs"]
    expected = data.expected_weights(name, config)
    weights = submission.run_head(
        model_dim=config.model_dim, head_dim=config.head_dim, parameters=parameters, inputs=inputs, allowed_mask=allowed,
    )["weights"]
    checks.expect_shape(
        weights, (config.batch, config.seq, config.seq), f"AttentionHead weights for {config.describe()}",
    )

    def hint() -> str:
        return premises.weights_hint(
            weights, inputs, parameters, allowed, correct=expected, model_dim=config.model_dim,
            other_masks=premises.given_mask_slips(allowed, "inside the head"),
        )

    if leaks(weights, allowed):
        checks.expect_zero_where_disallowed(
            weights, allowed, "AttentionHead with a custom (batch, seq, seq) mask", hint(), expected,
        )
    must_attend = allowed & ~data.causal_allowed(config.seq)  # allowed keys in the future
    if not (weights[must_attend] > 0).any():
        checks.expect_some_weight(
            weights[must_attend],
            "AttentionHead with a custom mask that allows some later positions gives them no weight",
            "positive weight on allowed later keys (the mask says they may be attended)",
            hint(),
        )


@pytest.mark.points(3)
def test_module_honours_a_custom_allowed_mask(submission):
    config = PROPERTY_CONFIGS[0]
    name = "masking-module-custom-mask"
    given = data.drawn(data.DRAWS[name], config)
    allowed, inputs, parameters = given["allowed"], given["inputs"], given["parameters"]
    expected = data.expected_weights(name, config)
    weights = submission.run_attention(
        model_dim=config.model_dim, num_heads=config.num_heads, inputs=inputs, parameters=parameters, allowed_mask=allowed,
    )["weights"]
    checks.expect_module_weights_shape(weights, config, f"MultiHeadSelfAttention weights for {config.describe()}")

    def hint() -> str:
        return premises.module_custom_mask_hint(submission, weights, inputs, parameters, allowed, config, expected)

    if leaks(weights, allowed[:, None]):
        checks.expect_zero_where_disallowed(
            weights, allowed[:, None], "MultiHeadSelfAttention with a custom (batch, seq, seq) mask", hint(), expected,
        )
    must_attend = (allowed & ~data.causal_allowed(config.seq))[:, None].expand_as(weights)
    if not (weights[must_attend] > 0).any():
        checks.expect_some_weight(
            weights[must_attend],
            "MultiHeadSelfAttention ignores a custom mask that allows later positions" if weights[must_attend].isfinite().all()
            else "MultiHeadSelfAttention, given a custom mask that allows later positions, gives them no weight",
            "positive weight on allowed later keys",
            hint(),
        )

