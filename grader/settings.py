"""What an instructor sets (an option, an environment variable), checked before it is used.

Each check returns the value or raises ``ValueError`` with one sentence naming what is wrong;
``option_type`` turns a check into an argparse/pytest option type, so a bad value is a usage
error that names the option, never a traceback or a run that quietly grades everyone 0.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def positive_seconds(text: str) -> float:
    """Seconds above 0 and finite: a limit of 0, -1 or nan would fail every call of honest
    code, and inf would let one endless loop hold a grading shard for ever."""
    try:
        seconds = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{text!r} is not a number of seconds above 0 (a finite number, such as 5)")
    return seconds


def option_type(check: Callable[[str], object]) -> Callable[[str], object]:
    def parse(text: str) -> object:
        try:
            return check(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parse.__name__ = check.__name__  # argparse names the type in its message
    return parse


SECONDS = option_type(positive_seconds)
