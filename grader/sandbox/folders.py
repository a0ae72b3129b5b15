"""Folders a student's code wrote: measuring them while it runs, removing them after.

Both must hold whatever the student left, at any depth and with names of any length:
a chain of 10,000 nested folders, or 25 folders of 200-character names (past PATH_MAX,
so no path names the files at the bottom). Neither recurses in Python, neither builds a
path, and neither follows a symbolic link or opens anything but a directory.

- ``first_excess`` descends with directory file descriptors (one per level, held while
  below it) and reads each entry with ``fstatat`` relative to its folder's descriptor.
- ``empty``/``remove`` hold one descriptor at a time: they move each folder's subfolders
  up into the folder being emptied (a rename), so the tree gets shallower until only
  files and empty folders are left, then remove those.

``shutil.rmtree`` is not enough on Python 3.11: its fd-based ``_rmtree_safe_fd`` calls
itself once per level, so 1,000 nested folders raise ``RecursionError`` (not an
``OSError``: ``ignore_errors`` does not catch it). CPython fixed that in 3.12 (gh-89727,
python/cpython#119808: a list as the stack, still one open descriptor per level).
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from collections.abc import Collection
from pathlib import Path

# O_DIRECTORY: the open fails on anything but a directory, so neither walk ever opens a
# FIFO or a device (open(2): "to avoid denial-of-service problems if opendir(3) is called
# on a FIFO or tape device"); O_NOFOLLOW: nor a symbolic link to a folder; O_NONBLOCK as
# well, in case anything else slipped through.
DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
HOISTED_PREFIX = ".mha-hoisted-"
LIMIT = " (the limit for one submission)"
UNMEASURED = ": what it wrote cannot be measured, and counts as over the limit"


class NotRemoved(OSError):
    """Some of a folder's entries could not be removed (the message names none of them:
    their names are the student's)."""


def _is_directory(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


# --- removal -----------------------------------------------------------------------------


def remove(folder: str | os.PathLike) -> None:
    """Remove ``folder`` and everything in it (a symbolic link is removed, never followed)."""
    folder = os.fspath(folder)
    try:
        empty(folder)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as error:
        if error.errno != errno.ELOOP:  # ELOOP: the folder is a symbolic link (O_NOFOLLOW)
            raise
    try:
        os.rmdir(folder)
    except NotADirectoryError:
        os.unlink(folder)  # a file or a symbolic link where the folder was
    except FileNotFoundError:
        pass


def empty(folder: str | os.PathLike, keep: Collection[str] = ()) -> None:
    """Remove everything in ``folder`` but the entries named in ``keep``; ``NotRemoved``
    when something stays, after removing all that could be."""
    top = os.open(folder, DIRECTORY_FLAGS)
    try:
        _empty(top, frozenset(keep))
    finally:
        os.close(top)


def _empty(top: int, keep: frozenset[str]) -> None:
    """Passes over ``top`` until it holds only what it keeps. Each pass removes its files
    and, of each folder in it, removes the files and moves the subfolders up into ``top``;
    the folder, now empty, is removed. A pass that changes nothing ends it."""
    names = (f"{HOISTED_PREFIX}{number}" for number in itertools.count())
    while True:
        remaining, changed, failure = _remove_files_and(top, lambda name: _flatten_and_remove(top, name, names), keep)
        if remaining == 0:
            return
        if not changed:
            reason = os.strerror(failure.errno) if failure and failure.errno else "nothing could be removed"
            raise NotRemoved(getattr(failure, "errno", None), f"{remaining} entries could not be removed ({reason})")


def _flatten_and_remove(top: int, name: str, free_names) -> bool:
    """Empty the folder ``name`` of ``top`` one level deep (files removed, subfolders moved
    up into ``top``) and remove it; whether anything changed. Failures of single entries
    are left for the next pass; the last one is raised if nothing changed."""
    _make_ours(name, top)
    folder = os.open(name, DIRECTORY_FLAGS, dir_fd=top)

    def move_up(subfolder: str) -> bool:
        _make_ours(subfolder, folder)  # a folder is moved only if writable (its '..' changes)
        os.rename(subfolder, _free_name(top, free_names), src_dir_fd=folder, dst_dir_fd=top)
        return True

    try:
        _, changed, failure = _remove_files_and(folder, move_up)
    finally:
        os.close(folder)
    try:
        os.rmdir(name, dir_fd=top)
        return True
    except OSError as error:
        if not changed:
            raise failure or error from None
        return changed


def _remove_files_and(folder: int, on_subfolder, keep: Collection[str] = ()) -> tuple[int, bool, OSError | None]:
    """Remove each file (or link, FIFO, device) of ``folder`` and call ``on_subfolder`` with
    each subfolder's name; return how many entries there were (those in ``keep`` aside),
    whether anything changed, and the last failure (the others go on)."""
    remaining, changed, failure = 0, False, None
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name in keep:
                continue
            remaining += 1
            try:
                if _is_directory(entry):
                    changed |= on_subfolder(entry.name)
                else:
                    os.unlink(entry.name, dir_fd=folder)
                    changed = True
            except FileNotFoundError:
                changed = True
            except OSError as error:
                failure = error
    return remaining, changed, failure


def _make_ours(name: str, parent: int) -> None:
    """Give the folder back its owner's rights to read, enter and change it: a student
    (the same user, where the grader does not run as root) may have taken them away.
    It is a folder when called (scandir's d_type) and nothing runs that could swap it."""
    try:
        os.chmod(name, stat.S_IRWXU, dir_fd=parent)
    except OSError:
        pass  # not ours to change: the removal says what it could not do


def _free_name(top: int, names) -> str:
    for name in names:
        try:
            os.stat(name, dir_fd=top, follow_symlinks=False)
        except FileNotFoundError:
            return name
    raise AssertionError("unreachable: the names never run out")


# --- measurement -------------------------------------------------------------------------


def first_excess(folder: str | os.PathLike, max_bytes: int, max_entries: int) -> str:
    """"" while ``folder`` holds at most ``max_entries`` files and folders taking at most
    ``max_bytes`` on disk, else what was exceeded (for the student's message).

    Disk use is what the file system allocated (``st_blocks`` * 512): a sparse file counts
    what it really holds, a small file a whole block. A file with several hard links in
    the tree counts once. The walk stops at the first excess, so it reads at most
    ``max_entries`` + 1 entries, however large or deep the tree; it opens only folders
    (never a FIFO, never through a symbolic link) and so cannot block or loop.

    A folder that cannot be read, where the grader does not run as root and the student
    removed its own permissions, cannot be measured: it counts as an excess, as does a
    tree deeper than the descriptors this process may open.
    """
    walk = _Measurement(max_bytes, max_entries)
    try:
        top = os.open(folder, DIRECTORY_FLAGS)
    except FileNotFoundError:
        return ""
    levels = [(top, [])]  # (a folder's descriptor, its subfolders not yet measured)
    try:
        levels[0][1].extend(walk.scan(top))
        while levels:
            descriptor, pending = levels[-1]
            if not pending:
                os.close(descriptor)
                levels.pop()
                continue
            name = pending.pop()
            try:
                below = os.open(name, DIRECTORY_FLAGS, dir_fd=descriptor)
            except (FileNotFoundError, NotADirectoryError):
                continue  # removed, or replaced by a file, since it was listed: its entry was counted
            except PermissionError:
                raise _Excess(f"it made a folder the grader cannot look into (it took away its own permission to read it){UNMEASURED}") from None
            except OSError as error:
                if error.errno == errno.ELOOP:
                    continue  # replaced by a symbolic link since it was listed: never followed
                raise
            levels.append((below, []))
            levels[-1][1].extend(walk.scan(below))
    except _Excess as excess:
        return str(excess)
    except OSError as error:
        if error.errno in (errno.EMFILE, errno.ENFILE):  # one descriptor per level (two while listing)
            return f"its folders are nested deeper than the grader can measure ({len(levels)} levels)"
        raise
    finally:
        for descriptor, _ in levels:
            os.close(descriptor)
        levels.clear()
    return ""


class _Excess(Exception):
    """The walk found more than the budget: its message is the reason."""


class _Measurement:
    def __init__(self, max_bytes: int, max_entries: int) -> None:
        self.max_bytes, self.max_entries = max_bytes, max_entries
        self.used = 0
        self.entries = 0
        self.linked: set[tuple[int, int]] = set()  # (device, inode) of files with several links, counted

    def scan(self, descriptor: int) -> list[str]:
        """Count the entries of one folder (``fstatat`` relative to its descriptor: no path,
        whatever the depth); return the names of its subfolders."""
        subfolders = []
        with os.scandir(descriptor) as entries:
            for entry in entries:
                self.entries += 1
                if self.entries > self.max_entries:
                    raise _Excess(f"it created more than {self.max_entries} files and folders{LIMIT}")
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed since it was listed
                except PermissionError:
                    raise _Excess(f"it made a folder the grader cannot look into (it took away its own permission to enter it){UNMEASURED}") from None
                if stat.S_ISDIR(info.st_mode):
                    subfolders.append(entry.name)
                elif info.st_nlink > 1:
                    if (info.st_dev, info.st_ino) in self.linked:
                        continue
                    self.linked.add((info.st_dev, info.st_ino))
                self.used += info.st_blocks * 512
                if self.used > self.max_bytes:
                    raise _Excess(f"it wrote more than {self.max_bytes // 2**20} MB of files{LIMIT}")
        return subfolders


def remove_quietly(folder: Path) -> str:
    """``remove``, for clean-up paths that must not fail: "" or why something stayed."""
    try:
        remove(folder)
    except Exception as error:  # noqa: BLE001 - a clean-up failure is reported, never raised
        return describe_failure(error)
    return ""


def describe_failure(error: BaseException) -> str:
    """An error of clean-up as a sentence without file names (they may be the student's)."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    if isinstance(error, OSError) and error.errno:
        return os.strerror(error.errno)
    return type(error).__name__
