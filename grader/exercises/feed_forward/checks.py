"""Checks on the tensors a feed-forward submission returned, with failure messages for students.

Every failure says what was expected and what came back, and shows a few numbers, never a whole
tensor. A hint is added only when the caller has checked its premise on the student's numbers
(``premises.py``); otherwise expected / got stands alone. The tensors checked here have already
passed ``type(t) is torch.Tensor`` (grader/submission.py).
"""

from __future__ import annotations

import torch

from grader.seam.failing import fail

# Outputs compared in float32 after the same operations in another order (a matmul by hand,
# the layers fused, GELU written out with erf) differ by about 1e-7; a real mistake (the
# activation's tanh approximation, a bias left out) by 1e-3 or more.
FLOAT32_TOLERANCE = {"atol": 1e-5, "rtol": 1e-4}
FLOAT64_TOLERANCE = {"atol": 1e-10, "rtol": 1e-8}


def tolerance(tensor: torch.Tensor) -> dict:
    return FLOAT64_TOLERANCE if tensor.dtype == torch.float64 else FLOAT32_TOLERANCE


def close(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """Same shape and values within the dtype's tolerance (NaN is never close)."""
    return got.shape == expected.shape and bool(torch.allclose(got.double(), expected.double(), **tolerance(expected)))


def spelled(value: float) -> str:
    return f"{value:.4g}"


def largest_difference(got: torch.Tensor, expected: torch.Tensor) -> str:
    """Where ``got`` is furthest from ``expected``, and both numbers there."""
    gaps = (got.double() - expected.double()).abs().nan_to_num(nan=float("inf"))
    index = tuple(int(i) for i in torch.unravel_index(gaps.argmax(), gaps.shape))
    return f"{spelled(float(got[index]))} at index {index}, where {spelled(float(expected[index]))} was expected"


def expect_shape(tensor: torch.Tensor, expected: tuple, what: str, hint: str = "") -> None:
    if tuple(tensor.shape) != tuple(expected):
        fail(f"{what} has the wrong shape.", str(tuple(expected)), str(tuple(tensor.shape)), hint)


def expect_dtype(tensor: torch.Tensor, dtype: torch.dtype, what: str, setting: str) -> None:
    if tensor.dtype != dtype:
        fail(f"{what} has the wrong dtype for {setting}.", f"{dtype}, the inputs' dtype", str(tensor.dtype),
             "keep the inputs' dtype: a tensor made inside forward takes it from the inputs (dtype=inputs.dtype).")


def expect_close(got: torch.Tensor, expected: torch.Tensor, what: str, expected_said: str, hint: str = "") -> None:
    """``got`` matches ``expected`` within the tolerance of its dtype."""
    expect_shape(got, tuple(expected.shape), what)
    if not close(got, expected):
        fail(f"{what} is wrong.", expected_said, largest_difference(got, expected), hint)
