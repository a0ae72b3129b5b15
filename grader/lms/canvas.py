"""Canvas behind the LMS interface (grader/lms/protocol.py): its formats as they were, each read
where it always was and citing canvas-lms there: the gradebook CSV (grader/term/roster.py), the
download's names (grader/term/canvas_names.py), the gradebook import (``canvas_csv``, below) and
"Re-Upload Submissions" (grader/lms/feedback_zip.py). Canvas's gradebook holds
no submission times: a course gives them in ``submitted_at.csv``, and Canvas's ``LATE`` marker in
its file names is read by the late policy (grader/term/late_work.py)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from grader.lms import feedback_zip
from grader.lms.cells import neutralise, number, scaled
from grader.term import course_inputs, identity, roster
from grader.term.identity import Match


class Canvas:
    kind, title, grades_format = "canvas", "Canvas", "canvas"

    def read_roster(self, path: Path) -> list[dict[str, str]]:
        return roster.read_roster_of(self.kind, path)

    def known_times(self, path: Path, course) -> course_inputs.KnownTimes:
        return course_inputs.known_times(self.kind, path, course)

    def write_grades(self, roster_path: Path, found: Match, submissions: dict[str, dict], assignment: str | None,
                     points: float | None) -> tuple[str, list[str]]:
        return canvas_csv(found, submissions, assignment, 100.0 if points is None else points), []

    def write_feedback_zip(self, target: Path, out: Path, submissions: dict[str, dict], found: Match,
                           originals: Path | None) -> feedback_zip.FeedbackZip:
        return feedback_zip.write_feedback_zip(target, out, submissions, originals)

    def feedback_zip_said(self) -> str:
        return ("for Canvas's Re-Upload Submissions (each student's file with their feedback in front; Canvas attaches it "
                "as a comment under the file's name)")


# Canvas's gradebook import (canvas-lms lib/gradebook_importer.rb reads what lib/gradebook_exporter.rb writes).
def canvas_csv(found: identity.Match, submissions: dict[str, dict], assignment: str, points: float) -> str:
    buffer = io.StringIO()
    table = csv.writer(buffer)
    table.writerow([*roster.COLUMNS, assignment])
    table.writerow([f"    {roster.POINTS_POSSIBLE}", "", "", "", "", number(points)])
    for index, row in enumerate(found.rows):
        sid = found.submission_of_row.get(index)
        score = scaled(submissions[sid], points) if sid in submissions else ""
        table.writerow([*(neutralise(row.get(column, "")) for column in roster.COLUMNS), score])
    return buffer.getvalue()


CANVAS = Canvas()
