"""The class roster: the gradebook CSV exported from Canvas, read.

Canvas writes it in lib/gradebook_exporter.rb: a header ``Student,ID,SIS User ID,SIS Login
ID,Section`` and the assignments' columns, a "Points Possible" row (and, when some assignment
is muted, a row for that), then one row per student. Which submission, or which name in an
instructor's file, is whose row: grader/batch/identity.py, the one rule for every file.
"""

from __future__ import annotations

import csv
from pathlib import Path


STUDENT, ID, SIS_USER_ID, SIS_LOGIN_ID, SECTION = "Student", "ID", "SIS User ID", "SIS Login ID", "Section"
COLUMNS = (STUDENT, ID, SIS_USER_ID, SIS_LOGIN_ID, SECTION)
MATCHED_BY = (SIS_LOGIN_ID, SIS_USER_ID, ID)  # the ids a row is known by
POINTS_POSSIBLE = "Points Possible"  # the second row of Canvas's exports (four spaces before it)


class RosterError(ValueError):
    """A roster that cannot be used: the message says why, for the instructor."""


def read_roster(path: Path) -> list[dict[str, str]]:
    """The students of a Canvas gradebook export (its "Points Possible" and muted rows left out)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:  # Canvas writes a byte-order mark
            reader = csv.DictReader(handle)
            header = [name.strip() for name in reader.fieldnames or []]
            if not any(column in header for column in MATCHED_BY):
                raise RosterError(f"{path.name} has none of the columns {', '.join(MATCHED_BY)}: is it a Canvas gradebook export?")
            repeated = sorted({name for name in header if name and header.count(name) > 1})
            if repeated:  # a hand-edited file: which of the two holds the students' ids is a guess
                raise RosterError(f"{path.name} has more than one column named {', '.join(repeated)}: keep one of each")
            reader.fieldnames = header
            rows = [{column: (row.get(column) or "").strip() for column in header} for row in reader]
    except UnicodeDecodeError as error:
        raise RosterError(f"{path.name} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    except csv.Error as error:  # a cell over the csv module's limit (128 kB), a stray NUL byte
        raise RosterError(f"{path.name} could not be read as CSV at line {reader.line_num}: {error}") from None
    return [row for row in rows if _is_student(row)]


def describe(row: dict[str, str]) -> str:
    """A roster row in a line: name and the ids it can be matched by."""
    ids = ", ".join(f"{column} {row[column]}" for column in MATCHED_BY if row.get(column))
    return f"{row.get(STUDENT) or '(no name)'} ({ids or 'no id'})"


def _is_student(row: dict[str, str]) -> bool:
    if row.get(STUDENT, "") == POINTS_POSSIBLE:  # stripped already: "    Points Possible"
        return False
    return any(row.get(column) for column in (STUDENT, *MATCHED_BY))
