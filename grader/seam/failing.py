"""How a check of any exercise fails: expected / got, a hint where its premise was checked, and,
for a check about attention weights, the student's matrix beside the reference's, carried to
the test's result (grader/session/scoreboard.py reads it)."""

from __future__ import annotations

import pytest


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
