"""Hints that speak only when their premise holds on the student's own numbers.

A hint names a cause ("you divided by head_dim", "your mask marks the future"). Shown where
that cause is absent it sends the student the wrong way, which costs more than no hint. So
every hint here is chosen by recomputing what the student's tensors would be under one
particular slip, from the grader's own inputs and weights (in float64, in the grader's
process), and comparing: the hint of the slip that reproduces the student's numbers, or
none, and the failure's expected / got stands alone.

These recomputations are the lesson's formulas with one step changed; none of them is the
student's code, and nothing here calls it (the callers pass what the submission returned).
Nor does anything here compute the reference's numbers: this module ships with the student's
grader, so the right weights come from the caller (the shipped expectations of the visible
checks, grader/exercises/multi_head_attention/reference_examples.json, or the hidden group's reference), and a slip is named
only where it differs from them. tests/test_release.py holds the hand-out to that by behaviour.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch

from grader.feedback.evidence import StudentCodeError

# Looser than the checks' tolerance: a slip recomputed in float64 is compared with the
# student's float32, and a premise needs to be recognised, not graded.
PREMISE_TOLERANCE = {"atol": 1e-4, "rtol": 1e-3}


def close(actual, expected: torch.Tensor) -> bool:
    """Same shape and the same numbers within PREMISE_TOLERANCE (NaN never matches)."""
    if not isinstance(actual, torch.Tensor) or tuple(actual.shape) != tuple(expected.shape):
        return False
    if not actual.is_floating_point():
        return False
    a, e = actual.double(), expected.double()
    return bool(((a - e).abs() <= PREMISE_TOLERANCE["atol"] + PREMISE_TOLERANCE["rtol"] * e.abs()).all())


def reproduced(actual, candidate: torch.Tensor) -> bool:
    """Whether a slip recomputed here (``candidate``) gives the student's numbers: ``close``
    where the candidate has numbers, and NaN, or the same infinity, exactly where it has those
    (a softmax over nothing but -inf is 0/0, in the slip as in the student's code). Evidence
    for a premise only: no sentence calls a NaN the same as anything."""
    if not isinstance(candidate, torch.Tensor) or not isinstance(actual, torch.Tensor) or not actual.is_floating_point():
        return False
    numbers = candidate.isfinite()
    if bool(numbers.all()) or tuple(actual.shape) != tuple(candidate.shape):
        return close(actual, candidate)
    a, c = actual.double(), candidate.double()
    if not (torch.equal(a.isnan(), c.isnan()) and torch.equal(a.isinf(), c.isinf()) and torch.equal(a[c.isinf()], c[c.isinf()])):
        return False
    return close(a[numbers], c[numbers])


# --- the weights of one head under one slip ------------------------------------------------


def _masked(scores: torch.Tensor, allowed: torch.Tensor, fill=float("-inf")) -> torch.Tensor:
    return scores.masked_fill(~allowed, fill)


def _softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.softmax(scores, dim=dim)


SCORES_AS_WEIGHTS = "your weights are the scaled scores themselves: apply torch.softmax(..., dim=-1) to them."
# name -> (how the weights come out of (queries, keys, head_dim, model_dim, allowed), the hint).
# Each hint states the premise the grader checked ("your weights are those of ...").
WEIGHT_SLIPS: dict[str, tuple[Callable, str]] = {
    "no_scale": (
        lambda q, k, hd, md, m: _softmax(_masked(q @ k.mT, m)),
        "your weights are what the scores give without the scale: divide the scores by math.sqrt(head_dim) "
        "before the softmax.",
    ),
    "scale_by_head_dim": (
        lambda q, k, hd, md, m: _softmax(_masked(q @ k.mT / hd, m)),
        "your weights are what dividing the scores by head_dim gives: divide by its square root, math.sqrt(head_dim).",
    ),
    "scale_by_half_head_dim": (
        lambda q, k, hd, md, m: _softmax(_masked(q @ k.mT / (hd / 2), m)),
        "your weights are what dividing the scores by head_dim / 2 gives (Python reads head_dim ** 1/2 as "
        "(head_dim ** 1) / 2): divide by math.sqrt(head_dim), or head_dim ** 0.5.",
    ),
    "scale_multiplied": (
        lambda q, k, hd, md, m: _softmax(_masked(q @ k.mT * math.sqrt(hd), m)),
        "your weights are what multiplying the scores by sqrt(head_dim) gives: divide by it instead.",
    ),
    "scale_by_model_dim": (
        lambda q, k, hd, md, m: _softmax(_masked(q @ k.mT / math.sqrt(md), m)),
        "your weights are what dividing by sqrt(model_dim) gives: the scale is 1/sqrt(head_dim), one head's width.",
    ),
    "scale_by_model_dim_itself": (
        lambda q, k, hd, md, m: _softmax(_masked(q @ k.mT / md, m)),
        "your weights are what dividing by model_dim gives: the scale is 1/sqrt(head_dim), one head's width.",
    ),
    "scale_by_seq_len": (
        lambda q, k, hd, md, m: _softmax(_masked(q @ k.mT / math.sqrt(q.shape[-2]), m)),
        "your weights are what dividing by sqrt(seq_len) gives: the scale is 1/sqrt(head_dim), one head's width.",
    ),
    "queries_and_keys_swapped": (
        lambda q, k, hd, md, m: _softmax(_masked(k @ q.mT / math.sqrt(hd), m)),
        "your weights are those of keys @ queries^T: the scores are queries @ keys.transpose(-2, -1), "
        "one row per query.",
    ),
    "softmax_over_queries": (
        lambda q, k, hd, md, m: _softmax(_masked(q @ k.mT / math.sqrt(hd), m), dim=-2),
        "your weights are a softmax over the query positions (dim=-2): take it over the key positions, dim=-1.",
    ),
    "mask_after_softmax": (
        lambda q, k, hd, md, m: _softmax(q @ k.mT / math.sqrt(hd)) * m,
        "your weights are the unmasked softmax with the hidden positions zeroed afterwards: mask the scores "
        "(-inf) before the softmax, so that each row still sums to one.",
    ),
    "mask_filled_with_zero": (
        lambda q, k, hd, md, m: _softmax(_masked(q @ k.mT / math.sqrt(hd), m, 0.0)),
        "your weights are what filling the hidden scores with 0 gives: fill them with float('-inf'), "
        "which the softmax turns into weight exactly 0.",
    ),
    "no_mask": (
        lambda q, k, hd, md, m: _softmax(q @ k.mT / math.sqrt(hd)),
        "your weights are those of the scores with no mask at all: mask the scores before the softmax, "
        "scores.masked_fill(~allowed_mask, float('-inf')).",
    ),
    "scores_as_weights": (
        lambda q, k, hd, md, m: _masked(q @ k.mT / math.sqrt(hd), m, 0.0),
        SCORES_AS_WEIGHTS,
    ),
    "masked_scores_as_weights": (
        lambda q, k, hd, md, m: _masked(q @ k.mT / math.sqrt(hd), m),
        SCORES_AS_WEIGHTS,
    ),
    "softmax_over_batch": (
        lambda q, k, hd, md, m: _softmax(_masked(q @ k.mT / math.sqrt(hd), m), dim=0),
        "your weights are a softmax over the batch axis (dim=0), which mixes the sequences of the batch "
        "(and gives 0/0, NaN, where every sequence hides a key): take it over the key positions, dim=-1.",
    ),
}
# The slips of a mask: what the weights are when the head uses another mask than the one it
# must use (these carry their own hints, written by the caller that knows which mask it is).


def _under_another_mask(q: torch.Tensor, k: torch.Tensor, head_dim: int, mask: torch.Tensor) -> torch.Tensor:
    """The weights with every step right but the mask: the slip of a code that uses ``mask``."""
    return _softmax(_masked(q @ k.mT / math.sqrt(head_dim), mask))


def _projections(inputs: torch.Tensor, parameters: dict, prefix: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = inputs.double()
    return tuple(x @ parameters[f"{prefix}{name}.weight"].double().T for name in ("query", "key", "value"))


def _heads(parameters: dict, num_heads: int | None) -> list[str]:
    """The parameter prefixes of the heads: "" for one head's parameters, "heads.h." for a module's."""
    return [""] if num_heads is None else [f"heads.{h}." for h in range(num_heads)]


def _stack(per_head: list[torch.Tensor], num_heads: int | None) -> torch.Tensor:
    return per_head[0] if num_heads is None else torch.stack(per_head, dim=1)


def weights_hint(
    weights,
    inputs: torch.Tensor,
    parameters: dict,
    allowed: torch.Tensor,
    *,
    correct: torch.Tensor | None,
    model_dim: int,
    num_heads: int | None = None,
    other_masks: dict[str, tuple[torch.Tensor, str]] | None = None,
) -> str:
    """The hint of the one slip that reproduces ``weights``, or "".

    ``num_heads=None``: ``weights`` are one head's ``(batch, seq, seq)`` and ``parameters``
    its ``query.weight``...; otherwise a module's ``(batch, heads, seq, seq)`` and
    ``heads.h.query.weight``.... ``correct``: the reference's weights on this data (None: no
    hint, the premise cannot be checked). ``other_masks``: name -> (a mask the code may have
    used instead of ``allowed``, the hint that says so). A slip that gives the correct weights
    on this data (no scale with head_dim 1, a mask that allows everything) proves nothing and
    is never named.
    """
    if not isinstance(weights, torch.Tensor) or not weights.is_floating_point() or correct is None:
        return ""
    try:
        heads = [_projections(inputs, parameters, prefix) for prefix in _heads(parameters, num_heads)]
    except (KeyError, RuntimeError):
        return ""
    head_dim = heads[0][0].shape[-1]
    allowed = allowed.bool()
    correct = correct.double()

    def reproduces(slip: Callable) -> bool:
        try:
            candidate = _stack([slip(q, k, head_dim, model_dim, allowed) for q, k, _ in heads], num_heads)
        except RuntimeError:
            return False
        return not close(candidate, correct) and reproduced(weights, candidate)

    # Every slip is tried: when two different ones give the same numbers on this data
    # (sqrt(model_dim) equals head_dim for some sizes), the grader cannot tell which the
    # student made, and says neither.
    found = [hint for mask, hint in (other_masks or {}).values()
             if reproduces(lambda q, k, hd, md, m, mask=mask: _under_another_mask(q, k, hd, mask.bool()))]
    found += [hint for slip, hint in WEIGHT_SLIPS.values() if reproduces(slip)]
    found = list(dict.fromkeys(found))  # two forms of one slip (the scores, with or without -inf) say one thing
    if len(found) == 1:
        return found[0]
    if found or num_heads is None or num_heads < 2:
        return ""
    if reproduces(lambda q, k, hd, md, m: correct[:, 0]):
        return "every head's matrix is head 0's: stack each head's own weights, head h at index h of axis 1."
    if close(weights, correct.flip(1)):
        return "your heads' matrices are in reverse order: head h's matrix belongs at index h of axis 1."
    return ""


def head_output_hint(output, weights: torch.Tensor, inputs: torch.Tensor, parameters: dict) -> str:
    """For a head whose weights are right: the hint of the tensor it mixed instead of the values."""
    queries, keys, values = _projections(inputs, parameters, "")
    weights = weights.double()
    if close(output, weights @ values):
        return ""
    for name, mixed in (("queries", queries), ("keys", keys)):
        if close(output, weights @ mixed):
            return f"your weights are right, and your output is weights @ {name}: mix the values, weights @ values."
    if close(output, weights.mT @ values):
        return "your weights are right, and your output mixes the values with the transposed weights: weights @ values."
    return ""


def module_output_hint(output, inputs: torch.Tensor, parameters: dict, weights: torch.Tensor, num_heads: int) -> str:
    """For a module whose heads' weights are right (``weights``: the reference's, (batch, heads,
    seq, seq)): the hint of the slip after the heads that reproduces ``output`` (the order of the
    heads, the concatenation, the output projection)."""
    try:
        heads = [_projections(inputs, parameters, prefix) for prefix in _heads(parameters, num_heads)]
        weight = parameters["output_projection.weight"].double()
        bias = parameters["output_projection.bias"].double()
        outputs = [weights[:, h].double() @ v for h, (_, _, v) in enumerate(heads)]
    except (KeyError, RuntimeError, IndexError):
        return ""

    def project(x: torch.Tensor) -> torch.Tensor:
        return x @ weight.T + bias

    concatenated = torch.cat(outputs, dim=-1)
    slips = {
        "your output is the heads' concatenation without output_projection: apply it once, to the concatenation.":
            concatenated,
        "your output is output_projection applied twice: apply it once, to the concatenation.":
            project(project(concatenated)),
        "your output is output_projection of the heads in reverse order: head 0's block comes first.":
            project(torch.cat(outputs[::-1], dim=-1)),
        "your output is output_projection of the heads' features interleaved (stacked, then reshaped): "
        "concatenate them whole, torch.cat(..., dim=-1).": project(torch.stack(outputs, dim=-1).flatten(start_dim=-2)),
        "your output is output_projection without its bias: use the nn.Linear(model_dim, model_dim) as it is.":
            concatenated @ weight.T,
        "your output is the projection plus the inputs: this layer has no residual connection.":
            project(concatenated) + inputs.double(),
    }
    correct = project(concatenated)
    matches = [hint for hint, candidate in slips.items() if not close(candidate, correct) and close(output, candidate)]
    return matches[0] if len(matches) == 1 else ""


# --- shapes -------------------------------------------------------------------------------


def module_output_shape_hint(shape: tuple, batch: int, seq: int, model_dim: int, num_heads: int) -> str:
    head_dim = model_dim // num_heads
    shape = tuple(shape)
    if num_heads > 1 and shape == (batch, seq * num_heads, head_dim):
        return "that is the heads joined along the sequence axis: concatenate them on the feature axis (dim=-1)."
    if num_heads > 1 and shape[:2] == (batch, seq) and shape[-1:] == (head_dim,):
        return ("that is one head's width: the heads' outputs side by side make model_dim features "
                "(torch.cat(..., dim=-1)); a mean, a sum or a single head keeps head_dim.")
    if shape in ((batch, seq, seq), (batch, num_heads, seq, seq)):
        return "that is the shape of attention weights: the output mixes the values, weights @ values, per head."
    return ""


def weights_shape_hint(shape: tuple, batch: int, seq: int, num_heads: int) -> str:
    shape = tuple(shape)
    if num_heads > 1 and shape == (num_heads, batch, seq, seq):
        return "your weights are stacked on axis 0 (heads first): stack the heads' weights on dim=1."
    if num_heads > 1 and shape in ((batch, seq, num_heads, seq), (batch, seq, seq, num_heads)):
        return "the heads' axis is not axis 1: stack the heads' weights with torch.stack(..., dim=1)."
    if num_heads > 1 and shape in ((batch * num_heads, seq, seq), (batch, num_heads * seq, seq), (batch, seq, num_heads * seq)):
        return "the heads' matrices are concatenated: stack them on a new axis 1 with torch.stack(..., dim=1)."
    if num_heads > 1 and shape == (batch, seq, seq):
        return "that is a single matrix: return one per head, torch.stack(..., dim=1)."
    if batch == 1 and shape == (num_heads, seq, seq):
        return "the batch axis is missing: keep it first, (batch, heads, seq, seq)."
    return ""


def concatenation_shape_hint(shape: tuple, batch: int, seq: int, head_dim: int, num_heads: int) -> str:
    shape = tuple(shape)
    if shape == (batch, seq * num_heads, head_dim):
        return "the heads are joined along the sequence axis: concatenate along the feature axis, the last one (dim=-1)."
    if shape == (batch, seq, head_dim):
        return "that is one head's width: concatenate the heads side by side (dim=-1); a mean or a sum keeps head_dim."
    if shape in ((batch, num_heads, seq, head_dim), (num_heads, batch, seq, head_dim), (batch, seq, num_heads, head_dim)):
        return "the heads are stacked on a new axis: torch.cat joins them along the existing feature axis (dim=-1)."
    return ""


def concatenation_order_hint(concatenated: torch.Tensor, outputs: list[torch.Tensor]) -> str:
    if close(concatenated, torch.stack(outputs, dim=-1).flatten(start_dim=-2)):
        return ("your features are interleaved (stacked, then reshaped): torch.cat([result.output for result in "
                "head_results], dim=-1) keeps each head whole.")
    if close(concatenated, torch.cat(outputs[::-1], dim=-1)):
        return "the heads are in reverse order: head 0's block comes first."
    return ""


def causal_mask_hint(mask: torch.Tensor) -> str:
    """For a wrong boolean (seq, seq) mask: which familiar mask it is."""
    seq = mask.shape[-1]
    ones = torch.ones(seq, seq, dtype=torch.bool)
    familiar = {
        "your mask marks the future (True where key > query): True means may attend, so negate it, "
        "~torch.triu(..., diagonal=1), or use torch.tril.": torch.triu(ones, diagonal=1),
        "your mask leaves out the diagonal: a position may attend to itself (torch.tril keeps the diagonal).":
            torch.tril(ones, diagonal=-1),
        "your mask is the upper triangle: mask[query, key] allows key <= query, the lower triangle (torch.tril).":
            torch.triu(ones),
        "your mask lets each position see the next one: torch.tril(ones) with the default diagonal=0.":
            torch.tril(ones, diagonal=1),
    }
    correct = torch.tril(ones)
    matches = [hint for hint, candidate in familiar.items() if not torch.equal(candidate, correct) and torch.equal(mask.bool(), candidate)]
    return matches[0] if len(matches) == 1 else ""  # two familiar masks alike at this size: say neither


def has_an_empty_row(mask) -> bool:
    return isinstance(mask, torch.Tensor) and mask.dim() >= 1 and mask.shape[-1] > 0 and bool((~mask.bool()).all(dim=-1).any())


EMPTY_ROW_HINT = (
    "your causal_mask({seq}) has a row that allows no position, and a softmax over nothing but -inf is 0/0, NaN: "
    "the causal mask keeps the diagonal."
)


def empty_row_hint(submission, seq: int, weights=None) -> str:
    """NaN said with its cause, when the grader has checked it: the student's causal_mask(seq)
    has a row that allows no key, and (``weights``: (..., seq, seq) the code returned with that
    mask) the NaN in the weights are exactly in those rows."""
    mask = student_causal_mask(submission, seq)
    if not has_an_empty_row(mask):
        return ""
    if weights is not None:
        empty = (~mask).all(dim=-1)[:, None].expand(seq, seq)  # (seq, seq): the rows that allow no key
        if not (isinstance(weights, torch.Tensor) and weights.shape[-2:] == (seq, seq)
                and torch.equal(weights.isnan(), empty.expand(weights.shape))):
            return ""
    return EMPTY_ROW_HINT.format(seq=seq)


# --- structure: which parameters are one tensor, and where ---------------------------------

_HEAD_PARAMETER = re.compile(r"heads\.(\d+)\.(.+)")


def _and(items) -> str:
    items = [str(item) for item in items]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


@dataclass(frozen=True)
class Sharing:
    """One tensor that the module holds under several names (operations.initial_parameters
    reads them from the module's own named_parameters): where it is shared, said from the
    names, never guessed."""

    names: tuple[str, ...]

    @property
    def _placed(self) -> list[tuple[int, str]]:
        return [(int(m[1]), m[2]) for m in map(_HEAD_PARAMETER.fullmatch, self.names) if m]

    @property
    def heads(self) -> list[int]:
        return sorted({head for head, _ in self._placed})

    @property
    def across_heads(self) -> bool:
        return len(self.heads) > 1

    @property
    def inside_one_head(self) -> bool:
        """Two names of one head are this one tensor (query and key, say)."""
        placed = self._placed
        return any(sum(1 for h, _ in placed if h == head) > 1 for head in self.heads)

    @property
    def outside_the_heads(self) -> bool:
        return len(self._placed) < len(self.names)

    def whole_heads(self, groups: list, projections: tuple[str, ...]) -> bool:
        """Whether every projection of these heads is one tensor across them: one module repeated."""
        return all(any({f"heads.{h}.{p}.weight" for h in self.heads} <= set(group) for group in groups) for p in projections)

    def sentence(self) -> str:
        if self.across_heads:
            within = sorted({name for _, name in self._placed})
            return f"heads {_and(self.heads)} hold the very same parameter tensor (as their {_and(within)})"
        if self.inside_one_head and not self.outside_the_heads:
            head = self.heads[0]
            projections = [name.removesuffix(".weight") for _, name in self._placed]
            return f"inside head {head}, {_and(projections)} are the very same parameter tensor"
        return f"{_and(self.names)} are the very same parameter tensor"


def shared_tensors(groups) -> list[Sharing]:
    """``initial_parameters(...)["shared"]`` as Sharing records, those across heads first."""
    found = [Sharing(tuple(group)) for group in groups or () if len(group) > 1]
    return sorted(found, key=lambda sharing: not sharing.across_heads)


def sharing_sentence(sharings: list[Sharing]) -> str:
    """One sentence for every tensor held under several names, none left out: the tensors
    shared by the same heads said together ("heads 0, 1 and 2 hold the very same parameter
    tensors, one as their key.weight and one as their value.weight"), a fix of one then
    meets no second check about the other."""
    across: dict[tuple[int, ...], list[Sharing]] = {}
    for sharing in sharings:
        if sharing.across_heads:
            across.setdefault(tuple(sharing.heads), []).append(sharing)
    clauses = []
    for heads, group in across.items():
        if len(group) == 1:
            clauses.append(group[0].sentence())
        else:
            roles = [f"one as their {_and(sorted({name for _, name in sharing._placed}))}" for sharing in group]
            clauses.append(f"heads {_and(heads)} hold the very same parameter tensors, {_and(roles)}")
    inside: dict[tuple[str, ...], list[int]] = {}  # the same projections one tensor inside several heads
    for sharing in sharings:
        if sharing.inside_one_head and not sharing.across_heads and not sharing.outside_the_heads:
            inside.setdefault(tuple(name.removesuffix(".weight") for _, name in sharing._placed), []).append(sharing.heads[0])
        elif not sharing.across_heads:
            clauses.append(sharing.sentence())
    for projections, heads in inside.items():
        where = f"head {heads[0]}" if len(heads) == 1 else f"each of heads {_and(heads)}"
        clauses.append(f"inside {where}, {_and(projections)} are the very same parameter tensor")
    return "; ".join(clauses)


# --- premises that take one more call into the submission -----------------------------------


def asked(call: Callable):
    """What one more call into the submission returns, for a premise only; None when the call
    itself fails (that failure is another test's to report, with its own message)."""
    try:
        return call()
    except StudentCodeError:
        return None


def student_causal_mask(submission, seq: int):
    """The student's causal_mask(seq) when it is a boolean (seq, seq) tensor, else None."""
    mask = asked(lambda: submission.causal_mask(seq))
    if isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and tuple(mask.shape) == (seq, seq):
        return mask
    return None


def default_mask_slips(submission, seq: int, batch: int = 0) -> dict[str, tuple[torch.Tensor, str]]:
    """For ``weights_hint(other_masks=...)`` where the module's default (causal) mask is used:
    the student's own causal_mask(seq) when it is wrong; with ``batch`` 1, the one-position
    mask a default sized by the batch gives, which allows everything as no mask does (so that
    the grader, unable to tell the two apart, names neither)."""
    slips = {}
    if batch == 1 and seq > 1:
        slips["sized_by_a_batch_of_one"] = (torch.ones(1, 1, dtype=torch.bool), (
            "your weights are those of a one-position mask, which allows every key: with allowed_mask=None "
            "the default is causal_mask(inputs.shape[1])."
        ))
    mask = student_causal_mask(submission, seq)
    causal = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
    if mask is None or torch.equal(mask, causal):
        return slips
    empty = (" Its rows that allow no key give 0/0 under the softmax: NaN." if has_an_empty_row(mask) else "")
    return slips | {"students_causal_mask": (mask, (
        f"your weights follow your causal_mask({seq}), which is not the lower triangle with the diagonal "
        f"(the causal_mask test says where): fix causal_mask.{empty}"
    ))}


IGNORED_MASK_HINT = (
    "your weights are those of the causal mask, not of the allowed_mask you were given: use the allowed_mask "
    "argument (True = may attend) instead of building a causal mask"
)


def given_mask_slips(allowed: torch.Tensor, where: str) -> dict[str, tuple[torch.Tensor, str]]:
    """For a custom mask: the weights the causal mask or a transposed mask would give instead."""
    seq = allowed.shape[-1]
    return {
        "causal_instead": (torch.tril(torch.ones(seq, seq, dtype=torch.bool)), f"{IGNORED_MASK_HINT} {where}."),
        "transposed": (allowed.transpose(-2, -1), (
            "your weights are those of the mask transposed: allowed_mask is indexed [query, key], pass it as it is."
        )),
    }


NOT_GIVEN_TO_HEADS = (
    "your heads honour a custom mask when they are given one, and the module's weights do not: "
    "MultiHeadSelfAttention must pass its allowed_mask to every head."
)


def module_custom_mask_hint(submission, weights, inputs, parameters: dict, allowed: torch.Tensor, config,
                            correct: torch.Tensor | None) -> str:
    """weights_hint for a module given a custom mask (``correct``: the reference's weights);
    when its weights are those of the causal mask, one call of head 0 with the same mask says
    which of the two ignores it."""
    found = weights_hint(
        weights, inputs, parameters, allowed, correct=correct, model_dim=config.model_dim, num_heads=config.num_heads,
        other_masks=given_mask_slips(allowed, "inside the heads"),
    )
    if found.startswith(IGNORED_MASK_HINT) and _head_honours(submission, config, allowed, inputs, parameters, correct[:, 0]):
        return NOT_GIVEN_TO_HEADS
    return found


def _head_honours(submission, config, allowed, inputs, parameters, expected: torch.Tensor) -> bool:
    """Whether head 0, given the mask directly, gives the weights that mask gives (``expected``)."""
    own = {name.removeprefix("heads.0."): value for name, value in parameters.items() if name.startswith("heads.0.")}
    result = asked(lambda: submission.run_head(
        model_dim=config.model_dim, head_dim=config.head_dim, parameters=own, inputs=inputs, allowed_mask=allowed,
    ))
    return bool(result) and close(result["weights"], expected)
