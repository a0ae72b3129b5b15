"""Name the misconception: which known mistake a failing function's numbers reveal.

For each function that failed a check of its own (a check calling it directly), the grader
probes the student's function alone, then runs the reference and the known mistakes of that
function, alone and in pairs, on the same data in this process. Probes, mistakes and the tables
below are the exercise's vocabulary (its declaration's ``mistakes``: for the first exercise
grader/exercises/multi_head_attention/hidden/vocabulary.py, which lists every name asked of
one); an exercise that declares none is not diagnosed, and its failures keep their own messages. A function is diagnosed with a mistake (or a pair) when that mistake reproduces
every probe and the reference does not; when the reference does not but nothing known
does, the diagnosis says so ("unknown"), and when the reference does, there is nothing to
say. Two different known mistakes matching is treated as "unknown" too: a guess is never
presented as a diagnosis.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy
import torch

from grader.seam import registry

UNKNOWN = "unknown"



def vocabulary():
    """The vocabulary of known mistakes of the exercise this process grades (its declaration's
    ``mistakes`` module), or None where it declares none."""
    declaration = registry.exercise()
    return registry.optional(declaration, declaration.mistakes)


def _vocabulary():
    known = vocabulary()
    if known is None:
        raise LookupError(f"exercise {registry.exercise().name!r} declares no vocabulary of mistakes: nothing to diagnose")
    return known


def _seed(grading_seed: int | None) -> int:
    """The grading seed, or the vocabulary's own for callers without a grading session."""
    return _vocabulary().DEFAULT_SEED if grading_seed is None else grading_seed


# float64 probes: valid rewrites agree to ~1e-15; known mistakes miss by 1e-2 or more. A
# submission that computes in float32 anyway is compared at the grader's float32 tolerance.
TOLERANCE = {torch.float64: (1e-9, 1e-7), torch.float32: (1e-5, 1e-4)}


@dataclass(frozen=True)
class FailedCheck:
    name: str  # the test's name, as in the results
    operations: frozenset[str]  # the Submission calls it made


@dataclass
class Diagnosis:
    function: str
    mistakes: tuple[str, ...]  # known ids (one, or a pair within the function); () = unknown
    explains: list[str] = field(default_factory=list)  # the failing checks it accounts for
    # Failing checks of its function the counterfactual could not run (a module built from a
    # seed when its construction is the mistake, out of calls): neither explained nor not.
    unreplayable: list[str] = field(default_factory=list)
    first_failing_check: str = ""  # for an unknown mistake: where to start looking
    # For an unknown mistake no check of its own shows: the grader's own call on which it parts
    # from the reference (a probe, in words), where to start looking instead.
    first_failing_probe: str = ""
    # What the student's answers show of each known mistake, said before its why (the dtype of a mask).
    seen: dict[str, str] = field(default_factory=dict)

    @property
    def known(self) -> bool:
        return bool(self.mistakes)

    def entries(self, code: str = "") -> list[dict]:
        """The results' form (plain data): one entry per mistake, ``"unknown"`` when nothing matched.
        ``code``: the student's source (``student_code``), for the parts of a fix said only where
        the code shows their premise (the vocabulary's mistakes' ``fix_where``)."""
        if not self.mistakes:
            return [{
                "function": self.function, "mistake": UNKNOWN, "title": "a mistake that matches none of the known ones",
                "explains": [], "first_failing_check": self.first_failing_check,
                **({"first_failing_probe": self.first_failing_probe} if self.first_failing_probe and not self.first_failing_check else {}),
            }]
        by_id = _vocabulary().BY_ID
        return [
            {
                "function": self.function, "mistake": id, "title": by_id[id].title,
                "why": by_id[id].why, "fix": by_id[id].fix_for(code), "explains": list(self.explains),
                **({"seen": self.seen[id]} if self.seen.get(id) else {}),
                **({"unreplayable": list(self.unreplayable)} if self.unreplayable else {}),
            }
            for id in self.mistakes
        ]


def student_code(path) -> str:
    """The Python code of a submission's file, read as text (never run here)."""
    return _vocabulary().student_code(path)


# --- comparing outcomes --------------------------------------------------------------------------


def same(student, candidate) -> bool:
    """Do the student's outcome and a candidate's agree? Tensors within tolerance (NaN and
    infinities where the other has them too), a missing gradient like an all-zero one."""
    if isinstance(student, torch.Tensor) or isinstance(candidate, torch.Tensor):
        return _same_tensor(student, candidate)
    if isinstance(student, tuple) and isinstance(candidate, tuple):
        return len(student) == len(candidate) and all(same(a, b) for a, b in zip(student, candidate))
    return type(student) is type(candidate) and student == candidate


def _same_tensor(student, candidate) -> bool:
    if student is None or candidate is None:  # no gradient reached it: the same as zeros
        other = candidate if student is None else student
        return isinstance(other, torch.Tensor) and other.is_floating_point() and not other.any()
    if not isinstance(student, torch.Tensor) or not isinstance(candidate, torch.Tensor):
        return False
    if student.shape != candidate.shape:
        return False
    if not (student.is_floating_point() and candidate.is_floating_point()):
        return student.dtype == candidate.dtype and torch.equal(student, candidate)
    atol, rtol = TOLERANCE.get(student.dtype, TOLERANCE[torch.float32])
    # In numpy: on tensors this small each torch call costs more than the arithmetic, and
    # hundreds of candidates are compared. |a - b| <= atol + rtol * |b| (NaN fails), else
    # equal values (infinities) or NaN in both.
    a, b = _float64(student), _float64(candidate)
    with numpy.errstate(invalid="ignore"):
        close = numpy.abs(a - b) <= atol + rtol * numpy.abs(b)
        if close.all():
            return True
        return bool((close | (a == b) | (numpy.isnan(a) & numpy.isnan(b))).all())


def _float64(tensor: torch.Tensor):
    # numpy has no bfloat16: such a tensor (a student's choice of dtype) is widened by torch.
    tensor = tensor.detach()
    if tensor.dtype is torch.bfloat16:
        tensor = tensor.double()
    return tensor.numpy().astype(numpy.float64, copy=False)


# --- one function --------------------------------------------------------------------------------


def candidates(function: str) -> tuple[list, list]:
    """Every known mistake of ``function`` in each of its forms, then every pair of two
    mistakes that change different steps: (ids, steps)."""
    mistakes = _vocabulary()
    reference = mistakes.REFERENCE_STEPS[function]
    known = mistakes.of_function(function)
    singles = [((m.id,), reference | form) for m in known for form in m.forms_in(function)]
    pairs = [
        ((a.id, b.id), reference | form_a | form_b)
        for a, b in itertools.combinations(known, 2)
        if not (a.steps_in(function) & b.steps_in(function))
        for form_a in a.forms_in(function)
        for form_b in b.forms_in(function)
    ]
    return singles, pairs


# Three mistakes in one function are tried where their combinations are few (head_dimension's
# check, message, refusal and division: an assert with no message that lets zero heads through
# is three misconceptions in one line); a head's would be thousands.
MAX_TRIPLES = 200


def triples(function: str) -> list:
    """Every three mistakes of ``function`` that change different steps, in each of their forms,
    or [] where they would be more than MAX_TRIPLES: (ids, steps)."""
    mistakes = _vocabulary()
    reference = mistakes.REFERENCE_STEPS[function]
    known = mistakes.of_function(function)
    disjoint = [
        group for group in itertools.combinations(known, 3)
        if all(not (a.steps_in(function) & b.steps_in(function)) for a, b in itertools.combinations(group, 2))
    ]
    if sum(len(a.forms_in(function)) * len(b.forms_in(function)) * len(c.forms_in(function)) for a, b, c in disjoint) > MAX_TRIPLES:
        return []
    return [
        ((a.id, b.id, c.id), reference | form_a | form_b | form_c)
        for a, b, c in disjoint
        for form_a in a.forms_in(function) for form_b in b.forms_in(function) for form_c in c.forms_in(function)
    ]


def _candidate_groups(function: str):
    """The candidates, one group after another: single mistakes, pairs, then triples (made only
    when no single mistake nor pair fits)."""
    singles, pairs = candidates(function)
    yield singles
    yield pairs
    yield triples(function)


@dataclass(frozen=True)
class Verdict:
    """What probing one function found: the ids (``None``: it behaves; ``()``: unknown), the
    probes and the student's outcomes on them, and the first probe on which it parts from the
    reference (None where it does not)."""

    ids: tuple[str, ...] | None
    probes: tuple = ()
    observed: tuple = ()
    first_differing: object = None


def diagnose_function(function: str, submission, grading_seed: int | None = None) -> tuple[str, ...] | None:
    """``None`` when the function behaves as the reference on every probe; the ids of the
    known mistake (or pair) it matches; ``()`` when it matches none, or several."""
    return probe_function(function, submission, grading_seed).ids


def probe_function(function: str, submission, grading_seed: int | None = None) -> Verdict:
    """``diagnose_function``'s verdict, with the evidence it was reached on."""
    mistakes = _vocabulary()
    grading_seed = _seed(grading_seed)
    function_probes = mistakes.probes_for_seed(grading_seed)[function]
    # The settings the candidates are tried in (a module on the student's own parts, then on
    # the reference's helpers); raises Unusable where the function cannot be judged alone.
    contexts = mistakes.contexts(function, submission, grading_seed, function_probes)
    observed = [probe.student(submission) for probe in function_probes]
    reference_outcomes: dict[int, list] = {}  # per context: the reference's outcomes, computed once

    def reference_in(index: int) -> list:
        if index not in reference_outcomes:
            steps = mistakes.REFERENCE_STEPS[function]
            reference_outcomes[index] = [probe.trusted(steps, contexts[index]) for probe in function_probes]
        return reference_outcomes[index]

    def reproduces(steps: dict) -> bool:
        """Every probe reproduced, in one context, on evidence that is not a crash alone."""
        for index, context in enumerate(contexts):
            # Probe by probe, stopping at the first disagreement: most candidates miss at once.
            outcomes = []
            for seen, probe in zip(observed, function_probes):
                outcome = probe.trusted(steps, context)
                if not same(seen, outcome):
                    break
                outcomes.append(outcome)
            else:
                if steps is mistakes.REFERENCE_STEPS[function] or _licensed(function_probes, observed, outcomes, reference_in(index)):
                    return True
        return False

    if reproduces(mistakes.REFERENCE_STEPS[function]):
        return Verdict(None)
    evidence = {"probes": tuple(function_probes), "observed": tuple(observed),
                "first_differing": next((probe for probe, seen, expected in zip(function_probes, observed, reference_in(0))
                                         if not same(seen, expected)), None)}
    for group in _candidate_groups(function):
        matched = {ids for ids, steps in group if reproduces(steps)}
        if len(matched) == 1:
            return Verdict(next(iter(matched)), **evidence)
        if matched:
            return Verdict((), **evidence)  # more than one explanation fits: say none
    return Verdict(_by_signature(function, function_probes, observed), **evidence)


def _licensed(function_probes, observed: list, candidate: list, reference: list) -> bool:
    """A crash never licenses a diagnosis by itself: among the probes on which the candidate
    parts from the reference, one must be of a kind the student's function answered (returned a
    value) on some probe. A function that only ever crashes shows that it crashes, not which
    misconception it holds; one that answers the custom mask and crashes on the default one,
    as a mask of the wrong size does, shows both."""
    answered = {type(probe) for probe, seen in zip(function_probes, observed) if not _vocabulary().is_crash(seen)}
    return any(
        type(probe) in answered
        for probe, outcome, expected in zip(function_probes, candidate, reference)
        if not same(outcome, expected)
    )


def _by_signature(function: str, function_probes, observed: list) -> tuple[str, ...]:
    """The one known mistake whose property the student's answers have on every probe, when
    no implementation of it reproduced them exactly (the misconception written another way)."""
    held = [
        mistake.id
        for mistake in _vocabulary().of_function(function)
        if mistake.signature is not None and mistake.function == function
        and all(mistake.signature(probe.data(), seen) for probe, seen in zip(function_probes, observed))
    ]
    return (held[0],) if len(held) == 1 else ()


# --- a submission --------------------------------------------------------------------------------


def functions_used(check: FailedCheck) -> set[str]:
    """The functions the calls of a check run (the vocabulary's ``FUNCTIONS_OF_OPERATION``)."""
    table = _vocabulary().FUNCTIONS_OF_OPERATION
    return {f for operation in check.operations for f in table.get(operation, ())}


def primary_function(check: FailedCheck) -> str | None:
    mistakes = _vocabulary()
    for operation in mistakes.PRIMARY_OPERATION_ORDER:
        if operation in check.operations:
            return mistakes.FUNCTIONS_OF_OPERATION[operation][0]
    return None


def layout_hides(function: str) -> set[str]:
    """The functions a layout slip in ``function`` keeps the grader from probing (their probes
    load its weights): the vocabulary's ``LAYOUT_HIDES``."""
    return set(_vocabulary().LAYOUT_HIDES.get(function, set()))


def diagnose(
    submission, failed: list[FailedCheck], grading_seed: int | None = None, also_suspect: set[str] = frozenset()
) -> list[Diagnosis]:
    """One diagnosis per function that is wrong, in the lesson's order; [] when none is. What
    each known one explains is for ``attribute`` to find, by counterfactual.

    Only the functions that failed a check of their own are probed (a passing submission
    costs nothing), and ``also_suspect``: those behind checks a layout slip explains: a module check also fails for a wrong head, but then the head's own
    checks fail too, and the module's probes, built on the student's own heads, stay quiet.
    """
    mistakes = _vocabulary()
    grading_seed = _seed(grading_seed)
    suspects = {primary_function(check) for check in failed} | set(also_suspect)
    verdicts: dict[str, Verdict] = {}
    skipped = set()
    for function in mistakes.FUNCTIONS:
        if function not in suspects:
            continue
        if any(submission.timeouts.get(operation) for operation in mistakes.OPERATIONS_OF_FUNCTION[function]):
            skipped.add(function)  # it ran out of time in a check: probing it would too
            continue
        try:
            verdict = probe_function(function, submission, grading_seed)
        except mistakes.Unusable:
            skipped.add(function)  # not written yet (the score table says so), or not separable
            continue
        if verdict.ids is not None:
            verdicts[function] = verdict
    diagnoses = {
        function: Diagnosis(function, verdict.ids, seen={
            id: mistakes.BY_ID[id].seen_in(verdict.probes, list(verdict.observed)) for id in verdict.ids
        })
        for function, verdict in verdicts.items()
    }
    for check in failed:
        involved = [diagnoses[f] for f in functions_used(check) if f in diagnoses]
        if not involved and not (functions_used(check) & skipped) and (function := primary_function(check)):
            # A check failed although every function it used behaves on the probes: its own
            # function is wrong in a way the probes do not show. Honest, not explained.
            diagnoses.setdefault(function, Diagnosis(function, ()))
    for diagnosis in diagnoses.values():
        if not diagnosis.known:
            where_to_look(diagnosis, failed, verdicts.get(diagnosis.function), submission, grading_seed)
    return [diagnoses[f] for f in mistakes.FUNCTIONS if f in diagnoses]


def where_to_look(diagnosis: Diagnosis, failed: list[FailedCheck], verdict: Verdict | None, submission, grading_seed: int) -> None:
    """Where a student starts looking for a mistake the grader cannot name: the first failing
    check whose own subject is the function; else the first of its probes on which it parts from
    the reference; only then the first failing check that passes through it, where the module is
    shown to call it (a module that never calls concatenate_heads fails for reasons of its own)."""
    function = diagnosis.function
    own = next((check.name for check in failed if primary_function(check) == function), "")
    if own:
        diagnosis.first_failing_check = own
        return
    if verdict is not None and verdict.first_differing is not None:
        diagnosis.first_failing_probe = verdict.first_differing.described()
        return
    through = next((check.name for check in failed if function in functions_used(check)), "")
    if through and _vocabulary().module_calls(submission, function, grading_seed):
        diagnosis.first_failing_check = through


def attribute(
    submission, diagnoses: list[Diagnosis], failed: list[FailedCheck], passes: Callable[[str, object], bool | None]
) -> None:
    """Fill each known diagnosis's ``explains``: the failing checks that use its function and
    pass when that one function is replaced by the reference's (the vocabulary's ``Replaced``).
    ``passes(check name, submission with one function replaced)``: does the check pass then?
    (None: the counterfactual could not be run, ``unreplayable``.) A check no single
    replacement makes pass is in no list, and keeps its own message."""
    if any(submission.timeouts.values()):
        return  # a loop met in the checks would be met again: nothing is shown to be explained
    counterfactual = _vocabulary()
    calls = [0]  # one budget of worker calls for every replacement of this submission
    for diagnosis in diagnoses:
        if not diagnosis.known or diagnosis.function not in counterfactual.REPLACEABLE:
            continue
        replaced = counterfactual.Replaced(submission, diagnosis.function, calls, diagnosis.mistakes)
        for check in failed:
            if diagnosis.function not in functions_used(check):
                continue
            passed = passes(check.name, replaced)
            if passed:
                diagnosis.explains.append(check.name)
            elif passed is None:
                diagnosis.unreplayable.append(check.name)
