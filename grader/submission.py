"""The grader's handle on one submission: plain data in, checked plain data out.

Tests talk to a ``Submission`` and never to the student's module. A backend runs the
calls of the exercise's operations (its declaration's ``operations`` module) wherever the student's code lives and hands back either a
result or an ``ErrorDescription``; this module then makes sure every tensor that comes
back is a genuine ``torch.Tensor`` before any test looks at it.
"""

from __future__ import annotations

import contextlib
import io
import math
import sys
from pathlib import Path
from typing import Any, Protocol

import torch

from grader.reading import loading
from grader.seam import registry
from grader.feedback.errors import ErrorDescription, describe_exception
from grader.feedback.evidence import ChangedAnswer, Difference, StudentCodeError
from grader.timeouts import CallTimedOut

# An endless loop would otherwise cost the full time limit in every test that calls it.
TIMEOUTS_BEFORE_GIVING_UP = 2
# The outcomes of a call that are the student's code's own answer, so the same request gets
# it again without asking: a result, or an exception the code raised. A time-out, a crash or
# a broken reply says something about that one run, and the next asking runs the code again.
REUSABLE_ERRORS = ("raised", "not_written")
# A remembered answer is given again only while nothing it depends on can have changed. Every
# forward pass reports whether it changed what the module or the student's file keeps (an
# attribute, a buffer, a global, a class's attribute: grader/exercises/multi_head_attention/operations.py ``_state``); from the
# first that did, no answer is reused and every question asked again is compared bit for bit
# (NaN with NaN) with its first answer, so a module whose answers change from call to call (a
# counter, the last output remembered, keys smoothed with the last call's) is graded exactly as
# if every call were asked afresh, and the first answer found to differ is told. State the
# grader cannot see (another module's, a generator's) is looked for too: the first reuses reach
# the code afresh and are compared the same way (the shapes group's forward passes, asked again
# by the group that follows); each costs one call of the few hundred a submission makes.
# With --ask-every-time the same questions are compared, so the evidence is the same.
REUSES_ASKED_AGAIN = 2


class Backend(Protocol):
    """Runs the exercise's operations next to the student's code."""

    def open(self) -> ErrorDescription | None:
        """Import the submission; the error if it does not import. A notebook's cells
        (``cells``, given to the backend) run one by one: a cell that raises is recorded in
        ``cell_failures`` (its first line in the file, what it raised) and the next cell runs."""

    def call(self, operation: str, **arguments: Any) -> tuple[Any, ErrorDescription | None]:
        """Run one operation; its result, or the error that stopped it."""

    def abort(self) -> None:
        """Give up on the call in progress (the test ran out of time)."""

    def close(self) -> None: ...

    def captured_output(self) -> str:
        """What the student's code printed, when the backend captures it."""


class InProcessBackend:
    """Student code in the grader's own process: for a student at their desk.

    ``pdb`` and ``print`` work; nothing is isolated. Batch grading uses the worker.
    """

    def __init__(self, source: Path, cells: list[tuple[int, int]] | None = None) -> None:
        self.source = source
        self.cells = cells
        self.module = None
        self.cell_failures: list[tuple[int, ErrorDescription]] = []

    def open(self) -> ErrorDescription | None:
        # Each submission starts from the same state of torch's and Python's generators,
        # whatever the submissions graded before it in this process drew: code that draws
        # without a seed (dropout, torch.randn) gets the numbers it gets graded alone, as each
        # submission of a batch does in its own fork of the worker.
        registry.operations().reset_generators()
        try:
            if self.cells is not None:
                # input() in a cell gets an end of file, as in the sandbox (its stdin is
                # /dev/null): the grading has no one to type, and pytest's own stdin says so
                # in words about pytest.
                with _empty_stdin():
                    self.module, failures = loading.import_cells(self.source, self.cells)
                self.cell_failures = [(line, describe_exception(error, self.source)) for line, error in failures]
            else:
                self.module = loading.import_source(self.source)
        except (Exception, SystemExit) as error:
            described = describe_exception(error, self.source)
            return ErrorDescription("import", described.type_name, described.message, described.location)
        return None

    def call(self, operation: str, **arguments: Any) -> tuple[Any, ErrorDescription | None]:
        function = getattr(registry.operations(), operation)
        try:
            return function(self.module, **arguments), None
        # SystemExit too: sys.exit() inside a forward pass is the student's bug, not ours.
        # Test outcomes (pytest's timeout, Ctrl-C) derive from BaseException and pass.
        except (Exception, SystemExit) as error:
            return None, describe_exception(error, self.source)

    def abort(self) -> None:
        pass  # the alarm already interrupted the student's code in this very process

    def close(self) -> None:
        self.module = None

    def captured_output(self) -> str:
        return ""  # printed straight to the student's terminal (pytest -s) or pytest's capture


@contextlib.contextmanager
def _empty_stdin():
    saved, sys.stdin = sys.stdin, io.StringIO()
    try:
        yield
    finally:
        sys.stdin = saved


class Submission:
    """One student's work, seen from the grader: every call returns checked plain data.

    The engine's part: asking (each question once, answers compared), time-outs, the state the
    code keeps. Each exercise's handle (its declaration's ``handle``) subclasses it with one method
    per call its checks make, each checking the kinds of what comes back (``checked_tensor``)."""

    def __init__(self, name: str, source: Path, backend: Backend, reuse_answers: bool = True) -> None:
        self.name = name
        self.source = source
        self.backend = backend
        self.import_error: ErrorDescription | None = None
        self.timeouts: dict[str, int] = {}  # operation -> how often it ran out of time
        self.operations_called: set[str] = set()  # which functions a check used (the diagnosis reads it)
        # Answers by request: several checks ask the same question (one configuration's forward
        # pass, the same mask); the student's code answers it once, and each check gets fresh
        # tensors of that answer, so no check sees another's.
        # Each with the check that asked first (the evidence, should a later asking differ). Asked
        # every time (``reuse_answers`` False), the first answers are remembered too, only to be
        # compared: the same questions are then asked again and compared as when reusing, and the
        # grade, the evidence included, is the same whether answers are reused or not.
        self.reuse = reuse_answers
        self.answers: dict[tuple, tuple[Any, ErrorDescription | None, str]] | None = {}
        self._afresh = 0
        self.reuses_asked_again = 0
        self.changed_answer: ChangedAnswer | None = None  # the first answer found to change, if any
        self.state_changed_by: set[str] = set()  # the operations whose calls changed what the code keeps
        # What the code keeps could not be read within the state check's budget (grader/reading/state_kept.py):
        # every question is asked afresh, as for a module that keeps state, without saying it does.
        self.state_unread = False
        self.current_check = ""  # the check making calls now (set by grader/session/folding.py)
        # The grader's biases the student's modules had no place for (bias=False where the
        # contract has a bias: grader/exercises/multi_head_attention/operations.py ``_load``), as the runs reported them.
        self.not_held: set[str] = set()

    def open(self) -> Submission:
        self.import_error = self.backend.open()
        return self

    def close(self) -> None:
        self.backend.close()
        if self.answers is not None:
            self.answers.clear()

    @property
    def keeps_state(self) -> bool:
        """A call changed what the module or the file keeps: from then on nothing is reused."""
        return bool(self.state_changed_by)

    @contextlib.contextmanager
    def afresh(self):
        """Inside, every call runs the student's code again even for a request answered before:
        for a check that asks the same question twice to see whether the answer changes."""
        self._afresh += 1
        try:
            yield self
        finally:
            self._afresh -= 1

    def _call(self, operation: str, **arguments: Any) -> Any:
        self.operations_called.add(operation)
        key = None if self.answers is None or self._afresh else _request_key(operation, arguments)
        remembered = self.answers.get(key) if key is not None else None
        compared = not (self.keeps_state or self.state_unread) and self.reuses_asked_again >= REUSES_ASKED_AGAIN  # else asked and compared
        if remembered is not None and self.reuse and compared:
            result, error, _ = remembered
            if error is not None:
                raise StudentCodeError(operation, error)
            return _copied(result)
        if self.timeouts.get(operation, 0) >= TIMEOUTS_BEFORE_GIVING_UP:
            raise StudentCodeError(operation, ErrorDescription(
                "timeout", "Timeout",
                f"not run: this call into your code already timed out {TIMEOUTS_BEFORE_GIVING_UP} times "
                "(see the first failures); fix that loop first.",
            ))
        try:
            result, error = self.backend.call(operation, **arguments)
        except CallTimedOut:
            self.timeouts[operation] = self.timeouts.get(operation, 0) + 1
            self.backend.abort()  # a worker still busy with this call must not answer the next one
            raise
        if type(result) is dict:
            if result.pop("state_changed", False) is True:
                self.state_changed_by.add(operation)
            if result.pop("state_unread", None):  # only the fact: the grader says it in its own words
                self.state_unread = True
        if remembered is not None and compared:
            pass  # asked every time (--ask-every-time), where a reuse would have answered: nothing to compare
        elif remembered is not None and (error is None or error.kind in REUSABLE_ERRORS):
            self._compare(operation, arguments, remembered, result, error)
        elif key is not None and (error is None or error.kind in REUSABLE_ERRORS):
            self.answers[key] = (_copied(result), error, self.current_check)
        if error is not None:
            if error.kind == "timeout" and error.type_name != "BudgetExhausted":  # the worker's own per-call limit
                self.timeouts[operation] = self.timeouts.get(operation, 0) + 1
            raise StudentCodeError(operation, error)
        return result

    def _compare(self, operation: str, arguments: dict, remembered: tuple, result: Any, error: ErrorDescription | None) -> None:
        """A remembered question asked again: an answer that differs ends the remembering."""
        self.reuses_asked_again += 1
        first_result, first_error, first_check = remembered
        differences = answer_differences((first_result, first_error), (result, error))
        if differences:
            self.changed_answer = ChangedAnswer(
                operation, _sizes(arguments), first_check, self.current_check, tuple(differences[:MAX_DIFFERENCES_SAID])
            )
            self.answers = None

    def _held(self, operation: str, result: dict[str, Any], arguments: dict) -> dict[str, Any]:
        """Note the grader's biases the module reported it has no place for: only biases the
        grader sent, so a reply cannot make the grader hold anything else at zero."""
        not_held = result.get("not_held", [])
        sent = arguments.get("parameters") or {}
        if not isinstance(not_held, list) or not all(type(n) is str and n in sent and n.endswith(".bias") for n in not_held):
            raise contract_error(operation, "the reply names parameters the grader did not send")
        self.not_held.update(not_held)
        return result

    def as_held(self, parameters: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The grader's weights as the student's module holds them: a bias the contract has and
        the module has no place for (bias=False) is zero, which is what bias=False computes. The
        reference computed from these is the reference in the student's layout, so a bias left
        out costs the layout check its points and nothing else (the other side: a bias the
        contract does not have is held at zero in the student's module, grader/exercises/multi_head_attention/operations.py).
        The same dict when the module holds every weight."""
        if not self.not_held & parameters.keys():
            return parameters
        return {name: torch.zeros_like(value) if name in self.not_held else value for name, value in parameters.items()}


MAX_DIFFERENCES_SAID = 2


def answer_differences(first: tuple, then: tuple) -> list[Difference]:
    """How two outcomes of one call differ, each ``(result, error)``: [] when they agree bit for bit
    (a NaN agrees with a NaN; two errors agree when they are of one kind and type)."""
    (first_result, first_error), (then_result, then_error) = first, then
    if first_error is not None or then_error is not None:
        if first_error is not None and then_error is not None and (first_error.kind, first_error.type_name) == (then_error.kind, then_error.type_name):
            return []
        said = [f"raised {e.type_name}" if e is not None else "returned" for e in (first_error, then_error)]
        return [Difference("", "outcome", first=said[0], then=said[1])]
    return _value_differences("", first_result, then_result)


def _value_differences(field: str, a: Any, b: Any) -> list[Difference]:
    if type(a) is torch.Tensor and type(b) is torch.Tensor:
        if a.shape != b.shape or a.dtype != b.dtype:
            return [Difference(field, "shape")]
        if a.dtype is torch.bool or not (a.is_floating_point() or a.is_complex()):
            differing = a != b
        else:
            differing = ~((a == b) | (torch.isnan(a) & torch.isnan(b)))
        count = int(differing.sum())
        if not count:
            return []
        largest = None
        if a.is_floating_point():
            gaps = (a.double() - b.double()).abs()[differing]
            gaps = gaps[torch.isfinite(gaps)]
            largest = float(gaps.max()) if gaps.numel() else None
        return [Difference(field, "values", count, a.numel(), largest)]
    if type(a) is dict and type(b) is dict:
        if a.keys() != b.keys():
            return [Difference(field, "shape")]
        return [d for name in a for d in _value_differences(f"{field}.{name}" if field else str(name), a[name], b[name])]
    if type(a) in (list, tuple) and type(b) is type(a):
        if len(a) != len(b):
            return [Difference(field, "shape")]
        return [d for index, (x, y) in enumerate(zip(a, b)) for d in _value_differences(f"{field}[{index}]", x, y)]
    if type(a) is float and type(b) is float and math.isnan(a) and math.isnan(b):
        return []
    try:
        same = type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - an object of the student's that cannot say: not shown to be the same
        same = False
    return [] if same else [Difference(field, "values", 1, 1, None, first=_value_said(a), then=_value_said(b))]


def _value_said(value: Any) -> str:
    """A value the student's code returned, in words the grader chose: a number, or its kind."""
    if type(value) in (int, float, bool):
        return repr(value)[:24]
    return f"a {type(value).__name__}" if type(value) in (str, list, tuple, dict, type(None)) else "an object"


def _sizes(arguments: dict) -> tuple[tuple[str, Any], ...]:
    """A call's numbers and its tensors' shapes, as plain data (which call it was)."""
    sizes = []
    for name, value in arguments.items():
        if type(value) is int:
            sizes.append((name, value))
        elif type(value) is torch.Tensor:
            sizes.append((name, tuple(value.shape)))
    return tuple(sizes)


def _request_key(operation: str, arguments: dict) -> tuple:
    """The request as a value: equal keys for calls the student's code cannot tell apart
    (a tensor by its dtype, shape and bytes)."""
    def key(value: Any) -> Any:
        kind = type(value)
        if kind is torch.Tensor:  # (the grader's own tensors: on the CPU, most without a graph)
            plain = value.detach() if value.requires_grad else value
            if plain.dtype is torch.bfloat16:  # numpy has no bfloat16: its bytes as uint8
                plain = plain.contiguous().reshape(-1).view(torch.uint8)
            return ("tensor", value.dtype, tuple(value.shape), plain.cpu().numpy().tobytes())
        if kind is dict:
            return ("dict", tuple([(name, key(item)) for name, item in value.items()]))
        if kind is list or kind is tuple:
            return (kind.__name__, tuple([key(item) for item in value]))
        return (kind.__name__, value)
    return operation, key(arguments)


def _copied(value: Any) -> Any:
    """A reply's plain data with fresh tensors (a check may change what it got in place)."""
    if type(value) is torch.Tensor:
        return value.clone()
    if type(value) is dict:
        return {name: _copied(item) for name, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_copied(item) for item in value)
    return value


def checked_tensor(value: Any, what: str) -> torch.Tensor:
    # `type(...) is` and not isinstance: a subclass with __torch_function__ can make
    # torch.allclose, ==, and every other comparison say whatever it likes.
    if type(value) is not torch.Tensor:
        raise contract_error(what, f"{what} returned a {type(value).__name__}, expected a plain torch.Tensor")
    return value


def contract_error(operation: str, message: str) -> StudentCodeError:
    return StudentCodeError(operation, ErrorDescription("contract", "ContractViolation", message))
