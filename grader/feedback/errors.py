"""Descriptions of what went wrong in student code, as plain data.

Used on both sides of the boundary: the worker describes an exception it caught, the
grader receives the description (never the exception object, which could run student
code when printed).
"""

from __future__ import annotations

import functools
import linecache
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.seam.contract_errors import BackwardError, ContractViolation, NotDefined
from grader.reading import parser_limits


@dataclass(frozen=True)
class ErrorDescription:
    """What went wrong on the student's side, as plain data."""

    kind: str  # "not_written" | "raised" | "contract" | "import" | "timeout" | "crashed"
    type_name: str
    message: str
    location: str = ""  # "multi_head_attention.py:57 in AttentionHead.forward: <line>"
    function: str = ""  # where it raised, qualified ("AttentionHead.forward"); "" if not in the file

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, fields: dict) -> ErrorDescription:
        """Rebuild from untrusted plain data: only known fields, only strings, bounded."""
        return cls(**{name: str(fields.get(name, ""))[:2000] for name in ("kind", "type_name", "message", "location", "function")})

    def for_student(self) -> str:
        if self.kind == "not_written":
            return f"not implemented yet: {self.message}"
        if self.kind in ("contract", "timeout", "crashed"):
            return self.message
        where = f"\n  at {self.location}" if self.location else ""
        return f"{self.type_name}: {self.message}{where}"


def describe_exception(error: BaseException, source: Path) -> ErrorDescription:
    """Turn an exception raised by student code into plain data a student can read."""
    if isinstance(error, NotDefined):  # the name travels as data: a notebook's reader says why (grader/reading/notebooks.py)
        return ErrorDescription("contract", "NotDefined", str(error), function=error.name)
    if isinstance(error, ContractViolation):
        return ErrorDescription("contract", "ContractViolation", str(error))
    location, function = _innermost_student_frame(error, source)
    if isinstance(error, BackwardError) and error.forward_line and not location:
        line = linecache.getline(str(source), error.forward_line).strip()
        function = _function_at(source, error.forward_line)
        location = f"{source.name}:{error.forward_line} in {function}: {line} (the backward pass failed on what this line made)"
    message = str(error) or type(error).__name__
    if isinstance(error, NotImplementedError):
        return ErrorDescription("not_written", "NotImplementedError", message, location, function)
    type_name = "RuntimeError" if isinstance(error, BackwardError) else type(error).__name__  # what the student's torch raised
    if isinstance(error, parser_limits.TooDeeplyNested):  # what Python itself raised on the code (MemoryError, RecursionError)
        type_name = error.raised
    return ErrorDescription("raised", type_name, message, location, function)


def _function_at(source: Path, line_number: int) -> str:
    """The qualified name of the function of ``source`` that holds ``line_number``."""
    import ast

    try:
        tree = parser_limits.parse(source.read_text(encoding="utf-8", errors="replace"), locate=False)
    except (OSError, SyntaxError, ValueError):
        return ""
    found = ""

    def visit(node, prefix: str) -> None:
        nonlocal found
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if isinstance(child, ast.ClassDef):
                    visit(child, name + ".")
                elif child.lineno <= line_number <= (child.end_lineno or child.lineno):
                    found = name
                    visit(child, name + ".")

    visit(tree, "")
    return found


@functools.lru_cache(maxsize=1024)
def _resolved(filename: str) -> Path:
    """A frame's file as its real path (a look at each folder of it on the way: some 20 us). A
    traceback through torch passes a dozen files, and a mistaken submission raises from the same
    frames call after call: each file is looked up once."""
    return Path(filename).resolve()


def _innermost_student_frame(error: BaseException, source: Path) -> tuple[str, str]:
    """Where in the student's file it raised, and in which function (qualified: the exercise
    has several forwards)."""
    home = _resolved(str(source))
    frames = [
        (frame, line_number)
        for frame, line_number in traceback.walk_tb(error.__traceback__)
        if _resolved(frame.f_code.co_filename) == home
    ]
    if isinstance(error, SyntaxError) and error.lineno:
        line = (error.text or linecache.getline(str(source), error.lineno)).strip()
        return f"{source.name}:{error.lineno}: {line}", ""
    if not frames:
        return "", ""
    frame, line_number = frames[-1]
    function = frame.f_code.co_qualname
    line = linecache.getline(str(source), line_number).strip()
    return f"{source.name}:{line_number} in {function}: {line}", function
