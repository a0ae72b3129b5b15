"""Group 7 — reference examples: your numbers match the reference on fixed, shipped data.

The examples (inputs, the grader's weights, a mask, and the reference's outputs and
attention weights) are in grader/reference_examples.json, generated from the reference
solution. Every number a mistake of the lesson changes shows here, at your desk: a missing
or wrong scale, a mask applied after the softmax, heads out of order, the output projection
missing or applied twice. The hidden group (8) runs the same comparison on sizes and data
drawn when your work is graded.
"""

from __future__ import annotations

import pytest

from grader import checks, data

EXAMPLES = data.reference_examples()
HEAD_EXAMPLES = [example for example in EXAMPLES.values() if example.runs == "head"]
MODULE_EXAMPLES = [example for example in EXAMPLES.values() if example.runs == "module"]

WEIGHTS_HINT = (
    "the attention weights are softmax(queries @ keys^T / sqrt(head_dim)) over the key positions, "
    "with the positions the mask forbids set to -inf *before* the softmax (masking after it "
    "leaves rows that no longer sum to one). Check the scale (1/sqrt(head_dim), not head_dim or "
    "model_dim) and that queries and keys are not swapped."
)
HEAD_OUTPUT_HINT = (
    "the weights match the reference, so the head's output must mix the values with them: "
    "weights @ values (not the queries or the keys)."
)
MODULE_WEIGHTS_HINT = (
    "head h's attention matrix belongs at index h of axis 1, computed with head h's own weights "
    "(the grader loads them into heads.h); every head gets the same inputs and the same mask"
)
MODULE_OUTPUT_HINT = (
    "every head's weights match the reference, so what differs comes after the heads: their "
    "outputs concatenated on the feature axis, head 0's block first and each block whole, then "
    "output_projection applied exactly once, to that concatenation (not skipped, not twice)."
)
FIX_WEIGHTS_FIRST = (
    "the attention weights differ from the reference too (see the weights check of this "
    "example): fix them first, the output follows from them."
)


def run(submission, example: data.ReferenceExample) -> dict:
    config = example.config
    if example.runs == "head":
        return submission.run_head(
            model_dim=config.model_dim, head_dim=config.head_dim, parameters=example.parameters,
            inputs=example.inputs, allowed_mask=example.allowed_mask,
        )
    return submission.run_attention(
        model_dim=config.model_dim, num_heads=config.num_heads, parameters=example.parameters,
        inputs=example.inputs, allowed_mask=None if example.mask == "causal" else example.allowed_mask,
    )


def what(example: data.ReferenceExample) -> str:
    runner = "AttentionHead" if example.runs == "head" else "MultiHeadSelfAttention"
    mask = "the causal mask" if example.mask == "causal" else "a custom (batch, seq, seq) mask"
    return f"{runner} on the example {example.name!r} ({example.config.describe()}, {mask})"


def weights_match(weights, example: data.ReferenceExample) -> bool:
    close = checks.FLOAT32_TOLERANCE
    return tuple(weights.shape) == tuple(example.expected_weights.shape) and bool(
        ((weights.double() - example.expected_weights).abs() <= close["atol"] + close["rtol"] * example.expected_weights.abs()).all()
    )


@pytest.mark.points(3)
@pytest.mark.parametrize("example", HEAD_EXAMPLES, ids=[example.name for example in HEAD_EXAMPLES])
def test_head_weights_agree_with_the_reference_example(submission, example):
    weights = run(submission, example)["weights"]
    checks.expect_close(
        weights, example.expected_weights, f"{what(example)}: the weights", WEIGHTS_HINT, attention=True,
        allowed=example.allowed_mask,
    )


@pytest.mark.points(2)
@pytest.mark.parametrize("example", HEAD_EXAMPLES, ids=[example.name for example in HEAD_EXAMPLES])
def test_head_output_agrees_with_the_reference_example(submission, example):
    result = run(submission, example)
    hint = HEAD_OUTPUT_HINT if weights_match(result["weights"], example) else FIX_WEIGHTS_FIRST
    checks.expect_close(result["output"], example.expected_output, f"{what(example)}: the output", hint)


@pytest.mark.points(1)
@pytest.mark.parametrize("example", MODULE_EXAMPLES, ids=[example.name for example in MODULE_EXAMPLES])
def test_module_weights_agree_with_the_reference_example(submission, example):
    weights = run(submission, example)["weights"]
    checks.expect_close(
        weights, example.expected_weights, f"{what(example)}: the weights", f"{MODULE_WEIGHTS_HINT}; within each head, {WEIGHTS_HINT}",
        attention=True, allowed=example.allowed_mask if example.allowed_mask.dim() < 3 else example.allowed_mask[:, None],
    )


@pytest.mark.points(4)
@pytest.mark.parametrize("example", MODULE_EXAMPLES, ids=[example.name for example in MODULE_EXAMPLES])
def test_module_output_agrees_with_the_reference_example(submission, example):
    result = run(submission, example)
    hint = MODULE_OUTPUT_HINT if weights_match(result["weights"], example) else FIX_WEIGHTS_FIRST
    checks.expect_close(result["output"], example.expected_output, f"{what(example)}: the output", hint)
