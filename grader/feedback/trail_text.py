"""A grade's trail in words, for the student: the tests' score, each adjustment, the final score.

Rendered from the trail's record (grader/term/grade_trail.py writes it: ``raw_score``,
``max_score``, ``late``, ``override``, ``comment``, ``score``), never from prose: the feedback
page and its Markdown (grader/feedback/markdown.py), the file in Canvas's feedback zip (that
Markdown) and Gradescope's results (grader/platforms/gradescope_late.py) say the same sentences,
with the same numbers the gradebook and the export hold.

The instructor's words (an override's reason, a comment) are shown as written, on one line.
"""

from __future__ import annotations


def number(value: float) -> str:
    """87.5 -> "87.5", 100.0 -> "100"."""
    return f"{round(float(value), 2):g}"


def _days(count: int) -> str:
    return f"{count} day{'s' if count != 1 else ''}"


def one_line(text: object) -> str:
    """An instructor's text on one line (a reason may hold line breaks in its CSV cell)."""
    return " ".join(str(text).split())


def adjusted(trail: dict) -> bool:
    """Whether anything but the tests made the final score, or an instructor wrote to the student."""
    return bool(late_taken(trail) or trail.get("override") or trail.get("comment"))


def late_taken(trail: dict) -> dict | None:
    """The trail's late record when the submission was late (an on-time record takes nothing)."""
    late = trail.get("late") or None
    return late if late and late.get("days_late") else None


def late_sentence(late: dict, *, points: bool = True) -> str:
    """How late, by which deadline, and what the course's policy took (``points``: how many points;
    without, the percent alone, where the total must not be shown yet)."""
    days, percent = int(late["days_late"]), number(late["percent"])
    if late.get("source") == "canvas marker":
        when = (
            f"Canvas marked your submission late, its time not known: counted as {_days(days)} late "
            f"(the course's rule for an unknown delay; the deadline: {late.get('deadline', '')})"
        )
    else:
        when = f"submitted {late.get('submitted_at', '')}, {_days(days)} late (the deadline: {late.get('deadline', '')})"
    taken = f"{percent}% of the points taken" + (f": {number(late['penalty'])} points" if points else "")
    return f"Late: {when}; {taken}."


def lines(trail: dict, *, totals: bool = True) -> list[str]:
    """The trail as sentences, the final score last; [] when the tests alone made the score and
    no instructor wrote. ``totals`` False: the tests' total is not shown yet (Gradescope's hidden
    checks), so only what the policy takes is said, in percent."""
    if not adjusted(trail):
        return []
    most = number(trail["max_score"])
    late, override = late_taken(trail), trail.get("override")
    said = [f"The tests: {number(trail['raw_score'])}/{most}."] if totals and (late or override) else []
    if late:
        said.append(late_sentence(late, points=totals))
    if override:
        said.append(f"Your instructor set the score to {number(override['score'])}/{most}: {one_line(override.get('reason', ''))}")
    if totals and (late or override):
        said.append(f"Final score: {number(trail['score'])}/{most}.")
    if comment := trail.get("comment"):
        said.append(f"Your instructor's comment: {one_line(comment)}")
    return said
