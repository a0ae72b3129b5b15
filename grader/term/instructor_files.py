"""Reading a file an instructor wrote (the course file, the roster, overrides.csv, submitted_at.csv).

One rule for every such file, so that none of them can stop a command with anything but one
message naming it: it must be a regular file (a folder, a link to nothing, a FIFO or a device
such as ``/dev/zero`` is refused without being read: a FIFO would wait for a writer forever and
a device never ends), at most ``LIMIT`` bytes (read bounded: a file with no line break is read
whole by the csv module, so a wrong file of gigabytes would exhaust the memory), UTF-8 text
(a byte-order mark, which Excel, Notepad and Canvas's gradebook export may write, is dropped),
and without NUL bytes (Python 3.11's csv module reads them into a cell, and a reason holding
one would reach the student's file in Canvas's feedback zip, which Python then refuses to run).

And one equality for every name such a file holds (``normal``): the roster's own check of
its ids and the resolver (grader/term/identity.py) compare names the same way, so two rows
the resolver would take for one student are refused where the roster is read.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path

def normal(text: str) -> str:
    """A name as it is compared: NFC, inner spaces collapsed, no surrounding space, no case."""
    return " ".join(unicodedata.normalize("NFC", str(text)).split()).casefold()


# Far above any instructor's file (a roster of 10,000 students with 100 columns is about 10 MB).
LIMIT = 64 * 1024 * 1024


class UnreadableFile(ValueError):
    """The file cannot be used: ``reason`` says why, in words, ``line`` where (or None)."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line

    def message(self, path: Path | str) -> str:
        """One line for the instructor: the file (and line), then why."""
        where = f"{path}:{self.line}" if self.line is not None else f"{path}"
        return f"{where}: {self.reason}"


def read_text(path: Path, limit: int | None = None) -> str:
    """The text of ``path``: a regular file of at most ``limit`` bytes (``LIMIT``), UTF-8 without NUL bytes."""
    limit = LIMIT if limit is None else limit
    try:
        status = os.stat(path)  # follows a link: a link to a regular file is that file
    except FileNotFoundError:
        broken = os.path.islink(path)
        raise UnreadableFile("a link to a file that does not exist" if broken else "no such file") from None
    except OSError as error:
        raise UnreadableFile(f"cannot be read ({error.strerror or error})") from None
    if stat.S_ISDIR(status.st_mode):
        raise UnreadableFile("a folder, not a file")
    if not stat.S_ISREG(status.st_mode):
        raise UnreadableFile("not a regular file (a device, a FIFO or a socket): give the file itself")
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as error:
        raise UnreadableFile(f"cannot be read ({error.strerror or error})") from None
    if len(data) > limit:
        size = f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit} bytes"
        raise UnreadableFile(f"larger than {size}, far more than such a file holds: is it the right file?")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UnreadableFile(f"not UTF-8 text ({error.reason} at byte {error.start}); save it as UTF-8", line) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise UnreadableFile("a NUL byte, which no text file holds: is it the right file?", line)
    return text
