"""Moodle's grading worksheet: read as the roster, with the submission times and extensions it
holds, and written back with the grades and comments for Moodle's "Upload grading worksheet".

Moodle writes the worksheet ("Download grading worksheet", the offline grading feedback plugin:
mod/assign/feedback/offline/locallib.php ``download_grades``) from the grading table
(mod/assign/gradingtable.php, moodle/moodle): when downloading, its columns are ``Identifier``
(``col_recordid``: ``get_string('hiddenuser', 'assign')`` "Participant " then the participant
id), ``Full name``, the site's identity fields (``Email address`` by default; a site may show
``Username`` or ``ID number`` too), ``Status``, ``Grade``, ``Maximum grade`` (or ``Scale``),
``Grade can be changed``, ``Last modified (submission)``, the submission plugins' text fields,
``Last modified (grade)`` and the feedback plugins' text fields (``Feedback comments``), each
header one of mod/assign/lang/en/assign.php's strings (``recordid``, ``status``, ``maxgrade``,
``lastmodifiedsubmission``, ``lastmodifiedgrade``) or assignfeedback_comments' ``pluginname``.

Its dates are ``userdate()`` (``col_timesubmitted``, ``col_status``): the downloading user's time
zone and language, with no offset, in English lang/en/langconfig.php's ``strftimedaydatetime``
``%A, %d %B %Y, %I:%M %p`` ("Friday, 17 October 2025, 9:12 PM": userdate drops the leading zeros
of the day and hour), or en_us's month-first ``%A, %B %d, %Y, %I:%M %p``. They are read in the
course's time zone (``[assignment] timezone``, an IANA name, with ``zoneinfo``); a date in another
language is refused by name, never misread. An extension is in ``Status`` only
(``userextensiondate``: "Extension granted until: {date}"; the status's parts are joined by
" - " when downloading).

The upload (mod/assign/feedback/offline/importgradeslib.php, ``init`` and ``next``; locallib.php
``process_import_grades``) finds its columns by those same English headers (``Identifier``,
``Grade``, ``Last modified (grade)``, each feedback plugin's field by its description), takes a
row's participant id as ``Identifier`` after ``strlen("Participant ")`` characters, and SKIPS
without a word a grade that is empty, below 0, above the assignment's maximum, equal to the grade
Moodle has, or whose ``Last modified (grade)`` is more than a minute older than the grade in Moodle
(unless "Allow updating records that have been modified more recently in Moodle than in the
spreadsheet" is ticked). The CSV itself is read by lib/csvlib.class.php ``csv_import_reader::
load_csv_content``: a byte-order mark dropped, every row holding as many cells as the header.
So the worksheet is written back as it was downloaded, cell for cell, with ``Grade`` and
``Feedback comments`` filled: the same columns, the same ``Last modified (grade)``, each grade a
plain number with a ``.`` and never above ``Maximum grade``.
"""

from __future__ import annotations

import csv
import datetime
import html
import io
import re
import zoneinfo
from dataclasses import dataclass, field
from pathlib import Path

from grader.lms import moodle_download
from grader.lms.protocol import KnownTimes
from grader.term.identity import NAME_IN_FILES, Keyed, shown
from grader.term.roster import ID, IDENTIFIER, SIS_LOGIN_ID, SIS_USER_ID, STUDENT, RosterError, roster_text

FULL_NAME, STATUS, GRADE, MAXIMUM = "Full name", "Status", "Grade", "Maximum grade"
SCALE, SUBMITTED, GRADED_AT, COMMENTS = "Scale", "Last modified (submission)", "Last modified (grade)", "Feedback comments"
USERNAME, ID_NUMBER = "Username", "ID number"
PARTICIPANT = "Participant "  # get_string('hiddenuser', 'assign')
EXTENSION_GRANTED = "Extension granted until: "  # get_string('userextensiondate', 'assign') before its date
NO_DATE = "-"  # col_timesubmitted and col_timemarked when there is none
REQUIRED = (IDENTIFIER, GRADE, GRADED_AT)  # what the upload finds its rows by (importgradeslib.php init)

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DATE = re.compile(
    r"(?P<weekday>[A-Za-z]+), (?:(?P<day>\d{1,2}) (?P<month>[A-Za-z]+)|(?P<month_first>[A-Za-z]+) (?P<day_second>\d{1,2}),)"
    r" (?P<year>\d{4}), (?P<hour>\d{1,2}):(?P<minute>\d{2}) ?(?P<half>[AaPp][Mm])"
)


def looks_like_worksheet(header: list[str]) -> bool:
    """Moodle's worksheet, by its own columns (a Canvas gradebook has none of them)."""
    return IDENTIFIER in header and (GRADE in header or STATUS in header or FULL_NAME in header)


@dataclass
class Worksheet:
    path: Path
    header: list[str]
    rows: list[dict[str, str]]  # each: the worksheet's cells, and the roster's names for the student
    lines: list[int] = field(default_factory=list)  # each row's line in the file


def read_worksheet(path: Path) -> Worksheet:
    """The worksheet's students; ``RosterError`` (one line per problem, each naming the file) for a
    file that is not one, or a participant id twice."""
    path = Path(path)
    text = roster_text(path)
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = [cell.strip() for cell in next(reader, [])]
        missing = [column for column in (IDENTIFIER,) if column not in header]
        if missing:
            raise RosterError(f"{path} has no {', '.join(missing)} column: is it the grading worksheet Moodle downloads "
                              "(the assignment's \"Download grading worksheet\", in English)?")
        repeated = sorted({name for name in header if name and header.count(name) > 1})
        if repeated:
            raise RosterError(f"{path} has more than one column named {', '.join(repeated)}: download the worksheet again")
        rows, lines, problems, first = [], [], [], {}
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue
            line = reader.line_num
            if len(cells) != len(header):  # csv_import_reader refuses the whole file for it ('csvweirdcolumns')
                problems.append(f"{path}:{line}: {len(cells)} cells under a header of {len(header)}: Moodle's upload would refuse the file")
                continue
            row = dict(zip(header, cells))
            number = re.fullmatch(r"\D*?(\d+)", row[IDENTIFIER].strip())
            if number is None:
                problems.append(f"{path}:{line}: Identifier {shown(row[IDENTIFIER])!r} holds no participant id (\"Participant 2931512\")")
                continue
            if number[1] in first:
                problems.append(f"{path}:{line}: participant {number[1]} is also on line {first[number[1]]}: one row per student")
                continue
            first[number[1]] = line
            rows.append(_with_names(row, number[1]))
            lines.append(line)
    except csv.Error as error:
        raise RosterError(f"{path} could not be read as CSV: {error}") from None
    if problems:
        raise RosterError("\n".join(problems))
    return Worksheet(path, header, rows, lines)


def _with_names(row: dict[str, str], participant: str) -> dict[str, str]:
    """A worksheet row with the names the identity resolver compares (grader/term/identity.py):
    the participant id as the LMS's user id (the number in the download's names), the full name as
    the student's name, as the zip writes it, and a site's username and ID number as login and SIS id."""
    named = {column: value.strip() for column, value in row.items()}  # Identifier as written: the upload reads it
    named[ID] = participant
    named[STUDENT] = named.get(FULL_NAME, "")
    named[NAME_IN_FILES] = moodle_download.name_in_files(named[STUDENT])
    for column, alias in ((USERNAME, SIS_LOGIN_ID), (ID_NUMBER, SIS_USER_ID)):
        if named.get(column):
            named[alias] = named[column]
    return named


# --- the times it knows --------------------------------------------------------------------


class DateError(ValueError):
    pass


def parse_date(text: str, zone: zoneinfo.ZoneInfo) -> datetime.datetime | None:
    """A worksheet's date (``userdate``) as a moment in ``zone``; None for Moodle's "-" (none).
    ``DateError`` for a date not in English: its month and weekday are read, never guessed."""
    text = " ".join(text.split())
    if not text or text == NO_DATE:
        return None
    match = _DATE.fullmatch(text)
    if match is None:
        raise DateError(f"{shown(text, 60)!r} is not a date as Moodle writes it in English (\"Friday, 17 October 2025, 9:12 PM\")")
    month_name = match["month"] or match["month_first"]
    day = int(match["day"] or match["day_second"])
    month = next((index for index, name in enumerate(MONTHS, 1) if name.casefold() == month_name.casefold()), None)
    hour, minute = int(match["hour"]), int(match["minute"])
    if month is None or not 1 <= hour <= 12 or minute > 59:
        raise DateError(f"{shown(text, 60)!r} is not a date as Moodle writes it in English (\"Friday, 17 October 2025, 9:12 PM\")")
    hour = hour % 12 + (12 if match["half"].casefold() == "pm" else 0)
    try:
        # fold=0: of a local time the autumn's clock change makes twice, the earlier (the student's favour)
        moment = datetime.datetime(int(match["year"]), month, day, hour, minute, tzinfo=zone, fold=0)
    except ValueError:
        raise DateError(f"{shown(text, 60)!r} is not a date in the calendar") from None
    if WEEKDAYS[moment.weekday()].casefold() != match["weekday"].casefold():
        raise DateError(f"{shown(text, 60)!r}: {moment.date().isoformat()} is a {WEEKDAYS[moment.weekday()]}, not a {match['weekday']}")
    return moment


def extension_in(status: str) -> str | None:
    """The date of "Extension granted until: <date>" in a worksheet's Status, or None."""
    for part in status.split(" - "):
        if part.strip().startswith(EXTENSION_GRANTED):
            return part.strip()[len(EXTENSION_GRANTED):]
    return None


SUBMITTED_WHAT, EXTENSION_WHAT = "submission time (Moodle's worksheet)", "extension (Moodle's worksheet)"


def known_times(worksheet: Worksheet, zone_name: str | None, where_zone: str) -> KnownTimes:
    """The submission times (``Last modified (submission)``) and extensions (``Status``) of the
    worksheet, in the course's time zone; each problem with its line. Without a time zone, a
    worksheet that holds dates is a problem: read in the wrong zone, a student is hours late."""
    known = KnownTimes()
    dated = [row for row in worksheet.rows if row.get(SUBMITTED, NO_DATE) not in ("", NO_DATE) or extension_in(row.get(STATUS, ""))]
    if not dated:
        return known
    if zone_name is None:
        known.problems.append(
            f"{where_zone}: Moodle's worksheet {worksheet.path.name} gives its dates in the time zone of whoever downloaded it, "
            "with no offset: set [assignment] timezone to that zone (an IANA name, \"Europe/Berlin\")"
        )
        return known
    zone = zoneinfo.ZoneInfo(zone_name)
    for row, line in zip(worksheet.rows, worksheet.lines):
        where = f"{worksheet.path}:{line}"
        try:
            submitted = parse_date(row.get(SUBMITTED, ""), zone)
            extension_text = extension_in(row.get(STATUS, ""))
            extension = parse_date(extension_text, zone) if extension_text else None
        except DateError as error:
            known.problems.append(f"{where}: {error}; download the worksheet with your Moodle's language set to English")
            continue
        if submitted is not None:
            known.times.append((Keyed(str(worksheet.path), line, row[IDENTIFIER], SUBMITTED_WHAT), submitted))
        if extension is not None:
            known.extensions.append((Keyed(str(worksheet.path), line, row[IDENTIFIER], EXTENSION_WHAT), extension))
    return known


# --- written back ---------------------------------------------------------------------------


def maximum_of(worksheet: Worksheet) -> float:
    """The assignment's maximum grade, as every row of the worksheet gives it; ``RosterError`` for a
    scale or a worksheet without it."""
    if SCALE in worksheet.header and MAXIMUM not in worksheet.header:
        raise RosterError(f"{worksheet.path}: the assignment is graded on a scale ({SCALE} column): give it a maximum grade in points")
    values = {row.get(MAXIMUM, "").strip() for row in worksheet.rows} - {""}
    try:
        numbers = {float(value.replace(",", "")) for value in values}
    except ValueError:
        raise RosterError(f"{worksheet.path}: {MAXIMUM} is not a number ({', '.join(sorted(values))[:80]})") from None
    if len(numbers) != 1:
        raise RosterError(f"{worksheet.path}: {MAXIMUM} is {'missing' if not numbers else 'not the same on every row'}: download the worksheet again")
    return numbers.pop()


def comment_cell(text: str) -> str:
    """A comment as Moodle's Feedback comments holds it: HTML (the editor's format), so escaped."""
    return html.escape(text, quote=False)


def written(worksheet: Worksheet, cells: dict[int, dict[str, str]], neutralise) -> str:
    """The worksheet as downloaded with ``cells`` (row index -> column -> value) put in; every other
    text cell through ``neutralise`` (a spreadsheet's formula rule; Moodle reads none of them),
    the columns the upload reads as they were."""
    kept_as_is = {IDENTIFIER, GRADE, GRADED_AT, COMMENTS, MAXIMUM, SUBMITTED}  # what Moodle wrote, or reads back
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
