"""Checks on the tensors a submission returned, with failure messages for students.

Every failure says what was expected and what came back, and shows at most a few numbers,
never a whole tensor. A hint is added only when the caller has checked its premise on the
student's numbers (grader/feedback/premises.py); otherwise expected / got stands alone. The tensors checked here have
already passed ``type(t) is torch.Tensor`` (see ``grader.submission``).
"""

from __future__ import annotations

import pytest
import torch

from grader.feedback import attention_comparison, premises

# Outputs are compared in float32 after the same operations in a different order
# (einsum or matmul, -inf or -1e9 fill, softmax in float64, ...). Such variants differ
# by about 1e-7; a real mistake (a missing scale, one wrong weight) by 1e-2 or more.
FLOAT32_TOLERANCE = {"atol": 1e-5, "rtol": 1e-4}
ROW_SUM_TOLERANCE = 1e-4


class AttentionMismatch(pytest.fail.Exception):
    """A failed check about attention weights, carrying the student's matrix beside the
    reference's (grader/feedback/attention_comparison.py) to the test's result."""

    def __init__(self, message: str, picture: dict) -> None:
        super().__init__(message, pytrace=False)
        self.picture = picture


def fail(problem: str, expected: str, got: str, hint: str = "", picture: dict | None = None) -> None:
    lines = [problem, f"  expected: {expected}", f"  got:      {got}"]
    if hint:
        lines.append(f"  hint:     {hint}")
    if picture is not None:
        raise AttentionMismatch("\n".join(lines), picture)
    pytest.fail("\n".join(lines), pytrace=False)


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


def expect_finite(tensor: torch.Tensor, what: str, hint: str) -> None:
    bad = ~torch.isfinite(tensor)
    if bad.any():
        index = tuple(int(i) for i in bad.nonzero()[0])
        fail(
            f"{what} contains NaN or infinite values ({int(bad.sum())} of {tensor.numel()}).",
            "only finite numbers",
            f"{tensor[index].item()} at index {index}",
            hint,
        )


def expect_non_negative(weights: torch.Tensor, what: str, hint: str, reference: torch.Tensor | None = None) -> None:
    """``reference``: the reference's weights on the same data, shown beside these on failure."""
    negative = weights < 0
    if negative.any():
        index = tuple(int(i) for i in negative.nonzero()[0])
        fail(f"{what} has negative weights.", "every weight >= 0", f"{weights[index].item():.4g} at {index}", hint,
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
        row = ", ".join(f"{value:.3f}" for value in weights[index].tolist()[:8])
        fail(
            f"{what}: the row at index {index} is not a probability distribution.",
            "every row (over key positions, the last axis) sums to 1",
            f"sum {sums[index].item():.4f} for the row [{row}{', ...' if weights.shape[-1] > 8 else ''}]",
            hint,
            weights_picture(what, weights, reference, allowed),
        )


def expect_zero_where_disallowed(
    weights: torch.Tensor, allowed: torch.Tensor, what: str, hint: str, reference: torch.Tensor | None = None
) -> None:
    """``weights[..., q, k]`` must be exactly 0 wherever ``allowed[..., q, k]`` is False."""
    leaked = (~allowed.expand_as(weights)) & (weights != 0)
    if leaked.any():
        index = tuple(int(i) for i in leaked.nonzero()[0])
        query, key = index[-2], index[-1]
        fail(
            f"{what}: query position {query} gives weight to key position {key}, which the mask hides.",
            f"weight exactly 0 at [{', '.join(map(str, index))}]",
            f"{weights[index].item():.4g} ({int(leaked.sum())} hidden positions have weight)",
            hint,
            weights_picture(what, weights, reference, allowed),
        )


def largest_difference(actual: torch.Tensor, error: torch.Tensor) -> str:
    """The largest difference among the entries that are numbers, and how many are not: a NaN
    made the largest difference read "inf", which says nothing of the numbers nor of the NaN."""
    finite = actual.isfinite()
    parts = [f"largest difference {error[finite].max().item():.3g}"] if finite.any() else []
    for count, kind in ((int(actual.isnan().sum()), "NaN"), (int(actual.isinf().sum()), "infinite")):
        if count:
            parts.append(f"{count} {'entry is' if count == 1 else 'entries are'} {kind}")
    return "; ".join(parts)


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
            f"{actual64[index].item():.6g} ({largest_difference(actual64, error)})",
            hint,
            weights_picture(what, actual, expected, allowed) if attention else None,
        )
