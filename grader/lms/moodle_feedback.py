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
grader/lms/moodle_names.py, so holding no ``_``). The participant id comes from the student's
worksheet row, the one the export matched them to (grader/term/identity.py).

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


def write_feedback_zip(target: Path, out: Path, submissions: dict[str, dict], rows_of: dict[str, dict[str, str]],
                       not_on_roster: dict[str, str] | None = None) -> FeedbackZip:
    """Write ``target``: each graded student's feedback page (``OUT/feedback/<id>.html``, else its
    Markdown), named for Moodle's import; ``rows_of`` maps a student's id to their worksheet row
    (matched by grader/term/identity.py), ``not_on_roster`` says why the others have none. The
    participant id is the row's only: a file held apart because its name and participant id disagree
    with the worksheet would reach the id's owner through its name, so no row, no page."""
    summary = FeedbackZip()
    files: dict[str, bytes] = {}
    for sid in sorted(submissions):
        row = rows_of.get(sid) or {}
        participant = row.get(ID, "")
        name = row.get(STUDENT) or moodle_names.BLIND_NAME
        page = _feedback_page(out, sid)
        if not participant:
            why = (not_on_roster or {}).get(sid) or "its row has no participant id"
            summary.left_out[sid] = f"not matched to a row of the worksheet ({why}): no participant id to send it to"
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
