"""What an LMS's download says of one entry (a file or folder of its zip): whose it is.

One reader per LMS, each in its module and citing that LMS's source: Canvas's
(grader/term/canvas_names.py: ``name[_LATE]_userid_attachmentid_file``) and Moodle's
(grader/lms/moodle_download.py: ``Full Name_participantid_assignsubmission_file[_file]``). The
two cannot be confused (Moodle's carries ``_assignsubmission_`` where Canvas's carries a second
number), and Moodle's is asked first, being the more particular. Both readings have the fields
the identity resolver reads (grader/term/identity.py): ``name``, ``user_id`` (the LMS's id of the
student, as its gradebook or worksheet has it), ``attachment_id`` ("" when the LMS gives no order
of uploads), ``late`` and ``file_name``.
"""

from __future__ import annotations

from grader.lms import moodle_download
from grader.term.canvas_names import CanvasName, parse_canvas_name

EntryName = CanvasName | moodle_download.MoodleName


def read_entry_name(name: str) -> EntryName | None:
    """``name`` read as the LMS's download wrote it, or None when no LMS's reader knows it."""
    return moodle_download.parse_moodle_name(name) or parse_canvas_name(name)


def lms_of_entry(reading: EntryName | None) -> str | None:
    """"moodle", "canvas", or None: which LMS wrote the name."""
    if reading is None:
        return None
    return "moodle" if isinstance(reading, moodle_download.MoodleName) else "canvas"
