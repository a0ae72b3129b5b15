"""Intake for batch grading: turn each student's entry into one staged source file, or a reason.

Students hand in whatever their editor or LMS produced: a ``.py`` under any name, a
folder, a Jupyter notebook, or a ``.zip`` of any of these. The grader needs exactly one
``multi_head_attention.py`` per student, in a folder holding nothing else (a student's own
``conftest.py`` or ``pytest.ini`` must never reach pytest). One odd or hostile entry must
neither stop the batch nor write anything outside the staging folder, so every entry is
read here with bounded reads and checked (encoding, size, zip paths), and anything that
cannot be graded becomes ``Entry.problem``, a sentence for the student and the instructor,
instead of an exception.

Zips are never extracted: the chosen member is read in memory, so a hostile path in an
archive has nowhere to land. A syntax error is not an intake problem: the grader reports it.

Intake opens regular files inside the submissions folder only: it never follows a symbolic
link (an entry that is a link, or a link inside a folder, is refused or passed over), never
opens a FIFO, a device or a socket (each could block the batch forever or read something
that is not the student's), and bounds how deep and how wide it looks into a folder.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import os
import re
import shutil
import stat
import tokenize
import unicodedata
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader.term.lms_files import moodle_names
from grader.term.identity import Identities, Student
from grader.reading import work_held
from grader.reading.loading import MODULE_FILE_NAME, NOTEBOOK_FILE_NAME
from grader.reading.notebooks import notebook_code_with_spans
from grader.untrusted import file_stem, printable

MB = 1024 * 1024
MAX_SOURCE_BYTES = 1 * MB  # far above any honest solution; keeps a runaway file out of the grader
MAX_UNPACKED_BYTES = 20 * MB  # a whole zip, or a notebook with its outputs (plots make them big)
MAX_ZIP_MEMBERS = 1000
MAX_FOLDER_DEPTH = 32  # folder levels below an entry that intake looks into
MAX_FOLDER_ITEMS = 10_000  # files and folders in one entry (a whole project with a virtualenv is more)
MAX_PATH_CHARS = 1024  # a zip member's name
# Left behind by operating systems and archivers; never a submission.
JUNK_NAMES = {"__macosx", ".ds_store", "thumbs.db", "desktop.ini"}
# What an instructor's submissions folder (or Canvas's download) holds beside the students'
# code, and why each is not a submission: listed as ignored, never graded as a student.
NOT_SUBMISSIONS = {
    "a text document, not code": (".txt", ".md", ".rst", ".rtf"),
    "a spreadsheet or table, not code": (".csv", ".tsv", ".xls", ".xlsx", ".ods"),
    "an image, not code": (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".svg", ".webp", ".heic", ".tif", ".tiff"),
    "a document, not code": (".pdf", ".doc", ".docx", ".odt", ".ppt", ".pptx"),
    # Canvas saves a text entry or a link as NAME_ID_text.html / NAME_ID_link.html (lib/content_zipper.rb)
    "a web page (Canvas's form for a text entry or a link), not code": (".html", ".htm"),
    "an editor's backup or swap file": (".swp", ".swo", ".bak", ".orig", ".tmp"),
}


@dataclass(frozen=True)
class Entry:
    student_id: str  # the entry's name without its extension
    source_path: Path | None  # the staged multi_head_attention.py (None when unreadable)
    content_hash: str  # sha256 of the staged text, or of the raw entry when unreadable
    problem: str  # "" when gradable; else a one-sentence reason
    entry_name: str = ""  # the file or folder name in SUBMISSIONS it was staged from ("dup.ipynb")
    graded_file: str = ""  # which file of a folder was graded (work_held.most_work's rule)
    # A notebook's cells in the staged file (grader.reading.notebooks.CellSpan), so that messages name
    # the cell (In [8], or code cell 5, and its first line) on every platform, never a line
    # of a file the student never saw.
    cells: tuple = ()
    # Set by the batch when this student handed in several entries (one_entry_per_student):
    # which was graded, which not, and why; shown in the log, the result and the report.
    note: str = ""


class Refused(Exception):
    """An entry that cannot be graded; the message is the problem shown to people."""


@dataclass(frozen=True)
class Ignored:
    """Something in the submissions that is not a student's submission, and why."""

    name: str
    reason: str


def survey(submissions: Path) -> tuple[list[Path], list[Ignored]]:
    """The entries directly inside ``submissions`` (sorted by name), and what is not a submission."""
    entries, ignored = [], []
    for path in sorted(Path(submissions).iterdir(), key=lambda path: path.name):
        reason = not_a_submission(path.name, is_folder=stat.S_ISDIR(_lstat_mode(path) or 0))
        if reason is None:
            entries.append(path)
        else:
            ignored.append(Ignored(printable(path.name), reason))
    return entries, ignored


def list_entries(submissions: Path) -> list[Path]:
    """The entries directly inside ``submissions``, sorted by name (``survey``'s first part)."""
    return survey(submissions)[0]


def not_a_submission(name: str, is_folder: bool = False) -> str | None:
    """Why an entry named ``name`` is not a submission (README files, tables, images, OS and
    editor leftovers), or None when it may be one. A folder is a submission unless it is
    OS junk or hidden; a file of any other kind is one, refused at intake if it cannot be graded."""
    folder, lowered = is_folder, name.casefold()
    if lowered == "__macosx":
        return "macOS's archive metadata (__MACOSX), left by its zip tool"
    if lowered in JUNK_NAMES:
        return "a file the operating system leaves in folders"
    if name.startswith(".#") or name.endswith("~") or (name.startswith("#") and name.endswith("#")):
        return "an editor's backup or lock file"
    if name.startswith("."):
        return "a hidden " + ("folder" if folder else "file")
    if folder:
        return None
    if lowered.startswith("readme"):
        return "a README file"
    suffix = Path(lowered).suffix
    return next((reason for reason, suffixes in NOT_SUBMISSIONS.items() if suffix in suffixes), None)


def student_id_of(entry: Path) -> str:
    """``alice.py`` -> ``alice``; a folder keeps its whole name (a dot in it is not an extension)."""
    return id_of_name(entry.name, stat.S_ISDIR(_lstat_mode(entry) or 0))


def id_of_name(name: str, is_folder: bool) -> str:
    """``student_id_of`` for an entry known by its name alone (a class zip's listing)."""
    name = name if is_folder else Path(name).stem
    # Control characters and bytes that are not UTF-8 are escaped: the id is shown in logs,
    # on terminals and in the gradebook (grader/untrusted.py).
    # One spelling per name: macOS writes NFD (e + combining accent), most others NFC, and
    # the two look identical in every gradebook; as NFC they are one id, a duplicate resolved
    # like any other (unique_ids).
    name = unicodedata.normalize("NFC", printable(name))
    # "." or ".." as a folder name would stage outside the student's own folder.
    return name if name.strip(".") else "_" + name


def stage_entry(entry: Path, staging: Path, *, student_id: str | None = None) -> Entry:
    """Write ``staging/<student_id>/multi_head_attention.py`` (only that file) and describe it.

    ``student_id`` overrides the one derived from the entry's name (``stage_all`` uses it to
    give duplicates their suffix). Bad student input never raises; it becomes ``problem``.
    """
    entry, staging = Path(entry), Path(staging)
    student_id = student_id or student_id_of(entry)
    graded_file, cells = "", ()
    try:
        _refuse_unless_regular(entry, entry.name)  # a link to a folder is refused, not followed
        if stat.S_ISDIR(_lstat_mode(entry) or 0):
            (text, cells), graded_file = _read_folder(entry)
        else:
            text, cells = _read_source(entry)
        text, problem = _normalise(text, entry.name), ""
    except Refused as refusal:
        text, problem, cells = None, str(refusal), ()
    except Exception as error:  # noqa: BLE001 - one unforeseen failure must not stop a whole class's batch
        text, problem, cells = None, f"{entry.name} could not be read ({type(error).__name__}: {error}).", ()
    # Writing is the grader's own business: a full disk should stop the batch loudly.
    # The folder's name is derived from the id with a bounded length (grader/untrusted.py):
    # an id near the file system's limit must not fail here, nor in the result files.
    source_path = _write(staging / file_stem(student_id), text)
    content_hash = hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else _raw_hash(entry)
    return Entry(student_id, source_path, content_hash, problem, entry.name, graded_file, tuple(cells))


def stage_all(submissions: Path, staging: Path) -> list[Entry]:
    """Stage every entry (one Entry each, bad ones included), sorted by student id."""
    entries = list_entries(submissions)
    ids = unique_ids([student_id_of(entry) for entry in entries])
    staged = [stage_entry(entry, staging, student_id=sid) for entry, sid in zip(entries, ids)]
    return sorted(staged, key=lambda staged_entry: staged_entry.student_id)


@dataclass(frozen=True)
class Attempts:
    """One student's several entries resolved to the one that is graded, and why."""

    same_student: str  # what proves the entries are one student's
    graded: str  # the entry graded
    graded_holds: str  # what it holds (work_held.Work.describe)
    rule: str  # why that one: the latest attempt, and how "latest" was known
    superseded: tuple[Ignored, ...] = ()  # earlier attempts, each with why it is earlier
    set_aside: tuple[Ignored, ...] = ()  # entries that hold none of the work, with what they hold

    @property
    def not_graded(self) -> tuple[Ignored, ...]:
        return self.superseded + self.set_aside

    def sentence(self) -> str:
        """For the log, the student's result and the report."""
        parts = [f"graded {self.graded} ({self.graded_holds}): {self.rule}"]
        if self.superseded:
            parts.append("superseded: " + "; ".join(f"{other.name} ({other.reason})" for other in self.superseded))
        if self.set_aside:
            parts.append("not graded: " + "; ".join(f"{other.name} ({other.reason})" for other in self.set_aside))
        return "; ".join(parts) + f"; one student's files by {self.same_student}"


@dataclass(frozen=True)
class Students:
    """The entries to grade, one per student, and how one student's several entries were resolved."""

    entries: list[Path]  # in entry order
    attempts: dict[Path, Attempts]  # graded entry -> what was resolved into it
    student_of: dict[Path, Student] = field(default_factory=dict)  # every entry -> its student


def one_entry_per_student(
    paths: list[Path], identities: Identities | None = None, submitted_at: Callable[[str], datetime.datetime | None] | None = None,
) -> Students:
    """One graded entry per student: the latest attempt.

    Whose entry each is: grader/term/identity.py (``identities``, built from the roster and
    the entries' names; without one, from the names alone): the same name with another
    extension (``alice.py``, ``alice.ipynb``), Canvas's "Download Submissions" names of one
    user, or names the roster gives one student (a login and a Canvas name).

    Of one student's entries, those that hold none of the exercise's work (no function written,
    and no syntax error where one was being written: an untouched notebook, a helpers module,
    a scratch file) are set aside. Of the others, the latest attempt is graded and the rest are
    superseded, all said: the latest by the submission time of each file where one is known
    (``submitted_at``: a time given for the file by its Canvas download name), else by
    Canvas's order (an uploaded file's attachment id is the database id Canvas gives it as it is
    uploaded, so a later upload has a higher one; a file uploaded again under the same name is
    renamed ``name-1.py``, ``name-2.py``: canvas-lms Attachment.make_unique_filename), else, when
    no order is known (two files of one name that Canvas did not name), the one holding the most
    work (work_held.most_work), said as such.
    """
    stems = {path: student_id_of(path) for path in paths}
    identities = identities or Identities(None, stems.values())
    submitted_at = submitted_at or (lambda stem: None)
    student_of = {path: identities.student_of(stems[path]) for path in paths}
    groups: dict[str, list[Path]] = {}
    for path in paths:
        groups.setdefault(student_of[path].key, []).append(path)
    attempts: dict[Path, Attempts] = {}
    left_out: set[Path] = set()
    for group in groups.values():
        if len(group) < 2:
            continue
        work = {path: _work_in(path) for path in group}
        holding = [path for path in group if work[path].written or work[path].syntax_error] or group
        chosen, rule, why_earlier = _latest(holding, work, {path: submitted_at(stems[path]) for path in holding},
                                           {path: identities.canvas.get(stems[path]) for path in holding})
        superseded = tuple(Ignored(printable(path.name), why_earlier(path)) for path in holding if path != chosen)
        set_aside = tuple(Ignored(printable(path.name), work[path].describe()) for path in group if path not in holding)
        same = identities.same_student_because([stems[path] for path in group])
        attempts[chosen] = Attempts(same, printable(chosen.name), work[chosen].describe(), rule, superseded, set_aside)
        left_out.update(path for path in group if path != chosen)
    return Students([path for path in paths if path not in left_out], attempts, student_of)


def _latest(holding: list[Path], work: dict, times: dict, canvas: dict) -> tuple[Path, str, Callable[[Path], str]]:
    """The latest of one student's entries that hold work; how that was known; why each other is earlier."""
    if len(holding) == 1:
        return holding[0], "the only one that holds work", lambda path: ""
    if all(times.values()):
        chosen = max(holding, key=lambda path: (times[path], int(canvas[path].attachment_id) if canvas[path] and canvas[path].attachment_id.isdigit() else -1))
        return chosen, "the latest attempt, by its submission time", lambda path: f"an earlier attempt, submitted {times[path].isoformat()}"
    # Canvas gives each uploaded file an id of its own: files of one user that share one (not
    # Canvas's doing) have no order, and are chosen by what they hold, as a folder's files are;
    # so are Moodle's entries, whose names give no order (no attachment id).
    if all(reading and reading.attachment_id.isdigit() for reading in canvas.values()) and (
        len({canvas[path].attachment_id for path in holding}) == len(holding)
    ):
        chosen = max(holding, key=lambda path: int(canvas[path].attachment_id))
        return (
            chosen, f"the latest attempt (Canvas's attachment {canvas[chosen].attachment_id}: a later upload has a higher id)",
            lambda path: f"an earlier attempt: Canvas's attachment {canvas[path].attachment_id}, {work[path].describe()}",
        )
    chosen = holding[work_held.most_work([(path.name, work[path]) for path in holding])]
    return (
        chosen, "no order of these attempts is known (not each named by Canvas with an attachment id of its own, no "
        "submission time for each file): the one that holds the most work", lambda path: work[path].describe(),
    )


def _work_in(path: Path) -> work_held.Work:
    """What an entry holds of the exercise, read as intake reads it (bounded, decoded, a
    notebook's cells as the grader joins them)."""
    try:
        return work_held.work_in_joined_cells(*_read_source(path))
    except Exception:  # noqa: BLE001 - an entry that cannot be read holds no work to grade
        return work_held.UNREADABLE


def unique_ids(bases: list[str]) -> list[str]:
    """Keep each id's first use; later duplicates get -2, -3, ... in entry order.

    A suffix never takes an id that another entry has by its own name (``alice-2.py``).
    Ids are compared without case because the staging folder may be on a case-insensitive
    disk (macOS, Windows), where ``Alice`` and ``alice`` would be one folder.
    """
    taken = {base.casefold() for base in bases}
    used: set[str] = set()
    ids = []
    for base in bases:
        chosen, suffix = base, 1
        while chosen.casefold() in used or (suffix > 1 and chosen.casefold() in taken):
            suffix += 1
            chosen = f"{base}-{suffix}"
        used.add(chosen.casefold())
        ids.append(chosen)
    return ids


def _is_junk(name: str) -> bool:
    return name.startswith(".") or name.casefold() in JUNK_NAMES


# --- reading one entry ---------------------------------------------------------------


def _lstat_mode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _refuse_unless_regular(path: Path, shown: str) -> None:
    """Refuse a link, a FIFO, a device or a socket before anything opens it."""
    mode = _lstat_mode(path)
    if mode is None:
        raise Refused(f"{shown} could not be read (it vanished or is not accessible).")
    if stat.S_ISLNK(mode):
        raise Refused(
            f"refused: {shown} is a symbolic link; hand in the file itself (links are never followed, "
            "so a link cannot lead the grader to files outside the submissions)."
        )
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise Refused(f"refused: {shown} is not a regular file (a FIFO, a device or a socket); hand in a file.")


def _open_regular(path: Path, shown: str) -> io.BufferedReader:
    """Open ``path`` for reading only if it is a regular file, without following a link and
    without blocking (O_NONBLOCK: a FIFO swapped in after the check cannot hang the batch)."""
    _refuse_unless_regular(path, shown)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise Refused(f"{shown} could not be opened ({error.strerror}).") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise Refused(f"refused: {shown} is not a regular file (a FIFO, a device or a socket); hand in a file.")
    return os.fdopen(descriptor, "rb")


def _read_source(entry: Path) -> tuple[str, tuple]:
    """The code to grade, and a notebook's cells in it (``()`` for a .py file)."""
    _refuse_unless_regular(entry, entry.name)
    if stat.S_ISDIR(_lstat_mode(entry) or 0):
        return _read_folder(entry)[0]
    suffix = entry.suffix.lower()
    if suffix == ".py":
        return _decode_python(_read_bounded(entry, MAX_SOURCE_BYTES), entry.name), ()
    if suffix == ".ipynb":
        return _notebook_source(_read_bounded(entry, MAX_UNPACKED_BYTES), entry.name)
    if suffix == ".zip":
        return _read_zip(entry)
    raise Refused(
        f"{entry.name} is an unsupported entry type: hand in a .py file, a Jupyter notebook, "
        f"a folder holding {MODULE_FILE_NAME}, or a .zip of one of these."
    )


def _read_bounded(path: Path, limit: int, shown: str | None = None) -> bytes:
    # Read one byte past the limit: enough to know it is too big without reading it all.
    shown = shown or path.name
    with _open_regular(path, shown) as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"{shown} is larger than {limit // MB} MB.")
    return data


_CODING_LINE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")


def _decode_python(data: bytes, name: str) -> str:
    """Python source as Python reads it: UTF-8 (a byte-order mark allowed), or the encoding a
    PEP 263 coding line declares. The staged copy is UTF-8, so a declared encoding other
    than UTF-8 is restated as UTF-8 on its own line (the line count stays the same)."""
    if b"\x00" in data:
        raise Refused(f"{name} looks like a binary file (it contains NUL bytes), not Python source text.")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:  # an unknown encoding, a coding line contradicting a byte-order mark, or no UTF-8
        if not any(_CODING_LINE.match(line) for line in data.split(b"\n", 2)[:2]):
            return _decode(data, name)  # says which byte is not UTF-8
        raise Refused(f"{name} declares an encoding Python cannot use ({error}); save it as UTF-8.") from None
    if encoding in ("utf-8", "utf-8-sig"):
        return _decode(data, name)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise Refused(f"{name} is not valid {encoding} text (byte {error.start} cannot be decoded); save it as UTF-8.") from None
    lines = text.split("\n", 2)
    for index, line in enumerate(lines[:2]):
        if _CODING_LINE.match(line.encode("utf-8")):
            lines[index] = f"# -*- coding: utf-8 -*- (the grader's copy; the file declared {encoding})"
            break
    return "\n".join(lines)


def _decode(data: bytes, name: str) -> str:
    if b"\x00" in data:
        raise Refused(f"{name} looks like a binary file (it contains NUL bytes), not Python source text.")
    try:
        return data.decode("utf-8-sig")  # utf-8, minus the byte-order mark some Windows editors add
    except UnicodeDecodeError as error:
        message = f"{name} is not UTF-8 text (byte {error.start} cannot be decoded); save it as UTF-8."
        raise Refused(message) from None


def _normalise(text: str, name: str) -> str:
    # Python reads sources with universal newlines, so this changes no program; it makes the
    # content hash the same for the same code written on Windows and elsewhere.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise Refused(f"{name} is empty: it holds no code.")
    if len(text.encode("utf-8")) > MAX_SOURCE_BYTES:
        raise Refused(f"{name} holds more than {MAX_SOURCE_BYTES // MB} MB of source.")
    return text if text.endswith("\n") else text + "\n"


def _walk(folder: Path, skip_junk: bool = True) -> Iterator[tuple[tuple[str, ...], os.DirEntry]]:
    """Every file and folder under ``folder`` as (relative parts, entry), shallowest first.

    Iterative, so depth costs no recursion; links are listed, never followed; folders more
    than ``MAX_FOLDER_DEPTH`` levels down are not looked into; more than
    ``MAX_FOLDER_ITEMS`` items refuse the entry.
    """
    pending, seen = [(folder, ())], 0
    while pending:
        path, parts = pending.pop(0)
        with os.scandir(path) as items:
            for item in sorted(items, key=lambda item: item.name):
                seen += 1
                if seen > MAX_FOLDER_ITEMS:
                    raise Refused(f"refused: {folder.name}/ holds more than {MAX_FOLDER_ITEMS} files and folders; hand in only your code.")
                if skip_junk and _is_junk(item.name):  # .ipynb_checkpoints, .git, __MACOSX
                    continue
                yield (*parts, item.name), item
                if item.is_dir(follow_symlinks=False) and len(parts) + 1 < MAX_FOLDER_DEPTH:
                    pending.append((Path(item.path), (*parts, item.name)))


def _read_folder(folder: Path) -> tuple[tuple[str, tuple], str]:
    """The code of the file that holds the work (with a notebook's cells), and that file's path inside the folder.

    multi_head_attention.py and the notebook multi_head_attention.ipynb are looked for, the
    shallowest of each (links are never followed: ``_walk``); with both, the one that holds
    more of the work is graded (work_held.most_work, the rule everywhere a file is chosen).
    """
    found: dict[str, tuple[str, ...]] = {}
    for parts, _ in _walk(folder):  # shallowest first: the first of each name is the one
        if parts[-1] in (MODULE_FILE_NAME, NOTEBOOK_FILE_NAME) and parts[-1] not in found:
            found[parts[-1]] = parts
    if not found and moodle_names.is_submission_folder(folder.name):
        return _read_by_content(folder)
    if not found:
        raise Refused(
            f"{folder.name}/ holds no {MODULE_FILE_NAME} (or {NOTEBOOK_FILE_NAME}); folders more than "
            f"{MAX_FOLDER_DEPTH} levels down are not searched."
        )
    codes = {}
    for name, parts in found.items():
        shown, relative = "/".join((folder.name, *parts)), "/".join(parts)
        if name == MODULE_FILE_NAME:
            codes[name] = ((_decode_python(_read_bounded(folder.joinpath(*parts), MAX_SOURCE_BYTES, shown), shown), ()), relative)
            continue
        try:
            codes[name] = (_notebook_source(_read_bounded(folder.joinpath(*parts), MAX_UNPACKED_BYTES, shown), shown), relative)
        except Refused:
            if MODULE_FILE_NAME not in found:
                raise  # the notebook was the only candidate: its problem is the entry's
    readable = list(codes.values())
    works = [(relative, work_held.work_in_joined_cells(*code)) for code, relative in readable]
    return readable[work_held.most_work(works)]


def _read_by_content(folder: Path) -> tuple[tuple[str, tuple], str]:
    """The file of an LMS's folder of one student's files (Moodle's download: every file in it is
    theirs) that holds the work, whatever the student named it (``multi_head_attention (1).py``, a
    browser's second download): of its .py files and notebooks, the one holding the most work
    (work_held.most_work); refused when none holds any, naming what it holds."""
    readable, looked = [], []
    for parts, item in _walk(folder):
        if not item.is_file(follow_symlinks=False) or Path(parts[-1]).suffix.lower() not in (".py", ".ipynb"):
            continue
        shown, relative = "/".join((folder.name, *parts)), "/".join(parts)
        looked.append(relative)
        try:
            limit = MAX_UNPACKED_BYTES if parts[-1].lower().endswith(".ipynb") else MAX_SOURCE_BYTES
            data = _read_bounded(folder.joinpath(*parts), limit, shown)
            code = _notebook_source(data, shown) if parts[-1].lower().endswith(".ipynb") else (_decode_python(data, shown), ())
        except Refused:
            continue
        readable.append((code, relative))
    works = [(relative, work_held.work_in_joined_cells(*code)) for code, relative in readable]
    holding = [index for index, (_, work) in enumerate(works) if work.written or work.syntax_error]
    if not holding:
        held = ", ".join(looked[:5]) + (", ..." if len(looked) > 5 else "") if looked else "no .py file or notebook"
        raise Refused(f"{folder.name}/ holds none of the exercise's work ({held}).")
    chosen = holding[work_held.most_work([works[index] for index in holding])]
    return readable[chosen]


def _notebook_source(data: bytes, name: str) -> tuple[str, tuple]:
    """The code cells, joined by blank lines, without the grader's cells, magics or shell lines,
    and where each cell landed (the rule of ``pytest grader --submission notebook.ipynb``)."""
    try:
        code, cells = notebook_code_with_spans(_decode(data, name))
    except Refused:
        raise
    except Exception as error:  # noqa: BLE001 - json and nbformat reject malformed input in many ways
        raise Refused(f"{name} is not a valid notebook ({type(error).__name__}: {error}).") from None
    return code, tuple(cells)


def _read_zip(entry: Path) -> tuple[str, tuple]:
    try:
        with _open_regular(entry, entry.name) as raw, zipfile.ZipFile(raw) as archive:
            member = _choose_member(archive.infolist(), entry.name)
            notebook = member.filename.lower().endswith(".ipynb")
            limit = MAX_UNPACKED_BYTES if notebook else MAX_SOURCE_BYTES
            # Bounded read: the sizes in a zip's headers are written by whoever made it.
            with archive.open(member) as stream:
                data = stream.read(limit + 1)
    except Refused:
        raise
    except Exception as error:  # noqa: BLE001 - zipfile reports damage as BadZipFile, zlib.error, EOFError...
        raise Refused(f"{entry.name} is not a readable zip ({type(error).__name__}: {error}).") from None
    name = f"{entry.name}:{member.filename}"
    if len(data) > limit:
        raise Refused(f"{name} is larger than {limit // MB} MB.")
    return _notebook_source(data, name) if notebook else (_decode_python(data, name), ())


def _choose_member(members: list[zipfile.ZipInfo], zip_name: str) -> zipfile.ZipInfo:
    """multi_head_attention.py (shallowest), else the only notebook, else the only .py."""
    check_archive(members, zip_name, MAX_ZIP_MEMBERS, MAX_UNPACKED_BYTES)
    # Junk such as __MACOSX/._multi_head_attention.py or .ipynb_checkpoints/ is never a candidate.
    files = [member for member in members if not member.is_dir() and not any(map(_is_junk, _parts(member)))]
    named = [member for member in files if _parts(member)[-1] == MODULE_FILE_NAME]
    if named:
        return min(named, key=lambda member: (len(_parts(member)), member.filename))
    notebooks, scripts, zips = (
        [member for member in files if member.filename.lower().endswith(suffix)]
        for suffix in (".ipynb", ".py", ".zip")
    )
    for kind in (notebooks, scripts):
        if len(kind) == 1:
            return kind[0]
    if notebooks or scripts:
        shown = ", ".join(member.filename for member in (notebooks + scripts)[:5])
        more = ", ..." if len(notebooks + scripts) > 5 else ""
        raise Refused(
            f"{zip_name} holds several candidates ({shown}{more}) and no {MODULE_FILE_NAME}, "
            "so which to grade is unclear."
        )
    if zips:
        raise Refused(f"{zip_name} holds another zip ({zips[0].filename}); nested zips are not opened.")
    raise Refused(f"{zip_name} holds no .py file, notebook or {MODULE_FILE_NAME}.")


def check_archive(
    members: list[zipfile.ZipInfo], zip_name: str, max_members: int, max_bytes: int, advice: str = "zip only your code"
) -> None:
    """Refuse a zip, whole, that holds more than ``max_members`` members, would unpack to more
    than ``max_bytes`` by its own headers, or holds a path that is too long, too deep,
    absolute, with ``..``, or a link. (Headers can lie: readers still read bounded.)"""
    if len(members) > max_members:
        raise Refused(f"refused: {zip_name} holds more than {max_members} files; {advice}.")
    for member in members:
        if len(member.filename) > MAX_PATH_CHARS or len(_parts(member)) > MAX_FOLDER_DEPTH:
            raise Refused(f"refused: {zip_name} holds a path longer than {MAX_PATH_CHARS} characters or deeper than {MAX_FOLDER_DEPTH} folders.")
        if _is_unsafe(member):
            kinds = "absolute, '..' or a link"
            raise Refused(f"refused: the zip holds an unsafe path {member.filename!r} ({kinds}).")
    if sum(member.file_size for member in members) > max_bytes:
        raise Refused(f"refused: {zip_name} would unpack to more than {max_bytes // MB} MB; {advice}.")


def _parts(member: zipfile.ZipInfo) -> tuple[str, ...]:
    return PurePosixPath(member.filename).parts


def _is_unsafe(member: zipfile.ZipInfo) -> bool:
    # Nothing is extracted, but such a member means the zip was not made by a plain archiver:
    # refuse it whole rather than guess which parts to trust.
    name = member.filename.replace("\\", "/")
    absolute = name.startswith("/") or re.match(r"[A-Za-z]:", name) is not None
    is_link = stat.S_ISLNK(member.external_attr >> 16)
    return absolute or ".." in name.split("/") or is_link


# --- writing and hashing --------------------------------------------------------------


def _write(folder: Path, text: str | None) -> Path | None:
    # A previous run's leftovers (or a problem entry's stale file) must not be graded.
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
    if text is None:
        return None
    folder.mkdir(parents=True)
    folder.chmod(0o755)  # mkdir's mode is cut by the umask; chmod states it exactly
    target = folder / MODULE_FILE_NAME
    target.write_bytes(text.encode("utf-8"))
    target.chmod(0o644)
    return target


def _raw_hash(entry: Path) -> str:
    """sha256 of an unreadable entry: its bytes, or for a folder its file listing and sizes.

    A folder may hold a whole project (data, a virtualenv), so its contents are not read;
    a link, a FIFO or a device is hashed by what it is, never opened.
    """
    digest = hashlib.sha256()
    try:
        mode = _lstat_mode(entry) or 0
        if stat.S_ISDIR(mode):
            for parts, item in _walk(entry, skip_junk=False):
                line = f"{'/'.join(parts)}\0{item.stat(follow_symlinks=False).st_size}\n"
                digest.update(line.encode("utf-8", "surrogateescape"))
        elif stat.S_ISREG(mode):
            with _open_regular(entry, entry.name) as stream:
                for chunk in iter(lambda: stream.read(MB), b""):
                    digest.update(chunk)
        else:
            digest.update(f"{stat.filemode(mode)} {os.fsencode(entry.name)!r}".encode())
    except Exception:  # noqa: BLE001 - an unreadable entry still needs some hash; its problem already says why
        pass
    return digest.hexdigest()


def fingerprint(entry: Path) -> str:
    """What changes whenever an entry may have changed, read from the file system's records
    alone (type, size, inode, modification and change times, of the entry and of everything
    in a folder): cheap for a 20 MB notebook, so a rerun skips unchanged entries before the
    costly intake. ``ctime`` cannot be set back by the user, so an edit always shows."""
    digest = hashlib.sha256()

    def record(name: str, info: os.stat_result) -> None:
        fields = (name, stat.S_IFMT(info.st_mode), info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
        digest.update(repr(fields).encode("utf-8", "surrogateescape") + b"\n")

    try:
        info = os.lstat(entry)
        record("", info)
        if stat.S_ISDIR(info.st_mode):
            for parts, item in _walk(entry, skip_junk=False):
                record("/".join(parts), item.stat(follow_symlinks=False))
    except (OSError, Refused) as error:
        digest.update(f"unlisted: {type(error).__name__}".encode())
    return digest.hexdigest()
