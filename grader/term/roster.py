"""The class roster: the gradebook CSV exported from Canvas, or Moodle's grading worksheet, read.

Canvas writes it in lib/gradebook_exporter.rb: a header ``Student,ID,SIS User ID,SIS Login
ID,Section`` and the assignments' columns, a "Points Possible" row (and, when some assignment
is muted, a row for that), then one row per student. Which submission, or which name in an
instructor's file, is whose row: grader/term/identity.py, the one rule for every file.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from grader.term import instructor_files
from grader.term.lms_files import moodle_names, moodle_worksheet
from grader.term.lms_files.moodle_worksheet import EMAIL, IDENTIFIER


STUDENT, ID, SIS_USER_ID, SIS_LOGIN_ID, SECTION = "Student", "ID", "SIS User ID", "SIS Login ID", "Section"
COLUMNS = (STUDENT, ID, SIS_USER_ID, SIS_LOGIN_ID, SECTION)
MATCHED_BY = (SIS_LOGIN_ID, SIS_USER_ID, ID)  # the ids a row is known by
POINTS_POSSIBLE = "Points Possible"  # the second row of Canvas's exports (four spaces before it)
NAME_IN_FILES = "name in Canvas's file names"  # grader/term/identity.py computes it; another LMS's row gives it
# Moodle's grading worksheet names a student by these too (``moodle_rows`` maps its rows onto the
# columns above and keeps these): "Participant 2931512" and the email.
OTHER_LMS_NAMES = (IDENTIFIER, EMAIL)


class RosterError(ValueError):
    """A roster that cannot be used: the message says why, for the instructor."""


def read_roster(path: Path) -> list[dict[str, str]]:
    """The students of a Canvas gradebook export (its "Points Possible" and muted rows left out).
    ``RosterError``: one line per problem, each beginning with ``path``."""
    path = Path(path)
    text = roster_text(path)  # Canvas may write a byte-order mark (CSVWithI18n's include_bom)
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [name.strip() for name in reader.fieldnames or []]
        if not any(column in header for column in MATCHED_BY):
            raise RosterError(f"{path} has none of the columns {', '.join(MATCHED_BY)}: is it a Canvas gradebook export?")
        repeated = sorted({name for name in header if name and header.count(name) > 1})
        if repeated:  # a hand-edited file: which of the two holds the students' ids is a guess
            raise RosterError(f"{path} has more than one column named {', '.join(repeated)}: keep one of each")
        reader.fieldnames = header
        rows = [({column: (row.get(column) or "").strip() for column in header}, reader.line_num) for row in reader]
    except csv.Error as error:  # a cell over the csv module's limit (128 kB)
        raise RosterError(f"{path} could not be read as CSV at line {reader.line_num}: {error}") from None
    students = [(row, line) for row, line in rows if _is_student(row)]
    _refuse_an_id_twice(path, students)
    return [row for row, _ in students]


def roster_text(path: Path) -> str:
    """A roster's text: a regular file, bounded, UTF-8, its byte-order mark dropped; ``RosterError`` naming it."""
    try:
        return instructor_files.read_text(path)
    except instructor_files.UnreadableFile as error:
        raise RosterError(error.message(path)) from None


def _refuse_an_id_twice(path: Path, students: list[tuple[dict[str, str], int]]) -> None:
    """Canvas gives each student one row (GradebookExporter keeps one enrollment per user) and
    each of these ids to one user: two rows with one ``ID``, ``SIS User ID`` or ``SIS Login ID``
    are a hand-edited or merged file, in which whose row is whose is a guess. "One" as the
    resolver compares names (``instructor_files.normal``: case, spaces and Unicode's spelling
    aside), so no two rows pass here that a name would then match both of."""
    problems = []
    for column in MATCHED_BY:
        first: dict[str, int] = {}
        for row, line in students:
            value = row.get(column, "")
            if not instructor_files.normal(value):
                continue
            if instructor_files.normal(value) in first:
                problems.append(
                    f"{path}:{line}: {column} {value[:60]!r} is also on line {first[instructor_files.normal(value)]} "
                    "(as names are compared: case, spaces and Unicode's spelling aside): one row per student "
                    "(a roster merged from two exports, or edited by hand?)"
                )
            else:
                first[instructor_files.normal(value)] = line
    if problems:
        raise RosterError("\n".join(problems))


def describe(row: dict[str, str]) -> str:
    """A roster row in a line: name and the ids it can be matched by."""
    if row.get(IDENTIFIER):  # Moodle's worksheet: its own words for the ids
        ids = ", ".join(row[column] for column in (IDENTIFIER, EMAIL) if row.get(column))
        return f"{row.get(STUDENT) or '(no name)'} ({ids})"
    ids = ", ".join(f"{column} {row[column]}" for column in MATCHED_BY if row.get(column))
    return f"{row.get(STUDENT) or '(no name)'} ({ids or 'no id'})"


def _is_student(row: dict[str, str]) -> bool:
    if row.get(STUDENT, "") == POINTS_POSSIBLE:  # stripped already: "    Points Possible"
        return False
    return any(row.get(column) for column in (STUDENT, *MATCHED_BY))


# --- which LMS wrote the roster (grader/lms/ holds each LMS's module) ---------------------------

TITLES = {"canvas": "Canvas", "moodle": "Moodle"}


@dataclass(frozen=True)
class Chosen:
    """The course's LMS, and why: the course file's ``[lms] kind``, else recognised from the
    roster's columns (Moodle's worksheet has ``Identifier``; Canvas's gradebook ``ID`` and its SIS
    columns), else Canvas, as before there was a choice."""

    kind: str  # "canvas", "moodle"
    why: str  # "course.toml [lms] kind", "recognised from worksheet.csv's columns"

    @property
    def title(self) -> str:
        return TITLES[self.kind]

    def said(self) -> str:
        return f"LMS: {self.title} ({self.why})"


def kind_of_rows(rows: list[dict[str, str]] | None) -> str | None:
    """The LMS whose roster these rows are (``read_roster_of``'s): Moodle's keep its ``Identifier``."""
    if not rows:
        return None
    return "moodle" if any(IDENTIFIER in row for row in rows) else "canvas"


def recognise(header: list[str]) -> str | None:
    """The LMS whose roster has this header (Moodle's columns are the more particular: asked first)."""
    if moodle_worksheet.looks_like_worksheet(header):
        return "moodle"
    return "canvas" if any(column in header for column in MATCHED_BY) else None


def choose(course, path: Path | None) -> Chosen:
    """The course's LMS (``Chosen``); ``RosterError`` when the course file names one LMS and the
    roster is the other's."""
    header = _header(path) if path is not None else None
    recognised = recognise(header) if header is not None else None
    kind = course.get("lms", "kind") if course is not None else None
    if kind is not None:
        if recognised is not None and recognised != kind:
            what = "grading worksheet" if recognised == "moodle" else "gradebook export"
            raise RosterError(
                f"{course.path}: [lms] kind = {kind!r}, but the roster {path} is {TITLES[recognised]}'s ({what}): "
                f"give {TITLES[kind]}'s, or change the kind"
            )
        return Chosen(kind, f"{course.path.name} [lms] kind")
    if recognised is not None:
        return Chosen(recognised, f"recognised from {Path(path).name}'s columns")
    return Chosen("canvas", "the default: no [lms] kind in a course file, no roster to recognise")


def read_roster_of(kind: str, path: Path) -> list[dict[str, str]]:
    """The students of ``kind``'s roster, each a row with this module's columns; ``RosterError``."""
    if kind != "moodle":
        return read_roster(path)
    worksheet = read_worksheet(path)
    rows = moodle_rows(worksheet)
    _refuse_an_id_twice(Path(path), list(zip(rows, worksheet.lines)))  # a site's Username or ID number twice, as compared
    return rows


def read_worksheet(path: Path) -> moodle_worksheet.Worksheet:
    try:
        return moodle_worksheet.read_worksheet(Path(path), roster_text(Path(path)))
    except moodle_worksheet.WorksheetError as error:
        raise RosterError(str(error)) from None


USERNAME_AND_ID_NUMBER = ((moodle_worksheet.USERNAME, SIS_LOGIN_ID), (moodle_worksheet.ID_NUMBER, SIS_USER_ID))


def moodle_rows(worksheet: moodle_worksheet.Worksheet) -> list[dict[str, str]]:
    """The worksheet's rows with the names the identity resolver compares (grader/term/identity.py):
    the participant id as the LMS's user id (the number in the download's names), the full name as
    the student's name and as the zip writes it, a site's username and ID number as login and SIS id."""
    rows = []
    for row, participant in zip(worksheet.rows, worksheet.participants):
        named = dict(row) | {ID: participant, STUDENT: row.get(moodle_worksheet.FULL_NAME, "")}
        named[NAME_IN_FILES] = moodle_names.name_in_files(named[STUDENT])
        for column, alias in USERNAME_AND_ID_NUMBER:
            if row.get(column):
                named[alias] = row[column]
        rows.append(named)
    return rows


def _header(path: Path) -> list[str] | None:
    """The roster's first line, or None when it cannot be read (its reader says why)."""
    try:
        return [cell.strip() for cell in next(csv.reader(io.StringIO(instructor_files.read_text(Path(path)), newline="")), [])]
    except (instructor_files.UnreadableFile, csv.Error, OSError):
        return None
