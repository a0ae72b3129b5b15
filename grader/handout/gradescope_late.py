"""Late work on Gradescope: the course's policy carried in the autograder zip, applied to each run.

Building, the course file's deadline, late policy and extensions (grader/batch/course.py) are
written into the zip as ``late_policy.json`` (it lands in ``/autograder/source``). Grading,
the submission's time is Gradescope's ``created_at`` in ``/autograder/submission_metadata.json``
(https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/: "created_at":
"Submission time"; "users": each with "email", "id", "name"), read by
grader/batch/late_work.py. The penalty is the batch's (per day or part of a day, grace,
max_days); results.json's top-level ``score`` is the final one (Gradescope's schema: a
top-level score is used instead of the tests' sum), and a visible entry says how late and why.
An extension is found by a student's email, or the part of it before the "@".
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from grader.batch import late_work
from grader.batch.course import Course, LatePolicy

POLICY_FILE = "late_policy.json"


def policy_document(course: Course | None) -> dict | None:
    """What the zip carries, or None when the course sets no deadline."""
    if course is None or course.deadline is None:
        return None
    late = course.late
    return {
        "deadline": course.deadline.isoformat(),
        "extensions": {student: deadline.isoformat() for student, deadline in course.extensions.items()},
        "penalty_per_day": late.penalty_per_day, "max_days": late.max_days,
        "grace_minutes": late.grace_minutes, "unknown_delay_days": late.unknown_delay_days,
    }


def apply(report: dict, source: Path, metadata: Path) -> dict:
    """``report`` (Gradescope's results.json) with the late penalty taken, when the zip carries a
    policy; unchanged otherwise."""
    try:
        policy = json.loads((Path(source) / POLICY_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return report
    try:
        submitted = late_work.gradescope_submitted_at(metadata)
    except late_work.LateWorkError as error:  # never a reason to lose the grade: no penalty, and said
        note = {"name": "Late work: no submission time", "score": 0.0, "max_score": 0.0, "status": "failed",
                "output": f"{error}: no late penalty taken", "visibility": "hidden"}
        return report | {"tests": [*report.get("tests", []), note]}
    users = json.loads(Path(metadata).read_text(encoding="utf-8")).get("users") or []
    names = {str(user.get(key, "")) for user in users if isinstance(user, dict) for key in ("email", "id")}
    names |= {name.split("@", 1)[0] for name in names if "@" in name}
    extended = sorted(names & set(policy["extensions"]))
    deadline = datetime.datetime.fromisoformat(policy["extensions"][extended[0]] if extended else policy["deadline"])
    rules = LatePolicy(policy["penalty_per_day"], policy["max_days"], policy["grace_minutes"], policy["unknown_delay_days"])
    lateness = late_work.lateness(submitted, False, "gradescope", deadline, rules, extended=bool(extended))
    most = sum(test.get("max_score", 0.0) for test in report.get("tests", []))
    penalty = float(late_work.penalty_points(lateness.percent, most, report["score"]))
    entry = {
        "name": "Late work", "score": 0.0, "max_score": 0.0, "status": "passed" if penalty == 0 else "failed",
        "output": f"{lateness.note}" + (f": {penalty:g} points off the {report['score']:g} the tests gave." if penalty else "."),
        "visibility": "visible",
    }
    return report | {"score": report["score"] - penalty, "tests": [*report.get("tests", []), entry]}
