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

import hashlib
import io
import os
import re
import shutil
import stat
import tokenize
import unicodedata
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from grader.loading import MODULE_FILE_NAME, NOTEBOOK_FILE_NAME, functions_left
from grader.notebooks import notebook_code, notebook_code_with_spans
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


@dataclass(frozen=True)
class Entry:
    student_id: str  # the entry's name without its extension
    source_path: Path | None  # the staged multi_head_attention.py (None when unreadable)
    content_hash: str  # sha256 of the staged text, or of the raw entry when unreadable
    problem: str  # "" when gradable; else a one-sentence reason
    entry_name: str = ""  # the file or folder name in SUBMISSIONS it was staged from ("dup.ipynb")
    graded_file: str = ""  # which file of a folder was graded (grader.loading.choose_work's rule)
    # A notebook's cells in the staged file (grader.notebooks.CellSpan), so that messages name
    # the cell (In [8], or code cell 5, and its first line) on every platform, never a line
    # of a file the student never saw.
    cells: tuple = ()


class _Refused(Exception):
    """An entry that cannot be graded; the message is the problem shown to people."""


def list_entries(submissions: Path) -> list[Path]:
    """The entries directly inside ``submissions``, sorted by name, without hidden or OS junk."""
    entries = (path for path in Path(submissions).iterdir() if not _is_junk(path.name))
    return sorted(entries, key=lambda path: path.name)


def student_id_of(entry: Path) -> str:
    """``alice.py`` -> ``alice``; a folder keeps its whole name (a dot in it is not an extension)."""
    name = entry.name if stat.S_ISDIR(_lstat_mode(entry) or 0) else entry.stem
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
    except _Refused as refusal:
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


def one_entry_per_student(paths: list[Path]) -> tuple[list[Path], dict[Path, list[Path]]]:
    """Entries of one student resolved to the one that holds the work, before ids are given.

    Two files are one student's when they share a name but not an extension (``alice.py`` and
    ``alice.ipynb``), or carry the same user id in Canvas's "Download Submissions" names
    (``name_ID_FILEID_file``: one entry per uploaded file, so a finished ``.py`` and an
    untouched ``.ipynb`` arrive as two). Of these, the one graded is chosen as a folder's two
    files are (grader.loading.choose_work's rule): fewer functions still raising
    NotImplementedError, on a tie the ``.py``, then the first by name. Folders and archives are
    left as they are. Returns the entries to grade, in order, and for each chosen entry the
    others it was chosen over (recorded and said by the batch).
    """
    from grader.batch.roster import CANVAS_DOWNLOAD_NAME

    def owner(path: Path) -> str | None:
        if path.suffix.lower() not in (".py", ".ipynb") or not stat.S_ISREG(_lstat_mode(path) or 0):
            return None
        student = student_id_of(path)
        canvas = CANVAS_DOWNLOAD_NAME.match(student)
        return f"canvas user {canvas['id']}" if canvas else student.casefold()

    groups: dict[str, list[Path]] = {}
    for path in paths:
        key = owner(path)
        if key is not None:
            groups.setdefault(key, []).append(path)
    passed_over: dict[Path, list[Path]] = {}
    for group in groups.values():
        if len(group) > 1:
            chosen = min(group, key=lambda path: (_work_left(path), path.suffix.lower() != ".py", path.name))
            passed_over[chosen] = [path for path in group if path != chosen]
    dropped = {path for others in passed_over.values() for path in others}
    return [path for path in paths if path not in dropped], passed_over


def _work_left(path: Path) -> float:
    """How many functions of an entry still raise NotImplementedError (unreadable: all of them)."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_UNPACKED_BYTES).decode("utf-8-sig", errors="replace")
        return functions_left(notebook_code(text) if path.suffix.lower() == ".ipynb" else text)
    except Exception:  # noqa: BLE001 - an entry that cannot be read holds no work to grade
        return float("inf")


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
        raise _Refused(f"{shown} could not be read (it vanished or is not accessible).")
    if stat.S_ISLNK(mode):
        raise _Refused(
            f"refused: {shown} is a symbolic link; hand in the file itself (links are never followed, "
            "so a link cannot lead the grader to files outside the submissions)."
        )
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise _Refused(f"refused: {shown} is not a regular file (a FIFO, a device or a socket); hand in a file.")


def _open_regular(path: Path, shown: str) -> io.BufferedReader:
    """Open ``path`` for reading only if it is a regular file, without following a link and
    without blocking (O_NONBLOCK: a FIFO swapped in after the check cannot hang the batch)."""
    _refuse_unless_regular(path, shown)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise _Refused(f"{shown} could not be opened ({error.strerror}).") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise _Refused(f"refused: {shown} is not a regular file (a FIFO, a device or a socket); hand in a file.")
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
    raise _Refused(
        f"{entry.name} is an unsupported entry type: hand in a .py file, a Jupyter notebook, "
        f"a folder holding {MODULE_FILE_NAME}, or a .zip of one of these."
    )


def _read_bounded(path: Path, limit: int, shown: str | None = None) -> bytes:
    # Read one byte past the limit: enough to know it is too big without reading it all.
    shown = shown or path.name
    with _open_regular(path, shown) as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise _Refused(f"{shown} is larger than {limit // MB} MB.")
    return data


_CODING_LINE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")


def _decode_python(data: bytes, name: str) -> str:
    """Python source as Python reads it: UTF-8 (a byte-order mark allowed), or the encoding a
    PEP 263 coding line declares. The staged copy is UTF-8, so a declared encoding other
    than UTF-8 is restated as UTF-8 on its own line (the line count stays the same)."""
    if b"\x00" in data:
        raise _Refused(f"{name} looks like a binary file (it contains NUL bytes), not Python source text.")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:  # an unknown encoding, a coding line contradicting a byte-order mark, or no UTF-8
        if not any(_CODING_LINE.match(line) for line in data.split(b"\n", 2)[:2]):
            return _decode(data, name)  # says which byte is not UTF-8
        raise _Refused(f"{name} declares an encoding Python cannot use ({error}); save it as UTF-8.") from None
    if encoding in ("utf-8", "utf-8-sig"):
        return _decode(data, name)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise _Refused(f"{name} is not valid {encoding} text (byte {error.start} cannot be decoded); save it as UTF-8.") from None
    lines = text.split("\n", 2)
    for index, line in enumerate(lines[:2]):
        if _CODING_LINE.match(line.encode("utf-8")):
            lines[index] = f"# -*- coding: utf-8 -*- (the grader's copy; the file declared {encoding})"
            break
    return "\n".join(lines)


def _decode(data: bytes, name: str) -> str:
    if b"\x00" in data:
        raise _Refused(f"{name} looks like a binary file (it contains NUL bytes), not Python source text.")
    try:
        return data.decode("utf-8-sig")  # utf-8, minus the byte-order mark some Windows editors add
    except UnicodeDecodeError as error:
        message = f"{name} is not UTF-8 text (byte {error.start} cannot be decoded); save it as UTF-8."
        raise _Refused(message) from None


def _normalise(text: str, name: str) -> str:
    # Python reads sources with universal newlines, so this changes no program; it makes the
    # content hash the same for the same code written on Windows and elsewhere.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise _Refused(f"{name} is empty: it holds no code.")
    if len(text.encode("utf-8")) > MAX_SOURCE_BYTES:
        raise _Refused(f"{name} holds more than {MAX_SOURCE_BYTES // MB} MB of source.")
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
                    raise _Refused(f"refused: {folder.name}/ holds more than {MAX_FOLDER_ITEMS} files and folders; hand in only your code.")
                if skip_junk and _is_junk(item.name):  # .ipynb_checkpoints, .git, __MACOSX
                    continue
                yield (*parts, item.name), item
                if item.is_dir(follow_symlinks=False) and len(parts) + 1 < MAX_FOLDER_DEPTH:
                    pending.append((Path(item.path), (*parts, item.name)))


def _read_folder(folder: Path) -> tuple[tuple[str, tuple], str]:
    """The code of the file that holds the work (with a notebook's cells), and that file's path inside the folder.

    multi_head_attention.py and the notebook multi_head_attention.ipynb are looked for, the
    shallowest of each (links are never followed: ``_walk``); with both, the one in which
    fewer functions still raise NotImplementedError is graded, on a tie the .py (the rule of
    grader.loading.choose_work).
    """
    found: dict[str, tuple[str, ...]] = {}
    for parts, _ in _walk(folder):  # shallowest first: the first of each name is the one
        if parts[-1] in (MODULE_FILE_NAME, NOTEBOOK_FILE_NAME) and parts[-1] not in found:
            found[parts[-1]] = parts
    if not found:
        raise _Refused(
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
        except _Refused:
            if MODULE_FILE_NAME not in found:
                raise  # the notebook was the only candidate: its problem is the entry's
    if len(codes) == 2 and functions_left(codes[NOTEBOOK_FILE_NAME][0][0]) < functions_left(codes[MODULE_FILE_NAME][0][0]):
        return codes[NOTEBOOK_FILE_NAME]
    return codes.get(MODULE_FILE_NAME) or codes[NOTEBOOK_FILE_NAME]


def _notebook_source(data: bytes, name: str) -> tuple[str, tuple]:
    """The code cells, joined by blank lines, without the grader's cells, magics or shell lines,
    and where each cell landed (the rule of ``pytest grader --submission notebook.ipynb``)."""
    try:
        code, cells = notebook_code_with_spans(_decode(data, name))
    except _Refused:
        raise
    except Exception as error:  # noqa: BLE001 - json and nbformat reject malformed input in many ways
        raise _Refused(f"{name} is not a valid notebook ({type(error).__name__}: {error}).") from None
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
    except _Refused:
        raise
    except Exception as error:  # noqa: BLE001 - zipfile reports damage as BadZipFile, zlib.error, EOFError...
        raise _Refused(f"{entry.name} is not a readable zip ({type(error).__name__}: {error}).") from None
    name = f"{entry.name}:{member.filename}"
    if len(data) > limit:
        raise _Refused(f"{name} is larger than {limit // MB} MB.")
    return _notebook_source(data, name) if notebook else (_decode_python(data, name), ())


def _choose_member(members: list[zipfile.ZipInfo], zip_name: str) -> zipfile.ZipInfo:
    """multi_head_attention.py (shallowest), else the only notebook, else the only .py."""
    if len(members) > MAX_ZIP_MEMBERS:
        raise _Refused(f"refused: {zip_name} holds more than {MAX_ZIP_MEMBERS} files; zip only your code.")
    for member in members:
        if len(member.filename) > MAX_PATH_CHARS or len(_parts(member)) > MAX_FOLDER_DEPTH:
            raise _Refused(f"refused: {zip_name} holds a path longer than {MAX_PATH_CHARS} characters or deeper than {MAX_FOLDER_DEPTH} folders.")
        if _is_unsafe(member):
            kinds = "absolute, '..' or a link"
            raise _Refused(f"refused: the zip holds an unsafe path {member.filename!r} ({kinds}).")
    if sum(member.file_size for member in members) > MAX_UNPACKED_BYTES:
        cap = MAX_UNPACKED_BYTES // MB
        raise _Refused(f"refused: {zip_name} would unpack to more than {cap} MB; zip only your code.")
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
        raise _Refused(
            f"{zip_name} holds several candidates ({shown}{more}) and no {MODULE_FILE_NAME}, "
            "so which to grade is unclear."
        )
    if zips:
        raise _Refused(f"{zip_name} holds another zip ({zips[0].filename}); nested zips are not opened.")
    raise _Refused(f"{zip_name} holds no .py file, notebook or {MODULE_FILE_NAME}.")


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
    except (OSError, _Refused) as error:
        digest.update(f"unlisted: {type(error).__name__}".encode())
    return digest.hexdigest()
