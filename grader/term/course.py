"""The course file: how one assignment is set up, read by every instructor's command.

``course.toml`` in the working directory, or the file ``--course PATH`` names, holds the
assignment's LMS column, points, scaffolding level, grading seed, deadline, late policy,
extensions and the files beside it (roster, overrides, submission times). Every command
that grades, reports, exports or builds a hand-out takes its settings from there; a flag
given on the command line still wins, and the command says so in one line.

``python -m grader course init PATH`` writes a commented starting file (``STARTING_FILE``).
The file is read with the standard library's tomllib; a malformed file, an unknown key or a
value of the wrong kind ends the command with one message naming the key and its line.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import re
import tomllib
import zoneinfo
from dataclasses import dataclass, field
from pathlib import Path

from grader.seam import registry
from grader.term import instructor_files

FILE_NAME = "course.toml"

STARTING_FILE = """\
# The course file of one assignment: every `python -m grader` command reads it (from the
# working directory, or --course PATH). A flag on the command line wins over it.

[assignment]
name = "HW3 Multi-head attention"   # the LMS column's title
# lms_id = 777                      # Canvas's assignment id: the column is "name (lms_id)"
points = 100                        # the assignment's points possible in the LMS
# exercise = "NAME"                 # which exercise: grader/exercises/NAME (unset: the course's first)
level = "standard"                  # the scaffolding of the hand-out: "standard" or "guided"
# grading_seed = 4242               # written here by the first batch; every later run uses it
# deadline = "2026-12-05T23:59:00-05:00"   # ISO 8601 with its UTC offset
# timezone = "Europe/Berlin"        # Moodle's worksheet gives its dates without an offset: the zone they are in

[lms]
# kind = "moodle"                   # the LMS, "canvas" or "moodle"; unset: recognised from the roster's columns

[late]
penalty_per_day = 10                # percent of the points, per day or part of a day late
max_days = 3                        # later than that: 0
grace_minutes = 15                  # a submission this close after the deadline is on time
unknown_delay_days = 1              # late by Canvas's marker alone (no time known): counted as this many days

[extensions]                        # a student's name = their own deadline (any name: login, SIS id, Canvas id, "Last, First")
# jsmith = "2026-12-07T23:59:00-05:00"

[files]                             # relative to this file's folder
# roster = "roster.csv"             # Canvas's gradebook CSV or Moodle's grading worksheet: every student's name checked against it
# overrides = "overrides.csv"       # student,score,reason: applied after grading, kept through regrades; no score: a comment
# submitted_at = "submitted_at.csv" # student,submitted_at (ISO 8601), as any LMS can export

[handout]                           # what the hand-outs need
# install_from = "https://example.edu/mha_grader-1.0-py3-none-any.whl"   # notebook, release, nbgrader
# image = "mha-grader"              # PrairieLearn's grading image
# slug = "multi-head-attention"     # Classroom 50's assignment slug
# hidden_visibility = "after_published"   # Gradescope: when students see the hidden tests
"""


class CourseError(ValueError):
    """A course file that cannot be used; the message names the file, the key and the line."""


# What each key may hold: a checker returns the value, or None when it is not of that kind.
def _text(value):
    return value if isinstance(value, str) and value.strip() else None


def _moment(value):
    """A deadline: a TOML offset date-time, or a string in ISO 8601 with its UTC offset."""
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value)
        except ValueError:
            return None
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value
    return None


@dataclass(frozen=True)
class Within:
    """A number in ``[low, high]`` (whole when ``whole``): finite, so nan and inf never reach
    the late policy (``min(100, days * nan)`` is 100; an infinite grace overflows a timedelta)."""

    low: float
    high: float
    whole: bool = False
    above_low: bool = False  # the low end itself excluded (points: 0 would divide by nothing)
    unit: str = ""

    def __call__(self, value):
        if type(value) is not int and (self.whole or type(value) is not float):  # True is not a number
            return None
        if not math.isfinite(value) or value > self.high or value < self.low or (self.above_low and value == self.low):
            return None
        return value

    @property
    def description(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        low, high = _number_text(self.low), _number_text(self.high)
        if self.high >= 2**62:  # no bound a person would reach
            return f"{kind} {'above ' + low if self.above_low else 'of ' + low + ' or more'}"
        if self.above_low:
            return f"{kind} above {low} and at most {high}{self.unit}"
        return f"{kind} from {low} to {high}{self.unit}"


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _zone(value):
    """A time zone by its IANA name, as zoneinfo knows it: the one an LMS's dates without an offset
    are in (Moodle's worksheet: grader/term/lms_files/moodle_worksheet.py)."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None
    return value


def _exercise(value):
    """An exercise this grader holds, by its name (grader/exercises/NAME)."""
    return value if isinstance(value, str) and value in registry.names() else None


LMS_KINDS = ("canvas", "moodle")  # grader/term/roster.py choose, grader/lms/: one module each


def _lms_kind(value):
    return value if value in LMS_KINDS else None


KINDS = {
    _text: "a non-empty string",
    _moment: 'a date and time with its UTC offset, e.g. "2026-12-05T23:59:00-05:00"',
    _zone: 'a time zone\'s IANA name, e.g. "Europe/Berlin"',
    _lms_kind: " or ".join(f'"{kind}"' for kind in LMS_KINDS),
    _exercise: "the name of an exercise (" + registry.holding() + ")",
}


def kind_of(check) -> str:
    return check.description if isinstance(check, Within) else KINDS[check]


SCHEMA = {
    "assignment": {
        "name": _text, "lms_id": Within(1, 2**63 - 1, whole=True), "points": Within(0, 1_000_000, above_low=True),
        "exercise": _exercise, "level": _text, "grading_seed": Within(0, 2**63 - 1, whole=True), "deadline": _moment, "timezone": _zone,
    },
    "lms": {"kind": _lms_kind},
    "late": {
        "penalty_per_day": Within(0, 100, unit=" (percent of the points)"),
        "max_days": Within(0, 365, whole=True, unit=" (days)"),
        "grace_minutes": Within(0, 7 * 24 * 60, unit=" (minutes: a week at most)"),
        "unknown_delay_days": Within(0, 365, whole=True, unit=" (days)"),
    },
    "extensions": None,  # any student's name (grader/term/identity.py), each a deadline
    "files": {"roster": _text, "overrides": _text, "submitted_at": _text},
    "handout": {"install_from": _text, "image": _text, "slug": _text, "hidden_visibility": _text},
}


@dataclass(frozen=True)
class LatePolicy:
    penalty_per_day: float = 0.0  # percent of the points
    max_days: int | None = None
    grace_minutes: float = 0.0
    unknown_delay_days: int = 1


@dataclass(frozen=True)
class Course:
    path: Path
    values: dict  # section -> key -> checked value
    extensions: dict[str, datetime.datetime] = field(default_factory=dict)  # as written: a student's name -> deadline
    lines: dict[tuple[str, str], int] = field(default_factory=dict)  # (section, key) -> its line in the file

    def get(self, section: str, key: str, default=None):
        return self.values.get(section, {}).get(key, default)

    def file(self, key: str) -> Path | None:
        """A ``[files]`` entry, relative to the course file's folder."""
        name = self.get("files", key)
        return (self.path.parent / name) if name else None

    @property
    def deadline(self) -> datetime.datetime | None:
        return self.get("assignment", "deadline")

    @property
    def late(self) -> LatePolicy:
        values = self.values.get("late", {})
        return LatePolicy(
            penalty_per_day=float(values.get("penalty_per_day", 0)), max_days=values.get("max_days"),
            grace_minutes=float(values.get("grace_minutes", 0)), unknown_delay_days=values.get("unknown_delay_days", 1),
        )

    @property
    def column_title(self) -> str | None:
        """The LMS column: Canvas names it "name (lms_id)"."""
        name, lms_id = self.get("assignment", "name"), self.get("assignment", "lms_id")
        if name is None:
            return None
        return f"{name} ({lms_id})" if lms_id is not None else name


def load(path: Path) -> Course:
    """The course file, checked: every key known, every value of its kind and in its range.
    Every problem is said at once, one line each naming the file, the line and the key."""
    path = Path(path)
    try:
        text = instructor_files.read_text(path)  # a regular file, bounded, UTF-8 (a byte-order mark dropped)
    except instructor_files.UnreadableFile as error:
        raise CourseError(error.message(path)) from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:  # its message ends with "(at line N, column M)"
        raise CourseError(f"{path}: not valid TOML: {error}") from None
    values: dict = {}
    extensions: dict = {}
    lines: dict = {}
    problems = []
    for section, content in document.items():
        if section not in SCHEMA:
            problems.append(f"{path}:{line_of(text, section)}: unknown section [{section}] (known: {', '.join(SCHEMA)})")
            continue
        if not isinstance(content, dict):
            problems.append(f"{path}:{line_of(text, None, section)}: {section} must be a section, [{section}]")
            continue
        keys = SCHEMA[section]
        for key, value in content.items():
            line = lines[(section, key)] = line_of(text, section, key)
            check = _moment if keys is None else keys.get(key)
            if check is None:
                problems.append(f"{path}:{line}: unknown key {_cut(key)!r} in [{section}] (known: {', '.join(keys)})")
                continue
            checked = check(value)
            if checked is None:
                problems.append(f"{path}:{line}: [{section}] {_cut(key)} must be {kind_of(check)}, not {_shown(value)}")
            elif keys is None:
                extensions[key] = checked
            else:
                values.setdefault(section, {})[key] = checked
    deadline = values.get("assignment", {}).get("deadline")
    for key, moment in extensions.items() if deadline is not None else ():
        # An extension is a later deadline: one on or before the assignment's is a typo (a year,
        # a month) or a deadline moved past it since, and would take points from that student.
        if moment <= deadline:
            problems.append(
                f"{path}:{lines[('extensions', key)]}: [extensions] {_cut(key)} = {moment.isoformat()} is not after "
                f"the assignment's deadline ({deadline.isoformat()}): an extension must give a later one"
            )
    if problems:
        raise CourseError("\n".join(problems))
    return Course(path, values, extensions, lines)


def _shown(value) -> str:
    """A value in a message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _cut(key: str) -> str:
    """A key in a message, cut short (a 200,000-character key still makes a line)."""
    return key if len(key) <= 60 else key[:57] + "..."


def line_of(text: str, section: str | None, key: str | None = None) -> int:
    """The line (from 1) of ``key`` in ``[section]`` (or of the section's header when
    ``key`` is None; of a top-level key when ``section`` is None); 1 when not found. A
    plain reading of TOML's layout, enough to point an instructor at the right line."""
    current = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = re.fullmatch(r"\[\s*([^\]]+?)\s*\](\s*#.*)?", stripped)
        if header:
            current = header[1].strip('"')
            if key is None and current == section:
                return number
            continue
        if key is not None and current == section and re.match(rf'["\']?{re.escape(key)}["\']?\s*=', stripped):
            return number
    return 1


def find(explicit: Path | None, working_directory: Path | None = None) -> Path | None:
    """The course file to read: the one given, else ``course.toml`` in the working directory."""
    if explicit is not None:
        return Path(explicit)
    candidate = Path(working_directory or Path.cwd()) / FILE_NAME
    # Anything of that name is the course file: a folder or a link to nothing is refused by
    # ``load``, never passed over (the command would then run without the course's policy).
    return candidate if os.path.lexists(candidate) else None


def record_seed(course: Course, seed: int) -> None:
    """Write ``grading_seed = SEED`` into the course file's [assignment] section, keeping
    every other line (and comment) as it was: one line replaced, or one inserted."""
    raw = course.path.read_text(encoding="utf-8")
    mark = "\ufeff" if raw.startswith("\ufeff") else ""  # a byte-order mark (``load`` drops it) is kept
    text = raw[len(mark):]
    lines = text.splitlines(keepends=True)
    line = f"grading_seed = {seed}                # drawn by the first batch; every later run uses it\n"
    if course.get("assignment", "grading_seed") is not None:
        index = line_of(text, "assignment", "grading_seed") - 1
        lines[index] = line
    elif "assignment" in _sections(text):
        lines.insert(line_of(text, "assignment"), line)
    else:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines += ["\n[assignment]\n", line]
    new_text = "".join(lines)
    if tomllib.loads(new_text).get("assignment", {}).get("grading_seed") != seed:  # never leave a broken file
        raise CourseError(f"{course.path}: could not record grading_seed = {seed}; add that line to [assignment] by hand")
    course.path.write_text(mark + new_text, encoding="utf-8")


def _sections(text: str) -> set[str]:
    return {match[1].strip().strip('"') for match in re.finditer(r"(?m)^\s*\[\s*([^\]\[]+?)\s*\]", text)}


# --- the commands' settings --------------------------------------------------------------

# Which option of which command a course key sets: command -> option's dest -> (section, key).
# A path is relative to the course file's folder.
OPTIONS = {
    "batch": {"assignment": ("assignment", "name")},
    "report": {"assignment": ("assignment", "name")},
    "export": {"assignment": ("assignment", "column_title"), "points": ("assignment", "points"), "roster": ("files", "roster")},
    "release": {"level": ("assignment", "level"), "install_from": ("handout", "install_from")},
    "notebook": {"level": ("assignment", "level"), "install_from": ("handout", "install_from")},
    "nbgrader": {"level": ("assignment", "level"), "install_from": ("handout", "install_from")},
    "wheel": {"level": ("assignment", "level")},
    "gradescope": {"hidden_visibility": ("handout", "hidden_visibility")},
    "prairielearn": {"image": ("handout", "image")},
    "classroom50": {"slug": ("handout", "slug")},
}
PATH_KEYS = {("files", "roster")}


def add_course_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--course", type=Path, default=None, metavar="PATH",
        help=f"the course file (default: {FILE_NAME} in the working directory, if there is one); a flag wins over it",
    )


def course_path_in(argv: list[str]) -> Path | None:
    """``--course PATH`` read ahead of argparse: the course supplies defaults before parsing."""
    for index, word in enumerate(argv):
        if word == "--course" and index + 1 < len(argv):
            return Path(argv[index + 1])
        if word.startswith("--course="):
            return Path(word.split("=", 1)[1])
    return None


def apply_to_parser(command: str, parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """Make the course's settings ``parser``'s defaults (so an option the course supplies is
    no longer required); return one line per flag given that wins over the course."""
    path = find(course_path_in(argv))
    if path is None:
        parser.set_defaults(course_settings=None)
        return []
    course = load(path)
    parser.set_defaults(course_settings=course)
    notes = []
    actions = {action.dest: action for action in parser._actions}  # argparse keeps no public map
    for dest, (section, key) in OPTIONS.get(command, {}).items():
        value = course.column_title if key == "column_title" else course.get(section, key)
        action = actions.get(dest)
        if value is None or action is None:
            continue
        shown_key = "name and lms_id" if key == "column_title" else key
        if _given(action, argv):
            notes.append(f"{action.option_strings[0]} given: it wins over {path.name}'s [{section}] {shown_key} = {value!r}")
            continue
        if (section, key) in PATH_KEYS:
            value = course.path.parent / value
        elif callable(action.type):  # the flag's own check: points of 0 are refused from here too
            try:
                value = action.type(str(value))
            except (argparse.ArgumentTypeError, ValueError) as error:
                raise CourseError(f"{path}:{line_of(path.read_text(encoding='utf-8'), section, key)}: [{section}] {key}: {error}") from None
        if action.choices is not None and value not in action.choices:
            raise CourseError(
                f"{path}:{line_of(path.read_text(encoding='utf-8'), section, key)}: [{section}] {key} must be one of "
                f"{', '.join(map(str, action.choices))}, not {value!r}"
            )
        action.default = value
        action.required = False
    return notes


def _given(action: argparse.Action, argv: list[str]) -> bool:
    return any(word == option or word.startswith(option + "=") for option in action.option_strings for word in argv)
