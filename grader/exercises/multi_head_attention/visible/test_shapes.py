"""Group 1 — shapes: every tensor comes back with the shape the lesson promises."""

from __future__ import annotations

import math

import pytest
import torch

from grader.exercises.multi_head_attention import checks, data
from grader.exercises.multi_head_attention import premises
from grader.exercises.multi_head_attention.data import SHAPE_CONFIGS, Config

CONFIG_IDS = [config.id for config in SHAPE_CONFIGS]


def run_lesson_module(submission, config: Config) -> dict:
    rng = data.generator(11)
    return submission.run_attention(
        model_dim=config.model_dim,
        num_heads=config.num_heads,
        inputs=data.random_inputs(config, rng),
        parameters=data.attention_parameters(config, rng),
    )


@pytest.mark.points(1)
@pytest.mark.parametrize("config", SHAPE_CONFIGS, ids=CONFIG_IDS)
def test_module_output_keeps_the_model_width(submission, config):
    output = run_lesson_module(submission, config)["output"]
    checks.expect_module_output_shape(output, config, f"MultiHeadSelfAttention output for {config.describe()}")
    checks.expect_dtype(output, torch.float32, "the module's output", config.describe())


@pytest.mark.points(1)
@pytest.mark.parametrize("config", SHAPE_CONFIGS, ids=CONFIG_IDS)
def test_module_weights_have_one_matrix_per_head(submission, config):
    weights = run_lesson_module(submission, config)["weights"]
    checks.expect_module_weights_shape(weights, config, f"MultiHeadSelfAttention weights for {config.describe()}")
    checks.expect_dtype(weights, torch.float32, "the module's weights", config.describe())


@pytest.mark.points(1)
@pytest.mark.parametrize("config", SHAPE_CONFIGS, ids=CONFIG_IDS)
def test_head_returns_head_dim_features_and_a_square_weight_matrix(submission, config):
    # In float32 and in float64: what comes back keeps the inputs' dtype (the docstrings' contract).
    for dtype in (torch.float32, torch.float64):
        rng = data.generator(12)
        inputs = data.random_inputs(config, rng, dtype=dtype)
        result = submission.run_head(
            model_dim=config.model_dim,
            head_dim=config.head_dim,
            parameters=data.head_parameters(config, rng, dtype=dtype),
            inputs=inputs,
            allowed_mask=data.causal_allowed(config.seq),
        )
        expect_head_shapes(result, config)
        for name in ("output", "weights"):
            checks.expect_dtype(result[name], dtype, f"the head's {name}", config.describe())


def expect_head_shapes(result: dict, config: Config) -> None:
    output, weights = result["output"], result["weights"]
    square = (config.batch, config.seq, config.seq)
    checks.expect_shape(
        output,
        (config.batch, config.seq, config.head_dim),
        f"AttentionHead output for {config.describe()}",
        # Said only when the output has the weights' shape (and the sizes tell them apart).
        "that is the weights' shape: the output is weights @ values, (batch, seq, head_dim)."
        if tuple(output.shape) == square and config.seq != config.head_dim else "",
    )
    checks.expect_shape(
        weights,
        square,
        f"AttentionHead weights for {config.describe()}",
        "that is (batch, head_dim, head_dim): the scores are queries @ keys.transpose(-2, -1), one row per query."
        if tuple(weights.shape) == (config.batch, config.head_dim, config.head_dim) and config.seq != config.head_dim else "",
    )


@pytest.mark.points(3)
def test_concatenation_puts_each_head_in_its_own_block_in_order(submission):
    config = Config(batch=2, seq=3, model_dim=12, num_heads=3)
    # Head h's output is filled with h + 1 plus small distinct offsets, so any reordering,
    # interleaving or wrong axis shows up exactly.
    offsets = torch.arange(config.batch * config.seq * config.head_dim, dtype=torch.float32)
    offsets = offsets.reshape(config.batch, config.seq, config.head_dim) / 1000
    outputs = [offsets + (head + 1) for head in range(config.num_heads)]
    weights = [torch.full((config.batch, config.seq, config.seq), 1 / config.seq)] * config.num_heads
    concatenated = submission.concatenate_heads(outputs, weights)
    checks.expect_shape(
        concatenated,
        (config.batch, config.seq, config.model_dim),
        "concatenate_heads of 3 heads of shape (2, 3, 4)",
        premises.concatenation_shape_hint(concatenated.shape, config.batch, config.seq, config.head_dim, config.num_heads),
    )
    for head, expected in enumerate(outputs):
        block = concatenated[..., head * config.head_dim : (head + 1) * config.head_dim]
        if not torch.equal(block, expected):
            checks.fail(
                f"concatenate_heads: features {head * config.head_dim}:{(head + 1) * config.head_dim} "
                f"do not hold head {head}'s output.",
                f"head {head}'s output (values around {head + 1}) in that block, unchanged",
                f"values {rounded_values(block)} there",
                premises.concatenation_order_hint(concatenated, outputs),
            )


def rounded_values(block: torch.Tensor) -> str:
    """The distinct values of ``block``, rounded, and those that are not numbers said as such."""
    values = block.flatten().tolist()
    numbers = sorted({round(v) for v in values if math.isfinite(v)})
    return str(numbers) + "".join(f" and {kind}" for kind in sorted({checks.spelled(v) for v in values if not math.isfinite(v)}))
