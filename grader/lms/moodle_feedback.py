"""Feedback back to Moodle: the zip its "Upload multiple feedback files in a zip" takes, one
feedback page per graded student.

How Moodle finds a file's student (mod/assign/feedback/file/importziplib.php, moodle/moodle,
``is_valid_filename_for_import`` and ``import_zip_files``): hidden files (a name starting with
``.`` or ``~``) are ignored; each part of the file's path is split on ``_`` into at most five
pieces, and the first part with at least four whose second piece is the participant id of a
participant of the assignment (``get_uniqueid_for_user``) and whose third and fourth name one of
its plugins (``get_plugin_by_type``) gives the student and the plugin; what follows the fourth
``_`` is the file's name. The file becomes a feedback file of that student's grade (added, or
replacing one of the same name; ``is_file_modified`` passes over a file unchanged since).

So each graded student's page is one member named, flat, as Moodle's own download names files
(the pre-3.1 layout, which every version's importer reads):
``<full name>_<participant id>_assignfeedback_file_autograder-feedback.html`` (the feedback-file
plugin, ``assignfeedback_file``, which this import belongs to; the name as the download writes it,
grader/lms/moodle_names.py, so holding no ``_``). The participant id comes from the name of the
entry Moodle's download gave the student, or from their worksheet row.

Rehearsed: the names, read back here as importziplib.php reads them (tests/test_moodle_term.py).
Not rehearsed: an upload to a real Moodle.
"""

from __future__ import annotations

from pathlib import Path

from grader import untrusted
from grader.term.lms_files import moodle_names
from grader.lms.feedback_zip import FeedbackZip, write_zip
from grader.term.roster import ID, STUDENT

FEEDBACK_PLUGIN = "assignfeedback_file"
FEEDBACK_FILE = "autograder-feedback.html"


def member_name(full_name: str, participant: str) -> str:
    return f"{moodle_names.name_in_files(full_name)}_{participant}_{FEEDBACK_PLUGIN}_{FEEDBACK_FILE}"


def write_feedback_zip(target: Path, out: Path, submissions: dict[str, dict], rows_of: dict[str, dict[str, str]]) -> FeedbackZip:
    """Write ``target``: each graded student's feedback page (``OUT/feedback/<id>.html``, else its
    Markdown), named for Moodle's import; ``rows_of`` maps a student's id to their worksheet row."""
    summary = FeedbackZip()
    files: dict[str, bytes] = {}
    for sid in sorted(submissions):
        row = rows_of.get(sid) or {}
        reading = moodle_names.parse_moodle_name(str(submissions[sid].get("graded_from") or ""))
        participant = row.get(ID) or (reading.user_id if reading else "")
        name = row.get(STUDENT) or (reading.name if reading else "") or "Participant"
        page = _feedback_page(out, sid)
        if not participant:
            summary.left_out[sid] = "no participant id: neither Moodle's download named its file nor the worksheet has its row"
        elif page is None:
            summary.left_out[sid] = "no feedback page (OUT/feedback) for it: run the batch again"
        elif member_name(name, participant) in files:
            summary.left_out[sid] = f"participant {participant} already has a page in the zip (two submissions of one student?)"
        else:
            files[member_name(name, participant)] = page
            summary.written.append(sid)
    if summary.written:  # a zip for no one is not written: the export says why, and fails
        write_zip(target, files)
    return summary


def _feedback_page(out: Path, sid: str) -> bytes | None:
    for suffix in (".html", ".md"):
        try:
            return (Path(out) / "feedback" / f"{untrusted.file_stem(sid)}{suffix}").read_bytes()
        except OSError:
            continue
    return None
