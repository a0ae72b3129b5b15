"""Group 5 — gradient flow: training can reach every head and the output projection."""

from __future__ import annotations

import pytest
import torch
from torch.autograd.gradcheck import GradcheckError

from grader import checks, data
from grader.data import Config

CONFIG = Config(batch=2, seq=4, model_dim=12, num_heads=3)
TINY = Config(batch=2, seq=3, model_dim=4, num_heads=2)
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
    checks.expect_finite(
        gradient,
        f"the gradient of {name}",
        "NaN gradients usually come from a row where every position is masked (a softmax "
        "over nothing but -inf): the causal mask must keep the diagonal.",
    )
    if not gradient.abs().max() > 0:
        checks.fail(f"the gradient of {name} is zero everywhere.", "a non-zero gradient", "all zeros", CUT_HINT)


@pytest.mark.points(5)
def test_every_head_projection_receives_a_gradient(submission):
    gradients = module_gradients(submission, CONFIG)
    for head in range(CONFIG.num_heads):
        for projection in ("query", "key", "value"):
            expect_useful_gradient(gradients, f"heads.{head}.{projection}.weight")


@pytest.mark.points(3)
def test_output_projection_receives_a_gradient(submission):
    gradients = module_gradients(submission, CONFIG)
    for name in ("output_projection.weight", "output_projection.bias"):
        if name not in gradients:
            checks.fail(f"{name} is missing.", "the output projection given in the constructor", "no such parameter")
        expect_useful_gradient(gradients, name)


class ThroughSubmission(torch.autograd.Function):
    """Makes a call into the submission differentiable on the grader's side.

    Forward and backward both run in the submission; ``torch.autograd.gradcheck`` runs
    here, comparing the gradients it returns with finite differences of its outputs.
    """

    @staticmethod
    def forward(ctx, inputs, run):
        ctx.run = run
        ctx.save_for_backward(inputs)
        return run(inputs.detach(), None)["output"]

    @staticmethod
    def backward(ctx, output_gradient):
        (inputs,) = ctx.saved_tensors
        gradient = ctx.run(inputs.detach(), output_gradient.contiguous())["input_gradient"]
        return (torch.zeros_like(inputs) if gradient is None else gradient), None


def remembered(run):
    """``run`` answering repeated questions from memory: gradcheck evaluates the same
    point several times, and each evaluation is a round trip to the submission."""
    answers: dict = {}

    def run_once(inputs, output_gradient):
        key = (inputs.numpy().tobytes(), None if output_gradient is None else output_gradient.numpy().tobytes())
        if key not in answers:
            answers[key] = run(inputs, output_gradient)
        return answers[key]

    return run_once


def expect_gradcheck(run, inputs: torch.Tensor, what: str) -> None:
    run = remembered(run)
    output = run(inputs, None)["output"]
    if output.dtype != torch.float64:
        checks.fail(
            f"{what} changes the dtype.",
            "float64 output for float64 inputs and weights",
            str(output.dtype),
            "do not hard-code dtype=torch.float32; build new tensors with the dtype of the scores.",
        )
    try:
        # fast_mode compares random projections of the Jacobians: as strict in practice,
        # and a few calls into the submission instead of one per input element.
        torch.autograd.gradcheck(
            lambda x: ThroughSubmission.apply(x, run),
            (inputs.requires_grad_(),),
            eps=1e-6,
            atol=1e-5,
            fast_mode=True,
            check_undefined_grad=False,  # a test of torch's undefined-gradient path, not of the submission
        )
        return
    except GradcheckError as error:
        first_line = str(error).splitlines()[0]
    checks.fail(
        f"{what}: backpropagated gradients disagree with finite differences (torch.autograd.gradcheck, float64).",
        "d(output)/d(inputs) from backward() equal to the numerical estimate",
        first_line,
        CUT_HINT,
    )


@pytest.mark.points(3)
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


@pytest.mark.points(4)
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
