"""One root cause, one message: failures that share a cause the grader can name are said once.

Two causes make many checks fail for one reason, and both are found on the student's side of
the grader (at a desk too, where grader/hidden/ does not exist):

* a *layout slip*: the module's parameters do not have the contract's names and shapes, so the
  grader cannot load its weights (or, for a parameter the contract does not have, loads them
  and holds the extra at zero: the exercise's operations, for the first
  grader/exercises/multi_head_attention/operations.py ``_load``);
* *randomness*: the module gives different answers to the same call (dropout left on, sampling,
  a random number generator in forward), so no check of its numbers can pass except by luck,
  and hints about the softmax axis or the mask would send the student the wrong way.

Each cause becomes one entry in the form of the diagnosis's (``SubmissionResult.diagnoses``,
read through grader/feedback/diagnosis_text.py), with the checks it explains; each of those checks'
messages shrinks to its first line. The hidden diagnosis then diagnoses only what is left.

What is the exercise's (whose layout a slip is, which calls build the module or draw random
numbers, the fixes in its lesson's words, the randomness question) is read through its
declaration's ``causes`` (for the first exercise grader/exercises/multi_head_attention/causes.py,
which lists every name asked of one). An exercise that declares none has no root causes found:
each failed check keeps its own message.
"""

from __future__ import annotations

import builtins
import re

import pytest
import torch

from grader.feedback.evidence import ChangedAnswer, Difference, StudentCodeError
from grader.seam import registry

PARAMETER_LAYOUT = "parameter_layout"
NONDETERMINISTIC = "nondeterministic"
IDS = (PARAMETER_LAYOUT, NONDETERMINISTIC)  # part of the diagnosis's vocabulary (an exercise's mistakes use none of them)
# How an exercise's operations begin a weight-loading failure (grader/exercises/multi_head_attention/operations.py).
LOAD_FAILURE = "the grader could not load its weights into your "
EXPLAINED = "  [explained by the diagnosis above]"


def causes():
    """What the exercise this process grades says of its root causes (its declaration's
    ``causes`` module), or None where it declares none."""
    declaration = registry.exercise()
    return registry.optional(declaration, declaration.causes)


class LayoutSlip(pytest.fail.Exception):
    """The layout check's failure: the one place the layout slip is described in full, with the
    constructor whose layout it is (``function``, from the names the module has)."""

    function = ""  # set by layout_slip


def layout_slip(message: str, found: dict[str, tuple], expected: dict[str, tuple]) -> None:
    """Fail the layout check; ``found`` and ``expected``: each parameter's name and shape, the
    module's own and the contract's."""
    slip = LayoutSlip(message, pytrace=False)
    slip.function = causes().function_of_layout(found, expected)
    raise slip


def _layout_entry(message: str, function: str) -> dict:
    # The message's own lines (what is wrong, expected, got), one sentence each; the fix is the entry's.
    lines = [" ".join(line.split()) for line in message.splitlines() if line.strip() and not line.strip().startswith(("fix:", "hint:"))]
    return {
        "function": function,
        "mistake": PARAMETER_LAYOUT,
        "title": "the module's parameters do not have the names and shapes of the contract",
        "why": "; ".join(line.rstrip(".") for line in lines) + ".",
        "quotes_student_code": True,  # its got: names the module's own parameters (grader/feedback/diagnosis_text.py)
        "fix": causes().LAYOUT_FIX,
        "explains": [],
    }


def _randomness_entry(function: str, reseeded_agree: bool) -> dict:
    why = (
        "asked the same question twice, it answered differently, and the same answer again when "
        "torch's random generator was reseeded before each call: forward draws random numbers "
        "(dropout left on in training mode, sampling, torch.rand). No check of its numbers can pass except by luck."
        if reseeded_agree
        else "asked the same question twice, it answered differently even with torch's random generator "
        "reseeded before each call: forward keeps state between calls, or draws from another generator "
        "(random, numpy). What a check of its numbers gets depends on the calls before it."
    )
    return _changing_answers_entry(function, why)


def _changing_answers_entry(function: str, why: str) -> dict:
    return {
        "function": function,
        "mistake": NONDETERMINISTIC,
        "title": "your module gives different answers to the same call",
        "why": why,
        "fix": causes().RANDOMNESS_FIX,
        "explains": [],
    }


def _plain_outcome(said: str) -> str:
    """"returned", or "raised ValueError" for one of Python's own exceptions (a class of the
    student's is only "raised an exception")."""
    kind = said.removeprefix("raised ")
    if kind == said:
        return said
    return said if isinstance(getattr(builtins, kind, None), type) and issubclass(getattr(builtins, kind), BaseException) else "raised an exception"


# Said when a forward pass changed what the code keeps (the exercise's operations: grader/exercises/multi_head_attention/operations.py ``_state_changed``).
KEEPS_STATE = "forward keeps state between calls (a call changed an attribute, a buffer, a global or a class attribute of your code), and "
AFRESH = (
    "Your grade is what asking every question afresh gives: no answer of yours was given again in place of a call "
    "that could have answered differently."
)


def changed_answer_evidence(changed: ChangedAnswer) -> str:
    """The question asked twice and how the answers differ, as a sentence (from the handle's record).
    The checks' names carry no submission id (grader/session/folding.py ``check_label``), the sizes are the
    grader's; what the student's code named (a parameter, an exception's type) is said only in
    the plain words of a Python name, else in general terms: the sentence is read as Markdown."""
    function = causes().FUNCTION_OF_OPERATION.get(changed.operation, changed.operation)
    sizes = ", ".join(f"{name} of shape {value}" if isinstance(value, tuple) else f"{name}={value}" for name, value in changed.sizes)
    asked = (
        f"asked your {function} ({sizes}) the question {changed.first_check} had asked"
        if changed.first_check != changed.again_check else f"asked your {function} ({sizes}) the same question twice"
    )
    return f"{changed.again_check} {asked}, and the answer differed: {'; '.join(map(_difference_said, changed.differences))}."


# A name the student's code gave (a parameter, a field): said when it is dotted snake case.
_PLAIN_NAME = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*(\.[a-z0-9]+(_[a-z0-9]+)*)*")


def _plain(text: str, otherwise: str) -> str:
    return text if len(text) <= 80 and _PLAIN_NAME.fullmatch(text) else otherwise


def _difference_said(difference: Difference) -> str:
    fields = {"": "the answer", "output": "the output", "weights": "the weights"}
    what = fields.get(difference.field) or _plain(difference.field.replace("[", ".").replace("]", ""), "a part of the answer")
    if difference.how == "outcome":
        first, then = (_plain_outcome(said) for said in (difference.first, difference.then))
        return f"first your code {first}, then it {then}"
    if difference.how == "shape":
        return f"{what} changed its shape, dtype or names"
    if difference.first or difference.then:  # words the grader chose (grader/submission.py ``_value_said``)
        return f"{what} was {difference.first}, then {difference.then}"
    largest = (
        f"largest difference {difference.largest:.3g}" if difference.largest is not None
        else "a NaN or an infinity where the other answer has another number"
    )
    return f"{difference.differing} of {difference.total} entries of {what} differ ({largest})"


def _answers_differ(first: dict, second: dict) -> bool:
    for name in ("weights", "output"):
        a, b = first[name], second[name]
        if a.shape != b.shape:
            return True
        if not torch.allclose(a.double(), b.double(), atol=1e-7, rtol=1e-6, equal_nan=True):
            return True
    return False


def find_randomness(handle, grading_seed: int = 0) -> dict | None:
    """Ask the head, then the module, the same question four times (torch's generator seeded
    with two seeds drawn from the grading seed, the first again for the last two): answers that
    differ are randomness, named with its likely source. Each asking builds the module afresh, so
    what an earlier call left in it is not taken for randomness. The first seed's three answers
    agree when forward draws from torch's generator; state kept outside the module (a global, a
    class attribute) shows as answers that differ under one seed."""
    exercise = causes()
    question = exercise.randomness_question(grading_seed)
    for function, call, arguments in exercise.randomness_calls(handle, question):
        try:
            with handle.afresh():  # the same question asked again must reach the code again
                # Each asking on a module built for it: what an earlier call left in the module (a count
                # of calls, its last output) must not look like randomness.
                answers = [call(**_copies(arguments), rng_seed=seed, fresh=True)
                           for seed in (question.first, question.second, question.first, question.first)]
        except StudentCodeError:
            continue  # a call that fails is not randomness; its checks say what it is
        reseeded_agree = not (_answers_differ(answers[0], answers[2]) or _answers_differ(answers[2], answers[3]))
        if _answers_differ(answers[0], answers[1]) or not reseeded_agree:
            return _randomness_entry(function, reseeded_agree=reseeded_agree)
    return None


def _copies(arguments: dict) -> dict:
    """Fresh tensors for every call: at a desk the student's code could change them in place."""
    return {name: value.clone() if isinstance(value, torch.Tensor) else
            {k: v.clone() for k, v in value.items()} if isinstance(value, dict) else value
            for name, value in arguments.items()}


class RootCauses:
    """Per submission: the causes found so far, and whether randomness was looked for."""

    def __init__(self, grading_seed: int = 0) -> None:
        self.grading_seed = grading_seed  # the randomness question is drawn from it
        self.looked_for_randomness: set[str] = set()
        self.unloadable: set[str] = set()  # submissions whose layout the grader's weights do not fit
        self.said_changed: set[str] = set()  # submissions told that an answer changed (its evidence given)
        self.first_raised: dict[tuple, str] = {}  # (submission, error type, student's line) -> first check
        # Per submission: the failed checks of its numbers no cause explained when they failed
        # (test name, operations), for an answer found to change later.
        self.unexplained: dict[str, list[tuple[str, set[str]]]] = {}

    def repeated_error(self, submission: str, test_name: str, error: BaseException) -> str | None:
        """An error of the student's code raised at the same line as in an earlier check: that
        check's name (its message says it all); None the first time, or for another error."""
        if not (isinstance(error, StudentCodeError) and error.error.kind == "raised" and error.error.location):
            return None
        key = (submission, error.error.type_name, error.error.location)
        first = self.first_raised.setdefault(key, test_name)
        return first if first != test_name else None

    def account(self, result, handle, test_name: str, error: BaseException, operations: set[str]) -> str | None:
        """The cause that explains this failed check, found now or earlier; None if none.
        ``result``: the submission's result, whose ``diagnoses`` hold the causes."""
        exercise = causes()
        if exercise is None:
            return None  # an exercise that declares no causes: each check keeps its own message
        self._widen(result, handle)
        entry = None
        load_failure = isinstance(error, StudentCodeError) and error.error.kind == "contract" and error.error.message.startswith(LOAD_FAILURE)
        if load_failure:
            self.unloadable.add(result.submission)
        if isinstance(error, LayoutSlip) or load_failure:
            # Whose layout: the layout check's placement by the module's names; until it has run, the
            # module's (the grader's weights did not fit the module), or the head's when they did not
            # fit the head alone (run_head builds one), which no module's names can make the module's.
            function = error.function if isinstance(error, LayoutSlip) else exercise.layout_of_failed_load(error.operation)
            entry = self._cause(result, PARAMETER_LAYOUT) or self._add(result, _layout_entry(_message(error), function))
            if function == exercise.PART_CONSTRUCTOR or isinstance(error, LayoutSlip) and entry["function"] != exercise.PART_CONSTRUCTOR:
                entry["function"] = function
            if isinstance(error, LayoutSlip):
                # The check that states the layout fails for the layout alone, whatever else is
                # wrong (grader/hidden/plugin.py keeps it under the layout).
                entry["stated_in"] = test_name
        elif result.submission in self.unloadable and operations & exercise.MODULE_OPERATIONS:
            # The module as built (the grader's weights do not fit it) fails for the same reason.
            entry = self._cause(result, PARAMETER_LAYOUT)
        elif not isinstance(error, StudentCodeError) and operations & set().union(*exercise.RANDOM_OPERATIONS.values()):
            if result.submission not in self.looked_for_randomness and not handle.timeouts:
                self.looked_for_randomness.add(result.submission)
                found = find_randomness(handle, self.grading_seed)
                if found:  # its source, in place of what an answer that changed told alone
                    changed = self._cause(result, NONDETERMINISTIC)
                    if changed is None:
                        self._add(result, found)
                    else:
                        changed.update(function=found["function"], why=found["why"])
                    self._with_evidence(result, handle)
            entry = self._cause(result, NONDETERMINISTIC)
            if entry is not None and not operations & exercise.RANDOM_OPERATIONS.get(entry["function"], set()):
                entry = None
            if entry is None:
                self.unexplained.setdefault(result.submission, []).append((test_name, set(operations)))
        if entry is None:
            return None
        entry["explains"].append(test_name)
        return entry["title"]

    def answers_changed(self, result, handle) -> None:
        """The handle asked a remembered question again and got another answer (grader/submission.py):
        one entry says so, with that question and how the answers differ, once."""
        if handle.changed_answer is None or result.submission in self.said_changed:
            return
        self.said_changed.add(result.submission)
        if causes() is None:
            return
        if self._cause(result, NONDETERMINISTIC) is None:
            function = causes().FUNCTION_OF_OPERATION.get(handle.changed_answer.operation, handle.changed_answer.operation)
            why = (KEEPS_STATE if handle.keeps_state else "") + "its answers change from call to call."
            self._add(result, _changing_answers_entry(function, why))
        self._with_evidence(result, handle)
        self._widen(result, handle)

    def _widen(self, result, handle) -> None:
        """The entry of answers that change, once the head's own calls are seen to change what the
        code keeps, is the head's (the module's answers change with it: the exercise's
        ``STATE_KEPT_BY_A_PART`` and ``RANDOM_OPERATIONS``); and the
        checks of those numbers that failed before it was found fail for it too."""
        entry = self._cause(result, NONDETERMINISTIC)
        if entry is None or result.submission not in self.said_changed:
            return
        exercise = causes()
        part = exercise.STATE_KEPT_BY_A_PART.get(entry["function"])
        if part is not None and part[0] in getattr(handle, "state_changed_by", ()):
            entry["function"] = part[1]
        waiting = self.unexplained.get(result.submission, [])
        explained = [name for name, operations in waiting if operations & exercise.RANDOM_OPERATIONS.get(entry["function"], set())]
        entry["explains"] += [name for name in explained if name not in entry["explains"]]
        self.unexplained[result.submission] = [item for item in waiting if item[0] not in explained]

    def _with_evidence(self, result, handle) -> None:
        entry = self._cause(result, NONDETERMINISTIC)
        if entry is not None and handle.changed_answer is not None and result.submission in self.said_changed:
            entry["why"] = f"{entry['why']} {changed_answer_evidence(handle.changed_answer)} {AFRESH}"

    @staticmethod
    def _cause(result, mistake: str) -> dict | None:
        return next((e for e in result.diagnoses if e.get("mistake") == mistake), None)

    @staticmethod
    def _add(result, entry: dict) -> dict:
        result.diagnoses.append(entry)
        return entry


def _message(error: BaseException) -> str:
    if isinstance(error, StudentCodeError):
        return error.error.message
    return str(getattr(error, "msg", "") or error)
