"""Which LMS module a course uses: the one of the kind grader/term/roster.py ``choose`` picks (the course
file's ``[lms] kind``, else recognised from the roster's columns, else Canvas), said with why."""

from __future__ import annotations

from pathlib import Path

from grader.lms.canvas import CANVAS
from grader.lms.moodle import MOODLE
from grader.lms.protocol import Lms
from grader.term import roster

LMSS: dict[str, Lms] = {"canvas": CANVAS, "moodle": MOODLE}


def choose(course, roster_path: Path | None) -> tuple[Lms, roster.Chosen]:
    """The course's LMS module and why it is that one; ``RosterError`` when the course file and the
    roster disagree."""
    chosen = roster.choose(course, roster_path)
    return LMSS[chosen.kind], chosen
