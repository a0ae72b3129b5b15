"""Text a student controls, made safe for the place an instructor reads it.

Student ids come from file names, and printed output, exception messages and exception
class names come from the student's code: any of them may hold terminal escape
sequences, a spreadsheet formula, or Markdown and HTML meant to render as something the
grader did not write. Whatever writes such text into a CSV cell, a log line, a terminal,
a Markdown page or an HTML page passes it through the function for that place here.

This module imports nothing of the grader, so every layer (the student's grader, the
sandbox, the batch, the hand-outs and the class report) can use it.
"""

from __future__ import annotations

import hashlib
import html
import re

# Characters a terminal or an editor acts on instead of showing: C0 and C1 controls, DEL,
# lone surrogates (bytes of a file name that are not UTF-8), and the bidirectional
# overrides that make text read differently from what it holds ("Trojan Source").
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSHOWABLE = re.compile(f"[\x00-\x1f\x7f-\x9f\ud800-\udfff{_BIDI}\u2028\u2029]")
_UNSHOWABLE_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff{_BIDI}\u2028\u2029]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode: show that byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character escaped (``\\x1b``, ``\\u202e``): safe for a log
    line or a terminal. ``keep_newlines`` keeps line breaks (a traceback, captured output)."""
    pattern = _UNSHOWABLE_BUT_NEWLINE if keep_newlines else _UNSHOWABLE
    return pattern.sub(_escape, str(text))


# OWASP, CSV injection: a cell starting with one of these is a formula to a spreadsheet
# (the full-width forms too: some spreadsheets read them as their ASCII twins).
CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
# A signed number written as text ("-3", "+4.5") is a value, not a formula: left as it is.
_PLAIN_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?")


def csv_cell(value: object) -> object:
    """A value for a CSV cell that a spreadsheet shows as text, never runs as a formula.

    Numbers pass unchanged. Text that starts with ``= + - @``, a tab, a carriage return or
    a line break (or a full-width ``= + - @``) gets a leading single quote, as OWASP's
    CSV-injection guidance says, unless it is a plain signed number; then its control
    characters are escaped. The csv module's writer quotes the cell whenever it holds a
    separator or a quote, so no text starts a new cell.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = str(value)
    if text.startswith(CSV_FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(text):
        text = "'" + text
    return printable(text)


_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character


def markdown_text(text: object) -> str:
    """``text`` as literal Markdown inline text, on one line: every ASCII punctuation character
    backslash-escaped (CommonMark allows it for all of them), so no heading, emphasis, link,
    image, table cell, HTML tag or entity can start inside it."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", printable(text))


_MARKDOWN_INLINE = re.compile(r"([\\`*_\[\]<>&|~!])")


def markdown_words(text: object) -> str:
    """``text`` as Markdown inline text in the middle of a line, on one line, escaping only what
    starts inline markup there (emphasis, code, links and images, HTML tags and entities, table
    cells, strikethrough), so a sentence stays readable in the raw file too (the Canvas feedback
    zip shows the Markdown as comments). Not for the start of a line: ``markdown_text`` is."""
    return _MARKDOWN_INLINE.sub(r"\\\1", printable(" ".join(str(text).split())))


def markdown_code_span(text: object) -> str:
    """``text`` as an inline code span, on one line: Markdown renders it literally (no
    emphasis, link, HTML tag or entity inside a code span), and it reads as it is written.
    Its backtick fence is longer than any run of backticks in the text, and a space pads a
    text that starts or ends with a backtick (CommonMark, "Code spans"). Line breaks and
    control characters are escaped as ``printable`` does. Not for a table cell, where GFM
    ends the cell at a ``|`` even inside a code span."""
    body = printable(text)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {body} " if body.startswith("`") or body.endswith("`") or not body.strip() else body
    return f"{fence}{padded}{fence}"


def markdown_code_block(text: object, info: str = "text") -> str:
    """``text`` as a fenced code block whose fence is longer than any run of backticks in it,
    so the text cannot close the block and render as Markdown or HTML."""
    body = printable(text, keep_newlines=True)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def html_text(text: object) -> str:
    """``text`` for an HTML page: control characters escaped, then ``& < > " '`` as entities."""
    return html.escape(printable(text, keep_newlines=True), quote=True)


MAX_FILE_STEM_BYTES = 100
# Not in a file name: path separators, what Windows reserves, and "~" (kept for hashed stems).
_FILE_STEM_UNSAFE = re.compile(r'[/\\:*?"<>|~]')


def file_stem(name: str) -> str:
    """A file name stem for ``name`` (a student id), at most ``MAX_FILE_STEM_BYTES`` bytes of UTF-8.

    A short id of printable characters is its own stem. Any other (too long, holding a
    control character, a path separator, one of ``: * ? " < > | ~``, or starting with a dot)
    becomes a cleaned prefix of it, ``~`` and 12 hex digits of its sha256: still readable,
    unique, and never the stem of another id, since an id used as its own stem holds no
    ``~``. Each result file records the id itself, so the mapping is kept.
    """
    name = str(name)
    plain = name and printable(name) == name and not _FILE_STEM_UNSAFE.search(name) and not name.startswith(".")
    if plain and len(name.encode("utf-8")) <= MAX_FILE_STEM_BYTES:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    cleaned = _FILE_STEM_UNSAFE.sub("_", _UNSHOWABLE.sub("_", name)).lstrip(".")
    room = MAX_FILE_STEM_BYTES - len(digest) - 1
    prefix = cleaned.encode("utf-8")[:room].decode("utf-8", "ignore")  # whole characters only
    return f"{prefix}~{digest}"
