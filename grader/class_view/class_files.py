"""OUT's class files, replaced as one set: never this run's gradebook beside the last run's results.

The class files are the files that describe the whole class and must agree with one another:
``gradebook.csv``, ``results.json``, ``report.html`` and the feedback pages the batch and the
report rewrite (``feedback/<id>.md`` with the final score, ``feedback/<id>.html``). Each is
written atomically (grader/results.py), but a stop between two of them (Ctrl-C, SIGTERM, a
scheduler's kill) would leave a new gradebook beside an old results.json. So a writer stages
the new set in ``OUT/.class-files/<pid>/`` and ``commit`` replaces the files in OUT together:

1. every file of the set is written into the staging folder (a stop here: the old set stays,
   whole, and the staged one is removed);
2. the set's manifest (which files it replaces, which it removes) is written, atomically: from
   that moment the set is committed;
3. each file is renamed into place (a rename within one file system: milliseconds), with the
   stop signals held, so Ctrl-C and SIGTERM take effect only once the set is in place; a
   SIGKILL or a power cut in between leaves the manifest, and the next writer or reader of OUT
   (``finish_interrupted``: the batch, the report, the export) completes the renames first.

So a reader sees the old set or the new one, never a mix. A set that does not include the
report (``--no-report``, a report cut short or failed) removes the old ``report.html`` and
pages rather than leave them showing the last run's grades.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from grader import results

STAGING = ".class-files"  # OUT/.class-files/<pid>/: a set being written by that process
MANIFEST = ".replaces.json"  # in a staged set: written last, it commits the set
CLASS_FILES = ("gradebook.csv", "results.json", "report.html")  # with the feedback pages
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class ClassFiles:
    """A new set of OUT's class files: ``write`` each (into the staging folder), ``remove`` what
    the set drops, ``commit`` to replace them in OUT together, or ``discard``."""

    def __init__(self, out: Path) -> None:
        self.out = Path(out)
        finish_interrupted(self.out)
        self.folder = self.out / STAGING / str(os.getpid())
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        self.written: list[str] = []
        self.removed: set[str] = set()
        self.committed = False

    def write(self, relative: str, text: str) -> None:
        results.write_atomically(self.folder / _checked(relative), text)
        if relative not in self.written:
            self.written.append(relative)

    def staged(self, relative: str) -> Path:
        """The staging path of ``relative``, for a writer that writes the file itself."""
        path = self.folder / _checked(relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        if relative not in self.written:
            self.written.append(relative)
        return path

    def path(self, relative: str) -> Path:
        """Where ``relative`` is read as this set has it: its staged copy, else OUT's."""
        return self.folder / relative if relative in self.written else self.out / relative

    def remove(self, relative: str) -> None:
        """Drop ``relative`` from OUT when the set is committed (and from the set, if staged)."""
        self.removed.add(_checked(relative))
        if relative in self.written:
            self.written.remove(relative)
            (self.folder / relative).unlink(missing_ok=True)

    def commit(self) -> None:
        """Replace the class files in OUT with this set, together (see the module's docstring)."""
        manifest = {"write": self.written, "remove": sorted(self.removed)}
        with _stop_signals_held():
            results.write_atomically(self.folder / MANIFEST, json.dumps(manifest) + "\n")
            _apply(self.folder, self.out)
            self.committed = True

    def discard(self) -> None:
        if not self.committed:
            shutil.rmtree(self.folder, ignore_errors=True)


def finish_interrupted(out: Path) -> list[str]:
    """Sets another writer of OUT left: a committed one (its manifest written) is completed, one
    never committed is removed once its writer is gone. What was done, in words."""
    said = []
    holder = Path(out) / STAGING
    for folder in sorted(holder.iterdir()) if holder.is_dir() else []:
        if (folder / MANIFEST).is_file():
            _apply(folder, Path(out))
            said.append(f"completed the replacement of the class files that a stopped run (pid {folder.name}) had begun")
        elif not _running(folder.name):
            shutil.rmtree(folder, ignore_errors=True)
            said.append(f"removed the class files a stopped run (pid {folder.name}) was writing: the set in place is one run's")
    with contextlib.suppress(OSError):
        holder.rmdir()  # only when empty
    return said


def discard_own(out: Path) -> None:
    """Remove the set this process was writing, unless committed (a stop before ``commit``)."""
    folder = Path(out) / STAGING / str(os.getpid())
    if folder.is_dir() and not (folder / MANIFEST).is_file():
        shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        (Path(out) / STAGING).rmdir()


def present(out: Path) -> list[str]:
    """The class files OUT holds now, by name (for a sentence that says what a stop kept)."""
    return [name for name in CLASS_FILES if (Path(out) / name).is_file()]


def _apply(folder: Path, out: Path) -> None:
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    for relative in manifest.get("write", []):
        staged = folder / _checked(relative)
        if staged.is_file():  # not yet moved (a completion after a kill moves the rest)
            (out / relative).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, out / relative)
    for relative in manifest.get("remove", []):
        (out / _checked(relative)).unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)


def _checked(relative: str) -> str:
    parts = PurePosixPath(relative).parts
    if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
        raise ValueError(f"a class file must be a path inside OUT, not {relative!r}")
    return relative


def _running(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # another user's process of that id
        return True
    return True


@contextlib.contextmanager
def _stop_signals_held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP held while the set moves into place (milliseconds): one that
    arrives meanwhile is remembered and handed to the handler that was in place once the set is
    in place, never between two of its files. (Held by Python's handlers, not the thread's signal
    mask: another thread, tqdm's monitor, would take a process's signal the main thread blocks.)"""
    arrived: list[int] = []
    try:
        previous = {number: signal.signal(number, lambda number, _frame: arrived.append(number)) for number in STOP_SIGNALS}
    except ValueError:  # not the main thread: no handler of ours to defer to
        yield
        return
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in arrived[:1]:
            handler = previous[number]
            if callable(handler):
                handler(number, None)  # the batch's: says what was kept, then stops the run
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), number)
