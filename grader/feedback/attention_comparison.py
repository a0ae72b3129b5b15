"""The student's attention matrix beside the reference's, as plain data and as aligned text.

A check about attention weights that fails records one comparison: the (seq, seq) matrix
where its first wrong entry lies (one batch element, one head), the student's numbers and
the reference's on that check's data, the mask the check used, and which entries differ.
It travels with the test's result as plain lists (``TestRecord.attention``), so the terminal
(text, here), the feedback pages and the platforms (pictures, grader/class_view/attention_picture.py)
show the same matrices without touching student code again.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the batch's coordinator and the report read these records without torch
    import torch

# Larger matrices say nothing at a glance (and cost room in every results file).
LARGEST_SHOWN = 12
DECIMALS = 4


def comparison(what: str, student: torch.Tensor, reference: torch.Tensor, allowed: torch.Tensor | None,
               tolerance: dict) -> dict | None:
    """One failing check's matrices (``student`` and ``reference`` shaped (..., seq, seq),
    ``allowed`` broadcastable to them or None), or None when there is nothing to draw."""
    if student.shape != reference.shape or student.dim() < 2 or student.shape[-1] != student.shape[-2]:
        return None
    if student.shape[-1] > LARGEST_SHOWN or student.numel() == 0:
        return None
    student64, reference64 = student.detach().double(), reference.detach().double()
    differs = ~((student64 - reference64).abs() <= tolerance["atol"] + tolerance["rtol"] * reference64.abs())
    where = tuple(int(i) for i in differs.nonzero()[0][:-2]) if differs.any() else (0,) * (student.dim() - 2)
    mask = None if allowed is None else allowed.expand(student.shape)[where]
    return {
        "what": what,
        "where": _where(where),
        "student": _numbers(student64[where]),
        "reference": _numbers(reference64[where]),
        "allowed": None if mask is None else mask.tolist(),
        "differs": differs[where].tolist(),
    }


def _where(index: tuple[int, ...]) -> str:
    names = ("batch", "head") if len(index) == 2 else ("batch",) * len(index)
    return ", ".join(f"{name} {value}" for name, value in zip(names, index))


def _numbers(matrix: torch.Tensor) -> list[list[float | None]]:
    """Rounded; NaN and infinities become None (JSON has no spelling for them)."""
    return [[round(value, DECIMALS) if math.isfinite(value) else None for value in row] for row in matrix.tolist()]


def blank(picture: dict, side: str, query: int, key: int) -> bool:
    """A masked entry with weight exactly zero: left blank, as the mask hides it."""
    allowed = picture.get("allowed")
    return allowed is not None and not allowed[query][key] and picture[side][query][key] == 0


def text_lines(picture: dict) -> list[str]:
    """The two matrices side by side, rounded and aligned: ``*`` marks an entry that differs,
    ``.`` a masked one left at zero."""
    def cell(side: str, query: int, key: int) -> str:
        value = picture[side][query][key]
        if blank(picture, side, query, key):
            text = "."
        else:
            text = "nan" if value is None else f"{value:.2f}"
        return text + ("*" if side == "student" and picture["differs"][query][key] else " ")

    seq = len(picture["student"])
    rows = {side: [[cell(side, q, k) for k in range(seq)] for q in range(seq)] for side in ("student", "reference")}
    width = max(len(text) for side in rows.values() for row in side for text in row)
    lines = {side: [" ".join(text.rjust(width) for text in row) for row in rows[side]] for side in rows}
    column = max(len(line) for line in lines["student"]) + 4
    out = [f"{picture['what']}, {picture['where']}:",
           "  rows are queries, columns are keys; * differs from the reference, . is masked",
           f"  {'yours':<{column}}reference"]
    out += [f"  {mine:<{column}}{theirs}" for mine, theirs in zip(lines["student"], lines["reference"])]
    return out
