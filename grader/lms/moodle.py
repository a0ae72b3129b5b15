"""Moodle behind the LMS interface (grader/lms/protocol.py), each format in a module of its own
citing moodle/moodle: the download's names (grader/lms/moodle_names.py), the grading
worksheet as the roster, with its submission times and extensions, and written back with the
grades (grader/term/lms_files/moodle_worksheet.py), and the feedback files' zip (grader/lms/moodle_feedback.py).

The grade sent is the final score (grader/term/grade_trail.py: the checks, the late policy, the
overrides) on the assignment's own scale, the worksheet's ``Maximum grade``, never above it; the
comment beside it says the raw score, each adjustment and the final score, so a student reading
Moodle sees where their grade came from.
"""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path

from grader.lms import moodle_feedback
from grader.lms.cells import neutralise, number
from grader.term.lms_files import moodle_worksheet
from grader.lms.feedback_zip import FeedbackZip
from grader.term import course_inputs
from grader.term import roster as roster_file
from grader.term.identity import Match
from grader.term.roster import RosterError


class Moodle:
    kind, title, grades_format = "moodle", "Moodle", "moodle"

    def read_roster(self, path: Path) -> list[dict[str, str]]:
        return roster_file.read_roster_of(self.kind, path)

    def known_times(self, path: Path, course) -> course_inputs.KnownTimes:
        return course_inputs.known_times(self.kind, path, course)

    def write_grades(self, roster: Path, found: Match, submissions: dict[str, dict], assignment: str | None,
                     points: float | None) -> tuple[str, list[str]]:
        worksheet = roster_file.read_worksheet(roster)
        maximum = maximum_of(worksheet)
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
                cells[index][moodle_worksheet.COMMENTS] = comment_cell(comment(document, grade, maximum, number))
        return written(worksheet, cells, neutralise), notes

    def write_feedback_zip(self, target: Path, out: Path, submissions: dict[str, dict], found: Match,
                           originals: Path | None) -> FeedbackZip:
        rows_of = {sid: found.rows[row] for row, sid in found.submission_of_row.items()}
        return moodle_feedback.write_feedback_zip(target, out, submissions, rows_of, found.not_on_roster)

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


# --- the worksheet written back -------------------------------------------------------------


def maximum_of(worksheet: moodle_worksheet.Worksheet) -> float:
    """The assignment's maximum grade, as every row of the worksheet gives it; ``RosterError`` for a
    scale or a worksheet without it."""
    if moodle_worksheet.SCALE in worksheet.header and moodle_worksheet.MAXIMUM not in worksheet.header:
        raise RosterError(
            f"{worksheet.path}: the assignment is graded on a scale ({moodle_worksheet.SCALE} column): give it a maximum grade in points"
        )
    values = {row.get(moodle_worksheet.MAXIMUM, "").strip() for row in worksheet.rows} - {""}
    try:
        numbers = {float(value.replace(",", "")) for value in values}
    except ValueError:
        raise RosterError(f"{worksheet.path}: {moodle_worksheet.MAXIMUM} is not a number ({', '.join(sorted(values))[:80]})") from None
    if len(numbers) != 1:
        problem = "missing" if not numbers else "not the same on every row"
        raise RosterError(f"{worksheet.path}: {moodle_worksheet.MAXIMUM} is {problem}: download the worksheet again")
    return numbers.pop()


def comment_cell(text: str) -> str:
    """A comment as Moodle's Feedback comments holds it: HTML (the editor's format), so escaped."""
    return html.escape(text, quote=False)


def written(worksheet: moodle_worksheet.Worksheet, cells: dict[int, dict[str, str]], neutralise) -> str:
    """The worksheet as downloaded with ``cells`` (row index -> column -> value) put in; every other
    text cell through ``neutralise`` (a spreadsheet's formula rule; Moodle reads none of them),
    the columns the upload reads as they were."""
    # What Moodle wrote, or reads back: as it was. (Full name, email and the like: text a student may set.)
    kept_as_is = {moodle_worksheet.IDENTIFIER, moodle_worksheet.GRADE, moodle_worksheet.GRADED_AT, moodle_worksheet.COMMENTS,
                  moodle_worksheet.MAXIMUM, moodle_worksheet.SUBMITTED}
    buffer = io.StringIO()
    table = csv.writer(buffer)
    table.writerow(worksheet.header)
    for index, row in enumerate(worksheet.rows):
        given = cells.get(index, {})
        table.writerow([
            given[column] if column in given else (row.get(column, "") if column in kept_as_is else neutralise(row.get(column, "")))
            for column in worksheet.header
        ])
    return buffer.getvalue()


MOODLE = Moodle()
