"""Late work on Gradescope: the course's policy carried in the autograder zip, applied to each run.

Building, the course file's deadline, late policy and extensions (grader/term/course.py) are
written into the zip as ``late_policy.json`` (it lands in ``/autograder/source``). Grading,
the submission's time is Gradescope's ``created_at`` in ``/autograder/submission_metadata.json``
(https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/: "created_at":
"Submission time"; "users": each with "email", "id", "name"), read by
grader/term/late_work.py. The penalty is the batch's, taken by the batch's one function
(grader/term/grade_trail.py's adjust: per day or part of a day, grace, max_days, never more than
the raw score). results.json's top-level ``score`` is the final one: Gradescope's schema
(gradescope/autograder_samples, docs/specs.md, "Output format": ``"score"`` "Overrides total of
tests if specified"). What the student reads says the same: the top-level ``"output"`` ("Text
relevant to the entire submission", the only place besides the tests a student reads, ibid.)
starts with the trail (the tests' score, how late, the percent and the points taken, the final
score: grader/feedback/trail_text.py), and a visible "Late work" entry says how late and what
was taken. Where the hidden checks are not shown yet, Gradescope shows no total ("If test cases
are hidden, students will not be able to see their total score", ibid.): the trail then says the
days and the percent only, since the points would tell the hidden checks' score. The trail is
also kept in ``extra_data`` for instructors.

An extension is found by a submitter's email, the part of it before the "@", or Gradescope's
user id (the users' fields Gradescope gives, ibid.), compared as grader/term/identity.py
compares names. The course file may name the student by any of their names: with its roster,
each extension's name is resolved when the zip is built, by the batch's one resolver
(grader/term/identity.py), and the student's ``SIS Login ID`` (Canvas's login, which is what
an email or its first part says) goes into the zip beside the name as written; a name the
roster does not resolve (nobody, or several students) stops the build, as it stops the batch.
A roster's name ("Doe, Jane") is not compared with Gradescope's "name" (another spelling,
"Jane Doe", and not unique).
"""

from __future__ import annotations

import datetime
import html
import json
from pathlib import Path

from grader.term import grade_trail, late_work
from grader.term.course import Course, LatePolicy
from grader.term.identity import normal
from grader.feedback import trail_text

POLICY_FILE = "late_policy.json"


def policy_document(course: Course | None) -> dict | None:
    """What the zip carries, or None when the course sets no deadline."""
    if course is None or course.deadline is None:
        return None
    late = course.late
    return {
        "deadline": course.deadline.isoformat(),
        "extensions": extension_names(course),
        "penalty_per_day": late.penalty_per_day, "max_days": late.max_days,
        "grace_minutes": late.grace_minutes, "unknown_delay_days": late.unknown_delay_days,
    }


def extension_names(course: Course) -> dict[str, str]:
    """Each extension's deadline under the names a submission's users can be matched by: the
    name as written, and with the course's roster the student's SIS Login ID; raises
    ``course_inputs.Refused`` naming every extension the roster does not resolve."""
    from grader.term import course_inputs, identity, roster

    names = {student: deadline.isoformat() for student, deadline in course.extensions.items()}
    inputs = course_inputs.read(course)
    if inputs.rows is None or not names:
        return names
    identities = identity.Identities(inputs.rows)
    extensions = identity.assign(identities, inputs.keyed_extensions())
    if extensions.errors:
        raise course_inputs.Refused(extensions.errors)
    for student_key, (keyed, deadline) in extensions.by_student.items():
        login = inputs.rows[extensions.students[student_key].row].get(roster.SIS_LOGIN_ID, "").strip()
        if login:
            names.setdefault(login, deadline.isoformat())
    return names


def apply(report: dict, source: Path, metadata: Path, *, totals_shown: bool = True) -> dict:
    """``report`` (Gradescope's results.json) with the late penalty taken, when the zip carries a
    policy; unchanged otherwise. ``totals_shown``: the hidden checks are visible at once, so the
    student may read the points (else the days and the percent only)."""
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
    names = {normal(name) for name in names | {name.split("@", 1)[0] for name in names if "@" in name} if name}
    extensions = {normal(name): deadline for name, deadline in policy["extensions"].items()}
    extended = sorted(names & set(extensions))
    deadline = datetime.datetime.fromisoformat(extensions[extended[0]] if extended else policy["deadline"])
    rules = LatePolicy(policy["penalty_per_day"], policy["max_days"], policy["grace_minutes"], policy["unknown_delay_days"])
    lateness = late_work.lateness(submitted, False, "gradescope", deadline, rules, extended=bool(extended))
    most = sum(test.get("max_score", 0.0) for test in report.get("tests", []))
    trail = grade_trail.adjust(report["score"], most, lateness, None).fields
    late = trail["late"]
    said = trail_text.late_sentence(late, points=totals_shown) if late["days_late"] else f"{lateness.note}."
    entry = {
        "name": "Late work", "score": 0.0, "max_score": 0.0, "status": "passed" if late["penalty"] == 0 else "failed",
        "output": said, "visibility": "visible",
    }
    summary = "\n".join(trail_text.lines(trail, totals=totals_shown))
    output = f"{html.escape(summary)}\n\n{report.get('output', '')}" if summary else report.get("output", "")
    return report | {
        "score": float(trail["score"]), "output": output, "tests": [*report.get("tests", []), entry],
        "extra_data": report.get("extra_data", {}) | {"trail": trail},
    }
