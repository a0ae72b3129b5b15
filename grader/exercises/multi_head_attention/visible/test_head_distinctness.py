"""Group 4 — head distinctness: several heads means several independent projections."""

from __future__ import annotations

import itertools

import pytest
import torch

from grader.exercises.multi_head_attention import causes, checks, data, operations
from grader.feedback import root_causes
from grader.exercises.multi_head_attention import premises, source_premises
from grader.exercises.multi_head_attention.data import LESSON, Config

SEED = 2024
PROJECTIONS = ("query", "key", "value")
THREE_HEADS = Config(batch=2, seq=5, model_dim=12, num_heads=3)
# Each hint names the cause the check itself established (one tensor held twice, the same
# starting numbers, the same matrices from different weights), never another.
SHARED_HINT = (
    "create a new AttentionHead for every head (AttentionHead(...) for _ in range(num_heads)): "
    "[head] * num_heads, or one head appended several times, repeats one module."
)
# Heads that start with the same numbers: the cause said is the one the student's code shows
# (grader/exercises/multi_head_attention/source_premises.py), else only what the numbers show.
RESEEDED_HINT = (
    "your heads are separate modules built from the same random numbers: a torch.manual_seed "
    "called before each head (or inside it) gives every head the same starting weights; seed once, outside."
)
COPIED_HINT = (
    "your heads are copies of one head: copy.deepcopy gives each copy that head's starting weights; "
    "build every head with AttentionHead(...), so that each draws its own."
)
LOADED_HINT = (
    "your code loads weights into a head (load_state_dict, copy_): one head's weights loaded into another make "
    "them equal; leave each head the weights it drew."
)
SAME_START_HINT = (
    "your heads are separate modules that start with the same weights: build every head with "
    "AttentionHead(...), so that each draws its own random numbers."
)
CAUSES_SHOWN = (
    (source_premises.seeds_in_the_model, RESEEDED_HINT),
    (source_premises.copies_a_head, COPIED_HINT),
    (source_premises.loads_one_heads_weights, LOADED_HINT),
)


def same_start_hint(submission) -> str:
    """Why separate heads start with the same weights, as far as the student's source shows it."""
    code = source_premises.student_code(submission.source)
    return " ".join(hint for shows, hint in CAUSES_SHOWN if shows(code)) or SAME_START_HINT
# Said only when every parameter of the heads named is one tensor with the other's: the heads
# are one module (see premises.shared_tensors).
ONE_MODULE_HINT = SHARED_HINT
SHARED_PROJECTION_HINT = (
    "give every head projections of its own: one nn.Linear passed to (or kept by) several heads is one "
    "tensor for all of them."
)
INSIDE_A_HEAD_HINT = (
    "create query, key and value as three nn.Linear layers: [nn.Linear(...)] * 3, or self.key = self.query, "
    "makes them one layer, and one layer gives queries, keys and values that are the same numbers."
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
    reshaped = sorted(n for n in expected if n in parameters and tuple(parameters[n].shape) != expected[n])
    if missing or extra or reshaped:
        got = [f"missing {', '.join(missing[:4])}"] if missing else []
        got += [f"unexpected {operations.names_and_shapes(extra, parameters)}"] if extra else []
        got += [f"{n} shaped {tuple(parameters[n].shape)} instead of {expected[n]}" for n in reshaped[:2]]
        root_causes.layout_slip(
            f"MultiHeadSelfAttention({config.model_dim}, {config.num_heads}) does not have the contract's parameters."
            f"{graded_around(missing, extra, reshaped, parameters)}\n"
            f"  expected: {operations.names_and_shapes(list(expected), {n: torch.empty(shape) for n, shape in expected.items()})}\n"
            f"  got:      {'; '.join(got)}\n"
            f"  fix:      {causes.LAYOUT_FIX}",
            found={name: tuple(value.shape) for name, value in parameters.items()},
            expected=expected,
        )


def graded_around(missing: list[str], extra: list[str], reshaped: list[str], parameters: dict) -> str:
    """What the other checks did with this layout (grader/exercises/multi_head_attention/operations.py ``_load``, grader/submission.py
    ``as_held``): a bias on one side only is held at zero on both, so they grade the attention itself;
    any other difference keeps the grader's weights out."""
    not_held = [name for name in missing if operations.bias_of_a_projection(name, parameters)]
    if reshaped or len(not_held) < len(missing):
        return " The grader cannot load its weights into this layout: the checks that need them cannot run."
    extra_biases = [name for name in extra if operations.is_bias(name)]
    held = (["every extra bias of yours held at zero"] if extra_biases else []) + (
        [f"the reference's {', '.join(not_held)} held at zero, as your module has none"] if not_held else []
    )
    said = " The other checks ran with the grader's weights"
    said += f", {' and '.join(held)} (what bias=False means), so they grade the attention itself." if held else "."
    if len(extra_biases) < len(extra):  # named in the "got" line
        said += " Your other extra parameters kept the values your constructor gave them."
    return said


@pytest.mark.points(4)
def test_heads_neither_share_nor_copy_their_parameters(submission):
    config = THREE_HEADS
    built = submission.initial_parameters(config.model_dim, config.num_heads, SEED)
    parameters = built["parameters"]
    # Which tensors are one, and where: across heads or inside one head (premises.shared_tensors
    # reads the names the module itself gives them), each said as it is.
    groups = built.get("shared", [])
    if sharings := premises.shared_tensors(groups):
        # Every shared tensor in one message: a fix of one must not meet the same check about the next.
        first = sharings[0]
        if first.across_heads:
            expected = "every head with parameters of its own"
            whole = all(sharing.whole_heads(groups, PROJECTIONS) for sharing in sharings if sharing.across_heads)
            hint = ONE_MODULE_HINT if whole else SHARED_PROJECTION_HINT
        else:
            expected = "query, key and value with weights of their own" if first.inside_one_head else "parameters of their own"
            hint = INSIDE_A_HEAD_HINT if all(sharing.inside_one_head and not sharing.outside_the_heads for sharing in sharings) else ""
        checks.fail(
            f"{premises.sharing_sentence(sharings)}.",
            expected,
            "; ".join(f"{'one tensor' if n == 0 else 'another'}: {', '.join(sharing.names[:4])}" for n, sharing in enumerate(sharings[:3])),
            hint,
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
                    same_start_hint(submission),
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
        a, b = weights[:, first], weights[:, second]
        if not (bool(torch.isfinite(a).all()) and bool(torch.isfinite(b).all())):
            continue  # NaN is never "the same": the probabilities group reports weights that are not finite
        difference = (a - b).abs().max().item()
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
    for sharing in premises.shared_tensors(built.get("shared", [])):
        if {first, second} <= set(sharing.heads):  # one tensor in both heads, not two equal ones
            return ONE_MODULE_HINT if sharing.whole_heads(built["shared"], PROJECTIONS) else SHARED_PROJECTION_HINT
    parameters = built["parameters"]
    pairs = [(parameters.get(f"heads.{first}.{p}.weight"), parameters.get(f"heads.{second}.{p}.weight")) for p in PROJECTIONS]
    if any(a is None or b is None for a, b in pairs):
        return ""
    if all(a.shape == b.shape and torch.equal(a, b) for a, b in pairs):
        return same_start_hint(submission)
    # The student's own AttentionHead, given each head's starting weights: when it tells them
    # apart and the module reports head ``first``'s matrix for both, the stacking repeats one.
    alone = [own_head_weights(submission, config, inputs, parameters, head) for head in (first, second)]
    if any(matrix is None for matrix in alone) or premises.close(alone[1], alone[0]):
        return ""
    if premises.close(weights[:, first], alone[0]) and premises.close(weights[:, second], alone[0]):
        return REPEATED_MATRIX_HINT
    return ""


def own_head_weights(submission, config: Config, inputs, parameters: dict, head: int):
    """What the student's AttentionHead returns as weights with head ``head``'s parameters, or None."""
    own = {name.removeprefix(f"heads.{head}."): value for name, value in parameters.items() if name.startswith(f"heads.{head}.")}
    result = premises.asked(lambda: submission.run_head(
        model_dim=config.model_dim, head_dim=config.head_dim, parameters=own, inputs=inputs,
        allowed_mask=data.causal_allowed(config.seq),
    ))
    return result["weights"] if result and isinstance(result.get("weights"), torch.Tensor) else None
