"""A grade's trail: the raw score the tests gave, the late penalty, the override, the final score.

The batch writes the trail into each submission of results.json (``raw_score``, ``late``,
``override``, ``score`` = the final one); the gradebook, the report and the export show it.
``does_not_add_up`` checks a trail read back: a hand-edited number that no longer follows
from the others is refused with the student and the field named, never sent to the LMS.
"""

from __future__ import annotations

from grader.batch.late_work import Lateness, penalty_points


def trail(result: dict, late: Lateness | None, override: dict | None) -> dict:
    """The fields a result gets beside its raw score (``result["score"]`` as graded)."""
    raw = result["score"]
    fields: dict = {"raw_score": raw}
    final = raw
    if late is not None:
        penalty = penalty_points(late.percent, result["max_score"], raw)
        fields["late"] = late.to_dict() | {"penalty": penalty}
        final = raw - penalty
    if override is not None:
        fields["override"] = dict(override)
        final = override["score"]
    fields["score"] = _tidy(final)
    return fields


def does_not_add_up(result: dict) -> str | None:
    """What does not follow from the rest in one results.json submission, or None."""
    raw = result.get("raw_score", result.get("score"))
    groups = result.get("groups")
    if isinstance(groups, dict) and groups:
        earned = [group.get("earned") if isinstance(group, dict) else None for group in groups.values()]
        if not all(type(points) is int for points in earned):
            return "field 'groups': a group's 'earned' is not a whole number"
        if sum(earned) != raw:
            field = "raw_score" if "raw_score" in result else "score"
            return f"field {field!r} is {raw!r}, but its groups add up to {sum(earned)}"
    if "raw_score" not in result:
        return None
    expected = raw
    late = result.get("late")
    if late is not None:
        if not isinstance(late, dict) or not isinstance(late.get("percent"), (int, float)):
            return "field 'late' is not a late record"
        penalty = penalty_points(late["percent"], result.get("max_score", 0), raw)
        if late.get("penalty") != penalty:
            return f"field 'late.penalty' is {late.get('penalty')!r}, but {late['percent']:g}% of the points is {penalty:g}"
        expected = raw - penalty
    override = result.get("override")
    if override is not None:
        if not isinstance(override, dict) or not isinstance(override.get("score"), (int, float)):
            return "field 'override' is not an override record"
        expected = override["score"]
    if result.get("score") != _tidy(expected):
        return f"field 'score' is {result.get('score')!r}, but its raw score, late penalty and override make {_tidy(expected)!r}"
    return None


def _tidy(value: float) -> float | int:
    """A whole number stays an int (85, not 85.0); otherwise two decimals."""
    value = round(value, 2)
    return int(value) if float(value).is_integer() else value
