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

# name: [[:word:]] characters (Python's \w on str is Unicode too), possibly empty (anonymous);
# the shortest name that lets the rest match: the first all-digit parts are the ids, as
# Canvas's own reader takes them. "LATE" is Canvas's spelling; "late" is accepted because
# ids are compared without case (a case-insensitive disk, a roster lookup).
_CANVAS_NAME = re.compile(
    r"^(?:(?P<name>\w*?)_)??(?:(?P<late>LATE|late)_)?"
    r"(?P<user>\d+|anon_[0-9A-Za-z]+)_(?P<attachment>\d+)_(?P<file>.+)\Z",
    re.DOTALL,
)


@dataclass(frozen=True)
class CanvasName:
    name: str  # the student's sortable name as Canvas wrote it ("smithjane"); "" when anonymous
    late: bool  # Canvas marked the submission late when the zip was made
    user_id: str  # Canvas's user id ("12345"), or "anon_<id>" for an anonymously graded assignment
    attachment_id: str  # the uploaded file's id: one per file, never shared by two files
    file_name: str  # the file's name as the student uploaded it (Canvas replaced /\\:*?"<>| by _)


def parse_canvas_name(filename: str) -> CanvasName | None:
    """``filename`` read as a Canvas "Download Submissions" name, or None when it is not one
    (read in NFC: see the module's docstring; a combining accent is not a \\w character)."""
    match = _CANVAS_NAME.match(unicodedata.normalize("NFC", filename))
    if match is None:
        return None
    return CanvasName(match["name"] or "", match["late"] is not None, match["user"], match["attachment"], match["file"])
