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
import io
import re
import zoneinfo
from dataclasses import dataclass, field
from pathlib import Path

IDENTIFIER, EMAIL = "Identifier", "Email address"  # get_string('recordid', 'assign'); the default identity field

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
    rows: list[dict[str, str]]  # each: the worksheet's cells
    participants: list[str] = field(default_factory=list)  # each row's participant id (the number in Identifier)
    lines: list[int] = field(default_factory=list)  # each row's line in the file


class WorksheetError(ValueError):
    """A worksheet that cannot be used: one line per problem, each naming the file (and line)."""


def shown(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_worksheet(path: Path, text: str) -> Worksheet:
    """The worksheet's students (``text``, the file at ``path``): each row's cells as written and
    its participant id; ``WorksheetError`` for a file that is not one, or a participant id twice."""
    path = Path(path)
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = [cell.strip() for cell in next(reader, [])]
        missing = [column for column in (IDENTIFIER,) if column not in header]
        if missing:
            raise WorksheetError(f"{path} has no {', '.join(missing)} column: is it the grading worksheet Moodle downloads "
                              "(the assignment's \"Download grading worksheet\", in English)?")
        repeated = sorted({name for name in header if name and header.count(name) > 1})
        if repeated:
            raise WorksheetError(f"{path} has more than one column named {', '.join(repeated)}: download the worksheet again")
        rows, participants, lines, problems, first = [], [], [], [], {}
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
            rows.append({column: value.strip() for column, value in row.items()})  # Identifier as written: the upload reads it
            participants.append(number[1])
            lines.append(line)
    except csv.Error as error:
        raise WorksheetError(f"{path} could not be read as CSV: {error}") from None
    if problems:
        raise WorksheetError("\n".join(problems))
    return Worksheet(path, header, rows, participants, lines)


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


Dated = list[tuple[str, int, datetime.datetime]]  # (the row's Identifier, its line, the moment)


def known_times(worksheet: Worksheet, zone_name: str | None, where_zone: str) -> tuple[Dated, Dated, list[str]]:
    """The submission times (``Last modified (submission)``) and extensions (``Status``) of the
    worksheet, in the course's time zone; each problem with its line. Without a time zone, a
    worksheet that holds dates is a problem: read in the wrong zone, a student is hours late."""
    times: Dated = []
    extensions: Dated = []
    problems: list[str] = []
    dated = [row for row in worksheet.rows if row.get(SUBMITTED, NO_DATE) not in ("", NO_DATE) or extension_in(row.get(STATUS, ""))]
    if not dated:
        return times, extensions, problems
    if zone_name is None:
        problems.append(
            f"{where_zone}: Moodle's worksheet {worksheet.path.name} gives its dates in the time zone of whoever downloaded it, "
            "with no offset: set [assignment] timezone to that zone (an IANA name, \"Europe/Berlin\")"
        )
        return times, extensions, problems
    zone = zoneinfo.ZoneInfo(zone_name)
    for row, line in zip(worksheet.rows, worksheet.lines):
        where = f"{worksheet.path}:{line}"
        try:
            submitted = parse_date(row.get(SUBMITTED, ""), zone)
            extension_text = extension_in(row.get(STATUS, ""))
            extension = parse_date(extension_text, zone) if extension_text else None
        except DateError as error:
            problems.append(f"{where}: {error}; download the worksheet with your Moodle's language set to English")
            continue
        if submitted is not None:
            times.append((row[IDENTIFIER], line, submitted))
        if extension is not None:
            extensions.append((row[IDENTIFIER], line, extension))
    return times, extensions, problems
