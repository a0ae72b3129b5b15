"""Code too deeply nested for Python's parser: the student's syntax problem, said as one.

Python's parser and compiler recurse once per level of nesting, and both give up on code
nested too deeply, not with a SyntaxError but with one of two other exceptions. Measured
with Python 3.11 (``ast.parse``, ``compile`` and ``codeop.Compile`` alike):

* ``MemoryError`` with no message, from the parser: ``x = - - - ... 1`` with 100,000 signs,
  or ``(1,(1,(1,...`` 300 deep. CPython's generated parser counts its levels and, past
  ``MAXSTACK`` (6,000 in 3.11), sets "the parser's stack overflowed" as a MemoryError
  (Parser/parser.c: ``if (p->level++ == MAXSTACK) { p->error_indicator = 1; PyErr_NoMemory(); }``).
* ``RecursionError``, "maximum recursion depth exceeded during ast construction" (``ast.parse``)
  or "... during compilation" (``compile``): ``1+1+...+1`` 100,000 times, ``not not ... 1``
  5,000 times, ``a.b.b.b...`` or ``f()()()...`` (Python/ast.c and Python/compile.c check
  their depth against a limit derived from ``sys.getrecursionlimit()``).

Python 3.12 and 3.13 raise the same two (the MemoryError then says "Parser stack overflowed -
Python source too complex to parse"); PrairieLearn's image runs 3.12, Gradescope's 3.11 or 3.12.
(Brackets alone stop sooner with a real SyntaxError, "too many nested parentheses", at 200
levels: Parser/tokenizer.c's MAXLEVEL; indentation at 100 levels, "too many levels of
indentation".) A file that no Python can read is the student's to fix like any syntax error,
so wherever a submission is read (intake's choice of file, a notebook's cells, each
platform's choice of file, the desk's and the worker's import) these two become
``TooDeeplyNested``: a SyntaxError whose message says "too deeply nested for Python's parser"
and whose line is the first statement Python gives up on by itself, so that every place
that already handles a SyntaxError says it the same way, and none calls the file unreadable,
the notebook invalid, or the grader broken.

Only the standard library: the worker imports this module (grader/sandbox/processes.py,
WORKER_MODULES).
"""

from __future__ import annotations

import ast
import io
import tokenize
from types import CodeType
from typing import Callable

# What Python's parser and compiler raise when code is nested too deeply for them (see above).
PARSER_GAVE_UP: tuple[type[BaseException], ...] = (RecursionError, MemoryError)
TOO_DEEP = "too deeply nested for Python's parser"
SHOWN_LINE_CHARACTERS = 80  # of the line named: such a line is often 100,000 characters long


class TooDeeplyNested(SyntaxError):
    """Code Python's parser or compiler gave up on (``raised``: ``MemoryError`` or
    ``RecursionError``); a SyntaxError, with the line when one statement alone is too deep."""

    def __init__(self, raised: BaseException, filename: str, line: int | None, text: str | None) -> None:
        self.raised = type(raised).__name__
        # The type is said beside the message wherever it is shown (grader/feedback/errors.py).
        message = f"{TOO_DEEP}, which stops reading the code there before any of it runs; write it as several simpler statements"
        if line is None:
            super().__init__(message)
            self.filename = filename
        else:
            super().__init__(message, (filename, line, 1, text, line, 1))


def parse(source: str | bytes, filename: str = "<unknown>", *, locate: bool = True) -> ast.Module:
    """``ast.parse``; code nested too deeply for it raises ``TooDeeplyNested``, with its line
    unless ``locate`` is False (a reader that only needs to know the code does not parse:
    finding the line reads every statement again, up to a second for a 1 MB file)."""
    try:
        return ast.parse(source, filename)
    except PARSER_GAVE_UP as error:
        if not locate:
            raise TooDeeplyNested(error, filename, None, None) from None
        raise too_deeply_nested(error, source, filename) from None


def compile_module(source: str | bytes, filename: str, compiler: Callable[..., CodeType] | None = None) -> CodeType:
    """``source`` compiled as a module's code, as importing it would (``compiler``: an
    IPython-like ``codeop.Compile`` for a notebook's cells; by default the built-in, inheriting
    no ``__future__`` of this module, as importlib's ``source_to_code``); code nested too
    deeply raises ``TooDeeplyNested``."""
    try:
        if compiler is None:
            return compile(source, filename, "exec", dont_inherit=True)
        return compiler(source, filename, "exec")
    except PARSER_GAVE_UP as error:
        raise too_deeply_nested(error, source, filename) from None


def too_deeply_nested(error: BaseException, source: str | bytes, filename: str) -> TooDeeplyNested:
    """The SyntaxError to raise for ``error`` (what the parser or compiler raised on ``source``)."""
    text = _decoded(source)
    line = first_line_too_deep(text)
    shown = None
    if line is not None:
        shown = text.split("\n")[line - 1].strip()
        if len(shown) > SHOWN_LINE_CHARACTERS:
            shown = shown[: SHOWN_LINE_CHARACTERS - 3] + "..."
    return TooDeeplyNested(error, filename, line, shown)


def first_line_too_deep(source: str) -> int | None:
    """The first line of the first statement that Python's parser or compiler gives up on by
    itself (a statement read on its own: one logical line, its block's body replaced by
    ``pass``); None when none does alone (the nesting of blocks adds up past the limit).

    Only called once a whole file has failed: reading each statement again costs time the
    hot path never pays."""
    lines = source.split("\n")
    try:
        for first_row, first_column, tokens in _logical_lines(source):
            last_row = tokens[-1].end[0]
            text = "\n".join([lines[first_row - 1][first_column:], *lines[first_row:last_row]])
            alone = _standing_alone(text, tokens)
            if alone is not None and _gives_up_on(alone):
                return first_row
    except (tokenize.TokenError, SyntaxError):  # the file breaks off after the statements read so far
        return None
    return None


def _logical_lines(source: str):
    """Each logical line: the row and column where it starts, and its significant tokens."""
    skipped = {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER}
    tokens: list[tokenize.TokenInfo] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NEWLINE:
            if tokens:
                yield tokens[0].start[0], tokens[0].start[1], tokens
            tokens = []
        elif token.type not in skipped:
            tokens.append(token)
    if tokens:
        yield tokens[0].start[0], tokens[0].start[1], tokens


# A clause that continues a statement, made a statement of its own that reads the same code.
_CLAUSES = {"elif": "if", "else": "if 1", "try": "if 1", "finally": "if 1", "except": None}


def _standing_alone(text: str, tokens: list[tokenize.TokenInfo]) -> str | None:
    """One logical line as a module of its own: a clause as a statement, a block's header with
    ``pass`` for its body, a decorator above a function; None when it cannot stand alone."""
    first = tokens[0].string
    if first in _CLAUSES:
        replacement = _CLAUSES[first]
        text = f"try:\n    pass\n{text}" if replacement is None else replacement + text[len(first):]
    if first == "@":
        return f"{text}\ndef _decorated():\n    pass\n"
    if first in ("case",):  # a match statement's case: read with its match around it
        text = f"match _:\n {text}"
    if tokens[-1].string == ":":
        text += " pass"
    return text


def _gives_up_on(text: str) -> bool:
    """Whether Python's parser or compiler gives up on ``text`` (a SyntaxError is not giving up)."""
    for check in (ast.parse, lambda code: compile(code, "<statement>", "exec", dont_inherit=True)):
        try:
            check(text)
        except PARSER_GAVE_UP:
            return True
        except (SyntaxError, ValueError):
            return False
    return False


def _decoded(source: str | bytes) -> str:
    if isinstance(source, str):
        return source
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return source.decode("utf-8", errors="replace")
