"""What an LMS is to the grader: one module per LMS behind this one interface.

An LMS gives the grader its class download (read where the batch unpacks and names entries:
grader/term/identity.py ``read_entry_name``), its roster, and what that roster knows of when each student handed
in and until when they could; it takes back a grade import and a feedback upload. Each LMS's
module reads and writes its own formats, each cited from that LMS's source:

    grader/lms/canvas.py   Canvas: the gradebook CSV, "Download Submissions", the gradebook
                           import, "Re-Upload Submissions"
    grader/lms/moodle.py   Moodle: the grading worksheet, "Download all submissions", "Upload
                           grading worksheet", "Upload multiple feedback files in a zip"

Which LMS a course uses: the course file's ``[lms] kind``, else recognised from the roster's
columns (grader/term/roster.py ``choose``, grader/lms/choice.py), and every command that reads one says which and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from grader.lms.feedback_zip import FeedbackZip
from grader.term.identity import Match
from grader.term.course_inputs import KnownTimes


class Lms(Protocol):
    kind: str  # the course file's [lms] kind: "canvas", "moodle"
    title: str  # as people write it: "Canvas", "Moodle"
    grades_format: str  # export's --format when none is given

    def read_roster(self, path: Path) -> list[dict[str, str]]:
        """The roster's students, each a row with the names the identity resolver compares
        (grader/term/roster.py's columns); ``RosterError`` naming the file and line."""

    def known_times(self, path: Path, course) -> KnownTimes:
        """The submission times and extensions the roster holds, for the course's late policy."""

    def write_grades(self, roster: Path, found: Match, submissions: dict[str, dict], assignment: str | None,
                     points: float | None) -> tuple[str, list[str]]:
        """The grade import's text, and sentences the instructor must read (grades capped, a column missing)."""

    def write_feedback_zip(self, target: Path, out: Path, submissions: dict[str, dict], found: Match,
                           originals: Path | None) -> FeedbackZip:
        """Write the feedback upload; who is in it, and why each other student is not."""

    def feedback_zip_said(self) -> str:
        """What the written feedback zip is for, in one clause."""
