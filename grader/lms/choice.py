"""Which LMS a course uses: the course file's ``[lms] kind``, else recognised from its roster's
columns (Moodle's worksheet has ``Identifier``; Canvas's gradebook ``ID`` and its SIS columns),
else Canvas, as before there was a choice. ``choose`` says which and why, for the run's output;
a course file that names one LMS and a roster of the other is refused, naming both."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from grader.lms.canvas import CANVAS
from grader.lms.moodle import MOODLE
from grader.lms.protocol import Lms
from grader.term import instructor_files
from grader.term.roster import RosterError

LMSS: dict[str, Lms] = {"moodle": MOODLE, "canvas": CANVAS}  # recognised in this order: Moodle's columns are the more particular


@dataclass(frozen=True)
class Chosen:
    lms: Lms
    why: str  # "course.toml [lms] kind", "recognised from worksheet.csv's columns"

    def said(self) -> str:
        return f"LMS: {self.lms.title} ({self.why})"


def choose(course, roster: Path | None) -> Chosen:
    """The course's LMS (see the module's docstring); ``RosterError`` when the course file and the
    roster disagree."""
    header = _header(roster) if roster is not None else None
    recognised = next((lms for lms in LMSS.values() if header is not None and lms.looks_like_roster(header)), None)
    kind = course.get("lms", "kind") if course is not None else None
    if kind is not None:
        lms = LMSS[kind]
        if recognised is not None and recognised is not lms:
            raise RosterError(
                f"{course.path}: [lms] kind = {kind!r}, but the roster {roster} is {recognised.title}'s "
                f"({'grading worksheet' if recognised is MOODLE else 'gradebook export'}): give {lms.title}'s, or change the kind"
            )
        return Chosen(lms, f"{course.path.name} [lms] kind")
    if recognised is not None:
        return Chosen(recognised, f"recognised from {Path(roster).name}'s columns")
    return Chosen(CANVAS, "the default: no [lms] kind in a course file, no roster to recognise")


def _header(path: Path) -> list[str] | None:
    """The roster's first line, or None when it cannot be read (its reader says why)."""
    try:
        text = instructor_files.read_text(Path(path))
        return [cell.strip() for cell in next(csv.reader(io.StringIO(text, newline="")), [])]
    except (instructor_files.UnreadableFile, csv.Error, OSError):
        return None
