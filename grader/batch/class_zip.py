"""A class's submissions handed to the batch as one zip: Canvas's "Download Submissions" as it comes.

``python -m grader batch submissions.zip --out OUT`` unpacks the zip into ``OUT/unpacked/``
and grades that folder like any other. The zip is read with the defences intake has for a
student's zip (grader/batch/intake.py: ``check_archive`` refuses it whole for an absolute
path, a ``..``, a link, a path too long or too deep, too many members, or headers that
announce too much), scaled to a class; each member is then read bounded (headers can lie),
and one larger than any gradable entry is not written but said. A student's own zip inside
it is written as it is: intake opens it later as any student zip, with all those defences.

Two members that would land on one file are refused, whole and named, before anything is
written: one name twice (the second would overwrite the first, and its student be graded on
whichever came last), two names that are one in Unicode's composed form (NFC: macOS spells
"josé" decomposed, and its file systems store both as one file; intake reads ids in NFC), or,
where the file system folds case (macOS's, Windows's), two names that differ only in case.
Canvas's zip never holds such a pair (each file carries its own attachment id), so a zip
that does was made by hand, and which file is the student's is for a person to say.

OS leftovers (``__MACOSX/``, ``.DS_Store``) are not written and are listed as ignored. The
folder is kept in step with the zip: a file is rewritten only when its bytes changed (so an
unchanged student is not read again by the next run, intake.fingerprint) and files no
longer in the zip are removed.
"""

from __future__ import annotations

import errno
import tempfile
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader.batch import intake
from grader.term.lms_files import moodle_names
from grader.reading.loading import MODULE_FILE_NAME, NOTEBOOK_FILE_NAME
from grader.untrusted import printable

MAX_CLASS_MEMBERS = 50_000  # a class of 1,000 each uploading a few files, with room to spare
MAX_CLASS_BYTES = 4 * 1024 * intake.MB  # by the zip's own headers; each member is bounded again on reading
UNPACKED = "unpacked"  # the folder under OUT


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class _DiskFull(Exception):
    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class Unpacked:
    folder: Path  # the submissions folder to grade
    ignored: list[intake.Ignored] = field(default_factory=list)  # OS leftovers, not written
    not_written: list[intake.Ignored] = field(default_factory=list)  # students' files that could not be written
    restored: list[str] = field(default_factory=list)  # files in the folder that differed from the zip, rewritten from it


def unpack_class_zip(zip_path: Path, out: Path) -> Unpacked:
    """Unpack ``zip_path`` into ``out/unpacked`` (see the module's docstring).

    Raises ``intake.Refused`` (its message for the instructor) when the zip cannot be read
    or is refused whole.
    """
    folder = out / UNPACKED
    result = Unpacked(folder)
    try:
        with open(zip_path, "rb") as raw, zipfile.ZipFile(raw) as archive:
            kept = _listed(archive, zip_path.name, folder, result.ignored)
            wanted: set[Path] = set()
            for member, parts in kept:
                try:
                    with archive.open(member) as stream:  # bounded: a member's header may understate it
                        data = stream.read(intake.MAX_UNPACKED_BYTES + 1)
                except Exception as error:  # noqa: BLE001 - one damaged member (BadZipFile, zlib.error...) costs only its student
                    reason = f"could not be unpacked ({type(error).__name__}: {error})"
                    result.not_written.append(intake.Ignored(printable("/".join(parts)), reason))
                    continue
                if len(data) > intake.MAX_UNPACKED_BYTES:
                    reason = f"larger than {intake.MAX_UNPACKED_BYTES // intake.MB} MB unpacked, more than any gradable entry"
                    result.not_written.append(intake.Ignored(printable("/".join(parts)), reason))
                    continue
                target = folder.joinpath(*parts)
                try:
                    if _write_if_changed(folder, target, data):
                        result.restored.append(printable("/".join(parts)))
                except OSError as error:  # a name this file system cannot hold (too long, a NUL)
                    if error.errno in DISK_FULL:
                        raise _DiskFull(error) from error
                    result.not_written.append(intake.Ignored(printable("/".join(parts)), f"could not be written ({error.strerror})"))
                    continue
                wanted.add(target)
    except intake.Refused:
        raise
    except _DiskFull as full:  # the grader's own disk: stop the batch loudly, as intake does
        raise full.error from None
    except Exception as error:  # noqa: BLE001 - zipfile reports damage as BadZipFile, zlib.error, EOFError...
        raise intake.Refused(f"{zip_path.name} is not a readable zip ({type(error).__name__}: {error}).") from None
    _remove_all_but(folder, wanted)
    return result


def check_class_zip(zip_path: Path, out: Path) -> None:
    """Refuse ``zip_path`` as ``unpack_class_zip`` would refuse it whole (``intake.Refused``),
    from its listing alone: the batch asks before it writes anything, OUT and its log included."""
    try:
        with open(zip_path, "rb") as raw, zipfile.ZipFile(raw) as archive:
            _listed(archive, zip_path.name, out / UNPACKED, [])
    except intake.Refused:
        raise
    except Exception as error:  # noqa: BLE001 - as unpack_class_zip: BadZipFile, zlib.error, EOFError...
        raise intake.Refused(f"{zip_path.name} is not a readable zip ({type(error).__name__}: {error}).") from None


def _listed(
    archive: zipfile.ZipFile, zip_name: str, folder: Path, ignored: list[intake.Ignored]
) -> list[tuple[zipfile.ZipInfo, tuple[str, ...]]]:
    """The members to write into ``folder``, each with its path there (OS leftovers added to
    ``ignored`` instead); ``intake.Refused`` for a zip refused whole (see the module's docstring)."""
    members = archive.infolist()
    intake.check_archive(members, zip_name, MAX_CLASS_MEMBERS, MAX_CLASS_BYTES, "unzip it and give the folder")
    files = [member for member in members if not member.is_dir()]
    top = _common_top_folder(files)
    kept: list[tuple[zipfile.ZipInfo, tuple[str, ...]]] = []
    for member in files:
        parts = PurePosixPath(member.filename.replace("\\", "/")).parts
        parts = parts[len(top):] if parts[: len(top)] == top else parts
        parts = moodle_names.as_folder(parts)  # Moodle's flat download: one folder per student, as its other setting
        if not parts:
            continue
        leftover = next((index for index, part in enumerate(parts) if _is_leftover(part)), None)
        if leftover is not None:
            shown = "/".join(parts[: leftover + 1]) + ("/" if leftover + 1 < len(parts) else "")
            if all(item.name != printable(shown) for item in ignored):  # __MACOSX/ once, not per file
                reason = intake.not_a_submission(parts[leftover], is_folder=leftover + 1 < len(parts))
                ignored.append(intake.Ignored(printable(shown), reason or ""))
            continue
        kept.append((member, parts))
    _refuse_collisions([parts for _, parts in kept], zip_name, folder)
    return kept


def top_level_entries(zip_path: Path) -> list[tuple[str, bool]] | None:
    """The entries ``unpack_class_zip`` would write at the top of OUT/unpacked/, as (name, is a
    folder), read from the zip's listing alone (nothing unpacked, nothing written: the batch checks
    the course's names against them before it writes anything); None when it cannot be listed."""
    try:
        with open(zip_path, "rb") as raw, zipfile.ZipFile(raw) as archive:
            files = [member for member in archive.infolist() if not member.is_dir()]
    except Exception:  # noqa: BLE001 - unpack_class_zip says what is wrong with it
        return None
    top = _common_top_folder(files)
    entries: dict[str, bool] = {}
    for member in files:
        parts = PurePosixPath(member.filename.replace("\\", "/")).parts
        parts = moodle_names.as_folder(parts[len(top):] if parts[: len(top)] == top else parts)
        if parts and not any(_is_leftover(part) for part in parts):
            entries[parts[0]] = entries.get(parts[0], False) or len(parts) > 1
    return sorted(entries.items())


def _refuse_collisions(paths: list[tuple[str, ...]], zip_name: str, folder: Path) -> None:
    """``intake.Refused`` naming the first two members that would be one file in ``folder``
    (see the module's docstring); nothing when every member has a file of its own."""
    folds: bool | None = None  # asked of the file system only when two names differ in case alone
    composed_names: dict[tuple[str, ...], tuple[str, ...]] = {}
    folded_names: dict[tuple[str, ...], tuple[str, ...]] = {}
    for parts in paths:
        composed = tuple(unicodedata.normalize("NFC", part) for part in parts)
        folded = tuple(part.casefold() for part in composed)
        first = composed_names.get(composed)
        if first is None and folded in folded_names:
            folds = _folds_case(folder) if folds is None else folds
            first = folded_names[folded] if folds else None
        if first is None:
            composed_names[composed] = parts
            folded_names.setdefault(folded, parts)
            continue
        one, other = "/".join(first), "/".join(parts)
        if one == other:
            said = f"{_quoted(one)} twice: the second would overwrite the first"
        elif unicodedata.normalize("NFC", one) == unicodedata.normalize("NFC", other):
            said = (f"{_quoted(one)} and {_quoted(other)}, one name in Unicode's composed form (NFC), as the "
                    "grader reads names (one spells an accent as a letter and a combining mark)")
        else:
            said = (f"{_quoted(one)} and {_quoted(other)}, whose names differ only in case, and the file system of "
                    f"{folder.parent} does not tell them apart")
        raise intake.Refused(
            f"refused: {zip_name} holds {said}, so which file is the student's cannot be told; unzip it, "
            "keep the student's file, and give the folder."
        )


def _quoted(name: str) -> str:
    """A member's name for a message: quoted, control characters and every non-ASCII
    character escaped, so that two names that look the same are seen to differ."""
    return "'" + printable(name).encode("ascii", "backslashreplace").decode("ascii") + "'"


def _folds_case(folder: Path) -> bool:
    """Whether the file system that will hold ``folder`` takes ``A`` and ``a`` for one name
    (macOS's and Windows's do, Linux's do not): asked of it in a temporary folder, removed
    after; when it cannot be asked, assumed to (a refused zip costs a person a look, a file
    overwritten costs a student their grade)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        with tempfile.TemporaryDirectory(prefix="mha-case-probe-", dir=existing) as probe:
            (Path(probe) / "a").touch()
            return (Path(probe) / "A").exists()
    except OSError:
        return True


def _is_leftover(part: str) -> bool:
    """An OS or archiver leftover inside the zip (never written), as opposed to an instructor's
    stray file such as a README, which is written and listed by intake like any other."""
    return part.startswith(".") or part.casefold() in intake.JUNK_NAMES


def _common_top_folder(files: list[zipfile.ZipInfo]) -> tuple[str, ...]:
    """``("submissions",)`` when every file lies in that one folder and it holds several
    students' entries (the download re-zipped from its folder), else ``()``: Canvas's own zip
    is flat, and one student's folder zipped alone is that student's entry."""
    paths = [PurePosixPath(member.filename.replace("\\", "/")).parts for member in files]
    paths = [parts for parts in paths if parts and not _is_leftover(parts[0])]
    if not paths or any(len(parts) < 2 for parts in paths) or len({parts[0] for parts in paths}) != 1:
        return ()
    children = {parts[1] for parts in paths}
    if len(children) < 2 or children & {MODULE_FILE_NAME, NOTEBOOK_FILE_NAME}:
        return ()
    return (paths[0][0],)


def _write_if_changed(folder: Path, target: Path, data: bytes) -> bool:
    """Write ``data`` unless the file holds it already; True when a file that differed (edited
    by hand in OUT/unpacked/) was overwritten: the batch names it, never restores it silently."""
    # Only folders this function made lie between folder and target: check_archive refused
    # links and "..", and the folder is the batch's own, so no path can lead outside it.
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise OSError(17, "a folder or link of that name is in the way")
    existed = target.is_file()
    if existed and target.read_bytes() == data:
        return False
    target.write_bytes(data)
    return existed


def _remove_all_but(folder: Path, wanted: set[Path]) -> None:
    """Remove what an earlier zip left that this one does not hold."""
    if not folder.exists():
        folder.mkdir(parents=True)
        return
    for path in sorted(folder.rglob("*"), key=lambda path: len(path.parts), reverse=True):  # deepest first
        if path in wanted:
            continue
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
