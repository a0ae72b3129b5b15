"""Group 7 — reference examples: your numbers match the reference on fixed, shipped data.

The examples (inputs, the grader's weights, a mask, and the reference's outputs and
attention weights) are in grader/exercises/multi_head_attention/reference_examples.json, generated from the reference
solution. Every number a mistake of the lesson changes shows here, at your desk: a missing
or wrong scale, a mask applied after the softmax, heads out of order, the output projection
missing or applied twice. The hidden group (8) runs the same comparison on sizes and data
drawn when your work is graded.
"""

from __future__ import annotations

import pytest
import torch

from grader.exercises.multi_head_attention import checks, data
from grader.exercises.multi_head_attention import premises

EXAMPLES = data.reference_examples()
HEAD_EXAMPLES = [example for example in EXAMPLES.values() if example.runs == "head"]
MODULE_EXAMPLES = [example for example in EXAMPLES.values() if example.runs == "module"]

# The hints are those of the slips the grader reproduces on the example's own data
# (grader/exercises/multi_head_attention/premises.py): one is shown only when it gives the student's numbers.
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


def example_weights_hint(submission, example: data.ReferenceExample, weights) -> str:
    """The slip that reproduces ``weights`` on the example's data, if one does."""
    if weights_match(weights, example):
        return ""
    config = example.config
    if example.mask == "causal":
        other_masks = premises.default_mask_slips(submission, config.seq, config.batch)
    elif example.runs == "module":
        return premises.module_custom_mask_hint(
            submission, weights, example.inputs, example.parameters, example.allowed_mask, config, example.expected_weights
        )
    else:
        other_masks = premises.given_mask_slips(example.allowed_mask, "inside the head")
    return premises.weights_hint(
        weights, example.inputs, example.parameters, example.allowed_mask, correct=example.expected_weights,
        model_dim=config.model_dim,
        num_heads=None if example.runs == "head" else config.num_heads, other_masks=other_masks,
    )


def expected_output(submission, example: data.ReferenceExample) -> torch.Tensor:
    """The reference's output on the example in the student's layout: a module whose output
    projection has no bias (bias=False) is compared with the reference whose bias is held at
    zero (grader/submission.py ``as_held``), that is the shipped output less the bias, which
    the reference's nn.Linear adds last."""
    held = submission.as_held(example.parameters)
    if held is example.parameters:
        return example.expected_output
    not_added = example.parameters["output_projection.bias"] - held["output_projection.bias"]
    return example.expected_output - not_added.double()


def example_output_hint(submission, result: dict, example: data.ReferenceExample) -> str:
    if not weights_match(result["weights"], example):
        return FIX_WEIGHTS_FIRST
    if example.runs == "head":
        return premises.head_output_hint(result["output"], example.expected_weights, example.inputs, example.parameters)
    return premises.module_output_hint(
        result["output"], example.inputs, submission.as_held(example.parameters), example.expected_weights, example.config.num_heads
    )


@pytest.mark.points(3)
@pytest.mark.parametrize("example", HEAD_EXAMPLES, ids=[example.name for example in HEAD_EXAMPLES])
def test_head_weights_agree_with_the_reference_example(submission, example):
    weights = run(submission, example)["weights"]
    checks.expect_close(
        weights, example.expected_weights, f"{what(example)}: the weights", example_weights_hint(submission, example, weights),
        attention=True, allowed=example.allowed_mask,
    )


@pytest.mark.points(2)
@pytest.mark.parametrize("example", HEAD_EXAMPLES, ids=[example.name for example in HEAD_EXAMPLES])
def test_head_output_agrees_with_the_reference_example(submission, example):
    result = run(submission, example)
    checks.expect_close(
        result["output"], example.expected_output, f"{what(example)}: the output", example_output_hint(submission, result, example)
    )


@pytest.mark.points(1)
@pytest.mark.parametrize("example", MODULE_EXAMPLES, ids=[example.name for example in MODULE_EXAMPLES])
def test_module_weights_agree_with_the_reference_example(submission, example):
    weights = run(submission, example)["weights"]
    checks.expect_close(
        weights, example.expected_weights, f"{what(example)}: the weights", example_weights_hint(submission, example, weights),
        attention=True, allowed=example.allowed_mask if example.allowed_mask.dim() < 3 else example.allowed_mask[:, None],
    )


@pytest.mark.points(4)
@pytest.mark.parametrize("example", MODULE_EXAMPLES, ids=[example.name for example in MODULE_EXAMPLES])
def test_module_output_agrees_with_the_reference_example(submission, example):
    result = run(submission, example)
    checks.expect_close(
        result["output"], expected_output(submission, example), f"{what(example)}: the output",
        example_output_hint(submission, result, example),
    )
