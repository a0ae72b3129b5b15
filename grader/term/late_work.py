"""Late work: when each student submitted, how late that is, and what the course's policy takes.

Submission times come, best first, from:
- ``submitted_at.csv`` (``[files] submitted_at``): ``student,submitted_at`` in ISO 8601 with
  its UTC offset, as any LMS can export;
- Gradescope's ``submission_metadata.json``: its ``created_at`` is the submission's time
  (https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/:
  ``"created_at": "2018-07-01T14:22:32.365935-07:00", // Submission time``), read by
  ``gradescope_submitted_at``;
- Canvas's ``LATE`` marker in the names of its "Download Submissions" zip, when nothing
  better is known: the delay is then unknown, and the policy's ``unknown_delay_days``
  counts it (the result says so).

The penalty: ``penalty_per_day`` percent of the points for each day or part of a day past
the deadline (the student's extension, if any) once ``grace_minutes`` have passed; later
than ``max_days``: the whole score. It is taken from the raw score, never below 0.
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import dataclass
from pathlib import Path

from grader.term import canvas_names
from grader.term.course import LatePolicy
from grader.term.identity import InstructorFileError, Keyed, normal, read_csv, read_entry_name, shown

def canvas_marked_late(file_name: str, lms: str | None = None) -> bool:
    """Whether a Canvas "Download Submissions" file name carries Canvas's late marker (read
    with the intake's one reading of those names, grader/term/canvas_names.py, which cites
    canvas-lms's lib/content_zipper.rb), where the course's LMS (``lms``) writes Canvas's names:
    a Moodle file a student named ``LATE_1_2_x.py`` is not Canvas's marker."""
    parsed = read_entry_name(file_name, lms)
    return isinstance(parsed, canvas_names.CanvasName) and parsed.late


class LateWorkError(InstructorFileError):
    """A submission-times file that cannot be used; the message names the file and the line."""


def parse_moment(text: str, where: str) -> datetime.datetime:
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise LateWorkError(f"{where}: {shown(text, 40)!r} is not a date and time in ISO 8601 with its UTC offset (2026-12-05T23:59:00-05:00)")
    return moment


@dataclass(frozen=True)
class SubmittedAt:
    at: datetime.datetime
    line: int  # in submitted_at.csv


HEADER = ("student", "submitted_at")
WHAT = "submission time"


def read_submitted_at(path: Path) -> dict[str, SubmittedAt]:
    """``student,submitted_at`` rows (a header line first), by the student's name as written
    (any of their names, or a submission's file name: grader/term/identity.py). Refused, all at
    once, each with its line: a row without a student or a time, a time without its UTC offset,
    the same name twice (a second row for one student under another of their names is refused
    when the names are resolved)."""
    try:
        rows = read_csv(path, HEADER)
    except InstructorFileError as error:
        raise LateWorkError(str(error)) from None
    times: dict[str, SubmittedAt] = {}
    first_line: dict[str, int] = {}
    problems = []
    for number, row in rows:
        if len(row) < 2 or not row[0].strip() or not row[1].strip():
            problems.append(f"{path}:{number}: a row needs a student and a time")
            continue
        student = row[0].strip()
        try:
            moment = parse_moment(row[1], f"{path}:{number}: {shown(student)}")
        except LateWorkError as error:
            problems.append(str(error))
            continue
        if normal(student) in first_line:
            problems.append(f"{path}:{number}: a second submission time for {shown(student)} (the first is on line {first_line[normal(student)]})")
            continue
        first_line[normal(student)] = number
        times[student] = SubmittedAt(moment, number)
    if problems:
        raise LateWorkError("\n".join(problems))
    return times


def keyed(path: Path, times: dict[str, SubmittedAt]) -> list[tuple[Keyed, datetime.datetime]]:
    """The rows as grader/term/identity.py resolves them."""
    return [(Keyed(str(path), time.line, student, WHAT), time.at) for student, time in times.items()]


def gradescope_submitted_at(path: Path) -> datetime.datetime:
    """The submission's time in Gradescope's ``/autograder/submission_metadata.json``."""
    try:
        metadata = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise LateWorkError(f"{path}: cannot be read ({error})") from None
    created = metadata.get("created_at") if isinstance(metadata, dict) else None
    if not isinstance(created, str):
        raise LateWorkError(f"{path}: no \"created_at\" string (Gradescope's submission time)")
    return parse_moment(created, f"{path}: created_at")


@dataclass(frozen=True)
class Lateness:
    source: str  # "submitted_at.csv", "gradescope", "canvas marker"
    submitted_at: str  # ISO 8601, "" when unknown
    deadline: str  # the one that applied (an extension, if any)
    days_late: int  # days or parts of a day past the deadline and its grace; 0: on time
    percent: float  # of the points, taken by the policy (100: all)
    note: str  # one sentence for the instructor and the student

    def to_dict(self) -> dict:
        return {
            "source": self.source, "submitted_at": self.submitted_at, "deadline": self.deadline,
            "days_late": self.days_late, "percent": self.percent, "note": self.note,
        }


def lateness(
    submitted_at: datetime.datetime | None, marked_late: bool, source: str, deadline: datetime.datetime,
    policy: LatePolicy, extended: bool = False, times_file: str | None = None,
) -> Lateness | None:
    """How late one submission is and what the policy takes; None when nothing is known.
    ``times_file``: the submission times the course gives (then a student without a row in it
    is said to have none there, rather than told to give one)."""
    whose = "the extension's deadline" if extended else "the deadline"
    if submitted_at is None:
        if not marked_late:
            return None
        give = f"{times_file} has no row for this student" if times_file else "give submitted_at.csv for the exact time"
        if extended:
            # Canvas judged the submission against Canvas's due date, not this course file's
            # extension: nothing says it was late against the extension, so nothing is taken.
            note = (
                f"marked late by Canvas, but this student has an extension ({deadline.isoformat()}) and no submission time "
                f"is known: nothing taken; {give}"
            )
            return Lateness("canvas marker", "", deadline.isoformat(), 0, 0.0, note)
        days = policy.unknown_delay_days
        percent = _percent(days, policy)
        note = (
            f"marked late by Canvas, with no submission time known: counted as {days} day{'s' if days != 1 else ''} late "
            f"by the course's rule for an unknown delay ({percent:g}% of the points); {give}"
        )
        return Lateness("canvas marker", "", deadline.isoformat(), days, percent, note)
    past = submitted_at - deadline - datetime.timedelta(minutes=policy.grace_minutes)
    if past <= datetime.timedelta(0):
        return Lateness(source, submitted_at.isoformat(), deadline.isoformat(), 0, 0.0, f"on time ({whose}: {deadline.isoformat()})")
    days = math.ceil(past / datetime.timedelta(days=1))  # a part of a day counts as a day
    percent = _percent(days, policy)
    note = f"{days} day{'s' if days != 1 else ''} late ({whose}: {deadline.isoformat()}): {percent:g}% of the points taken"
    return Lateness(source, submitted_at.isoformat(), deadline.isoformat(), days, percent, note)


def _percent(days: int, policy: LatePolicy) -> float:
    if policy.max_days is not None and days > policy.max_days:
        return 100.0
    return min(100.0, days * policy.penalty_per_day)


def penalty_points(percent: float, max_score: int, raw_score: float) -> float:
    """Points taken for ``percent`` of the points: never more than the raw score."""
    points = min(raw_score, round(max_score * percent / 100, 2))
    return int(points) if float(points).is_integer() else points
