"""Everything an instructor wrote for one assignment, read and checked together.

The course file (grader/term/course.py) names the others in ``[files]``: the roster (the
gradebook CSV Canvas exports), ``overrides.csv`` and ``submitted_at.csv``; its own
``[extensions]`` name students too. ``read`` reads them all and collects every problem (each
with its file and line); ``resolve`` resolves every name they hold to a student
(grader/term/identity.py) and collects every name that matches nobody, or more than one, or a
student a second time. ``python -m grader course check`` and the batch run these same two
functions: what one refuses, the other refuses.

``Adjustments`` is what they give a student's grade (their deadline, the time of the file
graded, their override or comment), asked by the student's id in the gradebook; the one object
that the batch (grader/batch/class_intake.py makes it), the grade's derivation
(grader/term/grade_trail.py's derive) and the export and the report (``adjustments``, with the
ids of the class's results.json) use, so that each resolves a name as the batch did.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from collections.abc import Iterable

from grader.term import late_work, overrides, roster
from grader.term.lms_files import moodle_worksheet
from grader.term.course import Course
from grader.term.identity import Assigned, Identities, InstructorFileError, Keyed, Student, assign, normal

EXTENSION = "extension"


class Refused(ValueError):
    """Inputs a command will not grade or export with: ``problems`` are one line each, with file and line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class KnownTimes:
    """What an LMS's roster says of when each student handed in and until when they could, as rows
    the identity resolver resolves, and what could not be read (each with its file and line)."""

    times: list[tuple[Keyed, datetime.datetime]] = field(default_factory=list)
    extensions: list[tuple[Keyed, datetime.datetime]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def known_times(kind: str, path, course: Course | None) -> KnownTimes:
    """The submission times and extensions an LMS's roster holds: Moodle's worksheet, read in the
    course's ``[assignment] timezone`` (grader/term/lms_files/moodle_worksheet.py); Canvas's
    gradebook holds none (its ``LATE`` marker is in the download's names)."""
    if kind != "moodle":
        return KnownTimes()
    where = f"{course.path}:{course.lines.get(('assignment', 'timezone'), 1)}" if course is not None else "the course file"
    zone = course.get("assignment", "timezone") if course is not None else None
    times, extensions, problems = moodle_worksheet.known_times(roster.read_worksheet(path), zone, where)
    return KnownTimes(
        [(Keyed(str(path), line, key, moodle_worksheet.SUBMITTED_WHAT), moment) for key, line, moment in times],
        [(Keyed(str(path), line, key, moodle_worksheet.EXTENSION_WHAT), moment) for key, line, moment in extensions],
        problems,
    )


@dataclass
class Inputs:
    course: Course | None
    rows: list[dict[str, str]] | None = None  # the roster's students; None without a roster
    overrides: dict[str, overrides.Override] = field(default_factory=dict)
    times: dict[str, late_work.SubmittedAt] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # each names its file (and line)
    lms: roster.Chosen | None = None  # the course's LMS, and why (with a roster)
    # What the LMS's roster knows (Moodle's worksheet: submission times, extensions), each row
    # giving way to the course's own files for the same student.
    lms_known: KnownTimes | None = None

    @property
    def lms_kind(self) -> str | None:
        """The LMS whose download's names are read (grader/term/identity.py): the roster's, else the
        course file's ``[lms] kind``, else None (the resolver recognises it from the names)."""
        if self.lms is not None:
            return self.lms.kind
        return self.course.get("lms", "kind") if self.course is not None else None

    def keyed_extensions(self) -> list[tuple[Keyed, datetime.datetime]]:
        if self.course is None:
            return []
        return [
            (Keyed(str(self.course.path), self.course.lines.get(("extensions", key), 1), key, EXTENSION), deadline)
            for key, deadline in self.course.extensions.items()
        ]


def read(course: Course | None) -> Inputs:
    """The course's files, each read and checked where it is read; every problem collected."""
    inputs = Inputs(course)
    if course is None:
        return inputs
    if (path := course.file("roster")) is not None:
        try:
            inputs.lms = roster.choose(course, path)
            inputs.rows = roster.read_roster_of(inputs.lms.kind, path)
            inputs.lms_known = known_times(inputs.lms.kind, path, course) if course.deadline is not None else None
        except roster.RosterError as error:  # each line names the file
            inputs.problems += str(error).splitlines()
        if inputs.lms_known is not None:
            inputs.problems += inputs.lms_known.problems
    if (path := course.file("overrides")) is not None:
        try:
            inputs.overrides = overrides.read_overrides(path)
        except InstructorFileError as error:
            inputs.problems += str(error).splitlines()
    if (path := course.file("submitted_at")) is not None:
        try:
            inputs.times = late_work.read_submitted_at(path)
        except InstructorFileError as error:
            inputs.problems += str(error).splitlines()
    return inputs


@dataclass
class Resolved:
    extensions: Assigned
    times: Assigned
    overrides: Assigned

    @property
    def errors(self) -> list[str]:
        return self.extensions.errors + self.times.errors + self.overrides.errors

    @property
    def unmatched(self) -> list[tuple[Keyed, str]]:
        return self.extensions.unmatched + self.times.unmatched + self.overrides.unmatched


def resolve(inputs: Inputs, identities: Identities) -> Resolved:
    course = inputs.course
    known = inputs.lms_known
    return Resolved(
        preferring(assign(identities, inputs.keyed_extensions()), assign(identities, known.extensions) if known else None),
        preferring(
            assign(identities, late_work.keyed(course.file("submitted_at"), inputs.times) if inputs.times else [], per_submission=True),
            assign(identities, known.times) if known else None,
        ),
        assign(identities, overrides.keyed(course.file("overrides"), inputs.overrides) if inputs.overrides else []),
    )


def preferring(own: Assigned, lms: Assigned | None) -> Assigned:
    """The course's own rows, and the LMS's for every student they leave out: an extension in the
    course file, or a time in submitted_at.csv, wins over what the LMS's roster says."""
    if lms is None:
        return own
    return Assigned(
        {**lms.by_student, **own.by_student}, dict(own.by_entry), own.errors + lms.errors, own.unmatched + lms.unmatched,
        {**lms.students, **own.students},
    )


def resolve_names(inputs: Inputs, stems: Iterable[str]) -> tuple[Identities, Resolved | None]:
    """Every name in the course's files resolved against the roster and the submissions' file
    stems (``stems``); raises ``Refused`` naming every problem (a file that cannot be used, a name
    that matches nobody on the roster, several students, or one student twice)."""
    if inputs.problems:
        raise Refused(inputs.problems)
    identities = Identities(inputs.rows, stems, inputs.lms_kind)
    resolved = resolve(inputs, identities) if inputs.course is not None else None
    if resolved is not None and resolved.errors:
        raise Refused(resolved.errors)
    return identities, resolved


@dataclass
class Adjustments:
    """What the course adds to each student's score: their deadline (an extension's), the
    submission time of the file graded, their override or comment; each found through the one
    resolver (grader/term/identity.py). Without a course file: nothing."""

    inputs: Inputs = field(default_factory=lambda: Inputs(None))
    identities: Identities | None = None
    resolved: Resolved | None = None
    # a student's id (the gradebook's first column) -> the file stem of the entry graded, where
    # that is not the id itself (the batch knows each entry; the export and the report read ids)
    stems: dict[str, str] = field(default_factory=dict)

    @property
    def course(self) -> Course | None:
        return self.inputs.course

    def student(self, student_id: str) -> Student:
        identities = self.identities or Identities(self.inputs.rows, lms=self.inputs.lms_kind)
        return identities.student_of(self.stems.get(student_id, student_id))

    def deadline(self, student: Student) -> tuple[datetime.datetime, bool] | None:
        """The deadline that applies, and whether it is an extension; None without a deadline."""
        course = self.course
        if course is None or course.deadline is None:
            return None
        extension = self.resolved.extensions.by_student.get(student.key) if self.resolved else None
        return (extension[1], True) if extension else (course.deadline, False)

    def submitted_at(self, student: Student, stem: str) -> datetime.datetime | None:
        """The time of the file ``stem`` (a row naming it by its Canvas download name), else the
        student's (a row naming them by any of their names)."""
        if self.resolved is None:
            return None
        own = self.time_of_file(stem)
        if own is not None:
            return own
        general = self.resolved.times.by_student.get(student.key)
        return general[1] if general else None

    def time_of_file(self, stem: str) -> datetime.datetime | None:
        """The submission time a row gives the file ``stem`` itself (its Canvas download name)."""
        by_entry = self.resolved.times.by_entry if self.resolved else {}
        wanted = normal(stem)
        return next((value for key, (_, value) in by_entry.items() if normal(key) == wanted), None)

    def lateness(self, student_id: str, entry_name: str) -> late_work.Lateness | None:
        """How late ``student_id``'s submission (graded from ``entry_name``, whose Canvas name may
        carry Canvas's late marker) is, by the course; None when there is no deadline."""
        if self.course is None or self.course.deadline is None:
            return None
        student = self.student(student_id)
        deadline = self.deadline(student)
        lms = self.identities.lms if self.identities is not None else self.inputs.lms_kind
        return late_work.lateness(
            self.submitted_at(student, self.stems.get(student_id, student_id)), late_work.canvas_marked_late(entry_name, lms),
            "submitted_at", deadline[0], self.course.late, extended=deadline[1], times_file=self.times_file,
        )

    def override_row(self, student_id: str) -> tuple[Keyed, overrides.Override] | None:
        """The overrides file's row for this student (where it is, and what it says), or None."""
        return self.resolved.overrides.by_student.get(self.student(student_id).key) if self.resolved else None

    def override(self, student_id: str) -> overrides.Override | None:
        """This student's override, or comment (``score`` None), or None."""
        row = self.override_row(student_id)
        return row[1] if row else None

    @property
    def times_file(self) -> str | None:
        """The submission times' file as the course file names it (``[files] submitted_at``): a
        late record says it, and must read the same wherever the course's folder is (the export
        and the report derive the record again, perhaps on another machine)."""
        return self.course.get("files", "submitted_at") if self.course is not None else None

    def where(self, key: str) -> str:
        """Why no record of ``key`` ("late", "override", "comment") can come from the course here,
        for a refusal's message; "" when the course's files are read."""
        if self.course is None:
            return "no course file is read here (course.toml in the working directory, or --course PATH)"
        if key == "late" and self.course.deadline is None:
            return f"{self.course.path.name} sets no [assignment] deadline"
        if key in ("override", "comment") and self.course.file("overrides") is None:
            return f"{self.course.path.name} names no overrides file ([files] overrides)"
        return ""


def adjustments(course: Course | None, ids: Iterable[str]) -> Adjustments:
    """The course's ``Adjustments`` for the export and the report, whose students are the ids of
    a class's results.json (each the file stem of the entry graded, as the batch names them):
    read and resolved as the batch does; ``Refused`` naming every problem."""
    return adjustments_of(read(course), ids)


def adjustments_of(inputs: Inputs, ids: Iterable[str]) -> Adjustments:
    """``adjustments`` of inputs already read."""
    ids = list(ids)
    identities, resolved = resolve_names(inputs, ids)
    return Adjustments(inputs, identities, resolved)
