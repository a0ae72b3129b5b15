"""Group 8 — reference (hidden): the numbers match the reference solution.

Configurations, inputs, weights and masks are drawn at grading time from the grading
seed (printed in the header; pass --grading-seed to replay a run), so a submission
cannot know them in advance. The submission runs with the grader's weights; the
reference runs with the same weights on the same data, here in the grader's process.

Tolerances (see grader.exercises.multi_head_attention.checks.FLOAT32_TOLERANCE): |got - expected| <= 1e-5 + 1e-4*|expected|
in float32. Valid rewrites (einsum, -1e9 fill, a hand-written stable softmax, softmax in
float64, F.scaled_dot_product_attention) stay within 1e-6; real mistakes miss by 1e-2.
"""

from __future__ import annotations

import pytest
import torch

from grader.exercises.multi_head_attention import checks, data
from grader.exercises.multi_head_attention import premises
from grader.exercises.multi_head_attention.data import Config
from grader.hidden.reference import reference

DRAWS = range(3)
# Hints name the slip the grader reproduces on the drawn data (grader/exercises/multi_head_attention/premises.py), or none.
CUT_GRADIENT_HINT = (
    "your outputs match the reference and this gradient does not: part of the graph is cut "
    "(a .detach(), torch.no_grad() or a tensor rebuilt with torch.tensor(...))."
)
FIX_OUTPUTS_FIRST = "your outputs differ from the reference too (see this group's other checks): fix them first."


def drawn_config(grading_seed: int, draw: int) -> Config:
    """Sizes drawn at grading time, large enough that no axis can hide a mistake:
    batch >= 2, seq >= 2 and several heads of several features each (the shape tests
    cover the degenerate sizes: seq 1, one head), and none at which a mistake gives the
    reference's numbers (``hides_a_mistake``): drawn again until so, from the same stream."""
    rng = data.sizes(data.HIDDEN_SIZES, grading_seed, draw)
    while True:
        num_heads = rng.randint(2, 4)
        config = Config(batch=rng.randint(2, 3), seq=rng.randint(2, 8), model_dim=num_heads * rng.randint(2, 6), num_heads=num_heads)
        if not hides_a_mistake(config):
            return config


def hides_a_mistake(config: Config) -> bool:
    """Sizes at which a wrong formula gives the right numbers, so that a submission's score
    would depend on the seed (the catalogue's mutants scored up to 8 points apart):
    two axes of the same length (a default mask sized by the batch, the head count or the
    model width, a scale by the sequence length instead of the head's width, keys multiplied
    without a transpose: each is right when the two lengths agree), and a head width of 4,
    where ``head_dim ** 1/2`` (which Python reads as head_dim / 2) is its square root."""
    lengths = (config.batch, config.seq, config.num_heads, config.head_dim)
    return len(set(lengths)) < len(lengths) or config.seq == config.model_dim or config.head_dim == 4


def drawn_mask(config: Config, rng: torch.Generator, draw: int) -> torch.Tensor:
    return data.causal_allowed(config.seq) if draw % 2 == 0 else data.scattered_allowed(config, rng)


def reference_module(config: Config, parameters: dict) -> torch.nn.Module:
    module = reference().MultiHeadSelfAttention(config.model_dim, config.num_heads)
    module.load_state_dict(parameters)
    return module


@pytest.mark.points(1)
@pytest.mark.parametrize("draw", DRAWS)
def test_head_matches_the_reference(submission, grading_seed, draw):
    config = drawn_config(grading_seed, draw)
    rng = data.tensors(data.HIDDEN_HEAD_DATA, grading_seed, draw)
    parameters = data.head_parameters(config, rng)
    inputs = data.random_inputs(config, rng)
    allowed = drawn_mask(config, rng, draw)
    got = submission.run_head(
        model_dim=config.model_dim, head_dim=config.head_dim, parameters=parameters, inputs=inputs, allowed_mask=allowed
    )
    head = reference().AttentionHead(config.model_dim, config.head_dim)
    head.load_state_dict(parameters)
    with torch.no_grad():
        expected = head(inputs, allowed)
    weights_hint = "" if premises.close(got["weights"], expected.weights) else premises.weights_hint(
        got["weights"], inputs, parameters, allowed, correct=expected.weights, model_dim=config.model_dim,
        other_masks={} if draw % 2 == 0 else premises.given_mask_slips(allowed, "inside the head"),
    )
    checks.expect_close(
        got["weights"], expected.weights, f"AttentionHead weights ({config.describe()})", weights_hint, attention=True,
        allowed=allowed,
    )
    output_hint = premises.head_output_hint(got["output"], expected.weights, inputs, parameters)
    checks.expect_close(got["output"], expected.output, f"AttentionHead output ({config.describe()})", output_hint)


@pytest.mark.points(2)
@pytest.mark.parametrize("draw", DRAWS)
def test_module_matches_the_reference(submission, grading_seed, draw):
    config = drawn_config(grading_seed, 10 + draw)
    rng = data.tensors(data.HIDDEN_MODULE_DATA, grading_seed, draw)
    parameters = data.attention_parameters(config, rng)
    inputs = data.random_inputs(config, rng)
    allowed = None if draw < 2 else data.scattered_allowed(config, rng)
    got = submission.run_attention(
        model_dim=config.model_dim, num_heads=config.num_heads, inputs=inputs, parameters=parameters, allowed_mask=allowed
    )
    parameters = submission.as_held(parameters)  # the reference in the student's layout
    with torch.no_grad():
        expected = reference_module(config, parameters)(inputs, allowed)
    what = f"MultiHeadSelfAttention ({config.describe()}, {'causal' if allowed is None else 'custom'} mask)"
    mask = data.causal_allowed(config.seq) if allowed is None else allowed
    if premises.close(got["weights"], expected.weights):
        weights_hint = ""
    elif allowed is None:
        weights_hint = premises.weights_hint(
            got["weights"], inputs, parameters, mask, correct=expected.weights, model_dim=config.model_dim,
            num_heads=config.num_heads,
            other_masks=premises.default_mask_slips(submission, config.seq, config.batch),
        )
    else:
        weights_hint = premises.module_custom_mask_hint(
            submission, got["weights"], inputs, parameters, allowed, config, expected.weights)
    over_heads = data.causal_allowed(config.seq) if allowed is None else allowed[:, None]  # lies over (batch, heads, seq, seq)
    checks.expect_close(got["weights"], expected.weights, f"{what} weights", weights_hint, attention=True, allowed=over_heads)
    output_hint = premises.module_output_hint(got["output"], inputs, parameters, expected.weights, config.num_heads)
    checks.expect_close(got["output"], expected.output, f"{what} output", output_hint)


@pytest.mark.points(6)
def test_module_gradients_match_the_reference(submission, grading_seed):
    config = drawn_config(grading_seed, 20)
    rng = data.tensors(data.HIDDEN_GRADIENT_DATA, grading_seed)
    parameters = data.attention_parameters(config, rng)
    inputs = data.random_inputs(config, rng)
    output_gradient = torch.randn((config.batch, config.seq, config.model_dim), generator=rng)
    got = submission.run_attention(
        model_dim=config.model_dim,
        num_heads=config.num_heads,
        inputs=inputs,
        parameters=parameters,
        output_gradient=output_gradient,
    )
    module = reference_module(config, submission.as_held(parameters))  # the reference in the student's layout
    leaf = inputs.clone().requires_grad_()
    (module(leaf).output * output_gradient).sum().backward()
    # A bias the student's module has no place for has no gradient there: its layout check says so.
    expected = {name: parameter.grad for name, parameter in module.named_parameters() if name not in submission.not_held}
    expected["inputs"] = leaf.grad
    got_gradients = dict(got["parameter_gradients"], inputs=got["input_gradient"])
    with torch.no_grad():
        outputs_match = premises.close(got["output"], module(inputs).output)
    hint = CUT_GRADIENT_HINT if outputs_match else FIX_OUTPUTS_FIRST
    for name, expected_gradient in expected.items():
        gradient = got_gradients.get(name)
        if gradient is None:
            checks.fail(f"no gradient reaches {name}.", "the reference's gradient", "None", hint)
        checks.expect_close(gradient, expected_gradient, f"the gradient of {name} ({config.describe()})", hint)
