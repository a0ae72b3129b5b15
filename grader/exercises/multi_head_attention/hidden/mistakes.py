"""The library of known mistakes: one small trusted implementation per misconception.

Each function of the exercise is written here as a few named *steps* (the reference's
own code, cut where students go wrong). A known mistake replaces one or two steps with
the code a student with that misconception writes; some mistakes have several *forms*
(detaching the keys or the values is the same misconception). Two mistakes of one
function that replace different steps combine into the implementation with both, which
is how a pair of mistakes in one function is recognised.

Instructor code: it holds the solution, so it lives in grader/hidden/ and never ships.
It runs in the grader's process on the grader's probe data (grader/hidden/diagnosis.py),
never on anything a student wrote.

The ids are a stable vocabulary: reports, spreadsheets and our tests rely on them.
Add mistakes, never rename one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from grader.exercises.multi_head_attention import source_premises

HEAD_DIMENSION = "head_dimension"
CAUSAL_MASK = "causal_mask"
HEAD = "AttentionHead.forward"
CONCATENATE = "concatenate_heads"
MODULE = "MultiHeadSelfAttention"
FUNCTIONS = (HEAD_DIMENSION, CAUSAL_MASK, HEAD, CONCATENATE, MODULE)

Steps = dict[str, Callable]


@dataclass(frozen=True)
class Mistake:
    id: str
    function: str
    title: str  # what the student did, in words a student knows
    why: str  # what it does to the model, in the lesson's terms
    fix: str  # the principle, not the code
    forms: tuple[Steps, ...] = field(repr=False, default=())  # each: step name -> replacement
    # The misconception as a property of the student's answers, for code that has it but does
    # not compute exactly what a form computes (a hand-written softmax with its own shift):
    # signature(probe data, the student's outcome) on every probe of the function. Asked only
    # when no form nor pair matched, and trusted only when no other mistake's signature holds.
    signature: Callable[[dict, tuple], bool] | None = field(repr=False, default=None)
    # The same misconception where another function's steps hold it (an assert in the module's
    # constructor instead of the raise head_dimension owns): function -> its forms there.
    elsewhere: dict[str, tuple[Steps, ...]] = field(repr=False, default_factory=dict)
    # Sentences the fix says only where the student's own code shows their premise: each (premise
    # on the code's text, grader/exercises/multi_head_attention/source_premises.py; the sentence). A fix about a call whose
    # result is thrown away is no help to code that never made the call; a seed before each head is
    # no cause of heads copied from one.
    fix_where: tuple[tuple[Callable[[str], bool], str], ...] = field(repr=False, default=())
    # What the student's own answers show of the mistake, said to them before its why (the class
    # report, which shows one why for every holder, leaves it out): (the function's probes, the
    # student's outcomes on them) -> a sentence, or "" (the dtype a mask came back in).
    seen: Callable[[tuple, list], str] | None = field(repr=False, default=None)

    def fix_for(self, code: str) -> str:
        """The fix for this code (the student's source, or "" when it is not at hand)."""
        return " ".join([self.fix, *(sentence for premise, sentence in self.fix_where if premise(code))])

    def seen_in(self, probes: tuple = (), observed: list | None = None) -> str:
        """What the student's answers on the probes show of this mistake (``seen``), or ""."""
        return self.seen(probes, observed) if self.seen is not None and observed else ""

    @property
    def steps(self) -> frozenset[str]:
        return self.steps_in(self.function)

    @property
    def functions(self) -> tuple[str, ...]:
        """Every function the mistake can be found in, its own first."""
        return (self.function, *self.elsewhere)

    def forms_in(self, function: str) -> tuple[Steps, ...]:
        return self.forms if function == self.function else self.elsewhere.get(function, ())

    def steps_in(self, function: str) -> frozenset[str]:
        return frozenset(name for form in self.forms_in(function) for name in form)


# --- head_dimension ------------------------------------------------------------------------------
# head_dimension(model_dim, num_heads) = divide(...) unless ``rejects`` says the configuration
# is impossible; it is then refused by ``refuse`` (raise ValueError) with ``message``. The
# three are separate steps because a student gets them wrong independently: an assert whose
# message names one number is two mistakes (the assert, the message), not a third kind.


def _both_numbers(model_dim: int, num_heads: int) -> str:
    return f"model_dim={model_dim} must divide exactly by num_heads={num_heads}"


def _raise(error: Exception):
    raise error


def head_dimension(steps: Steps, model_dim: int, num_heads: int):
    if steps["rejects"](model_dim, num_heads):
        return steps["refuse"](steps["message"](model_dim, num_heads), num_heads)
    return steps["divide"](model_dim, num_heads)


HEAD_DIMENSION_STEPS: Steps = {
    "rejects": lambda model_dim, num_heads: num_heads < 1 or model_dim % num_heads != 0,
    "message": _both_numbers,
    "refuse": lambda message, num_heads: _raise(ValueError(message)),
    "divide": lambda model_dim, num_heads: model_dim // num_heads,
}


# --- causal_mask ---------------------------------------------------------------------------------


def causal_mask(steps: Steps, seq_len: int) -> torch.Tensor:
    return steps["as_dtype"](steps["pattern"](seq_len))


# The dtypes a mask of ones and zeros can come back in, bool apart.
NOT_BOOL = (
    torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
)


def _mask_dtype_said(probes: tuple, observed: list) -> str:
    """The dtype the student's causal_mask returned (its outcomes: ("value", dtype, mask))."""
    dtypes = [outcome[1] for outcome in observed if outcome and outcome[0] == "value" and outcome[1] != str(torch.bool)]
    return f"Your causal_mask returns a {dtypes[0]} tensor." if dtypes else ""


CAUSAL_MASK_STEPS: Steps = {
    "pattern": lambda seq_len: torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool)),
    "as_dtype": lambda mask: mask,
}


# --- AttentionHead.forward -----------------------------------------------------------------------


def _project(inputs: torch.Tensor, parameters: dict) -> tuple:
    return tuple(inputs @ parameters[f"{name}.weight"].T for name in ("query", "key", "value"))


def _project_cut(path: str, where: str) -> Callable:
    """A projection cut from the graph: its output detached, or its input detached."""

    def project(inputs, parameters):
        projected = []
        for name in ("query", "key", "value"):
            weight = parameters[f"{name}.weight"]
            if name != path:
                projected.append(inputs @ weight.T)
            elif where == "output":
                projected.append((inputs @ weight.T).detach())  # also what torch.no_grad() gives
            else:
                projected.append(inputs.detach() @ weight.T)
        return tuple(projected)

    return project


class _Stages:
    """Runs a function's steps in order, remembering each result under the chain of steps
    that produced it: on the same probe data, candidates that share their first steps (the
    reference and most of its mistakes) compute them once."""

    def __init__(self, steps: Steps, memo: dict | None) -> None:
        self.steps, self.memo, self.chain = steps, memo, ()

    def __call__(self, name: str, *arguments):
        self.chain += (self.steps[name],)
        if self.memo is None:
            return self.steps[name](*arguments)
        if self.chain not in self.memo:
            self.memo[self.chain] = self.steps[name](*arguments)
        return self.memo[self.chain]


def attention_head(
    steps: Steps, parameters: dict, inputs: torch.Tensor, allowed: torch.Tensor, head_dim: int, memo: dict | None = None
):
    """(weights, output) of one head; ``parameters`` as AttentionHead's state dict. ``memo``:
    results of earlier candidates on the same data (never with gradients)."""
    step = _Stages(steps, memo)
    queries, keys, values = step("project", inputs, parameters)  # (batch, seq, head_dim) each
    scores = step("scores", queries, keys)  # (batch, seq, seq)
    scores = step("scale", scores, head_dim, inputs.shape[-1])
    masked = step("mask_scores", scores, allowed)
    weights = step("normalise", masked)
    weights = step("mask_weights", weights, allowed)
    mixing = step("output_weights", weights, scores, allowed)  # what the output is computed with
    output = step("combine", mixing, queries, keys, values)  # (batch, seq, head_dim)
    return step("report", weights, masked, scores), output


def _normalised_over_queries(arguments: dict, outcome: tuple) -> bool:
    """Weights that are distributions over the queries (each key's column sums to one, the
    hidden positions at zero) and not over the keys: the softmax's axis, whatever computes it."""
    if outcome[0] != "value" or not isinstance(outcome[1], torch.Tensor):
        return False
    weights = outcome[1].double()
    allowed = arguments["allowed_mask"].expand(weights.shape) if weights.dim() == 3 else None
    if allowed is None or not torch.isfinite(weights).all():
        return False
    columns, seen = weights.sum(dim=-2), allowed.any(dim=-2)
    return bool(
        (weights >= 0).all()
        and (weights[~allowed] == 0).all()
        and ((columns[seen] - 1).abs() < 1e-6).all()
        and ((weights.sum(dim=-1) - 1).abs() > 1e-6).any()
    )


def _rows_of_nothing_zero(weights: torch.Tensor) -> torch.Tensor:
    """The weights F.scaled_dot_product_attention mixes the values with: a row whose every key is
    masked is 0, not the 0/0 of a softmax over nothing but -inf (its math backend's _safe_softmax,
    aten/src/ATen/native/transformers/attention.cpp, since pytorch/pytorch#133882)."""
    return weights.masked_fill(weights.isnan().all(dim=-1, keepdim=True), 0.0)


def _sdpa_weights(scores: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """The weights of F.scaled_dot_product_attention given a boolean attn_mask that is True at
    ``hidden``: its convention is True = take part (the docs' reference code fills -inf where
    attn_mask is False, https://docs.pytorch.org/docs/2.15/generated/torch.nn.functional.scaled_dot_product_attention.html)."""
    return _rows_of_nothing_zero(torch.softmax(scores.masked_fill(~hidden, float("-inf")), dim=-1))


def _causal_like(scores: torch.Tensor) -> torch.Tensor:
    seq = scores.shape[-1]
    return torch.tril(torch.ones(seq, seq, dtype=torch.bool))


HEAD_STEPS: Steps = {
    "project": _project,
    "scores": lambda queries, keys: queries @ keys.transpose(-2, -1),
    "scale": lambda scores, head_dim, model_dim: scores / math.sqrt(head_dim),
    "mask_scores": lambda scores, allowed: scores.masked_fill(~allowed, float("-inf")),
    "normalise": lambda scores: torch.softmax(scores, dim=-1),
    "mask_weights": lambda weights, allowed: weights,
    "output_weights": lambda weights, scores, allowed: weights,
    "combine": lambda weights, queries, keys, values: weights @ values,
    "report": lambda weights, masked, scores: weights,
}


# --- concatenate_heads ---------------------------------------------------------------------------


def concatenate_heads(steps: Steps, outputs: list[torch.Tensor]) -> torch.Tensor:
    return steps["join"](steps["order"](list(outputs)))


CONCATENATE_STEPS: Steps = {
    "order": lambda outputs: outputs,
    "join": lambda outputs: torch.cat(outputs, dim=-1),
}


# --- MultiHeadSelfAttention ----------------------------------------------------------------------
# The module is diagnosed on top of the student's own parts (their heads, their
# concatenate_heads, their causal_mask), so that its steps here are only what the module
# itself does: choose the mask, give each head its weights, combine, stack, construct.
# ``parts`` is the grader's handle on those student results (grader/hidden/diagnosis.py).


def module_heads(steps: Steps, parts, parameters: dict, given_mask) -> tuple:
    """(the mask the heads are given, which head's weights each position holds, the student's
    head results): the module's forward up to the concatenation."""
    default = steps["default_mask"](parts)
    mask = steps["head_mask"](given_mask, default)
    head_parameters = steps["head_parameters"](parameters, parts.num_heads)
    return mask, head_parameters, [parts.head(index, mask) for index in head_parameters]


def module_forward(steps: Steps, parts, parameters: dict, given_mask):
    """(weights, output) of the module, built from the student's parts."""
    _, _, heads = module_heads(steps, parts, parameters, given_mask)  # the student's head results
    concatenated = parts.concatenate(heads)  # by the student's concatenate_heads
    output = steps["project_output"](concatenated, parameters["output_projection.weight"], parameters["output_projection.bias"])
    return steps["stack_weights"]([head.weights for head in heads]), output


def module_construction(steps: Steps) -> tuple[bool, bool]:
    """(heads share parameter tensors, heads start with identical weights)."""
    return steps["construct"]()


def module_configuration(steps: Steps, head_dimension: Callable, model_dim: int, num_heads: int) -> str:
    """What constructing the module with these sizes does before it builds anything:
    "constructed", or the error it raises. ``head_dimension``: the student's own."""
    steps["configure"](head_dimension, model_dim, num_heads)
    return "constructed"


MODULE_STEPS: Steps = {
    "default_mask": lambda parts: parts.causal_mask(parts.seq),
    "head_mask": lambda given, default: default if given is None else given,
    # Which head's weights each position of the ModuleList ends up holding.
    "head_parameters": lambda parameters, num_heads: list(range(num_heads)),
    "project_output": lambda concatenated, weight, bias: F.linear(concatenated, weight, bias),
    "stack_weights": lambda weights: torch.stack(weights, dim=1),
    "construct": lambda: (False, False),
    # The module checks its configuration by asking head_dimension, which raises.
    "configure": lambda head_dimension, model_dim, num_heads: head_dimension(model_dim, num_heads),
}


REFERENCE_STEPS: dict[str, Steps] = {
    HEAD_DIMENSION: HEAD_DIMENSION_STEPS,
    CAUSAL_MASK: CAUSAL_MASK_STEPS,
    HEAD: HEAD_STEPS,
    CONCATENATE: CONCATENATE_STEPS,
    MODULE: MODULE_STEPS,
}


# --- The vocabulary ------------------------------------------------------------------------------

MISTAKES: tuple[Mistake, ...] = (
    # head_dimension
    Mistake(
        "no_divisibility_check",
        HEAD_DIMENSION,
        "head_dimension does not check that the width divides by the number of heads",
        "model_dim // num_heads silently drops features when the width does not divide "
        "(10 features, 3 heads: 3 each, 9 in all), so the concatenated heads no longer "
        "have the model's width and the error surfaces far from its cause.",
        "Reject an impossible configuration where it is made: raise ValueError when "
        "num_heads < 1 or model_dim is not a multiple of num_heads.",
        (
            {"rejects": lambda model_dim, num_heads: False},
            # Only num_heads < 1 is rejected: a width that does not divide still passes.
            {"rejects": lambda model_dim, num_heads: num_heads < 1},
        ),
    ),
    Mistake(
        "zero_heads_not_rejected",
        HEAD_DIMENSION,
        "head_dimension checks the remainder but not that there is at least one head",
        "With num_heads = 0 the remainder itself divides by zero, so the user gets a "
        "ZeroDivisionError instead of a message about the configuration.",
        "Check num_heads < 1 before anything divides by it, and raise ValueError for it too.",
        # The remainder is taken first: with num_heads = 0 it divides by zero. What names the
        # mistake is that behaviour, whatever else the code does with a count below one: not
        # tested at all (-1 heads give a negative width), or refused after the remainder.
        (
            {"rejects": lambda model_dim, num_heads: model_dim % num_heads != 0},
            {"rejects": lambda model_dim, num_heads: model_dim % num_heads != 0 or num_heads < 1},
        ),
    ),
    Mistake(
        "error_message_without_numbers",
        HEAD_DIMENSION,
        "the error does not say which numbers were wrong",
        "Whoever builds the model learns that something is wrong but not which setting, "
        "and has to go and find the values themselves.",
        "An error message names the values that broke the rule: model_dim and num_heads.",
        # Compared by which of the two numbers the message names (grader/exercises/multi_head_attention/hidden/probes.py).
        (
            {"message": lambda m, h: "model_dim must be divisible by num_heads"},
            {"message": lambda m, h: f"model_dim={m} is not divisible"},
            {"message": lambda m, h: f"bad num_heads={h}"},
        ),
    ),
    Mistake(
        "assert_instead_of_raise",
        HEAD_DIMENSION,
        "the width is checked with assert instead of raising ValueError",
        "An assert raises AssertionError, which callers do not expect for a bad argument, "
        "and it disappears entirely under python -O.",
        "Validate arguments with an explicit check that raises ValueError.",
        (
            {"refuse": lambda message, num_heads: _raise(AssertionError(message))},
            # A head count below one refused with ValueError, only the remainder asserted.
            {"refuse": lambda message, num_heads: _raise(ValueError(message) if num_heads < 1 else AssertionError(message))},
        ),
        # The constructor asserts the configuration itself before head_dimension is asked (or
        # instead of asking it), its message naming both numbers, one or none: the probes compare
        # the numbers an error names (grader/exercises/multi_head_attention/hidden/probes.py), so each is a form.
        elsewhere={MODULE: tuple(
            {"configure": lambda head_dimension, model_dim, num_heads, said=said: _raise(AssertionError(said(model_dim, num_heads)))
             if HEAD_DIMENSION_STEPS["rejects"](model_dim, num_heads) else head_dimension(model_dim, num_heads)}
            for said in (_both_numbers, lambda m, h: "", lambda m, h: f"model_dim={m}", lambda m, h: f"num_heads={h}")
        )},
    ),
    Mistake(
        "returns_instead_of_raising",
        HEAD_DIMENSION,
        "head_dimension returns a number instead of raising when the width does not divide",
        "The caller gets a head width of 0 and builds layers with no features: the model "
        "is broken, and nothing says so.",
        "An impossible configuration is an error: raise ValueError, do not return a value.",
        ({"refuse": lambda message, num_heads: 0},),
    ),
    Mistake(
        "true_division",
        HEAD_DIMENSION,
        "head_dimension uses / and returns a float",
        "A layer's width is a whole number of features; nn.Linear refuses a float, so the "
        "model cannot even be built.",
        "Widths are integers: divide with // once you know the division is exact.",
        ({"divide": lambda model_dim, num_heads: model_dim / num_heads},),
    ),
    # causal_mask
    Mistake(
        "upper_triangle_mask",
        CAUSAL_MASK,
        "the causal mask allows later positions and blocks earlier ones (the upper triangle)",
        "A position may then read the future and not its own past: in training the model "
        "copies the next token instead of predicting it.",
        "mask[query, key] is True when key <= query: the lower triangle, diagonal included.",
        ({"pattern": lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool))},),
    ),
    Mistake(
        "mask_without_diagonal",
        CAUSAL_MASK,
        "the causal mask leaves out the diagonal: a position cannot attend to itself",
        "The first position then has nothing to attend to: its row is all -inf and the "
        "softmax gives NaN, which spreads through the whole model.",
        "A position may always attend to itself: keep the diagonal (key <= query, not key < query).",
        ({"pattern": lambda n: torch.tril(torch.ones(n, n, dtype=torch.bool), diagonal=-1)},),
    ),
    Mistake(
        "inverted_mask",
        CAUSAL_MASK,
        "the causal mask is True where attention is blocked, not where it is allowed",
        "The exercise's convention is True = may attend; a mask of blocked positions hands "
        "every head the future and hides the past.",
        "Follow the stated convention: True marks the positions a query may attend to.",
        ({"pattern": lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)},),
    ),
    Mistake(
        "mask_not_boolean",
        CAUSAL_MASK,
        "the causal mask holds ones and zeros in a dtype that is not bool",
        "~mask and masked_fill need a bool mask: on floats ~ fails, on integers it flips every bit "
        "(~1 is -2, ~1 in uint8 is 254), masked_fill refuses both, and a 0/1 mask is easily added "
        "or multiplied where it should select.",
        "A mask says yes or no: build it with dtype=torch.bool.",
        # Every dtype a 0/1 (or True/False) mask can be held in but bool: a form per dtype, as the
        # probes compare a mask's dtype with its values.
        tuple({"as_dtype": lambda mask, dtype=dtype: mask.to(dtype)} for dtype in NOT_BOOL),
        seen=_mask_dtype_said,
    ),
    # AttentionHead.forward: the scale
    Mistake(
        "missing_scale",
        HEAD,
        "the scores are not divided by sqrt(head_dim)",
        "Dot products of head_dim features grow like sqrt(head_dim); unscaled, the softmax "
        "saturates, one key takes nearly all the weight and its gradients vanish.",
        "Scale the scores by 1/sqrt(head_dim) before the softmax, so they keep unit variance.",
        ({"scale": lambda scores, head_dim, model_dim: scores},),
    ),
    Mistake(
        "scaled_by_head_dim",
        HEAD,
        "the scores are divided by head_dim instead of its square root",
        "The spread of a dot product grows with sqrt(head_dim), not head_dim: dividing by "
        "head_dim flattens the scores, so every head attends almost uniformly.",
        "Divide by the square root of the head's width: the standard deviation of the scores, not their variance.",
        ({"scale": lambda scores, head_dim, model_dim: scores / head_dim},),
    ),
    Mistake(
        "scaled_by_model_dim",
        HEAD,
        "the scores are scaled by the model's width instead of the head's",
        "A head's scores are dot products of head_dim features, not model_dim: scaling by "
        "the model's width over-damps them, more so the more heads there are.",
        "The scale belongs to the vectors being multiplied: 1/sqrt(head_dim) of this head.",
        (
            {"scale": lambda scores, head_dim, model_dim: scores / math.sqrt(model_dim)},
            {"scale": lambda scores, head_dim, model_dim: scores / model_dim},
        ),
    ),
    Mistake(
        "scale_power_half",
        HEAD,
        "the scale is written head_dim ** 1/2, which Python reads as (head_dim ** 1) / 2",
        "** binds tighter than /: head_dim ** 1/2 is head_dim / 2, the square root only where head_dim "
        "is 4. At any other width the scores are scaled by the wrong amount, more wrongly the wider the head.",
        "Write the square root as math.sqrt(head_dim) or head_dim ** 0.5 (or ** (1/2), with the brackets).",
        (
            {"scale": lambda scores, head_dim, model_dim: scores / (head_dim / 2)},  # scores / (head_dim ** 1/2)
            {"scale": lambda scores, head_dim, model_dim: scores / head_dim / 2},  # scores / head_dim ** 1/2
        ),
    ),
    Mistake(
        "scale_multiplied",
        HEAD,
        "the scores are multiplied by sqrt(head_dim) instead of divided",
        "Multiplying makes large scores larger: the softmax saturates even sooner than "
        "with no scale at all.",
        "The scale shrinks the scores: divide by sqrt(head_dim).",
        ({"scale": lambda scores, head_dim, model_dim: scores * math.sqrt(head_dim)},),
    ),
    Mistake(
        "queries_and_keys_swapped",
        HEAD,
        "the scores are keys @ queries^T instead of queries @ keys^T",
        "Row q of the scores must say how much query q matches each key; swapped, the "
        "matrix is transposed and each row mixes the wrong comparisons.",
        "Rows are queries, columns are keys: scores[q, k] = query q . key k.",
        ({"scores": lambda queries, keys: keys @ queries.transpose(-2, -1)},),
    ),
    # AttentionHead.forward: the mask
    Mistake(
        "mask_not_applied",
        HEAD,
        "the head never applies the mask to the scores",
        "Without the mask every position reads every other, the future included: the "
        "model can see the answer it is asked to predict.",
        "Give disallowed positions -inf before the softmax.",
        ({"mask_scores": lambda scores, allowed: scores},),
        fix_where=((source_premises.discards_masked_fill, "masked_fill is not in place: keep its result, scores = scores.masked_fill(...)."),),
    ),
    Mistake(
        "mask_filled_with_zero",
        HEAD,
        "masked positions get a score of 0 instead of -inf",
        "A score of 0 still gets weight after the softmax (e^0 = 1): hidden positions are "
        "attended, only less.",
        "Only -inf becomes exactly zero weight: fill hidden scores with -inf (or the most negative number).",
        ({"mask_scores": lambda scores, allowed: scores.masked_fill(~allowed, 0.0)},),
    ),
    Mistake(
        "head_ignores_given_mask",
        HEAD,
        "the head builds its own causal mask instead of using the one it is given",
        "The mask is the caller's decision (padding, a custom pattern); a head that always "
        "masks causally cannot be used for anything else and silently ignores its argument.",
        "Use allowed_mask as given; the causal default belongs to MultiHeadSelfAttention.",
        ({"mask_scores": lambda scores, allowed: scores.masked_fill(~_causal_like(scores), float("-inf"))},),
    ),
    Mistake(
        "mask_polarity_flipped",
        HEAD,
        "the head blocks the positions the mask allows, and allows the hidden ones",
        "The convention is True = may attend; flipped, every head attends exactly where it "
        "must not, and a row with everything allowed becomes NaN.",
        "Fill -inf where allowed_mask is False: masked_fill(~allowed_mask, -inf). F.scaled_dot_product_attention's "
        "boolean attn_mask has the same convention (True = take part): pass allowed_mask as it is.",
        (
            {"mask_scores": lambda scores, allowed: scores.masked_fill(allowed, float("-inf"))},
            # With F.scaled_dot_product_attention given ~allowed_mask for the output: the weights
            # computed by hand right, or flipped too (a row of nothing then 0 in the output, NaN in the weights).
            {"output_weights": lambda weights, scores, allowed: _sdpa_weights(scores, ~allowed)},
            {"mask_scores": lambda scores, allowed: scores.masked_fill(allowed, float("-inf")),
             "output_weights": lambda weights, scores, allowed: _rows_of_nothing_zero(weights)},
        ),
    ),
    Mistake(
        "mask_after_softmax",
        HEAD,
        "the mask is applied to the weights after the softmax",
        "Zeroing weights after the softmax leaves rows that no longer sum to one: the "
        "weights are not a distribution, and the hidden positions still shaped the others.",
        "Mask the scores before the softmax, so it distributes the weight among allowed positions only.",
        (
            {"mask_scores": lambda scores, allowed: scores, "mask_weights": lambda weights, allowed: weights * allowed},
        ),
    ),
    # AttentionHead.forward: softmax and output
    Mistake(
        "softmax_over_queries",
        HEAD,
        "the softmax normalises over the query axis (dim=-2) instead of the key axis",
        "Each query must share one unit of attention among the keys; over dim=-2 each key's "
        "column sums to one instead, and a query's row is not a distribution.",
        "Normalise over the keys, the last axis: softmax(scores, dim=-1).",
        ({"normalise": lambda scores: torch.softmax(scores, dim=-2)},),
        signature=_normalised_over_queries,
    ),
    Mistake(
        "softmax_over_batch",
        HEAD,
        "the softmax normalises over the batch axis (dim=0) instead of the key axis",
        "Each query shares one unit of attention among its keys; over dim=0 the sequences of a batch "
        "share it instead, so one sequence's weights depend on the others, and a key every sequence "
        "hides gets 0/0, NaN.",
        "Normalise over the keys, the last axis: softmax(scores, dim=-1).",
        ({"normalise": lambda scores: torch.softmax(scores, dim=0)},),
    ),
    Mistake(
        "returns_scores",
        HEAD,
        "the head returns the scores (before the softmax) as its weights",
        "Scores are any real numbers, -inf included; the attention weights the caller reads "
        "are the softmax of them: non-negative, each row summing to one.",
        "Return what the output was computed with: the weights after the softmax.",
        (
            {"report": lambda weights, masked, scores: masked},
            {"report": lambda weights, masked, scores: scores},  # the scores before the mask
        ),
    ),
    Mistake(
        "values_not_weighted",
        HEAD,
        "the head's output is not weights @ values",
        "Attention retrieves values: queries and keys decide where to look, the values "
        "are what is read. Weighting queries or keys, or skipping the weights, breaks that.",
        "The output is the attention-weighted average of the values: weights @ values.",
        (
            {"combine": lambda weights, queries, keys, values: weights @ queries},
            {"combine": lambda weights, queries, keys, values: weights @ keys},
            {"combine": lambda weights, queries, keys, values: values},
        ),
    ),
    Mistake(
        "projection_detached",
        HEAD,
        "a query, key or value path is cut from the graph (.detach() or torch.no_grad())",
        "The forward numbers are right, but no gradient flows through the cut: that "
        "projection (or the inputs behind it) never learns.",
        "Keep every step from the inputs to the output a differentiable torch operation.",
        (
            *(
                {"project": _project_cut(path, where)}
                for path in ("query", "key", "value")
                for where in ("output", "input")
            ),
            # The scores (or the weights) detached: query and key paths cut at once.
            {"scores": lambda queries, keys: (queries @ keys.transpose(-2, -1)).detach()},
        ),
    ),
    # concatenate_heads
    Mistake(
        "concatenated_on_wrong_axis",
        CONCATENATE,
        "the heads are concatenated along the wrong axis",
        "Each head contributes features, so the heads sit side by side on the feature axis; "
        "joined on the sequence or batch axis they become extra positions or examples.",
        "Concatenate along the last axis (the features): the result is (batch, seq, num_heads * head_dim).",
        (
            {"join": lambda outputs: torch.cat(outputs, dim=1)},
            {"join": lambda outputs: torch.cat(outputs, dim=0)},
        ),
    ),
    Mistake(
        "heads_interleaved",
        CONCATENATE,
        "the heads' features are interleaved instead of one block per head",
        "The output projection expects head 0's features first, then head 1's; stacking "
        "on a new last axis and flattening mixes feature i of every head together.",
        "Keep each head's features together, in head order: torch.cat on the last axis.",
        ({"join": lambda outputs: torch.stack(outputs, dim=-1).flatten(start_dim=-2)},),
    ),
    Mistake(
        "heads_in_reverse",
        CONCATENATE,
        "the heads are concatenated in reverse order",
        "The output projection's columns belong to heads in order; reversed, every head's "
        "features meet the weights meant for another head.",
        "Concatenate in the order the heads were given: head 0 first.",
        ({"order": lambda outputs: outputs[::-1]},),
    ),
    # MultiHeadSelfAttention
    Mistake(
        "shared_head_module",
        MODULE,
        "all heads are one module ([head] * num_heads)",
        "Multi-head attention is useful because each head learns its own projections; "
        "one shared module makes every head compute the same thing.",
        "Create a new AttentionHead for every head.",
        ({"construct": lambda: (True, True), "head_parameters": lambda parameters, num_heads: [num_heads - 1] * num_heads},),
    ),
    Mistake(
        "identically_initialised_heads",
        MODULE,
        "every head starts with the same weights",
        "Heads that start equal get equal gradients and stay equal: the layer has one head "
        "in effect, however many it builds.",
        "Let each head draw its own random initial weights: build every head with AttentionHead(...).",
        ({"construct": lambda: (False, True)},),
        # The cause, where the code shows it: a seed before each head, or a copy of one.
        fix_where=(
            (source_premises.seeds_in_the_model,
             "Seed once, outside the model: a torch.manual_seed before each head (or inside one) gives every head the same numbers."),
            (source_premises.copies_a_head, "A copy of one head (copy.deepcopy) starts with that head's weights: build each head afresh."),
            (source_premises.loads_one_heads_weights,
             "Loading one head's weights into another (load_state_dict, copy_) makes them equal: leave each head its own."),
        ),
    ),
    Mistake(
        "missing_output_projection",
        MODULE,
        "the output projection is never applied",
        "The concatenated heads are only side-by-side pieces; the output projection mixes "
        "them into one representation (and is the only place the heads' results interact).",
        "Pass the concatenated heads through output_projection.",
        ({"project_output": lambda concatenated, weight, bias: concatenated},),
    ),
    Mistake(
        "repeated_output_projection",
        MODULE,
        "the output projection is applied twice",
        "One linear map after the concatenation is the layer's design; applying it twice "
        "changes the function and how its weights learn.",
        "Apply output_projection exactly once, to the concatenated heads.",
        ({"project_output": lambda concatenated, weight, bias: F.linear(F.linear(concatenated, weight, bias), weight, bias)},),
    ),
    Mistake(
        "weights_stacked_on_wrong_axis",
        MODULE,
        "the heads' weights are stacked on the wrong axis",
        "The caller indexes weights[batch, head, query, key]; on another axis the heads "
        "mix with the batch or the positions.",
        "Stack the heads' weights on a new axis 1: (batch, heads, seq, seq).",
        (
            *({"stack_weights": lambda weights, dim=dim: torch.stack(weights, dim=dim)} for dim in (0, 2, 3)),
            # Joined on an existing axis instead of a new one: heads mixed into batch or positions.
            *({"stack_weights": lambda weights, dim=dim: torch.cat(weights, dim=dim)} for dim in (0, 1, 2)),
        ),
    ),
    Mistake(
        "one_head_weights_repeated",
        MODULE,
        "one head's attention weights are reported for every head",
        "Each head attends in its own way; reporting one head's matrix for all hides what "
        "the others do.",
        "Stack each head's own weights, in order.",
        (
            {"stack_weights": lambda weights: torch.stack([weights[0]] * len(weights), dim=1)},
            {"stack_weights": lambda weights: torch.stack([weights[-1]] * len(weights), dim=1)},
        ),
    ),
    Mistake(
        "module_ignores_given_mask",
        MODULE,
        "the module always uses the causal mask, whatever mask it is given",
        "The causal mask is only the default; a caller's mask (padding, a custom pattern) "
        "must reach every head.",
        "Use the causal mask only when allowed_mask is None, and pass the mask on to every head.",
        ({"head_mask": lambda given, default: default},),
    ),
    Mistake(
        "default_mask_wrong_size",
        MODULE,
        "the default causal mask is built with the wrong size",
        "The mask is (seq, seq): one row per query position. Sized by the model's width or "
        "the batch, it does not fit the scores.",
        "Size the default mask by the sequence length, inputs.shape[1].",
        (
            {"default_mask": lambda parts: parts.causal_mask(parts.model_dim)},
            {"default_mask": lambda parts: parts.causal_mask(parts.batch)},
            {"default_mask": lambda parts: parts.causal_mask(parts.head_dim)},
        ),
    ),
    Mistake(
        "no_default_mask",
        MODULE,
        "with allowed_mask=None the module applies no mask instead of the causal one",
        "None means the causal default; without it every position sees the future.",
        "When allowed_mask is None, use causal_mask(seq_len).",
        ({"default_mask": lambda parts: torch.ones(parts.seq, parts.seq, dtype=torch.bool)},),
    ),
)

BY_ID: dict[str, Mistake] = {mistake.id: mistake for mistake in MISTAKES}


def of_function(function: str) -> tuple[Mistake, ...]:
    """The mistakes that can be found in ``function``: its own, and those with forms there too."""
    return tuple(mistake for mistake in MISTAKES if function in mistake.functions)


def _check_library() -> None:
    """Catch slips at import: unique ids, known functions, steps that exist."""
    ids = [mistake.id for mistake in MISTAKES]
    if len(set(ids)) != len(ids):
        raise ValueError(f"mistake ids are not unique: {sorted(i for i in ids if ids.count(i) > 1)}")
    for mistake in MISTAKES:
        for function in mistake.functions:
            if function not in REFERENCE_STEPS:
                raise ValueError(f"{mistake.id}: unknown function {function}")
            unknown = mistake.steps_in(function) - set(REFERENCE_STEPS[function])
            if unknown or not mistake.forms_in(function):
                raise ValueError(f"{mistake.id}: no forms in {function}, or unknown steps {sorted(unknown)}")


_check_library()
