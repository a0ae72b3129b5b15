"""Group 5 — gradient flow: training can reach every head and the output projection."""

from __future__ import annotations

import pytest
import torch

from grader import checks, data
from grader.data import Config

CONFIG = Config(batch=2, seq=4, model_dim=12, num_heads=3)
TINY = Config(batch=2, seq=3, model_dim=4, num_heads=2)
NAN_HINT = (
    "NaN usually comes from a row where every position is masked (a softmax over nothing "
    "but -inf): the causal mask must keep the diagonal."
)
CUT_HINT = (
    "a .detach(), torch.no_grad() or a value rebuilt with torch.tensor(...) cuts the graph; "
    "keep every step a differentiable torch operation on the projections' outputs."
)


def module_gradients(submission, config: Config) -> dict:
    rng = data.generator(51)
    inputs = data.random_inputs(config, rng)
    parameters = data.attention_parameters(config, rng)
    output_gradient = torch.randn((config.batch, config.seq, config.model_dim), generator=rng)
    result = submission.run_attention(
        model_dim=config.model_dim,
        num_heads=config.num_heads,
        inputs=inputs,
        parameters=parameters,
        output_gradient=output_gradient,
    )
    return result["parameter_gradients"]


def expect_useful_gradient(gradients: dict, name: str) -> None:
    gradient = gradients.get(name)
    if gradient is None:
        checks.fail(f"no gradient reaches {name}.", "a gradient after backward()", "None", CUT_HINT)
    checks.expect_finite(gradient, f"the gradient of {name}", NAN_HINT)
    if not gradient.abs().max() > 0:
        checks.fail(f"the gradient of {name} is zero everywhere.", "a non-zero gradient", "all zeros", CUT_HINT)


@pytest.mark.points(3)
def test_every_head_projection_receives_a_gradient(submission):
    gradients = module_gradients(submission, CONFIG)
    for head in range(CONFIG.num_heads):
        for projection in ("query", "key", "value"):
            expect_useful_gradient(gradients, f"heads.{head}.{projection}.weight")


@pytest.mark.points(2)
def test_output_projection_receives_a_gradient(submission):
    gradients = module_gradients(submission, CONFIG)
    for name in ("output_projection.weight", "output_projection.bias"):
        if name not in gradients:
            checks.fail(f"{name} is missing.", "the output projection given in the constructor", "no such parameter")
        expect_useful_gradient(gradients, name)


# The finite-difference step and tolerances of torch.autograd.gradcheck, in float64.
STEP = 1e-6
GRADIENT_TOLERANCE = {"atol": 1e-5, "rtol": 1e-3}


def expect_gradcheck(run, inputs: torch.Tensor, what: str) -> None:
    """backward() against finite differences, along a random direction.

    The check of torch.autograd.gradcheck's fast mode: for a random input direction u and
    output weights v, the vector-Jacobian product backward() returns, dotted with u, must
    equal the derivative of sum(v * output) along u, measured by central differences.
    A graph cut anywhere (a detached key, a rebuilt tensor) changes that number. Written
    here rather than calling gradcheck because gradcheck's backward pass makes torch
    import sympy, a third of a second added to every `pytest grader` run.
    """
    output = run(inputs, None)["output"]
    if output.dtype != torch.float64:
        checks.fail(
            f"{what} changes the dtype.",
            "float64 output for float64 inputs and weights",
            str(output.dtype),
            "do not hard-code dtype=torch.float32; build new tensors with the dtype of the scores.",
        )
    checks.expect_finite(output, f"{what}'s float64 output", NAN_HINT)
    rng = data.generator(54)
    direction = torch.randn(inputs.shape, generator=rng, dtype=torch.float64)
    output_weights = torch.randn(output.shape, generator=rng, dtype=torch.float64)
    input_gradient = run(inputs, output_weights)["input_gradient"]
    if input_gradient is not None:
        checks.expect_shape(input_gradient, tuple(inputs.shape), f"{what}: the gradient of the inputs")
    backpropagated = 0.0 if input_gradient is None else float((input_gradient * direction).sum())
    ahead = run(inputs + STEP * direction, None)["output"]
    behind = run(inputs - STEP * direction, None)["output"]
    for shifted in (ahead, behind):
        checks.expect_shape(shifted, tuple(output.shape), f"{what}'s output for shifted inputs")
    numerical = float(((ahead - behind) * output_weights).sum()) / (2 * STEP)
    tolerance = GRADIENT_TOLERANCE["atol"] + GRADIENT_TOLERANCE["rtol"] * abs(numerical)
    if not abs(backpropagated - numerical) <= tolerance:  # written so that NaN fails too
        checks.fail(
            f"{what}: backpropagated gradients disagree with finite differences (float64).",
            f"the derivative along a random direction of the inputs, estimated numerically: {numerical:.6g}",
            f"{backpropagated:.6g} from backward()"
            + (" (no gradient reached the inputs)" if input_gradient is None else ""),
            CUT_HINT,
        )


@pytest.mark.points(2)
def test_head_passes_gradcheck_in_float64(submission):
    rng = data.generator(52)
    parameters = data.head_parameters(TINY, rng, dtype=torch.float64)
    allowed = data.causal_allowed(TINY.seq)

    def run(inputs, output_gradient):
        return submission.run_head(
            model_dim=TINY.model_dim,
            head_dim=TINY.head_dim,
            parameters=parameters,
            inputs=inputs,
            allowed_mask=allowed,
            output_gradient=output_gradient,
        )

    expect_gradcheck(run, data.random_inputs(TINY, rng, dtype=torch.float64), f"AttentionHead ({TINY.describe()})")


@pytest.mark.points(3)
def test_module_passes_gradcheck_in_float64(submission):
    rng = data.generator(53)
    parameters = data.attention_parameters(TINY, rng, dtype=torch.float64)

    def run(inputs, output_gradient):
        return submission.run_attention(
            model_dim=TINY.model_dim,
            num_heads=TINY.num_heads,
            inputs=inputs,
            parameters=parameters,
            output_gradient=output_gradient,
        )

    expect_gradcheck(run, data.random_inputs(TINY, rng, dtype=torch.float64), f"MultiHeadSelfAttention ({TINY.describe()})")
