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

import csv
import datetime
import json
import math
from dataclasses import dataclass
from pathlib import Path

from grader.batch import canvas_names
from grader.batch.course import LatePolicy

def canvas_marked_late(file_name: str) -> bool:
    """Whether a Canvas "Download Submissions" file name carries Canvas's late marker (read
    with the intake's one reading of those names, grader/batch/canvas_names.py, which cites
    canvas-lms's lib/content_zipper.rb)."""
    parsed = canvas_names.parse_canvas_name(file_name)
    return bool(parsed and parsed.late)


class LateWorkError(ValueError):
    """A submission-times file that cannot be used; the message names the file and the line."""


def parse_moment(text: str, where: str) -> datetime.datetime:
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise LateWorkError(f"{where}: {text!r} is not a date and time in ISO 8601 with its UTC offset (2026-12-05T23:59:00-05:00)")
    return moment


def read_submitted_at(path: Path) -> dict[str, datetime.datetime]:
    """``student,submitted_at`` rows (a header line first)."""
    times: dict[str, datetime.datetime] = {}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        rows = csv.reader(handle)
        header = [cell.strip().casefold() for cell in next(rows, [])]
        if header[:2] != ["student", "submitted_at"]:
            raise LateWorkError(f"{path}:1: the first line must be the header student,submitted_at (found {','.join(header)!r})")
        for number, row in enumerate(rows, start=2):
            if not any(cell.strip() for cell in row):
                continue
            if len(row) < 2 or not row[0].strip():
                raise LateWorkError(f"{path}:{number}: a row needs a student and a time")
            times[row[0].strip()] = parse_moment(row[1], f"{path}:{number}")
    return times


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
    policy: LatePolicy, extended: bool = False,
) -> Lateness | None:
    """How late one submission is and what the policy takes; None when nothing is known."""
    whose = "the extension's deadline" if extended else "the deadline"
    if submitted_at is None:
        if not marked_late:
            return None
        days = policy.unknown_delay_days
        percent = _percent(days, policy)
        note = (
            f"marked late by Canvas, with no submission time known: counted as {days} day{'s' if days != 1 else ''} late "
            f"by the course's rule for an unknown delay ({percent:g}% of the points); give submitted_at.csv for the exact time"
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
