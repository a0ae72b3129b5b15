"""The evidence a call into the submission leaves on the grader's side, as the feedback reads it.

``StudentCodeError`` is the failure of a check whose call did not return (what the code did, as
an ``ErrorDescription``: errors.py); ``ChangedAnswer`` one question the code answered twice, and
how the two answers differ (``Difference``). grader/submission.py raises and records them;
root_causes.py and premises.py read them. They live here, below both, so that the feedback never
imports the handle that uses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from grader.feedback.errors import ErrorDescription


class StudentCodeError(pytest.fail.Exception):
    """Raised on the grader's side when a call into the submission did not return.

    It is pytest's own test failure (``pytest.fail``) without a traceback: the message
    says what the student's code did, and pytest need not parse the grader's source to
    build a traceback nobody reads.
    """

    def __init__(self, operation: str, error: ErrorDescription) -> None:
        super().__init__(f"{operation}: {error.for_student()}", pytrace=False)
        self.operation = operation
        self.error = error

    @property
    def type_name(self) -> str:
        return self.error.type_name


@dataclass(frozen=True)
class Difference:
    """Where two answers to one question differ: ``field`` (``output``, ``weights``,
    ``parameter_gradients.heads.0.query.weight``, ... or ``""`` for the answer itself) and how:
    ``"values"`` at ``differing`` of ``total`` entries (``largest``: the largest difference
    between two numbers, None when only NaN or an infinity differs; ``first`` and ``then``: a
    value that is not a tensor, in the grader's words), ``"shape"`` (shape, dtype, names or
    length), or ``"outcome"`` (``first`` and ``then``: returned, or raised and what)."""

    field: str
    how: str
    differing: int = 0
    total: int = 0
    largest: float | None = None
    first: str = ""
    then: str = ""


@dataclass(frozen=True)
class ChangedAnswer:
    """The evidence that the code's answers change from call to call: one question, asked by
    ``first_check`` and again by ``again_check``, and how the two answers differ."""

    operation: str
    sizes: tuple[tuple[str, Any], ...]  # the call's numbers, and its tensors' shapes
    first_check: str
    again_check: str
    differences: tuple[Difference, ...]
