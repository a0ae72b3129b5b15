"""Moodle behind the LMS interface (grader/lms/protocol.py), each format in a module of its own
citing moodle/moodle: the download's names (grader/lms/moodle_download.py), the grading
worksheet as the roster, with its submission times and extensions, and written back with the
grades (grader/lms/moodle_worksheet.py), and the feedback files' zip (grader/lms/moodle_feedback.py).

The grade sent is the final score (grader/term/grade_trail.py: the checks, the late policy, the
overrides) on the assignment's own scale, the worksheet's ``Maximum grade``, never above it; the
comment beside it says the raw score, each adjustment and the final score, so a student reading
Moodle sees where their grade came from.
"""

from __future__ import annotations

from pathlib import Path

from grader.lms import moodle_feedback, moodle_worksheet
from grader.lms.feedback_zip import FeedbackZip
from grader.lms.protocol import KnownTimes
from grader.term.identity import Match
from grader.term.roster import RosterError


class Moodle:
    kind, title, grades_format = "moodle", "Moodle", "moodle"

    def looks_like_roster(self, header: list[str]) -> bool:
        return moodle_worksheet.looks_like_worksheet(header)

    def read_roster(self, path: Path) -> list[dict[str, str]]:
        return moodle_worksheet.read_worksheet(path).rows

    def known_times(self, path: Path, course) -> KnownTimes:
        where = f"{course.path}:{course.lines.get(('assignment', 'timezone'), 1)}" if course is not None else "the course file"
        zone = course.get("assignment", "timezone") if course is not None else None
        return moodle_worksheet.known_times(moodle_worksheet.read_worksheet(path), zone, where)

    def write_grades(self, roster: Path, found: Match, submissions: dict[str, dict], assignment: str | None,
                     points: float | None) -> tuple[str, list[str]]:
        from grader.lms.export import neutralise, number  # the export's cells: one rule for every LMS

        worksheet = moodle_worksheet.read_worksheet(roster)
        maximum = moodle_worksheet.maximum_of(worksheet)
        if points is not None and abs(points - maximum) > 1e-9:
            raise RosterError(
                f"the points given ({number(points)}: --points or [assignment] points) are not Moodle's Maximum grade "
                f"({number(maximum)}) in {roster}: set points = {number(maximum)}, or change the assignment's maximum in Moodle"
            )
        notes = []
        if moodle_worksheet.GRADE not in worksheet.header or moodle_worksheet.GRADED_AT not in worksheet.header:
            raise RosterError(f"{roster} has no {moodle_worksheet.GRADE} or {moodle_worksheet.GRADED_AT} column: "
                              "download the grading worksheet again (Moodle's upload finds its rows by them)")
        with_comments = moodle_worksheet.COMMENTS in worksheet.header
        if not with_comments:
            notes.append(f"{roster} has no {moodle_worksheet.COMMENTS} column: the grades are sent without a comment "
                         "(enable \"Feedback comments\" in the assignment's settings and download the worksheet again to send them)")
        cells = {}
        for index, sid in found.submission_of_row.items():
            document = submissions.get(sid)
            if not document or not document.get("max_score"):
                continue  # graded nowhere (the grading failed): the row is left as Moodle wrote it
            grade = min(maximum, max(0.0, document["score"] / document["max_score"] * maximum))
            cells[index] = {moodle_worksheet.GRADE: number(grade)}
            if with_comments:
                cells[index][moodle_worksheet.COMMENTS] = moodle_worksheet.comment_cell(comment(document, grade, maximum, number))
        return moodle_worksheet.written(worksheet, cells, neutralise), notes

    def write_feedback_zip(self, target: Path, out: Path, submissions: dict[str, dict], found: Match,
                           originals: Path | None) -> FeedbackZip:
        rows_of = {sid: found.rows[row] for row, sid in found.submission_of_row.items()}
        return moodle_feedback.write_feedback_zip(target, out, submissions, rows_of)

    def feedback_zip_said(self) -> str:
        return ("for Moodle's \"Upload multiple feedback files in a zip\" (each student's feedback page, a feedback file "
                "of their grade)")


def comment(document: dict, grade: float, maximum: float, number) -> str:
    """The grade's trail in one line: the raw score, each adjustment and the final score."""
    max_score = document["max_score"]
    parts = [f"Autograder: raw score {number(document.get('raw_score', document['score']))} of {max_score}"]
    late = document.get("late") or {}
    if late.get("penalty"):
        parts.append(f"late penalty -{number(late['penalty'])} ({late.get('note', '')})")
    override = document.get("override") or {}
    if override.get("score") is not None:
        parts.append(f"override {number(override['score'])}" + (f" ({override['reason']})" if override.get("reason") else ""))
    parts.append(f"final score {number(document['score'])} of {max_score}, {number(grade)} of {number(maximum)} here")
    if document.get("comment"):
        parts.append(str(document["comment"]))
    return "; ".join(parts) + "."


MOODLE = Moodle()
