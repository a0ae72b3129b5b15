"""Everything an instructor wrote for one assignment, read and checked together.

The course file (grader/batch/course.py) names the others in ``[files]``: the roster (the
gradebook CSV Canvas exports), ``overrides.csv`` and ``submitted_at.csv``; its own
``[extensions]`` name students too. ``read`` reads them all and collects every problem (each
with its file and line); ``resolve`` resolves every name they hold to a student
(grader/batch/identity.py) and collects every name that matches nobody, or more than one, or a
student a second time. ``python -m grader course check`` and the batch run these same two
functions: what one refuses, the other refuses.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from grader.batch import late_work, overrides, roster
from grader.batch.course import Course
from grader.batch.identity import Assigned, Identities, InstructorFileError, Keyed, assign

EXTENSION = "extension"


@dataclass
class Inputs:
    course: Course | None
    rows: list[dict[str, str]] | None = None  # the roster's students; None without a roster
    overrides: dict[str, overrides.Override] = field(default_factory=dict)
    times: dict[str, late_work.SubmittedAt] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # each names its file (and line)

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
            inputs.rows = roster.read_roster(path)
        except roster.RosterError as error:
            inputs.problems.append(f"{path}: {error}")
        except OSError as error:
            inputs.problems.append(f"{path}: cannot be read ({error.strerror or error})")
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
    return Resolved(
        assign(identities, inputs.keyed_extensions()),
        assign(identities, late_work.keyed(course.file("submitted_at"), inputs.times) if inputs.times else [], per_submission=True),
        assign(identities, overrides.keyed(course.file("overrides"), inputs.overrides) if inputs.overrides else []),
    )
