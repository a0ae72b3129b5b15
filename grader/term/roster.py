"""The class roster: the gradebook CSV exported from Canvas, read.

Canvas writes it in lib/gradebook_exporter.rb: a header ``Student,ID,SIS User ID,SIS Login
ID,Section`` and the assignments' columns, a "Points Possible" row (and, when some assignment
is muted, a row for that), then one row per student. Which submission, or which name in an
instructor's file, is whose row: grader/term/identity.py, the one rule for every file.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from grader.term import instructor_files


STUDENT, ID, SIS_USER_ID, SIS_LOGIN_ID, SECTION = "Student", "ID", "SIS User ID", "SIS Login ID", "Section"
COLUMNS = (STUDENT, ID, SIS_USER_ID, SIS_LOGIN_ID, SECTION)
MATCHED_BY = (SIS_LOGIN_ID, SIS_USER_ID, ID)  # the ids a row is known by
POINTS_POSSIBLE = "Points Possible"  # the second row of Canvas's exports (four spaces before it)


class RosterError(ValueError):
    """A roster that cannot be used: the message says why, for the instructor."""


def read_roster(path: Path) -> list[dict[str, str]]:
    """The students of a Canvas gradebook export (its "Points Possible" and muted rows left out).
    ``RosterError``: one line per problem, each beginning with ``path``."""
    path = Path(path)
    try:
        # A regular file, bounded, UTF-8; Canvas may write a byte-order mark (CSVWithI18n's include_bom)
        text = instructor_files.read_text(path)
    except instructor_files.UnreadableFile as error:
        raise RosterError(error.message(path)) from None
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
    ids = ", ".join(f"{column} {row[column]}" for column in MATCHED_BY if row.get(column))
    return f"{row.get(STUDENT) or '(no name)'} ({ids or 'no id'})"


def _is_student(row: dict[str, str]) -> bool:
    if row.get(STUDENT, "") == POINTS_POSSIBLE:  # stripped already: "    Points Possible"
        return False
    return any(row.get(column) for column in (STUDENT, *MATCHED_BY))
