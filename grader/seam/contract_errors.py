"""What a call on the student's objects raises when the object breaks the exercise's contract,
for every exercise: the operations raise them, grader/feedback/errors.py says them."""

from __future__ import annotations


class ContractViolation(Exception):
    """The student's code returned something of the wrong kind (not a wrong number)."""


class NotDefined(ContractViolation):
    """The student's module does not define ``name``, a name of the exercise."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class BackwardError(RuntimeError):
    """An error autograd raised in the backward pass, which has no line of the student's in its
    traceback: ``forward_line`` is the line of the student's forward that made the tensor the
    backward pass failed on (autograd's anomaly mode records it), 0 if unknown."""

    def __init__(self, message: str, forward_line: int) -> None:
        super().__init__(message)
        self.forward_line = forward_line
