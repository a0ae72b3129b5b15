"""Group 3 — nonlinearity: between the two layers sits GELU, on the hidden features; without
it, two linear layers in a row are one linear layer and the network adds nothing."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from grader.exercises.feed_forward import checks, data, premises
from grader.exercises.feed_forward.data import PROPERTY_CONFIG as CONFIG
from grader.seam.failing import fail

WIDTH = 5  # model_dim = hidden_dim: weights that are identities show the activation itself


def run(submission, config, parameters, inputs) -> torch.Tensor:
    output = submission.run_feed_forward(model_dim=config.model_dim, hidden_dim=config.hidden_dim, parameters=parameters, inputs=inputs)["output"]
    checks.expect_shape(output, tuple(inputs.shape), "FeedForward's output")
    return output


def identities(sign: float) -> dict[str, torch.Tensor]:
    """expand = the identity, project = ``sign`` times it, no bias: the network is sign * activation(x)."""
    eye = torch.eye(WIDTH)
    return {"expand.weight": eye, "expand.bias": torch.zeros(WIDTH), "project.weight": sign * eye, "project.bias": torch.zeros(WIDTH)}


@pytest.mark.points(2)
def test_the_network_is_not_one_linear_map(submission):
    # An affine map f has f(x) + f(y) = f(x + y) + f(0); the network with its activation does not.
    rng = data.generator(41)
    parameters = data.parameters(CONFIG, rng)
    x, y = data.random_inputs(CONFIG, rng), data.random_inputs(CONFIG, rng)
    f = {name: run(submission, CONFIG, parameters, inputs) for name, inputs in (("x", x), ("y", y), ("x+y", x + y), ("0", torch.zeros_like(x)))}
    if checks.close(f["x"] + f["y"], f["x+y"] + f["0"]):
        fail(
            "your FeedForward is one linear (affine) map: f(x) + f(y) equals f(x + y) + f(0) on the grader's inputs.",
            "a nonlinearity between the layers, so that the two layers are more than one",
            "f(x) + f(y) = f(x + y) + f(0) everywhere",
            "two linear layers in a row compute one linear layer: apply the activation to the first layer's output.",
        )


@pytest.mark.points(3)
def test_between_two_identity_layers_the_network_is_gelu(submission):
    config = data.Config(2, 4, WIDTH, WIDTH)
    inputs = torch.linspace(-4, 4, 2 * 4 * WIDTH).reshape(2, 4, WIDTH)
    got = run(submission, config, identities(1.0), inputs)
    checks.expect_close(
        got, F.gelu(inputs), "FeedForward with identity weights and no bias",
        "gelu(inputs): both layers are identities here, so the output is the activation itself",
        premises.activation_hint(got, inputs),
    )


@pytest.mark.points(2)
def test_the_activation_acts_on_the_hidden_features_not_on_the_output(submission):
    config = data.Config(2, 4, WIDTH, WIDTH)
    inputs = torch.linspace(-4, 4, 2 * 4 * WIDTH).reshape(2, 4, WIDTH)
    got = run(submission, config, identities(-1.0), inputs)
    checks.expect_close(
        got, -F.gelu(inputs), "FeedForward with expand = I, project = -I and no bias",
        "-gelu(inputs): the activation on the first layer's output, then the second layer (a sign flip here)",
        premises.activation_placed_after_hint(got, F.gelu(-inputs)) or premises.activation_hint(got, inputs, outside=torch.neg),
    )


@pytest.mark.points(2)
def test_the_first_bias_shifts_before_gelu_and_the_second_after(submission):
    config = data.Config(2, 4, WIDTH, WIDTH)
    inputs = torch.linspace(-3, 3, 2 * 4 * WIDTH).reshape(2, 4, WIDTH)
    parameters = identities(1.0) | {"expand.bias": torch.linspace(-1, 1, WIDTH), "project.bias": torch.full((WIDTH,), 0.5)}
    got = run(submission, config, parameters, inputs)
    held = submission.as_held(parameters)  # a bias the module has no place for is zero: the configuration group says so
    checks.expect_close(
        got, F.gelu(inputs + held["expand.bias"]) + held["project.bias"],
        "FeedForward with identity weights and biases b1 (expand), b2 (project)",
        "gelu(inputs + b1) + b2: the first layer's bias moves where each hidden unit switches, the second's the output",
        premises.biases_hint(got, inputs, held["expand.bias"], held["project.bias"]),
    )
