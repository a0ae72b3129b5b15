"""Checks on the tensors a submission returned, with failure messages for students.

Every failure says what was expected and what came back, and shows at most a few numbers,
never a whole tensor. A hint is added only when the caller has checked its premise on the
student's numbers (grader/premises.py); otherwise expected / got stands alone. The tensors checked here have
already passed ``type(t) is torch.Tensor`` (see ``grader.submission``).
"""

from __future__ import annotations

import pytest
import torch

from grader import premises

# Outputs are compared in float32 after the same operations in a different order
# (einsum or matmul, -inf or -1e9 fill, softmax in float64, ...). Such variants differ
# by about 1e-7; a real mistake (a missing scale, one wrong weight) by 1e-2 or more.
FLOAT32_TOLERANCE = {"atol": 1e-5, "rtol": 1e-4}
ROW_SUM_TOLERANCE = 1e-4


def fail(problem: str, expected: str, got: str, hint: str = "") -> None:
    lines = [problem, f"  expected: {expected}", f"  got:      {got}"]
    if hint:
        lines.append(f"  hint:     {hint}")
    pytest.fail("\n".join(lines), pytrace=False)


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


def expect_non_negative(weights: torch.Tensor, what: str, hint: str) -> None:
    negative = weights < 0
    if negative.any():
        index = tuple(int(i) for i in negative.nonzero()[0])
        fail(f"{what} has negative weights.", "every weight >= 0", f"{weights[index].item():.4g} at {index}", hint)


def _rows_off_one(weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    sums = weights.double().sum(dim=-1)
    return sums, ~((sums - 1).abs() <= ROW_SUM_TOLERANCE)  # NaN counts as wrong


def rows_sum_to_one(weights: torch.Tensor) -> bool:
    """Whether every row (the last axis) sums to one: the tests ask before they work out a hint."""
    return not bool(_rows_off_one(weights)[1].any())


def expect_rows_sum_to_one(weights: torch.Tensor, what: str, hint: str) -> None:
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
        )


def expect_zero_where_disallowed(weights: torch.Tensor, allowed: torch.Tensor, what: str, hint: str) -> None:
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
        )


def expect_close(
    actual: torch.Tensor, expected: torch.Tensor, what: str, hint: str, tolerance=None, compared_with: str = "the reference"
) -> None:
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
            f"{actual64[index].item():.6g} (largest difference {error.nan_to_num(float('inf')).max().item():.3g})",
            hint,
        )
