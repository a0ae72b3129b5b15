"""Group 4 — head distinctness: several heads means several independent projections."""

from __future__ import annotations

import itertools

import pytest
import torch

from grader import checks, data, premises
from grader.data import LESSON, Config

SEED = 2024
PROJECTIONS = ("query", "key", "value")
THREE_HEADS = Config(batch=2, seq=5, model_dim=12, num_heads=3)
# Each hint names the cause the check itself established (one tensor held twice, the same
# starting numbers, the same matrices from different weights), never another.
SHARED_HINT = (
    "create a new AttentionHead for every head (AttentionHead(...) for _ in range(num_heads)): "
    "[head] * num_heads, or one head appended several times, repeats one module."
)
RESEEDED_HINT = (
    "your heads are separate modules built from the same random numbers: a torch.manual_seed "
    "called before each head (or inside it) gives every head the same starting weights; seed once, outside."
)
REPEATED_MATRIX_HINT = (
    "your heads start with different weights, yet return the same matrices: stack each head's own "
    "weights, not one head's weights repeated."
)


@pytest.mark.points(2)
def test_each_head_has_its_own_query_key_and_value_projections(submission):
    config = THREE_HEADS
    parameters = submission.initial_parameters(config.model_dim, config.num_heads, SEED)["parameters"]
    expected = {
        f"heads.{head}.{projection}.weight": (config.head_dim, config.model_dim)
        for head in range(config.num_heads)
        for projection in PROJECTIONS
    }
    expected["output_projection.weight"] = (config.model_dim, config.model_dim)
    expected["output_projection.bias"] = (config.model_dim,)
    missing = sorted(set(expected) - set(parameters))
    extra = sorted(set(parameters) - set(expected))
    if missing or extra:
        checks.fail(
            f"MultiHeadSelfAttention({config.model_dim}, {config.num_heads}) has unexpected parameters.",
            f"{config.num_heads} heads with query/key/value weights and no bias, plus output_projection",
            f"missing {missing[:4]}, unexpected {extra[:4]}",
            "build the layout the constructors' docstrings give: heads, an nn.ModuleList of "
            "AttentionHead, each with query, key and value = nn.Linear(model_dim, head_dim, bias=False); "
            "output_projection = nn.Linear(model_dim, model_dim).",
        )
    for name, shape in expected.items():
        checks.expect_shape(parameters[name], shape, f"parameter {name}")


@pytest.mark.points(4)
def test_heads_neither_share_nor_copy_their_parameters(submission):
    config = THREE_HEADS
    built = submission.initial_parameters(config.model_dim, config.num_heads, SEED)
    parameters = built["parameters"]
    shared_between_heads = [group for group in built.get("shared", []) if any(n.startswith("heads.") for n in group)]
    if shared_between_heads:
        checks.fail(
            "several heads hold the very same parameter tensor.",
            "every head with parameters of its own",
            f"shared: {', '.join(shared_between_heads[0][:3])}",
            SHARED_HINT,
        )
    for first, second in itertools.combinations(range(config.num_heads), 2):
        for projection in PROJECTIONS:
            a = parameters.get(f"heads.{first}.{projection}.weight")
            b = parameters.get(f"heads.{second}.{projection}.weight")
            if a is None or b is None:
                checks.fail("a head's parameters are missing.", f"heads.{second}.{projection}.weight", "nothing")
            if a.shape == b.shape and torch.equal(a, b):
                checks.fail(
                    f"heads {first} and {second} start with identical {projection} weights.",
                    "independently initialised heads (different random weights)",
                    "the same numbers in both",
                    RESEEDED_HINT,
                )


@pytest.mark.points(2)
@pytest.mark.parametrize("config", [LESSON, THREE_HEADS], ids=[LESSON.id, THREE_HEADS.id])
def test_seeded_heads_produce_different_attention_matrices(submission, config):
    inputs = data.random_inputs(config, data.generator(41))
    weights = submission.run_attention(
        model_dim=config.model_dim, num_heads=config.num_heads, inputs=inputs, seed=SEED
    )["weights"]
    checks.expect_module_weights_shape(weights, config, f"MultiHeadSelfAttention weights for {config.describe()}")
    for first, second in itertools.combinations(range(config.num_heads), 2):
        difference = (weights[:, first] - weights[:, second]).abs().max().item()
        if not difference > 1e-4:
            checks.fail(
                f"heads {first} and {second} return the same attention matrix ({config.describe()}).",
                "different matrices: each head has its own random projections",
                f"largest difference {difference:.2g}",
                same_matrices_hint(submission, config, inputs, weights, first, second),
            )


def same_matrices_hint(submission, config: Config, inputs, weights, first: int, second: int) -> str:
    """Why two heads return the same matrix, from the parameters the module starts with:
    one tensor for both, the same numbers, or different numbers while both matrices are the
    one that ``first``'s own weights give (then the stacking repeats one head's)."""
    built = premises.asked(lambda: submission.initial_parameters(config.model_dim, config.num_heads, SEED))
    if not built:
        return ""
    if any(f"heads.{first}." in " ".join(group) and f"heads.{second}." in " ".join(group) for group in built.get("shared", [])):
        return SHARED_HINT
    parameters = built["parameters"]
    pairs = [(parameters.get(f"heads.{first}.{p}.weight"), parameters.get(f"heads.{second}.{p}.weight")) for p in PROJECTIONS]
    if any(a is None or b is None for a, b in pairs):
        return ""
    if all(a.shape == b.shape and torch.equal(a, b) for a, b in pairs):
        return RESEEDED_HINT
    own = {name.removeprefix(f"heads.{first}."): value for name, value in parameters.items() if name.startswith(f"heads.{first}.")}
    expected = premises.weights_of_one_head(inputs, own, data.causal_allowed(config.seq))
    if expected is not None and premises.close(weights[:, first], expected) and premises.close(weights[:, second], expected):
        return REPEATED_MATRIX_HINT
    return ""
