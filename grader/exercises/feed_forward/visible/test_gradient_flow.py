"""Group 4 — gradient flow: the backward pass reaches the inputs and every weight, and is the
derivative of the forward pass (checked on the student's own forward, no reference needed)."""

from __future__ import annotations

import pytest
import torch

from grader.exercises.feed_forward import checks, data
from grader.exercises.feed_forward.data import PROPERTY_CONFIG as CONFIG
from grader.seam.failing import fail

CUT_HINT = "part of the graph is cut: a .detach(), torch.no_grad() or a tensor rebuilt with torch.tensor(...) in your forward."


def backward(submission, dtype=torch.float32, inputs=None):
    rng = data.generator(51)
    parameters = data.parameters(CONFIG, rng, dtype=dtype)
    inputs = data.random_inputs(CONFIG, rng, dtype=dtype) if inputs is None else inputs
    gradient = data.output_gradient(CONFIG, rng).to(dtype)
    result = submission.run_feed_forward(
        model_dim=CONFIG.model_dim, hidden_dim=CONFIG.hidden_dim, parameters=parameters, inputs=inputs, output_gradient=gradient,
    )
    return result, parameters, inputs, gradient


@pytest.mark.points(3)
def test_gradients_reach_the_inputs_and_every_weight(submission):
    result, parameters, _, _ = backward(submission)
    reached = {"the inputs": result.get("input_gradient"), **result.get("parameter_gradients", {})}
    missing = [name for name, gradient in reached.items() if gradient is None or not bool(gradient.abs().sum() > 0)]
    if missing:
        fail("the backward pass does not reach everything the output depends on.",
             "a nonzero gradient for the inputs and for every parameter", f"none for {', '.join(missing)}", CUT_HINT)


@pytest.mark.points(2)
def test_the_input_gradient_is_the_derivative_of_the_forward_pass(submission):
    # In float64: the forward pass a little ahead and behind along a direction gives the
    # directional derivative, which the gradient of the inputs must give too.
    result, parameters, inputs, gradient = backward(submission, torch.float64)
    got = result.get("input_gradient")
    if got is None:
        fail("no gradient reached the inputs.", "the gradient of the inputs", "None", CUT_HINT)
    direction = data.random_inputs(CONFIG, data.generator(52), dtype=torch.float64)
    step = 1e-6
    outputs = [
        submission.run_feed_forward(model_dim=CONFIG.model_dim, hidden_dim=CONFIG.hidden_dim, parameters=parameters,
                                    inputs=inputs + sign * step * direction)["output"]
        for sign in (1, -1)
    ]
    numeric = float(((outputs[0] - outputs[1]) / (2 * step) * gradient).sum())
    analytic = float((got * direction).sum())
    if not abs(numeric - analytic) <= 1e-4 * (1 + abs(numeric)):
        fail("the gradient of the inputs is not the derivative of your forward pass.",
             f"{checks.spelled(numeric)} along a direction (measured on your forward pass, a step ahead and behind)",
             checks.spelled(analytic),
             "")
