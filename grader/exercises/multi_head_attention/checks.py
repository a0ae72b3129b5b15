"""Checks on the tensors a submission returned, with failure messages for students.

Every failure says what was expected and what came back, and shows at most a few numbers,
never a whole tensor. A hint is added only when the caller has checked its premise on the
student's numbers (grader/exercises/multi_head_attention/premises.py); otherwise expected / got stands alone. The tensors checked here have
already passed ``type(t) is torch.Tensor`` (see ``grader.submission``).
"""

from __future__ import annotations

import math

import pytest
import torch

from grader.feedback import attention_comparison
from grader.exercises.multi_head_attention import premises
from grader.seam.failing import AttentionMismatch, fail  # noqa: F401  (the checks fail through checks.fail)

# Outputs are compared in float32 after the same operations in a different order
# (einsum or matmul, -inf or -1e9 fill, softmax in float64, ...). Such variants differ
# by about 1e-7; a real mistake (a missing scale, one wrong weight) by 1e-2 or more.
FLOAT32_TOLERANCE = {"atol": 1e-5, "rtol": 1e-4}
ROW_SUM_TOLERANCE = 1e-4


def weights_picture(what: str, weights: torch.Tensor, reference: torch.Tensor | None,
                    allowed: torch.Tensor | None = None) -> dict | None:
    """The comparison a failing weights check shows (None without a reference to show)."""
    if reference is None:
        return None
    try:
        return attention_comparison.comparison(what, weights, reference, allowed, FLOAT32_TOLERANCE)
    except Exception:  # noqa: BLE001 - a picture that cannot be made must not replace the check's message
        return None


def shape_of(tensor: torch.Tensor) -> str:
    return str(tuple(tensor.shape))


def expect_shape(tensor: torch.Tensor, expected: tuple, what: str, hint: str = "") -> None:
    if tuple(tensor.shape) != tuple(expected):
        fail(f"{what} has the wrong shape.", str(tuple(expected)), shape_of(tensor), hint)


def expect_module_weights_shape(weights: torch.Tensor, config, what: str) -> None:
    """(batch, heads, seq, seq), with a hint only when the shape is a known misarrangement."""
    expected = (config.batch, config.num_heads, config.seq, config.seq)
    if tuple(weights.shape) != expected:
        fail(
            f"{what} has the wrong shape.",
            f"{expected}: (batch, heads, seq, seq), head h's matrix at index h of axis 1",
            shape_of(weights),
            premises.weights_shape_hint(weights.shape, config.batch, config.seq, config.num_heads),
        )


def expect_module_output_shape(output: torch.Tensor, config, what: str) -> None:
    """(batch, seq, model_dim), with a hint only when the shape is a known misarrangement."""
    expected = (config.batch, config.seq, config.model_dim)
    if tuple(output.shape) != expected:
        fail(
            f"{what} has the wrong shape.",
            f"{expected}: the input's shape (batch, seq, model_dim)",
            shape_of(output),
            premises.module_output_shape_hint(output.shape, config.batch, config.seq, config.model_dim, config.num_heads),
        )


def expect_floating(tensor: torch.Tensor, what: str) -> None:
    if not tensor.is_floating_point():
        fail(f"{what} is not a floating-point tensor.", "float32", str(tensor.dtype))


def expect_dtype(tensor: torch.Tensor, inputs_dtype: torch.dtype, what: str, where: str = "") -> None:
    """Outputs keep the inputs' dtype: a head that computes in float64 "for stability" hands
    the next layer (and the optimiser) a dtype it did not ask for. ``what``: the tensor
    ("the head's output"); ``where``: the sizes it was called with."""
    if tensor.dtype != inputs_dtype:
        got, given = _dtype_name(tensor.dtype), _dtype_name(inputs_dtype)
        fail(
            f"{what} came back {got} for {given} inputs{f' ({where})' if where else ''}.",
            f"{given}, the inputs' dtype (every tensor returned keeps the inputs' dtype and device)",
            got,
            "compute in the inputs' dtype; where a step needs another one, cast its result back "
            "with .to(inputs.dtype).",
        )


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def not_numbers(tensor: torch.Tensor) -> str:
    """The entries that are not numbers, each kind said as what it is ("12 entries are NaN;
    2 entries are infinite"); "" when every entry is a number."""
    parts = []
    for count, kind in ((int(tensor.isnan().sum()), "NaN"), (int(tensor.isinf().sum()), "infinite")):
        if count:
            parts.append(f"{count} {'entry is' if count == 1 else 'entries are'} {kind}")
    return "; ".join(parts)


def not_numbers_among(where: torch.Tensor, tensor: torch.Tensor) -> str:
    """What the entries of ``tensor`` at ``where`` (none of them numbers) are: "NaN at 12",
    "infinite values at 2", or both."""
    return " and ".join(f"{kind} at {int(found.sum())}" for kind, found in (
        ("NaN", where & tensor.isnan()), ("infinite values", where & tensor.isinf())) if found.any())


def expect_finite(tensor: torch.Tensor, what: str, hint: str) -> None:
    """Every entry a number; a failure says how many are NaN and how many infinite, each as what it is."""
    bad = ~torch.isfinite(tensor)
    if bad.any():
        index = tuple(int(i) for i in bad.nonzero()[0])
        fail(
            f"{what}: {not_numbers_among(bad, tensor)} of {tensor.numel()} entries.",
            "only finite numbers",
            f"{spelled(tensor[index].item())} at index {index}",
            hint,
        )


def expect_non_negative(weights: torch.Tensor, what: str, hint: str, reference: torch.Tensor | None = None) -> None:
    """``reference``: the reference's weights on the same data, shown beside these on failure."""
    negative = weights < 0
    if negative.any():
        numbers = negative & weights.isfinite()  # -inf is no weight, negative or not: said as what it is
        index = tuple(int(i) for i in (numbers if numbers.any() else negative).nonzero()[0])
        problem = "has negative weights" if numbers.any() else f"holds -inf at {int(negative.sum())} entries"
        fail(f"{what} {problem}.", "every weight >= 0", f"{spelled(weights[index].item())} at {index}", hint,
             weights_picture(what, weights, reference))


def _rows_off_one(weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    sums = weights.double().sum(dim=-1)
    return sums, ~((sums - 1).abs() <= ROW_SUM_TOLERANCE)  # NaN counts as wrong


def rows_sum_to_one(weights: torch.Tensor) -> bool:
    """Whether every row (the last axis) sums to one: the tests ask before they work out a hint."""
    return not bool(_rows_off_one(weights)[1].any())


def expect_rows_sum_to_one(weights: torch.Tensor, what: str, hint: str, reference: torch.Tensor | None = None,
                           allowed: torch.Tensor | None = None) -> None:
    """Each row (one query position, the last axis over keys) must sum to one."""
    sums, wrong = _rows_off_one(weights)
    if wrong.any():
        index = tuple(int(i) for i in wrong.nonzero()[0])
        row = ", ".join(f"{value:.3f}" if math.isfinite(value) else spelled(value) for value in weights[index].tolist()[:8])
        total = sums[index].item()
        fail(
            f"{what}: the row at index {index} is not a probability distribution.",
            "every row (over key positions, the last axis) sums to 1",
            f"sum {f'{total:.4f}' if math.isfinite(total) else spelled(total)} for the row [{row}{', ...' if weights.shape[-1] > 8 else ''}]",
            hint,
            weights_picture(what, weights, reference, allowed),
        )


def expect_zero_where_disallowed(
    weights: torch.Tensor, allowed: torch.Tensor, what: str, hint: str, reference: torch.Tensor | None = None
) -> None:
    """``weights[..., q, k]`` must be exactly 0 wherever ``allowed[..., q, k]`` is False.

    A number other than 0 there is weight the mask hides; NaN and infinities are said as what
    they are, never as weight (a softmax over nothing but -inf gives 0/0: NaN)."""
    hidden = ~allowed.expand_as(weights)
    if not (hidden & (weights != 0)).any():
        return
    weighed = hidden & (weights != 0) & weights.isfinite()
    kinds = [(weighed, "weight")] + [(hidden & found, name) for found, name in ((weights.isnan(), "NaN"), (weights.isinf(), "infinite"))]
    found = [(where, name) for where, name in kinds if where.any()]
    counts = ", ".join(f"{name} at {int(where.sum())}" + (" hidden positions" if n == 0 else "") for n, (where, name) in enumerate(found))
    index = tuple(int(i) for i in found[0][0].nonzero()[0])
    query, key = index[-2], index[-1]
    value = weights[index].item()
    problem = (f"query position {query} gives weight to key position {key}" if weighed.any()
               else f"query position {query} has {spelled(value)} at key position {key}")
    fail(
        f"{what}: {problem}, which the mask hides.",
        f"weight exactly 0 at [{', '.join(map(str, index))}]",
        f"{spelled(value)} ({counts})",
        hint,
        weights_picture(what, weights, reference, allowed),
    )


def spelled(value: float, digits: int = 4) -> str:
    """NaN and the infinities as a reader spells them; a number with ``digits`` significant digits."""
    return "NaN" if math.isnan(value) else ("-inf" if value < 0 else "inf") if math.isinf(value) else f"{value:.{digits}g}"


def largest_difference(actual: torch.Tensor, error: torch.Tensor, wrong: torch.Tensor) -> str:
    """The largest difference among the entries that are numbers, and how many are not: a NaN
    made the largest difference read "inf", which says nothing of the numbers nor of the NaN.
    When every wrong entry is NaN or infinite, the numbers agree and no difference is named."""
    finite = actual.isfinite()
    if (wrong & finite).any():
        parts = [f"largest difference {error[finite].max().item():.3g}"]
    else:
        parts = [f"the {int(finite.sum())} entries that are numbers agree"] if finite.any() else []
    return "; ".join([*parts, *filter(None, [not_numbers(actual)])])


def expect_close(
    actual: torch.Tensor, expected: torch.Tensor, what: str, hint: str, tolerance=None, compared_with: str = "the reference",
    attention: bool = False, allowed: torch.Tensor | None = None,
) -> None:
    """``attention``: the tensors are attention weights (``allowed``: the mask they were computed
    under), so a failure shows the two matrices side by side."""
    tolerance = tolerance or FLOAT32_TOLERANCE
    expect_shape(actual, tuple(expected.shape), what)
    actual64, expected64 = actual.double(), expected.double()
    allowed_error = tolerance["atol"] + tolerance["rtol"] * expected64.abs()
    error = (actual64 - expected64).abs()
    wrong = ~(error <= allowed_error)  # NaN counts as wrong
    if wrong.any():
        index = tuple(int(i) for i in wrong.nonzero()[0])
        fail(
            f"{what}: {int(wrong.sum())} of {actual.numel()} entries do not match {compared_with}.",
            f"{expected64[index].item():.6g} at index {index} "
            f"(within {tolerance['atol']:g} + {tolerance['rtol']:g}*|expected|)",
            f"{spelled(actual64[index].item(), 6)} ({largest_difference(actual64, error, wrong)})",
            hint,
            weights_picture(what, actual, expected, allowed) if attention else None,
        )


def expect_unchanged(after: torch.Tensor, before: torch.Tensor, what: str, hint: str, tolerance: dict) -> None:
    """The student's own output, asked again after a change that must not reach it: the same
    numbers. An entry NaN (or infinite) both times neither changed nor stayed the same: it is
    said as what it is, and the check fails, as nothing about it can be told; an entry that is
    a number once and not the other time did change."""
    expect_shape(after, tuple(before.shape), what)
    after64, before64 = after.double(), before.double()
    numbers = after64.isfinite() & before64.isfinite()
    error = torch.where(numbers, (after64 - before64).abs(), torch.zeros_like(after64))
    changed = numbers & ~(error <= tolerance["atol"] + tolerance["rtol"] * before64.abs())
    changed |= after64.isfinite() != before64.isfinite()
    neither = ~after64.isfinite() & ~before64.isfinite()
    total = after.numel()
    if changed.any():
        index = tuple(int(i) for i in changed.nonzero()[0])
        moved = numbers & changed
        details = [f"largest change {error[moved].max().item():.3g}"] if moved.any() else []
        became = int((changed & ~numbers).sum())
        details += [f"{became} {'entry is' if became == 1 else 'entries are'} a number one time and not the other"] if became else []
        details += [f"{int(neither.sum())} more are not numbers before nor after"] if neither.any() else []
        fail(
            f"{what}: {int(changed.sum())} of {total} entries changed with the inputs after them.",
            f"{spelled(before64[index].item())} at index {index}, as before the change "
            f"(within {tolerance['atol']:g} + {tolerance['rtol']:g}*|before|)",
            f"{spelled(after64[index].item())} ({'; '.join(details)})",
            hint,
        )
    if neither.any():
        index = tuple(int(i) for i in neither.nonzero()[0])
        fail(
            f"{what}: {not_numbers_among(neither, before64)} of {total} entries, before the change and after it, "
            "so whether they depend on the inputs after them cannot be told.",
            "finite numbers that stay as they were",
            f"{spelled(before64[index].item())} at index {index} before, {spelled(after64[index].item())} after "
            f"({not_numbers(after64)} after the change)",
            hint,
        )


def expect_some_weight(weights: torch.Tensor, problem: str, expected: str, hint: str) -> None:
    """Some positive weight among ``weights`` (the entries where the mask allows attention that
    a causal mask would not). Zeros are said as no weight; NaN and infinities as what they are."""
    if (weights > 0).any():
        return
    if weights.isfinite().all():
        fail(f"{problem}.", expected, "zero weight on every one of them", hint)
    held = [f"{kind} at {int(where.sum())}" for kind, where in (
        ("NaN", weights.isnan()), ("infinite values", weights.isinf()), ("0", weights == 0), ("negative numbers", weights < 0),
    ) if where.any()]
    fail(f"{problem}: not one of its {weights.numel()} entries there is a positive number.", expected,
         f"{', '.join(held)} of them", hint)
