"""Canvas behind the LMS interface (grader/lms/protocol.py): its formats as they were, each read
where it always was and citing canvas-lms there: the gradebook CSV (grader/term/roster.py), the
download's names (grader/term/canvas_names.py), the gradebook import (grader/lms/export.py
``canvas_csv``) and "Re-Upload Submissions" (grader/lms/feedback_zip.py). Canvas's gradebook holds
no submission times: a course gives them in ``submitted_at.csv``, and Canvas's ``LATE`` marker in
its file names is read by the late policy (grader/term/late_work.py)."""

from __future__ import annotations

from pathlib import Path

from grader.lms import feedback_zip
from grader.lms.protocol import KnownTimes
from grader.term import roster
from grader.term.identity import Match


class Canvas:
    kind, title, grades_format = "canvas", "Canvas", "canvas"

    def looks_like_roster(self, header: list[str]) -> bool:
        return any(column in header for column in roster.MATCHED_BY)

    def read_roster(self, path: Path) -> list[dict[str, str]]:
        return roster.read_roster(path)

    def known_times(self, path: Path, course) -> KnownTimes:
        return KnownTimes()

    def write_grades(self, roster_path: Path, found: Match, submissions: dict[str, dict], assignment: str | None,
                     points: float | None) -> tuple[str, list[str]]:
        from grader.lms import export  # the command's module holds the gradebook import's writer

        return export.canvas_csv(found, submissions, assignment, 100.0 if points is None else points), []

    def write_feedback_zip(self, target: Path, out: Path, submissions: dict[str, dict], found: Match,
                           originals: Path | None) -> feedback_zip.FeedbackZip:
        return feedback_zip.write_feedback_zip(target, out, submissions, originals)

    def feedback_zip_said(self) -> str:
        return ("for Canvas's Re-Upload Submissions (each student's file with their feedback in front; Canvas attaches it "
                "as a comment under the file's name)")


CANVAS = Canvas()
