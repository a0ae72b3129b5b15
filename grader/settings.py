"""What an instructor sets (an option, an environment variable), checked before it is used.

Each check returns the value or raises ``ValueError`` with one sentence naming what is wrong;
``option_type`` turns a check into an argparse/pytest option type, so a bad value is a usage
error that names the option, never a traceback or a run that quietly grades everyone 0.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from grader import untrusted


def _finite_above_zero(text: str, what: str, example: str) -> float:
    try:
        number = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{text!r} is not a number of {what}") from None
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"{text!r} is not a number of {what} above 0 (a finite number, such as {example})")
    return number


def positive_seconds(text: str) -> float:
    """Seconds above 0 and finite: a limit of 0, -1 or nan would fail every call of honest
    code, and inf would let one endless loop hold a grading shard for ever."""
    return _finite_above_zero(text, "seconds", "5")


def points_possible(text: str) -> float:
    """An assignment's points: nan, inf, -10 or 0 would be written into the LMS's file."""
    return _finite_above_zero(text, "points", "100")


def column_title(text: str) -> str:
    """A title written as a spreadsheet's column header, which cannot be neutralised with a
    leading ' as a cell can (the LMS matches the column by its exact title)."""
    if text.lstrip() != text or text.startswith(untrusted.CSV_FORMULA_STARTS):
        raise ValueError(f"{text!r} starts with {text[:1]!r}: a spreadsheet would read it as a formula; use the title as the LMS shows it")
    if not text.strip():
        raise ValueError("the title is empty")
    return text


def positive_count(text: str) -> int:
    """A number of things to start (shards): 0 or fewer would grade nobody."""
    try:
        count = int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number") from None
    if count < 1:
        raise ValueError(f"{count} is not a number above 0")
    return count


def option_type(check: Callable[[str], object]) -> Callable[[str], object]:
    def parse(text: str) -> object:
        try:
            return check(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parse.__name__ = check.__name__  # argparse names the type in its message
    return parse


SECONDS = option_type(positive_seconds)
POINTS = option_type(points_possible)
COUNT = option_type(positive_count)
COLUMN_TITLE = option_type(column_title)
