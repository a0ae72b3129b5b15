"""The cells every grade file shares: a number as a gradebook takes it, a score scaled to the LMS's
points, and text a spreadsheet shows as text (Canvas's gradebook import, Moodle's worksheet, the
plain CSV)."""

from __future__ import annotations

from grader import untrusted


def neutralise(cell: str) -> str:
    """A cell a spreadsheet shows as text (grader/untrusted.py: OWASP's rule, control characters escaped)."""
    return str(untrusted.csv_cell(str(cell)))


def scaled(document: dict, points: float) -> str:
    return number(document["score"] / document["max_score"] * points if document.get("max_score") else 0)


def number(value: float) -> str:
    """87.5 -> "87.5", 100.0 -> "100", 2/3 -> "0.67": what a gradebook cell needs."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
