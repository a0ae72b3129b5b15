"""How much of the exercise a file holds, read from its syntax tree: never imported, never run.

A student hands in several files (a finished ``.py`` beside the untouched notebook, a
helpers module beside the exercise, a one-line scratch file beside a complete notebook)
and the grader must grade the one that holds the work. Counting lines that say
``raise NotImplementedError`` cannot tell these apart: a helpers file and a scratch file
hold none, exactly as many as a finished exercise. So the file is parsed (``ast``) and
each of the exercise's functions is looked for: is it defined, and is it written (its
body is more than the stub's ``raise NotImplementedError``, a ``pass`` or a ``...``)?

The batch's intake (one student's several entries, a folder's two files), the desk
(``grader.reading.loading.choose_work``) and every platform's hand-out
(``grader.platforms.autograder.choose_submission_file``) choose with ``most_work``: one rule.
Only ``ast`` and ``json`` are needed, so choosing costs no torch import. Code nested too
deeply for Python's parser counts as a part that does not parse, as a syntax error does
(grader/reading/parser_limits.py), never as a file that cannot be read.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.reading import parser_limits
from grader.seam import registry

# The functions a student writes, in the order they build on each other (grader.scoring
# shows "Start with" the first one not written), as the exercise declares them. Methods are named Class.method.
EXERCISE_FUNCTIONS = registry.exercise().functions
_CLASSES = registry.exercise().classes


@dataclass(frozen=True)
class Work:
    """What one file holds of the exercise."""

    defined: frozenset[str] = frozenset()  # exercise functions the file defines
    written: frozenset[str] = frozenset()  # of those, the ones whose body is not a stub
    syntax_error: bool = False  # a part of it does not parse (the grader will say where)
    too_deep: bool = False  # of those parts, one is too deeply nested for Python's parser
    readable: bool = True  # False: not text, not a notebook: it holds nothing to grade
    unparsed: bool = False  # no part of it parses: what it defines is not known (a .py with a syntax error)

    def rank(self) -> tuple[int, int, int, int]:
        """Greater holds more of the work: functions written first. A file that does not
        parse is where a student was writing (a stub parses), so it comes before files
        with nothing written; then functions defined; an unreadable file comes last."""
        return (int(self.readable), len(self.written), int(self.syntax_error), len(self.defined))

    def describe(self) -> str:
        """One phrase for logs, results and the report: what the choice was based on."""
        if not self.readable:
            return "could not be read"
        total = len(EXERCISE_FUNCTIONS)
        if self.unparsed:  # nothing was read, so "defines none" would state what is not known
            why = f"code {parser_limits.TOO_DEEP}" if self.too_deep else "a syntax error"
            return f"does not parse ({why}), so which of the exercise's {total} functions it writes cannot be told"
        if not self.defined:
            said = f"defines none of the exercise's {total} functions"
        else:
            said = f"writes {len(self.written)} of the exercise's {total} functions"
            if len(self.defined) > len(self.written):
                said += f", {len(self.defined) - len(self.written)} left as stubs"
        if self.too_deep:
            return said + f" and has code {parser_limits.TOO_DEEP}"
        return said + (" and has a syntax error" if self.syntax_error else "")


UNREADABLE = Work(readable=False)


def work_in_code(code: str) -> Work:
    """The work in a Python file's text."""
    return work_in_cells([code])


def work_in_cells(cells: Sequence[str]) -> Work:
    """The work in code run in order (a notebook's cells): each cell parsed on its own, as a
    kernel runs it, so one cell's syntax error hides nothing in the others; a later
    definition replaces an earlier one, as running the cells would."""
    bodies: dict[str, bool] = {}  # exercise function -> written
    syntax_error = too_deep = False
    parsed = 0
    for cell in cells:
        try:
            tree = parser_limits.parse(cell, locate=False)
        except (SyntaxError, ValueError) as error:  # ValueError: a NUL byte
            syntax_error = True
            too_deep = too_deep or isinstance(error, parser_limits.TooDeeplyNested)
            continue
        parsed += 1
        for statement in _module_level(tree.body):
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name in EXERCISE_FUNCTIONS:
                bodies[statement.name] = _is_written(statement.body)
            elif isinstance(statement, ast.ClassDef) and statement.name in _CLASSES:
                for name in [name for name in bodies if name.startswith(statement.name + ".")]:
                    del bodies[name]  # a class defined again replaces all its methods
                for method in statement.body:
                    if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        qualified = f"{statement.name}.{method.name}"
                        if qualified in EXERCISE_FUNCTIONS:
                            bodies[qualified] = _is_written(method.body)
            else:
                # An exercise name bound another way (``causal_mask = lambda ...``, an import
                # under its name) may work: counted as written, so such a file is never set
                # aside as holding nothing.
                for bound in _names_bound(statement):
                    for name in EXERCISE_FUNCTIONS:
                        if name == bound or name.startswith(bound + "."):
                            bodies[name] = True
    written = frozenset(name for name, is_written in bodies.items() if is_written)
    return Work(frozenset(bodies), written, syntax_error, too_deep, unparsed=syntax_error and not parsed)


def work_in_notebook(text: str) -> Work:
    """The work in a notebook (its JSON text), in the code cells the grader grades
    (grader.reading.notebooks: the grader's own cells, magics and shell lines left out)."""
    from grader.reading.notebooks import code_cells, join_code_cells_with_spans

    try:
        return work_in_joined_cells(*join_code_cells_with_spans(code_cells(text)))
    except Exception:  # noqa: BLE001 - json and nbformat reject malformed input in many ways
        return UNREADABLE


def work_in_joined_cells(code: str, spans: Sequence = ()) -> Work:
    """The work in a notebook's cells joined into one file (grader.reading.notebooks.CellSpan says
    where each cell lies), or in a Python file when there are no ``spans``."""
    if not spans:
        return work_in_code(code)
    lines = code.split("\n")
    return work_in_cells(["\n".join(lines[span.first_line - 1 : span.last_line]) for span in spans])


def work_in_text(text: str, file_name: str) -> Work:
    """The work in a file's decoded text: a notebook by its ``.ipynb`` name, else Python."""
    return work_in_notebook(text) if file_name.lower().endswith(".ipynb") else work_in_code(text)


def work_in_file(path: Path, limit: int = 20 * 1024 * 1024) -> Work:
    """The work in a file on disk, read up to ``limit`` bytes (a bigger file, or one that
    cannot be opened, holds nothing the grader would grade)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return UNREADABLE
    if len(data) > limit or b"\x00" in data:
        return UNREADABLE
    return work_in_text(data.decode("utf-8-sig", errors="replace"), Path(path).name)


def most_work(candidates: Sequence[tuple[str, Work]]) -> int:
    """The index of the candidate ``(file name, work)`` that holds the most work.

    On a tie, a ``.py`` before a notebook (the exercise is a module; a notebook is graded
    as one), then the first as given (callers list the shallowest, then by name).
    """
    if not candidates:
        raise ValueError("no candidate to choose from")

    def key(index: int) -> tuple:
        name, work = candidates[index]
        return (work.rank(), name.lower().endswith(".py"), -index)

    return max(range(len(candidates)), key=key)


def _module_level(statements: list[ast.stmt]):
    """The statements that run at import, those inside ``if``, ``try`` and ``with`` blocks
    included (never a function's body)."""
    for statement in statements:
        yield statement
        if isinstance(statement, (ast.If, ast.With, ast.AsyncWith, ast.For, ast.While)):
            yield from _module_level(statement.body + getattr(statement, "orelse", []))
        elif isinstance(statement, (ast.Try, ast.TryStar)):
            blocks = [statement.body, *(handler.body for handler in statement.handlers), statement.orelse, statement.finalbody]
            yield from _module_level([inner for block in blocks for inner in block])


def _names_bound(statement: ast.stmt) -> list[str]:
    """Module-level names an assignment or an import binds."""
    if isinstance(statement, ast.Assign):
        return [target.id for target in statement.targets if isinstance(target, ast.Name)]
    if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) and isinstance(statement.target, ast.Name) and statement.value:
        return [statement.target.id]
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in statement.names]
    return []


def _is_written(body: list[ast.stmt]) -> bool:
    """A body that does something: not only a docstring, ``pass``, ``...`` and
    ``raise NotImplementedError`` (a body that still raises it at its top level raises it
    whatever else it does first)."""
    statements = body[1:] if body and _is_docstring(body[0]) else body
    if any(_raises_not_implemented(statement) for statement in statements):
        return False
    return any(not _is_placeholder(statement) for statement in statements)


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str)


def _is_placeholder(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Pass):
        return True
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and statement.value.value is Ellipsis


def _raises_not_implemented(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.Raise) or statement.exc is None:
        return False
    raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
