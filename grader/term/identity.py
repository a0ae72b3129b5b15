"""Who a student is: one person with several names, and one rule that resolves each of them.

Every file an instructor writes names students (the course file's ``[extensions]``,
``submitted_at.csv``, ``overrides.csv``, ``batch --only``) and the export matches the graded
submissions to the roster: all of them go through ``Identities``. A name is compared without
case, surrounding or repeated spaces, and in one Unicode spelling (NFC). Accepted:

- with a roster (the gradebook CSV Canvas exports, or Moodle's grading worksheet mapped onto the
  same columns by grader/term/roster.py, ``[files] roster``): a row's ``SIS Login ID``,
  ``SIS User ID``, ``ID`` (Canvas's user id; Moodle's participant id), ``Student`` (the name as the
  gradebook shows it, Canvas's sortable name "Doe, Jane": canvas-lms lib/gradebook_exporter.rb
  writes ``student.sortable_name``; Moodle's full name) and that name as the LMS's download writes
  it into file names ("doejane": ``name_in_canvas_files``; Moodle's row gives its own spelling,
  "Aoife OConnell"), and Moodle's ``Identifier`` and email;
- a submission's file stem (its name without the extension), which names that submission and
  so its student: an LMS's download name by agreement, never by its first number. A Canvas
  "Download Submissions" name (``name_LATE_userid_attachmentid_file``, grader/term/canvas_names.py)
  may split several ways (a sortable name may end in digits, "eve_12_999_5000_a.py"); a Moodle
  name (``Full Name_<participant id>_assignsubmission_file``, grader/term/lms_files/moodle_names.py)
  one way. A reading names the row whose ``ID`` is its user id and whose name in the LMS's files
  is its name part; a name part that is not the row's, or two readings that agree with two rows,
  is held apart (its own student, said: ``canvas_notes``), never graded as another's; any other
  stem by the roster's columns;
- without a roster, the same file stems, and the LMS's user id and name as read from them: one
  student per user id and name (two names under one user id stay two, said), unchecked, and
  the batch says so.

Names are read as the course's LMS writes them (``lms``: the roster's, else the course file's
``[lms] kind``, else the one the download's names are recognised as): a Canvas file a student
named ``assignsubmission_file.py`` is never read as a Moodle participant's, nor a Moodle name as
Canvas's; a name that reads as both, where the LMS is not known, is read as neither (``entry_readings``).

A name that matches no student, or more than one (one student's login that is another's
Canvas id, two students of one name), resolves to nobody, or to each of them: the caller names
it with its file and line, never ignores it, and never picks one. One student matched by
several columns (a login equal to their own SIS id) is one student.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from grader.term import instructor_files
from grader.term.instructor_files import normal  # the one equality of names (re-exported: every caller compares with it)
from grader.term.canvas_names import CanvasName, canvas_readings
from grader.term.lms_files.moodle_names import MoodleName, parse_moodle_name
from grader.term.roster import ID, NAME_IN_FILES, OTHER_LMS_NAMES, SIS_LOGIN_ID, SIS_USER_ID, STUDENT, TITLES, describe, kind_of_rows

ROSTER_NAMES = (SIS_LOGIN_ID, SIS_USER_ID, ID, STUDENT, NAME_IN_FILES, *OTHER_LMS_NAMES)  # the order a match is described in
FILE_STEM = "submission's file name"
CANVAS_USER = "Canvas user id in the file name"


EntryName = CanvasName | MoodleName


def entry_readings(name: str, lms: str | None = None) -> list[EntryName]:
    """Every reading of ``name`` as the download of ``lms`` ("canvas", "moodle") writes names:
    Canvas's several (``canvas_readings``, Canvas's own first), Moodle's one; of either LMS when
    it is not known, and none when it reads as both ("doejane_123_456_assignsubmission_file", a
    Canvas file a student named so, is Moodle's participant 456 too): whose it is would be a guess."""
    moodle = parse_moodle_name(name) if lms in (None, "moodle") else None
    canvas = canvas_readings(name) if lms in (None, "canvas") else []
    if moodle is not None and canvas:
        return []
    return [moodle] if moodle is not None else canvas


def read_entry_name(name: str, lms: str | None = None) -> EntryName | None:
    """An entry's name read as an LMS's download wrote it (the LMS's own first reading), or None."""
    readings = entry_readings(name, lms)
    return readings[0] if readings else None


def recognised_lms(names: Iterable[str]) -> str | None:
    """The LMS whose download wrote these names: the one LMS some of them read as, and only as
    (a name both read as decides nothing); None when none do, or both LMSs' names are there."""
    kinds = {kind for name in names for kind in [_only_reading(name)] if kind is not None}
    return kinds.pop() if len(kinds) == 1 else None


def _only_reading(name: str) -> str | None:
    moodle, canvas = parse_moodle_name(name) is not None, bool(canvas_readings(name))
    return None if moodle == canvas else ("moodle" if moodle else "canvas")


def name_in_canvas_files(sortable_name: str) -> str:
    """A roster name as Canvas writes it at the start of its download's file names.

    canvas-lms lib/content_zipper.rb: ``get_user_name`` takes the sortable name and
    ``sanitize_user_name`` collapses every ``_<digits>_`` to the digits and downcases it;
    ``get_filename`` then removes every character that is not ``[[:word:]]``
    (``sanitize_file_name``). "Doe, Jane" -> "doejane"."""
    name = re.sub(r"_(\d+)_", r"\1", unicodedata.normalize("NFC", sortable_name)).lower()
    return re.sub(r"\W", "", name)


def name_in_files(row: dict[str, str]) -> str:
    """A roster row's name as its LMS's download writes it: the row's own (another LMS's roster
    gives it, grader/term/roster.py ``moodle_rows``), else Canvas's spelling of its ``Student``."""
    return row.get(NAME_IN_FILES) or name_in_canvas_files(row.get(STUDENT, ""))


@dataclass(frozen=True)
class Student:
    key: str  # one per person: "roster row 3", "canvas user 12345", "submission alice"
    name: str  # what people read: the roster's name, else what the submission's name says
    row: int | None = None  # the roster row (an index among its students), when on the roster

    @property
    def on_roster(self) -> bool:
        return self.row is not None


@dataclass(frozen=True)
class Resolution:
    """What one name resolves to: no student, one, or several (then it names none of them)."""

    key: str
    students: tuple[Student, ...]
    by: dict[str, tuple[str, ...]] = field(default_factory=dict)  # student key -> the names that matched
    entry: str | None = None  # the submission the name is the file stem of, if any

    @property
    def student(self) -> Student | None:
        return self.students[0] if len(self.students) == 1 else None

    def problem(self, has_roster: bool) -> str | None:
        """Why this name cannot be used, or None."""
        if len(self.students) > 1:
            each = "; ".join(f"{student.name} (as {', '.join(self.by[student.key])})" for student in self.students)
            return f"matches {len(self.students)} students: {each}; use a name only one of them has (the SIS Login ID)"
        if not self.students:
            where = "no student on the roster" if has_roster else "no submission"
            return f"matches {where} (names compared: {', '.join(ROSTER_NAMES) if has_roster else FILE_STEM + ', Canvas user id, ' + NAME_IN_FILES})"
        return None


class Identities:
    """The class's students, from the roster (``rows``, or None without one) and the
    submissions' file stems (``entries``), whose names are read as the LMS's download writes them
    (``lms``: the roster's LMS, else the one given, the course file's, else recognised from ``entries``)."""

    def __init__(self, rows: list[dict[str, str]] | None = None, entries: Iterable[str] = (), lms: str | None = None) -> None:
        self.rows = rows
        entries = list(entries)
        self.recognised = recognised_lms(entries)  # the LMS the download's names are (None: not one)
        self.lms = kind_of_rows(rows) or lms or self.recognised
        self._index: dict[str, dict[str, list[int]]] = {column: {} for column in ROSTER_NAMES}
        for number, row in enumerate(rows or []):
            for column in ROSTER_NAMES:
                value = name_in_files(row) if column == NAME_IN_FILES else row.get(column, "")
                if normal(value):
                    self._index[column].setdefault(normal(value), []).append(number)
        self.entries: dict[str, str] = {}  # normal(stem) -> stem
        self.canvas: dict[str, EntryName] = {}  # stem -> the reading of its LMS name that names its student
        self._canvas_row: dict[str, tuple[int | None, str]] = {}  # stem with an LMS name -> (its roster row, why none)
        self._of_entry: dict[str, tuple[Student, tuple[str, ...], str]] = {}  # stem -> (student, roster columns, why not on it)
        self._add_entries(entries)

    @property
    def has_roster(self) -> bool:
        return self.rows is not None

    def roster_student(self, row: int) -> Student:
        return Student(f"roster row {row}", self.rows[row].get(STUDENT) or describe(self.rows[row]), row)

    def readings(self, name: str) -> list[EntryName]:
        """``name`` read as this course's LMS writes its download's names (``entry_readings``)."""
        return entry_readings(name, self.lms)

    # --- the submissions ---------------------------------------------------------------------

    def _add_entries(self, stems: list[str]) -> None:
        for stem in stems:
            self.entries.setdefault(normal(stem), stem)
        readings = {stem: self.readings(stem) for stem in stems}
        sure = {stem: options[0] for stem, options in readings.items() if len(options) == 1}
        for stem, options in readings.items():
            if options:
                reading, row, why = self._canvas_student(options, sure.values()) if self.has_roster else (
                    _canvas_reading_unchecked(options, sure.values()), None, "")
                self._canvas_row[stem] = (row, why)
                if reading is not None:
                    self.canvas[stem] = reading
        for stem in stems:
            self._of_entry[stem] = self._resolve_entry(stem)

    def _canvas_student(self, readings: list[EntryName], sure=()) -> tuple[EntryName | None, int | None, str]:
        """Which of an LMS name's readings names a student on the roster: the one whose user id
        is a row's ``ID`` and whose name part is that row's name as the LMS writes it into file
        names (``name_in_files``), the row's own spelling. (reading, row, "") when exactly
        one agrees; else (None, None, why): a name part that is not the row's, or two readings
        that agree with two rows, is held apart, never taken on its first number. An anonymous
        assignment's Canvas files name no user the roster has: (reading, None, why), one student
        by its anonymous id. (Moodle's participant id is the worksheet's own: a blind-marked
        name, "Participant", is matched by it alone.)"""
        agreeing = [
            (reading, row) for reading in readings for row in self._index[ID].get(normal(reading.user_id), [])
            if self._name_agrees(reading, row)
        ]
        title = _lms_title(readings[0])
        if len(agreeing) == 1:
            return agreeing[0][0], agreeing[0][1], ""
        if agreeing:
            each = "; ".join(f"user {reading.user_id} named {reading.name!r}: {describe(self.rows[row])}" for reading, row in agreeing)
            return None, None, f"{title}'s name reads as {len(agreeing)} roster students ({each}): which is unclear; held for the instructor"
        if all(reading.user_id.startswith("anon_") for reading in readings):
            reading = _canvas_reading_unchecked(readings, sure)
            return reading, None, f"an anonymously graded assignment's file (Canvas user {reading.user_id}): no roster row names it"
        disagreeing = [
            f"its name part {reading.name!r} is not the roster's for {ID} {reading.user_id} ({describe(self.rows[row])}, "
            f"{name_in_files(self.rows[row])!r} in {title}'s file names)"
            for reading in readings for row in self._index[ID].get(normal(reading.user_id), [])
        ]
        if disagreeing:
            return None, None, "; ".join(disagreeing) + ": name and user id disagree, so it is held for the instructor, graded as no roster student's"
        users = " or ".join(dict.fromkeys(reading.user_id for reading in readings))
        return None, None, f"no roster row has {ID} {users}"

    def _name_agrees(self, reading: EntryName, row: int) -> bool:
        """The row's name as its LMS writes it is the reading's name part (a row without a name
        has nothing to disagree with: its ID alone; so has Moodle's blind-marked "Participant")."""
        if not normal(self.rows[row].get(STUDENT, "")):
            return True
        if isinstance(reading, MoodleName):
            return reading.agrees_with(name_in_files(self.rows[row]))
        return normal(reading.name) == normal(name_in_files(self.rows[row]))

    def _resolve_entry(self, stem: str) -> tuple[Student, tuple[str, ...], str]:
        reading = self.canvas.get(stem)
        row, why = self._canvas_row.get(stem, (None, ""))
        if row is not None:
            named = normal(self.rows[row].get(STUDENT, "")) and normal(reading.name) == normal(name_in_files(self.rows[row]))
            return self.roster_student(row), (ID, NAME_IN_FILES) if named else (ID,), ""
        if reading is not None:
            # The LMS's own names, unchecked (no roster) or of no roster row (Canvas's anonymous):
            # one student per user id and name, so that two names under one id are never merged.
            return _canvas_user(reading), (), why
        rows = sorted({row for column in ROSTER_NAMES for row in self._index[column].get(normal(stem), [])})
        own = Student(f"submission {normal(stem)}", stem)
        if len(rows) == 1:
            return self.roster_student(rows[0]), tuple(c for c in ROSTER_NAMES if rows[0] in self._index[c].get(normal(stem), [])), ""
        if not self.has_roster:
            return own, (), ""
        if why:  # an LMS's name held apart: said, and not merged with anyone
            return own, (), why
        if not rows:
            return own, (), f"no roster row has it as {', '.join(ROSTER_NAMES)}"
        each = "; ".join(describe(self.rows[row]) for row in rows)
        return own, (), f"it matches {len(rows)} roster students ({each}): which is unclear"

    def canvas_notes(self) -> list[str]:
        """What the batch says about the LMS's names it read: files held apart because their
        name and user id disagree with the roster, one user id under two names (never merged),
        names read as neither LMS's because they read as both and the LMS is not known, and,
        without a roster, that every such identity is unchecked."""
        notes = [f"{stem}: {why}" for stem, (row, why) in sorted(self._canvas_row.items())
                 if why and self.has_roster and stem not in self.canvas]
        if self.lms is None:
            notes += [f"{stem}: reads as both a Canvas and a Moodle download's name, so as neither (whose number is the "
                      "student's would be a guess): set [lms] kind in the course file" for stem in sorted(self.entries.values())
                      if parse_moodle_name(stem) is not None and canvas_readings(stem)]
        names: dict[str, dict[str, list[str]]] = {}
        by_name_reading: dict[str, EntryName] = {}
        for stem, reading in sorted(self.canvas.items()):
            names.setdefault(normal(reading.user_id), {}).setdefault(normal(reading.name), []).append(stem)
            by_name_reading.setdefault(normal(reading.user_id), reading)
        for user, by_name in names.items():
            if len(by_name) > 1:
                each = "; ".join(f"{name or 'no name'!r} in {', '.join(stems)}" for name, stems in by_name.items())
                notes.append(f"{_lms_title(by_name_reading[user])} user {user} has {len(by_name)} names in the file names ({each}): graded as separate "
                             "students, never merged; a roster ([files] roster) says which is theirs")
        if not self.has_roster and self.canvas:
            notes.append(
                f"no roster: the students of {len(self.canvas)} files were read from "
                f"{' and '.join(sorted({_lms_title(reading) for reading in self.canvas.values()}))}'s file names alone (name and "
                "user id), unchecked; give the course file a roster ([files] roster) to check each against its row"
            )
        return notes

    def student_of(self, stem: str) -> Student:
        """The student a submission is (its file stem): on the roster, or its own name."""
        if stem not in self._of_entry:
            self._add_entries([stem])
        return self._of_entry[stem][0]

    def why_not_on_roster(self, stem: str) -> str:
        """"" when the submission is on the roster (or there is no roster), else why not."""
        self.student_of(stem)
        return self._of_entry[stem][2]

    def matched_by(self, stem: str) -> tuple[str, ...]:
        """The roster columns that matched a submission (``ID`` for Canvas's user id in its name)."""
        self.student_of(stem)
        return self._of_entry[stem][1]

    def same_student_because(self, stems: list[str]) -> str:
        """Why these submissions are one student's, for the log and the report."""
        columns = sorted({column for stem in stems for column in self.matched_by(stem)})
        if columns:
            return f"the roster ({', '.join(columns)})"
        users = {self.canvas[stem].user_id for stem in stems if stem in self.canvas}
        if users:
            title = " and ".join(sorted({_lms_title(self.canvas[stem]) for stem in stems if stem in self.canvas}))
            return f"{title}'s names (user {', '.join(sorted(users))})"
        if len(set(stems)) > 1:  # Alice.py and alice.py: one name as names are compared (``normal``)
            return "their name (the same, case and Unicode's spelling aside)"
        return "their name (the same, another extension)"

    # --- a name an instructor wrote --------------------------------------------------------

    def resolve(self, key: str) -> Resolution:
        wanted = normal(key)
        found: dict[str, tuple[Student, list[str]]] = {}

        def add(student: Student, how: str) -> None:
            found.setdefault(student.key, (student, []))[1].append(how)

        entry = self.entries.get(wanted)
        if entry is not None:
            add(self.student_of(entry), FILE_STEM)
        for column in ROSTER_NAMES:
            for row in self._index[column].get(wanted, []):
                add(self.roster_student(row), column)
        readings = [reading for reading in self.readings(key.strip()) if reading.user_id.isdigit()]
        if entry is None and readings:  # a file of a download not graded here: read as the batch reads one
            if self.has_roster:
                reading, row, _ = self._canvas_student(readings)
                if row is not None:
                    add(self.roster_student(row), CANVAS_USER)
            else:
                add(_canvas_user(_canvas_reading_unchecked(readings, self.canvas.values())), CANVAS_USER)
        for stem, canvas in self.canvas.items():  # the LMS's user id or name, as the files say them
            if wanted in (normal(canvas.user_id), normal(canvas.name)):
                add(self.student_of(stem), "Canvas user id" if wanted == normal(canvas.user_id) else NAME_IN_FILES)
        students = tuple(sorted((student for student, _ in found.values()), key=lambda student: (student.row is None, student.row or 0, student.key)))
        by = {student.key: tuple(dict.fromkeys(hows)) for student, hows in found.values()}
        return Resolution(key, students, by, entry if entry is not None and len(students) == 1 else None)


def _canvas_user(reading: EntryName) -> Student:
    """A student known by the LMS's names alone: one per user id and name (two names under one
    user id, which neither LMS writes, stay two students and are said: ``canvas_notes``)."""
    return Student(f"{_lms_title(reading).lower()} user {normal(reading.user_id)} {normal(reading.name)}",
                   f"{reading.name or 'anonymous'} ({reading.user_id})")


def _lms_title(reading: EntryName) -> str:
    return TITLES["moodle" if isinstance(reading, MoodleName) else "canvas"]


def _canvas_reading_unchecked(readings: list[EntryName], sure: Iterable[EntryName] = ()) -> EntryName:
    """Without a roster, the reading of an LMS's name that names its student (Moodle's: its one): of several
    ("eve_12_999_5000_a.py"), those whose user id another file, read only one way, gives
    another name are not Canvas's (Canvas gives a user one name in one download); of those
    left, Canvas's own reading (the first)."""
    others = {}
    for reading in sure:
        others.setdefault(normal(reading.user_id), set()).add(normal(reading.name))
    possible = [reading for reading in readings if others.get(normal(reading.user_id), {normal(reading.name)}) == {normal(reading.name)}]
    return (possible or readings)[0]


# --- the export: which graded submission is whose roster row ---------------------------------
# --- the export: which graded submission is whose roster row ---------------------------------


@dataclass
class Match:
    rows: list[dict[str, str]]  # the roster's students, in its order
    submission_of_row: dict[int, str] = field(default_factory=dict)  # row index -> submission id
    matched_by: dict[str, str] = field(default_factory=dict)  # submission id -> the columns that matched
    not_on_roster: dict[str, str] = field(default_factory=dict)  # submission id -> why it matched no row
    # row index -> the other submissions that matched a row already taken (graded without this
    # roster: the batch, given it, grades one submission per student)
    also_matched: dict[int, list[str]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # submission id -> the student's name, for people

    @property
    def without_submission(self) -> list[dict[str, str]]:
        return [row for index, row in enumerate(self.rows) if index not in self.submission_of_row]


def match(submission_ids: list[str], rows: list[dict[str, str]]) -> Match:
    """Each submission (its id, the file stem) matched to its roster row by ``Identities``.
    Nothing is dropped silently: roster rows without a submission, and submissions that match
    no row, two rows, or a row another submission already took, are all reported."""
    found = Match(rows)
    identities = Identities(rows, submission_ids)
    for sid in sorted(submission_ids):
        student = identities.student_of(sid)
        found.names[sid] = student.name
        if not student.on_roster:
            found.not_on_roster[sid] = identities.why_not_on_roster(sid)
        elif student.row in found.submission_of_row:
            taken = found.submission_of_row[student.row]
            found.not_on_roster[sid] = f"its roster row ({describe(rows[student.row])}) is already matched by {taken}"
            found.also_matched.setdefault(student.row, []).append(sid)
        else:
            found.submission_of_row[student.row] = sid
            found.matched_by[sid] = ", ".join(identities.matched_by(sid))
    return found


def shown(text: str, limit: int = 60) -> str:
    """A name or a cell an instructor wrote, cut short for a message (a field may be 100,000 characters)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the instructor's per-student files -------------------------------------------------------


class InstructorFileError(ValueError):
    """A file an instructor wrote that cannot be used: each line of the message names the
    file, the line and the key."""


@dataclass(frozen=True)
class Keyed:
    """One row of an instructor's file that names a student."""

    file: str  # as shown: "overrides.csv", "course.toml"
    line: int
    key: str
    what: str  # "extension", "submission time", "override"

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def shown(self) -> str:
        return repr(shown(self.key))


@dataclass
class Assigned:
    """An instructor's file resolved: each row's value by student (or by submission, for rows
    that name a submission by its file stem where a file allows it), and what could not be."""

    by_student: dict[str, tuple[Keyed, object]] = field(default_factory=dict)  # student key -> (row, value)
    by_entry: dict[str, tuple[Keyed, object]] = field(default_factory=dict)  # entry stem -> (row, value)
    errors: list[str] = field(default_factory=list)  # refused: the batch stops
    unmatched: list[tuple[Keyed, str]] = field(default_factory=list)  # no submission (no roster): said, not applied
    students: dict[str, Student] = field(default_factory=dict)  # student key -> student


def assign(identities: Identities, rows: list[tuple[Keyed, object]], per_submission: bool = False) -> Assigned:
    """Resolve each row's key. A key that matches several students is refused; one that matches
    nobody is refused with a roster (a typo: the roster lists everyone), and without one listed as
    unmatched (it may be a student without a submission). A second row for one student is refused,
    whichever names the two rows use; with ``per_submission`` (submission times, which order one
    student's attempts) rows that each name another of one student's files by its LMS download
    name (one name, one uploaded file) are kept apart, by file."""
    done = Assigned()
    seen: dict[str, list[Keyed]] = {}
    for keyed, value in rows:
        resolution = identities.resolve(keyed.key)
        problem = resolution.problem(identities.has_roster)
        if problem and (resolution.students or identities.has_roster):
            done.errors.append(f"{keyed.where}: {keyed.what} for {keyed.shown} {problem}")
            continue
        if problem:
            # No student to compare by (no roster, no such submission): the same name twice, as
            # names are compared, is still one student's second row (course.toml's "ann lee" and
            # "ann  lee" are two TOML keys).
            twin = next((other for other, _ in done.unmatched if normal(other.key) == normal(keyed.key)), None)
            if twin is not None:
                done.errors.append(f"{keyed.where}: a second {keyed.what} for {keyed.shown} (the first is {twin.shown} on line "
                                   f"{twin.line}; names are compared without case, repeated spaces or Unicode's spelling): one row per student")
                continue
            done.unmatched.append((keyed, problem))
            continue
        student = resolution.student
        done.students[student.key] = student
        seen.setdefault(student.key, []).append(keyed)
        entry = _named_file(identities, keyed.key) if per_submission else None
        if entry is not None:
            done.by_entry.setdefault(entry, (keyed, value))
        else:
            done.by_student.setdefault(student.key, (keyed, value))
    for student_key, keyed_rows in seen.items():
        if len(keyed_rows) < 2:
            continue
        files = [_named_file(identities, keyed.key) if per_submission else None for keyed in keyed_rows]
        if per_submission and all(files) and len({normal(name) for name in files}) == len(files):
            continue  # each names another submission of this student: their times order the attempts
        first, *others = keyed_rows
        for keyed in others:
            done.errors.append(
                f"{keyed.where}: a second {keyed.what} for {done.students[student_key].name} ({keyed.shown}; the first is "
                f"{first.shown} on line {first.line}): one row per student"
            )
    return done


def _named_file(identities: Identities, key: str) -> str | None:
    """The download name ``key`` is, as the course's LMS writes them (one uploaded file), or None."""
    return key.strip() if any(reading.user_id.isdigit() for reading in identities.readings(key.strip())) else None


# --- reading a CSV an instructor wrote ------------------------------------------------------------


def read_csv(path: Path, header: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    """The rows of ``path`` after its header (which must start with ``header``) as (line,
    cells), blank rows left out; one message naming the file and the line for anything else:
    a file that cannot be read as an instructor's file (grader/term/instructor_files.py: missing,
    not a regular file, too large, not UTF-8, a NUL byte), a wrong header, a field or line too
    long for the csv module (its limit is 131,072 characters: ``csv.field_size_limit``)."""
    rows, line = [], 1
    try:
        text = instructor_files.read_text(Path(path))  # Excel and Canvas write a byte-order mark: dropped
    except instructor_files.UnreadableFile as error:
        raise InstructorFileError(error.message(path)) from None
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        found = [cell.strip().casefold() for cell in next(reader, [])]
        if found[: len(header)] != list(header):
            raise InstructorFileError(
                f"{path}:1: the first line must be the header {','.join(header)} (found {','.join(found)[:200]!r})"
            )
        line = reader.line_num
        for cells in reader:
            line = reader.line_num
            if any(cell.strip() for cell in cells):
                rows.append((line, cells))
    except csv.Error as error:
        raise InstructorFileError(f"{path}:{line + 1}: cannot be read as CSV ({error}); is a field or a line far too long?") from None
    return rows
