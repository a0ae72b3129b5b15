"""The class roster (a gradebook CSV exported from Canvas) and which submission is whose.

A submission id (the entry's name without its extension) is matched to a roster row by
``SIS Login ID``, then ``SIS User ID``, then ``ID``: the first column, in that order, in
which some row holds the id (compared without case and surrounding spaces) decides. An id
matched by none of them that is named as Canvas's "Download Submissions" names files,
``name_USERID_FILEID_file`` (``LATE`` after the name when late: grader/batch/canvas_names.py,
the same reading as the intake's), is matched by the user id in it. Nothing is dropped silently: roster rows without a submission and submissions that
match no row (or a row another submission already took) are both reported.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from grader.batch.canvas_names import parse_canvas_name

STUDENT, ID, SIS_USER_ID, SIS_LOGIN_ID, SECTION = "Student", "ID", "SIS User ID", "SIS Login ID", "Section"
COLUMNS = (STUDENT, ID, SIS_USER_ID, SIS_LOGIN_ID, SECTION)
MATCHED_BY = (SIS_LOGIN_ID, SIS_USER_ID, ID)  # the matching rule, in order
POINTS_POSSIBLE = "Points Possible"  # the second row of Canvas's exports (four spaces before it)


class RosterError(ValueError):
    """A roster that cannot be used: the message says why, for the instructor."""


@dataclass
class Match:
    rows: list[dict[str, str]]  # the roster's students, in its order
    submission_of_row: dict[int, str] = field(default_factory=dict)  # row index -> submission id
    matched_by: dict[str, str] = field(default_factory=dict)  # submission id -> the column that matched
    not_on_roster: dict[str, str] = field(default_factory=dict)  # submission id -> why it matched no row
    # row index -> the later submissions that matched a row already taken (Canvas's
    # "Download Submissions" gives one entry per uploaded file: name_..._file, name_..._file-2)
    also_matched: dict[int, list[str]] = field(default_factory=dict)

    @property
    def without_submission(self) -> list[dict[str, str]]:
        return [row for index, row in enumerate(self.rows) if index not in self.submission_of_row]


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


def match(submission_ids: list[str], rows: list[dict[str, str]], same_student: dict[str, str] | None = None) -> Match:
    """``same_student``: submission id -> the id of the same student's other entry (two files
    of one student that both hold work are graded as two entries, grader/batch/intake.py):
    it matches that entry's row, as a second submission of the same student."""
    found = Match(rows)
    index = {column: _index(rows, column) for column in MATCHED_BY}
    same_student = same_student or {}
    rows_of = {}
    for sid in sorted(submission_ids, key=lambda sid: (sid in same_student, sid)):
        column, row = _find(sid, index)
        if row is None and same_student.get(sid) in rows_of:
            column, row = rows_of[same_student[sid]]
        if row is None:
            found.not_on_roster[sid] = "no row has it as " + ", ".join(MATCHED_BY)
        elif row in found.submission_of_row:
            taken = found.submission_of_row[row]
            found.not_on_roster[sid] = f"its roster row ({column} {rows[row].get(column, '')}) is already matched by {taken}"
            found.also_matched.setdefault(row, []).append(sid)
        else:
            found.submission_of_row[row] = sid
            found.matched_by[sid] = column
        if row is not None:
            rows_of[sid] = (column, row)
    return found


def describe(row: dict[str, str]) -> str:
    """A roster row in a line: name and the ids it can be matched by."""
    ids = ", ".join(f"{column} {row[column]}" for column in MATCHED_BY if row.get(column))
    return f"{row.get(STUDENT) or '(no name)'} ({ids or 'no id'})"


def _find(sid: str, index: dict[str, dict[str, int]]) -> tuple[str, int | None]:
    key = sid.strip().casefold()
    for column in MATCHED_BY:
        if key in index[column]:
            return column, index[column][key]
    if (named := parse_canvas_name(key)) and named.user_id in index[ID]:
        return ID, index[ID][named.user_id]
    return "", None


def _index(rows: list[dict[str, str]], column: str) -> dict[str, int]:
    index: dict[str, int] = {}
    for number, row in enumerate(rows):
        value = row.get(column, "").casefold()
        if value:
            index.setdefault(value, number)  # a value twice in a column: the first row keeps it
    return index


def _is_student(row: dict[str, str]) -> bool:
    if row.get(STUDENT, "") == POINTS_POSSIBLE:  # stripped already: "    Points Possible"
        return False
    return any(row.get(column) for column in (STUDENT, *MATCHED_BY))
