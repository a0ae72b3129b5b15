"""The names Canvas gives files in an assignment's "Download Submissions" zip.

Canvas writes them in ``ContentZipper`` (canvas-lms, lib/content_zipper.rb):

    get_filename:           [users_name, submission.late? ? "LATE" : nil, id].compact.join("_"),
                            then sanitize_file_name (every character that is not [[:word:]] removed);
                            id = submission.user_id, or "anon_#{submission.anonymous_id}" when
                            the assignment is graded anonymously (users_name is then nil)
    add_upload_submission:  "#{filename}_#{file.id}_#{sanitize_attachment_filename(file.display_name)}"
    get_user_name:          the user's sortable_name ("Last, First"), sanitize_user_name:
                            downcased, and every "_<digits>_" in it collapsed to the digits,
                            "because we use /_\\d+_/ to infer the user/attachment ids when
                            teachers upload graded submissions"

so an uploaded file arrives as ``smithjane_12345_67890_attention.py`` (user 12345, file
67890) or ``smithjane_LATE_12345_67890_attention.py``, one zip member per uploaded file.
Canvas reads them back (Assignment#infer_comment_context_from_filename, app/models/assignment.rb)
by splitting on "_" and taking the first two all-digit parts as the user id and the
attachment id: ``parse_canvas_name`` reads them the same way, so a name whose owner Canvas
would find is read as Canvas reads it. Text entries and links (``..._text.html``,
``..._link.html``) carry no attachment id and are not uploads.

That first reading is not always the name Canvas wrote: ``sanitize_user_name`` collapses
``_<digits>_`` only where digits sit between two underscores, and ``sanitize_file_name``
keeps ``_`` (a [[:word:]] character), so a sortable name that ends in ``_<digits>`` ("eve_12")
keeps them, and its files arrive as ``eve_12_999_5000_attention.py``: user 999, file 5000,
which the first reading takes for user 12, file 999. ``canvas_readings`` gives every way a
name splits as ``get_filename`` and ``add_upload_submission`` join it; which one is the
student's is decided where the roster is known (grader/term/identity.py), never here.

Lateness is read here (the ``LATE`` marker) but decided elsewhere: this module only names
what the file name says.

A name is read in Unicode's composed form (NFC), as intake reads ids (intake.student_id_of):
a zip made on macOS, or unpacked there, spells "josé" decomposed (NFD: e and a combining
accent), and the same student's two files must give one name, not two students.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# What follows the name: "LATE" is Canvas's spelling; "late" is accepted because ids are
# compared without case (a case-insensitive disk, a roster lookup).
_AFTER_NAME = re.compile(
    r"(?:(?P<late>LATE|late)_)?(?P<user>\d+|anon_[0-9A-Za-z]+)_(?P<attachment>\d+)_(?P<file>.+)\Z",
    re.DOTALL,
)
_NAME = re.compile(r"\w*\Z")  # [[:word:]] characters (Python's \w on str is Unicode too), possibly none (anonymous)


@dataclass(frozen=True)
class CanvasName:
    name: str  # the student's sortable name as Canvas wrote it ("smithjane"); "" when anonymous
    late: bool  # Canvas marked the submission late when the zip was made
    user_id: str  # Canvas's user id ("12345"), or "anon_<id>" for an anonymously graded assignment
    attachment_id: str  # the uploaded file's id: one per file, never shared by two files
    file_name: str  # the file's name as the student uploaded it (Canvas replaced /\\:*?"<>| by _)


def canvas_readings(filename: str) -> list[CanvasName]:
    """Every way ``filename`` splits as a Canvas "Download Submissions" name (read in NFC: see
    the module's docstring; a combining accent is not a \\w character), the shortest name
    first: the first is Canvas's own reading (``parse_canvas_name``), the others give the name
    more of the parts ("eve_12_999_5000_a.py": user 12 named "eve", or user 999 named "eve_12").
    Empty when it is not a Canvas name."""
    text = unicodedata.normalize("NFC", filename)
    readings = []
    # The name ends before an underscore (or is empty: an anonymous assignment's files).
    for start in [0, *(index + 1 for index, character in enumerate(text) if character == "_")]:
        name = text[: start - 1] if start else ""
        match = _AFTER_NAME.match(text, start)
        if match is not None and _NAME.match(name):
            readings.append(CanvasName(name, match["late"] is not None, match["user"], match["attachment"], match["file"]))
    return readings


def parse_canvas_name(filename: str) -> CanvasName | None:
    """``filename`` read as Canvas's own reader reads it (the first of ``canvas_readings``), or
    None when it is not a Canvas name. Which student a file is: grader/term/identity.py."""
    readings = canvas_readings(filename)
    return readings[0] if readings else None
