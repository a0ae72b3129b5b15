"""Group 7 — reference (hidden): the numbers match the reference solution on grading-time data.

Sizes, inputs and weights are drawn at grading time from the grading seed (one stream per
purpose, data.py), so a submission cannot know them in advance. The submission runs with the
grader's weights; the reference runs with the same weights on the same data, here in the
grader's process. A known mistake is named only when its implementation reproduces the
student's output on these very numbers (hidden/mistakes.py).
"""

from __future__ import annotations

import pytest
import torch

from grader.exercises.feed_forward import checks, data
from grader.exercises.feed_forward.data import Config
from grader.exercises.feed_forward.hidden import mistakes
from grader.hidden.reference import reference

DRAWS = range(3)
FIX_OUTPUTS_FIRST = "your outputs differ from the reference too (see this group's other checks): fix them first."


def drawn_config(grading_seed: int, draw: int) -> Config:
    """Sizes drawn at grading time: batch and seq >= 2 and no two sizes alike (``data.sizes_alike``),
    so a mistake that confuses two axes cannot give the reference's numbers; drawn again until so."""
    rng = data.sizes(data.HIDDEN_SIZES, grading_seed, draw)
    while True:
        config = Config(batch=rng.randint(2, 4), seq=rng.randint(2, 9), model_dim=rng.randint(3, 12), hidden_dim=rng.randint(4, 40))
        if not data.sizes_alike(config):
            return config


def expected_run(submission, config: Config, parameters: dict, inputs: torch.Tensor, output_gradient=None) -> tuple:
    """The reference's output (and gradients) with the weights as the student's module holds them."""
    module = reference().FeedForward(config.model_dim, config.hidden_dim).to(inputs.dtype).eval()
    module.load_state_dict(submission.as_held(parameters))
    inputs = inputs.clone().requires_grad_(output_gradient is not None)
    output = module(inputs)
    if output_gradient is None:
        return output.detach(), {}
    named = list(module.named_parameters())
    gradients = torch.autograd.grad((output * output_gradient).sum(), [inputs, *(p for _, p in named)])
    return output.detach(), {"the inputs": gradients[0], **{name: g for (name, _), g in zip(named, gradients[1:])}}


@pytest.mark.points(2)
@pytest.mark.parametrize("draw", DRAWS)
def test_the_output_matches_the_reference(submission, grading_seed, draw):
    config = drawn_config(grading_seed, draw)
    rng = data.tensors(data.HIDDEN_DATA, grading_seed, draw)
    parameters, inputs = data.parameters(config, rng), data.random_inputs(config, rng)
    got = submission.run_feed_forward(model_dim=config.model_dim, hidden_dim=config.hidden_dim, parameters=parameters, inputs=inputs)["output"]
    expected, _ = expected_run(submission, config, parameters, inputs)
    checks.expect_close(got, expected, f"FeedForward's output for {config.describe()}", "the reference's output",
                        mistakes.hint(submission.as_held(parameters), inputs, got) if got.shape == expected.shape else "")


@pytest.mark.points(2)
@pytest.mark.parametrize("draw", range(2))
def test_the_gradients_match_the_reference(submission, grading_seed, draw):
    config = drawn_config(grading_seed, 10 + draw)
    rng = data.tensors(data.HIDDEN_GRADIENT_DATA, grading_seed, draw)
    parameters, inputs = data.parameters(config, rng), data.random_inputs(config, rng)
    gradient = data.output_gradient(config, rng)
    result = submission.run_feed_forward(model_dim=config.model_dim, hidden_dim=config.hidden_dim, parameters=parameters,
                                         inputs=inputs, output_gradient=gradient)
    expected_output, expected = expected_run(submission, config, parameters, inputs, gradient)
    got = {"the inputs": result.get("input_gradient"), **result.get("parameter_gradients", {})}
    outputs_differ = not checks.close(result["output"], expected_output)
    for name, want in expected.items():
        if name in submission.not_held:  # a bias the module has no place for: the configuration group says so
            continue
        if got.get(name) is None:
            checks.fail(f"no gradient reached {name}.", f"the reference's gradient for {name}", "None",
                        FIX_OUTPUTS_FIRST if outputs_differ else "")
        checks.expect_close(got[name], want, f"the gradient of {name} for {config.describe()}", "the reference's gradient",
                            FIX_OUTPUTS_FIRST if outputs_differ else "")
