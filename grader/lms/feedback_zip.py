"""Feedback back to Canvas: the zip that "Re-Upload Submissions" takes, one file per student.

How Canvas matches a re-uploaded file to a student (canvas-lms, app/models/assignment.rb,
``generate_comments_from_files`` and ``infer_comment_context_from_filename``):
- the file's base name is split on ``_``; the first two parts made only of digits are the
  user id and the attachment id (``smithjane_late_1234_5678_multi_head_attention.py`` gives
  user 1234, attachment 5678: the names "Download Submissions" gives are of this form);
- the file is attached only when that attachment is one of the files of that user's
  submission to this assignment; any other file is ignored and listed as such;
- it is attached to a comment on the submission under the DISPLAY NAME OF THE ORIGINAL
  ATTACHMENT ("See attached file"), not under its own name.

So each student's file in the zip keeps the name Canvas gave their submission, and is that
same file with the grader's feedback added where its reader will see it first, so that it
makes sense under its original name: a ``.py`` file starts with the feedback as comments, a
notebook with a Markdown cell. A student graded from anything else (a zip, a folder, a file
not named by Canvas's download) has no file in the zip, and the export says so: their
feedback page (``OUT/feedback/<id>.html``) stands alone and can be given to them another way.

Rehearsed: the names and contents against the rule above (tests/test_feedback_zip.py). Not
rehearsed: an upload to a real Canvas instance.
"""

from __future__ import annotations

import copy
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grader import untrusted
from grader.term import canvas_names

ORIGINAL_LIMIT = 20 * 1024 * 1024  # a student's file read back for annotation (the intake's order of size)


@dataclass
class FeedbackZip:
    written: list[str] = field(default_factory=list)  # student ids with a file in the zip
    left_out: dict[str, str] = field(default_factory=dict)  # student id -> why not


def canvas_ids(file_name: str) -> tuple[str, str] | None:
    """(user id, attachment id) as Canvas's re-upload reads them from ``file_name``, or None
    (the intake's one reading of Canvas's names, grader/term/canvas_names.py, which reads
    them as the re-upload does; an anonymous id is not a user id the re-upload can find)."""
    parsed = canvas_names.parse_canvas_name(Path(file_name).name)
    if parsed is None or not parsed.user_id.isdigit():
        return None
    return parsed.user_id, parsed.attachment_id


def write_feedback_zip(target: Path, out: Path, submissions: dict[str, dict], originals: Path | None) -> FeedbackZip:
    """Write ``target``: for each graded student whose entry Canvas named, their own file
    with the feedback (``OUT/feedback/<stem>.md``) in front of it."""
    summary = FeedbackZip()
    files: dict[str, bytes] = {}
    for sid in sorted(submissions):
        entry_name = str(submissions[sid].get("graded_from") or "")
        why = _why_not(entry_name, files)
        feedback = _read_feedback(out, sid)
        if not why and feedback is None:
            why = "no feedback file (OUT/feedback) for it: run the batch again"
        original = None
        if not why:
            original, why = _read_original(originals, entry_name)
        if not why:
            try:
                files[entry_name] = annotated(entry_name, original, feedback)
            except ValueError as error:
                why = str(error)
        if why:
            summary.left_out[sid] = why
        else:
            summary.written.append(sid)
    write_zip(target, files)
    return summary


def write_zip(target: Path, files: dict[str, bytes]) -> None:
    """``target`` holding ``files`` (member name -> bytes), written whole or not at all."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.tmp")
    with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            # A fixed date: the same results give the same zip, byte for byte.
            archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, compress_type=zipfile.ZIP_DEFLATED)
    temporary.replace(target)


def _why_not(entry_name: str, taken: dict) -> str:
    if not entry_name:
        return "its result does not say which file it was graded from"
    if canvas_ids(entry_name) is None:
        return f"{entry_name} is not named as Canvas's Download Submissions names files (no user and attachment id)"
    if Path(entry_name).suffix.lower() not in (".py", ".ipynb"):
        return f"{entry_name} is not a .py file or a notebook: Canvas would show the feedback under that file's name"
    if entry_name in taken:
        return f"{entry_name} is already in the zip for another student"
    return ""


def _read_feedback(out: Path, sid: str) -> str | None:
    try:
        return (Path(out) / "feedback" / f"{untrusted.file_stem(sid)}.md").read_text(encoding="utf-8")
    except OSError:
        return None


def _read_original(originals: Path | None, entry_name: str) -> tuple[bytes | None, str]:
    """The student's file as submitted, from the submissions folder or Canvas's zip."""
    if originals is None:
        return None, "the submissions folder is unknown: give --submissions"
    try:
        if zipfile.is_zipfile(originals) and Path(originals).is_file():
            with zipfile.ZipFile(originals) as archive:
                info = archive.getinfo(entry_name)
                if info.file_size > ORIGINAL_LIMIT:
                    return None, f"{entry_name} is larger than {ORIGINAL_LIMIT // 2**20} MB"
                return archive.read(info), ""
        path = Path(originals) / entry_name
        if not path.is_file() or path.is_symlink():
            return None, f"{entry_name} is no longer a file in {originals}"
        if path.stat().st_size > ORIGINAL_LIMIT:
            return None, f"{entry_name} is larger than {ORIGINAL_LIMIT // 2**20} MB"
        return path.read_bytes(), ""
    except (OSError, KeyError, zipfile.BadZipFile) as error:
        return None, f"{entry_name} could not be read from {originals} ({error.__class__.__name__})"


def annotated(entry_name: str, original: bytes, feedback: str) -> bytes:
    """The student's file with the feedback in front: comments in a .py file, a Markdown cell
    in a notebook. ``ValueError`` when the original cannot carry it (a notebook that is not one)."""
    if entry_name.lower().endswith(".ipynb"):
        return _annotated_notebook(original, feedback)
    code = original.decode("utf-8", errors="replace")
    header = "\n".join(f"# {line}".rstrip() for line in _feedback_heading(feedback).splitlines())
    return (f"{header}\n#\n# {'-' * 20} your file, as you submitted it {'-' * 20}\n\n{code}").encode("utf-8")


def _feedback_heading(feedback: str) -> str:
    return "Feedback from the autograder (this comment was added to your file; your code below is unchanged):\n\n" + feedback.strip()


def _annotated_notebook(original: bytes, feedback: str) -> bytes:
    try:
        notebook = nbformat.reads(original.decode("utf-8"), as_version=4)
    except Exception as error:  # noqa: BLE001 - nbformat raises many kinds for a broken file
        raise ValueError(f"the notebook could not be read ({error.__class__.__name__}), so it cannot carry the feedback") from None
    annotated_notebook = copy.deepcopy(notebook)
    annotated_notebook.cells.insert(0, nbformat.v4.new_markdown_cell(_feedback_heading(feedback)))
    # nbformat gives the new cell a random id: a fixed one keeps the zip the same from run to
    # run; a notebook older than format 4.5 has no cell ids at all, and gets none.
    if annotated_notebook.get("nbformat_minor", 0) >= 5:
        annotated_notebook.cells[0]["id"] = "autograder-feedback"
    else:
        annotated_notebook.cells[0].pop("id", None)
    return (json.dumps(annotated_notebook, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
