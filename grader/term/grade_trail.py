"""A grade's trail: the raw score the tests gave, the late penalty, the override, the final score.

The final score is derived, never read back: each check's outcome times its points (the
grader's own, ``@pytest.mark.points`` in its test modules: grader/scoring.py's grader_points)
gives each group's points and the raw score (of the exercise graded: a result records its
exercise, and one of another exercise is refused); the course's deadline, extensions, submission
times and late policy give the penalty; the overrides file gives the override, or a comment
(a reason without a score, which changes no score). Which row of the course's files is whose,
and how late each file is, the course's ``Adjustments`` say (grader/term/course_inputs.py: one
reader of those files, every name resolved by grader/term/identity.py, as the batch resolved
it). ``derive`` is the one function that does it; the batch (grader/batch/run.py) stores what it gives in results.json (``raw_score``,
``late``, ``override``, ``comment``, ``score`` = the final one, beside ``groups`` and
``max_score``), and every reader (the export, the report: grader/class_view/class_results.py's
read_class_results) derives it again and refuses a stored figure that disagrees, or a
result that lacks what the derivation needs, naming the student and the field. So no number
typed into results.json reaches the LMS: a hand change goes through the overrides file, with
a reason, where the next batch keeps it and every page shows it.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

from grader import __version__
from grader.term import late_work, overrides
from grader.term.late_work import Lateness
from grader.scoring import EXERCISE, GROUPS, grader_points

if TYPE_CHECKING:
    from grader.term.course_inputs import Adjustments


class TrailError(ValueError):
    """A stored figure that is not the derived one, or a result that lacks what the derivation
    needs; ``field`` names it (``groups.shapes.earned``, ``late.percent``, ``tests[3].max_points``)."""

    def __init__(self, field: str, problem: str, *, by_course: bool = False) -> None:
        super().__init__(f"field {field!r} {problem}")
        self.field = field
        # A late record, an override or a comment the course's files no longer give: the files
        # may have changed since the batch, or results.json been edited.
        self.by_course = by_course


# --- the derivation ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Graded:
    """What the tests gave: each group's points, the raw score, the maximum."""

    groups: dict[str, dict]  # group -> {"earned": n, "max": m}, in the grader's order of groups
    raw: int
    max_score: int


@dataclasses.dataclass(frozen=True)
class Trail:
    fields: dict  # raw_score, max_score, groups, late?, override?, comment?, score (the final one)
    notes: tuple[str, ...] = ()  # why the override was not applied (the run lists it with the rows not applied)

    @property
    def final(self) -> int | float:
        return self.fields["score"]


def graded(result: dict) -> Graded:
    """Each group's points and the raw score from the checks' outcomes and points, with each
    stored figure of the grading (a check's points, ``groups``, ``max_score``) held to them."""
    exercise = result.get("exercise")
    if exercise is not None and exercise != EXERCISE.name:
        # Another exercise's checks, groups and points: none of its figures can be held to this one's.
        raise TrailError("exercise", f"is {exercise!r}, but the grader grades {EXERCISE.name} (results of another exercise are graded again by the next batch)")
    tests = result.get("tests")
    if not isinstance(tests, list) or not tests:
        raise TrailError("tests", "is missing or empty: the score is derived from each check's outcome and points")
    known = grader_points()
    totals: dict[str, list[int]] = {}
    for index, test in enumerate(tests):
        where = f"tests[{index}]"
        if not isinstance(test, dict):
            raise TrailError(where, "is not a check's record")
        name, group, outcome, most = test.get("name"), test.get("group"), test.get("outcome"), test.get("max_points")
        if not isinstance(name, str) or group not in GROUPS or not isinstance(outcome, str):
            raise TrailError(where, f"({name!r}) lacks its name, its group or its outcome")
        if type(most) is not int or most < 0:
            raise TrailError(f"{where}.max_points", f"({name!r}) is {most!r}, not a whole number of points")
        function = name.split("[", 1)[0]
        if known.get((group, function), most) != most:
            raise TrailError(
                f"{where}.max_points", f"({name!r}) is {most}, but the grader gives {function} {known[(group, function)]} points"
                f" (grader {__version__}; results of another version are graded again by the next batch)",
            )
        earned = most if outcome == "passed" else 0
        if "points" in test and not _same(test["points"], earned):
            raise TrailError(f"{where}.points", f"({name!r}) is {test['points']!r}, but a check {outcome} of {most} points earns {earned}")
        total = totals.setdefault(group, [0, 0])
        total[0] += earned
        total[1] += most
    # As scoring.SubmissionResult.group_points: the grader's order, groups of no points left out.
    groups = {group: {"earned": totals[group][0], "max": totals[group][1]} for group in GROUPS if totals.get(group, [0, 0])[1]}
    stored = result.get("groups")
    if not isinstance(stored, dict):
        raise TrailError("groups", f"is {'missing' if stored is None else repr(stored)}, but its checks give {_points(groups)}")
    for group in dict.fromkeys([*groups, *stored]):
        for key in ("earned", "max"):
            held = stored[group].get(key) if isinstance(stored.get(group), dict) else None
            should = groups[group][key] if group in groups else None
            if not _same(held, should):
                raise TrailError(
                    f"groups.{group}.{key}", f"is {held!r}, but its checks' outcomes and points give {should!r}"
                    if should is not None else "is not a group of its checks",
                )
    raw, most = sum(g["earned"] for g in groups.values()), sum(g["max"] for g in groups.values())
    if not _same(result.get("max_score"), most):
        raise TrailError("max_score", f"is {result.get('max_score')!r}, but its checks' points add up to {most}")
    return Graded(groups, raw, most)


def check_graded(result: dict) -> str | None:
    """What in one student's own result file (``OUT/results/<id>.json``, the grading's: its
    ``score`` is the raw one) does not follow from its checks, or None."""
    try:
        points = graded(result)
        if not _same(result.get("score"), points.raw):
            raise TrailError("score", f"is {result.get('score')!r}, but its groups add up to {points.raw}")
    except TrailError as error:
        return str(error)
    return None


def adjust(raw: int | float, max_score: int, late: Lateness | None, override: overrides.Override | None) -> Trail:
    """The trail from a raw score: the late penalty (the policy's percent of the points, never
    more than the raw score), then the override, which replaces the score (one above
    ``max_score`` is not applied, and said); a row without a score is a comment and changes nothing."""
    fields: dict = {"raw_score": raw, "max_score": max_score}
    notes = []
    final = raw
    if late is not None:
        penalty = late_work.penalty_points(late.percent, max_score, raw)
        fields["late"] = late.to_dict() | {"penalty": penalty}
        final = raw - penalty
    if override is not None:
        if override.score is None:
            fields["comment"] = override.reason
        elif override.score > max_score:
            notes.append(f"its score {override.score} is above max_score {max_score}")
        else:
            fields["override"] = {"score": override.score, "reason": override.reason}
            final = override.score
    fields["score"] = _tidy(final)
    return Trail(fields, tuple(notes))


def derive(result: dict, adjustments: Adjustments, student_id: str) -> Trail:
    """The one derivation of a student's final score: ``result``'s checks (held to their stored
    figures, ``graded``), then the course's late policy and the overrides file."""
    points = graded(result)
    late = adjustments.lateness(student_id, str(result.get("graded_from") or ""))
    trail = adjust(points.raw, points.max_score, late, adjustments.override(student_id))
    return Trail(trail.fields | {"groups": points.groups}, trail.notes)


def verify(result: dict, adjustments: Adjustments, student_id: str) -> Trail:
    """``result``'s trail derived (``derive``), every stored figure of it held to the derived one:
    ``TrailError`` naming the first that is not (the grading's are held by ``graded``). A result
    that passes holds the derived figures, so its readers may read them from it."""
    trail = derive(result, adjustments, student_id)
    derived = trail.fields
    if "raw_score" in result and not _same(result["raw_score"], derived["raw_score"]):
        raise TrailError("raw_score", f"is {result['raw_score']!r}, but its checks give {derived['raw_score']}")
    for key, source in (
        ("late", "the course's deadline, submission times and late policy give"),
        ("override", "the overrides file gives"), ("comment", "the overrides file gives"),
    ):
        stored, should = result.get(key), derived.get(key)
        if _same(stored, should):
            continue
        if should is None:
            raise TrailError(key, f"is {stored!r}, but {adjustments.where(key) or source + ' none for this student'}", by_course=True)
        if stored is None:
            raise TrailError(key, f"is missing, but {source} {should!r}", by_course=True)
        if isinstance(stored, dict):
            for part in should:
                if not _same(stored.get(part), should[part]):
                    raise TrailError(f"{key}.{part}", f"is {stored.get(part)!r}, but {source} {should[part]!r}", by_course=True)
        raise TrailError(key, f"is {stored!r}, but {source} {should!r}", by_course=True)
    if not _same(result.get("score"), trail.final):
        raise TrailError("score", f"is {result.get('score')!r}, but its raw score, late penalty and override make {trail.final!r}")
    return trail


_SCALARS = (int, str, bool, type(None))


def _same(stored, derived) -> bool:
    """Equal as JSON holds them (so ``True`` is not 1, nor 1 1.0: what the batch stored is what it derived).
    Two whole numbers, strings, booleans or nulls of one type are that when they are equal, without
    writing either as JSON: a class's results hold some 80 checks each, each compared so."""
    if type(stored) is type(derived) and type(stored) in _SCALARS:
        return stored == derived
    return json.dumps(stored, sort_keys=True) == json.dumps(derived, sort_keys=True)


def _points(groups: dict) -> str:
    return ", ".join(f"{group} {points['earned']}/{points['max']}" for group, points in groups.items())


def _tidy(value: float) -> float | int:
    """A whole number stays an int (85, not 85.0); otherwise two decimals."""
    value = round(value, 2)
    return int(value) if float(value).is_integer() else value
