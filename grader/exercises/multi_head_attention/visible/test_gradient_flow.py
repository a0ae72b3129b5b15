"""Group 5 — gradient flow: training can reach every head and the output projection."""

from __future__ import annotations

import math

import pytest
import torch

from grader.exercises.multi_head_attention import checks, data
from grader.exercises.multi_head_attention import premises
from grader.exercises.multi_head_attention.data import Config

CONFIG = Config(batch=2, seq=4, model_dim=12, num_heads=3)
TINY = Config(batch=2, seq=3, model_dim=4, num_heads=2)
# Each hint states a premise the grader checked on the student's module (grader/exercises/multi_head_attention/premises.py).
CUT_HINT = (
    "your output changes when {name} changes, yet no gradient comes back to it: the graph is cut "
    "(a .detach(), torch.no_grad() or a value rebuilt with torch.tensor(...)); keep every step a "
    "differentiable torch operation."
)
UNUSED_HINT = "your output does not change when {name} changes: the forward pass does not use it."
CUT_INPUTS_HINT = (
    "no gradient comes back to the inputs, though the output depends on them: the graph is cut "
    "(a .detach(), torch.no_grad() or a tensor rebuilt with torch.tensor(...))."
)


def module_data(config: Config) -> dict:
    rng = data.generator(51)
    inputs = data.random_inputs(config, rng)
    parameters = data.attention_parameters(config, rng)
    output_gradient = torch.randn((config.batch, config.seq, config.model_dim), generator=rng)
    return {"inputs": inputs, "parameters": parameters, "output_gradient": output_gradient}


def module_gradients(submission, config: Config) -> tuple[dict, torch.Tensor]:
    """The module's gradients on module_data, and the weights it returned."""
    result = submission.run_attention(model_dim=config.model_dim, num_heads=config.num_heads, **module_data(config))
    return result["parameter_gradients"], result["weights"]


def dependence_hint(submission, config: Config, name: str) -> str:
    """Whether the output depends on the parameter ``name``: the same call with that one
    parameter changed. It does: the graph is cut. It does not: the parameter is unused."""
    given = module_data(config)
    del given["output_gradient"]
    changed = dict(given["parameters"])
    if name not in changed:
        return ""
    changed[name] = changed[name] + torch.randn(changed[name].shape, generator=data.generator(55))
    # The unchanged call twice: a module whose answers change from call to call (dropout left
    # on, sampling) proves nothing by a changed answer, and gets no hint here.
    with submission.afresh():
        outputs = [premises.asked(lambda parameters=parameters: submission.run_attention(
            model_dim=config.model_dim, num_heads=config.num_heads, inputs=given["inputs"], parameters=parameters,
        )) for parameters in (given["parameters"], given["parameters"], changed)]
    if not all(outputs) or len({tuple(output["output"].shape) for output in outputs}) != 1:
        return ""
    if not torch.equal(outputs[0]["output"], outputs[1]["output"]):
        return ""
    if torch.equal(outputs[0]["output"], outputs[2]["output"]):
        return UNUSED_HINT.format(name=name)
    return CUT_HINT.format(name=name)


def nan_hint(submission, seq: int, weights) -> str:
    """The empty row of the student's causal mask, when the module's weights are NaN in exactly that row."""
    return premises.empty_row_hint(submission, seq, weights)


def expect_useful_gradient(submission, gradients: dict, name: str, weights: torch.Tensor) -> None:
    gradient = gradients.get(name)
    if gradient is None:
        checks.fail(f"no gradient reaches {name}.", "a gradient after backward()", "None", dependence_hint(submission, CONFIG, name))
    if not bool(torch.isfinite(gradient).all()):
        checks.expect_finite(gradient, f"the gradient of {name}", nan_hint(submission, CONFIG.seq, weights))
    if not gradient.abs().max() > 0:
        checks.fail(
            f"the gradient of {name} is zero everywhere.", "a non-zero gradient", "all zeros", dependence_hint(submission, CONFIG, name)
        )


@pytest.mark.points(3)
def test_every_head_projection_receives_a_gradient(submission):
    gradients, weights = module_gradients(submission, CONFIG)
    for head in range(CONFIG.num_heads):
        for projection in ("query", "key", "value"):
            expect_useful_gradient(submission, gradients, f"heads.{head}.{projection}.weight", weights)


@pytest.mark.points(2)
def test_output_projection_receives_a_gradient(submission):
    gradients, weights = module_gradients(submission, CONFIG)
    # A bias the module has no place for (bias=False) has no gradient: its layout check says so.
    for name in ("output_projection.weight", *{"output_projection.bias"} - submission.not_held):
        if name not in gradients:
            checks.fail(f"{name} is missing.", "the output projection given in the constructor", "no such parameter")
        expect_useful_gradient(submission, gradients, name, weights)


# The finite-difference step and tolerances of torch.autograd.gradcheck, in float64.
STEP = 1e-6
GRADIENT_TOLERANCE = {"atol": 1e-5, "rtol": 1e-3}


def expect_gradcheck(submission, run, inputs: torch.Tensor, what: str, seq: int | None) -> None:
    """backward() against finite differences, along a random direction.

    The check of torch.autograd.gradcheck's fast mode: for a random input direction u and
    output weights v, the vector-Jacobian product backward() returns, dotted with u, must
    equal the derivative of sum(v * output) along u, measured by central differences.
    A graph cut anywhere (a detached key, a rebuilt tensor) changes that number. Written
    here rather than calling gradcheck because gradcheck's backward pass makes torch
    import sympy, a third of a second added to every `pytest grader` run.
    """
    answer = run(inputs, None)
    output = answer["output"]
    if output.dtype != torch.float64:
        checks.fail(
            f"{what} changes the dtype.",
            "float64 output for float64 inputs and weights",
            str(output.dtype),
            "do not hard-code dtype=torch.float32; build new tensors with the dtype of the scores.",
        )
    if not bool(torch.isfinite(output).all()):
        # ``seq``: the module's default mask is the student's causal_mask(seq); a head is given the grader's.
        checks.expect_finite(output, f"{what}'s float64 output", nan_hint(submission, seq, answer["weights"]) if seq else "")
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
    if not (math.isfinite(backpropagated) and math.isfinite(numerical)):  # NaN agrees and disagrees with nothing
        checks.fail(
            f"{what}: the derivative along a random direction of the inputs is not a number (float64).",
            "a finite number, the same from backward() and from finite differences",
            f"{checks.spelled(backpropagated)} from backward(), {checks.spelled(numerical)} estimated numerically",
        )
    tolerance = GRADIENT_TOLERANCE["atol"] + GRADIENT_TOLERANCE["rtol"] * abs(numerical)
    if not abs(backpropagated - numerical) <= tolerance:
        checks.fail(
            f"{what}: backpropagated gradients disagree with finite differences (float64).",
            f"the derivative along a random direction of the inputs, estimated numerically: {numerical:.6g}",
            f"{backpropagated:.6g} from backward()"
            + (" (no gradient reached the inputs)" if input_gradient is None else ""),
            # A cut is certain only when nothing comes back while the output does depend on the inputs.
            CUT_INPUTS_HINT if backpropagated == 0.0 and numerical != 0.0 else "",
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

    expect_gradcheck(submission, run, data.random_inputs(TINY, rng, dtype=torch.float64), f"AttentionHead ({TINY.describe()})", None)


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

    expect_gradcheck(
        submission, run, data.random_inputs(TINY, rng, dtype=torch.float64), f"MultiHeadSelfAttention ({TINY.describe()})", TINY.seq
    )
