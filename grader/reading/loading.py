"""Find a submission's source file and import it as a module.

Importing runs student code, so this module is only ever used on the student's side of
the boundary: by the in-process backend at a student's own desk, or inside the worker.
"""

from __future__ import annotations

import codeop
import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

from grader.reading import parser_limits
from grader.seam import registry

# The files a student works in, as the exercise declares them.
MODULE_FILE_NAME = registry.exercise().student_file
NOTEBOOK_FILE_NAME = registry.exercise().notebook

_unique_names = itertools.count()


class SubmissionNotFound(Exception):
    """The path given does not hold a gradable file."""


def locate_source(path: Path) -> Path:
    """The .py file to grade: the path itself, or the exercise's file (MODULE_FILE_NAME) inside a folder."""
    path = Path(path)
    if path.is_dir():
        candidates = sorted(path.rglob(MODULE_FILE_NAME), key=lambda p: (len(p.parts), str(p)))
        if not candidates:
            raise SubmissionNotFound(f"no {MODULE_FILE_NAME} anywhere inside {path.name}/")
        return candidates[0]
    if not path.exists():
        raise SubmissionNotFound(f"{path} does not exist")
    if path.suffix != ".py":
        raise SubmissionNotFound(f"{path.name} is not a Python file (.py)")
    return path


def choose_work(folder: Path) -> Path:
    """The file to grade in a folder: the one that holds the work.

    A folder may hold the exercise's file (MODULE_FILE_NAME), its notebook (NOTEBOOK_FILE_NAME), or
    both (the exercise ships both; a student works in one). Each is looked for anywhere
    inside, the shallowest first. With both, the grader grades the one that holds more of
    the work (grader.reading.work_held.most_work: the exercise's functions written, read from the
    syntax tree; on a tie, the .py file).
    """
    from grader.reading import work_held  # ast and json only: cheap

    found = {}
    for name in (MODULE_FILE_NAME, NOTEBOOK_FILE_NAME):
        candidates = [p for p in folder.rglob(name) if ".ipynb_checkpoints" not in p.parts]
        if candidates:
            found[name] = min(candidates, key=lambda p: (len(p.parts), str(p)))
    if not found:
        raise SubmissionNotFound(f"no {MODULE_FILE_NAME} (or {NOTEBOOK_FILE_NAME}) anywhere inside {folder.name}/")
    files = list(found.values())
    return files[work_held.most_work([(path.name, work_held.work_in_file(path)) for path in files])]


def import_source(source: Path, name: str | None = None) -> ModuleType:
    """Import ``source`` under ``name``, or a fresh ``submission_...`` name, so several
    submissions never collide.

    The file is compiled here, as importlib's loader compiles it (its bytes, so a coding line
    holds; no ``__future__`` inherited), then run in the module: code nested too deeply for
    Python's parser is then a ``parser_limits.TooDeeplyNested`` naming its line, never a bare
    MemoryError or RecursionError that reads like a crash."""
    module, _ = _new_module(source, name)
    try:
        code = parser_limits.compile_module(Path(source).read_bytes(), str(source))
        exec(code, module.__dict__)  # noqa: S102 - the sandbox's side only (the module's docstring)
    except BaseException:
        sys.modules.pop(module.__name__, None)
        raise
    return module


def import_cells(source: Path, cells: list[tuple[int, int]]) -> tuple[ModuleType, list[tuple[int, BaseException]]]:
    """A notebook's code (``source``, the joined cells; ``cells``, the first and last line of
    each cell run) imported as a kernel runs it: the module, and the cells that raised."""
    module, _ = _new_module(source, None)
    return module, run_cells(module, source, cells)


def _new_module(source: Path, name: str | None):
    name = name or f"submission_{next(_unique_names)}_{source.stem}"
    spec = importlib.util.spec_from_file_location(name, source)
    if spec is None or spec.loader is None:
        raise SubmissionNotFound(f"{source.name} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    # dataclasses look the module up in sys.modules while the class body runs.
    sys.modules[module.__name__] = module
    return module, spec


# What a cell may raise and the run still go on with the next cell, as a kernel goes on (IPython
# shows the traceback, or for SystemExit "An exception has occurred", and waits for the next cell).
CELL_ERRORS: tuple[type[BaseException], ...] = (Exception, SystemExit)


def run_cells(module: ModuleType, source: Path, cells: list[tuple[int, int]]) -> list[tuple[int, BaseException]]:
    """Run a notebook's cells (lines ``first``..``last`` of ``source``) one after another in
    ``module``'s namespace; the first line of each cell that raised, with what it raised.

    Each cell is compiled on its own, as a kernel compiles it, under the file's name and at
    its own lines (blank lines before it), so a traceback points into the file and from there
    to the cell (grader.reading.notebooks.in_cell_terms). A cell that does not even compile is one
    cell's SyntaxError, not the notebook's. A ``from __future__ import`` holds for the cells
    after it, as in IPython, whose compiler is a ``codeop.Compile`` (IPython/core/compilerop.py,
    CachingCompiler): "if the instance compiles program text containing a __future__ statement,
    it 'remembers' and compiles all subsequent program texts with the statement in force"
    (the codeop module's documentation).
    """
    lines = source.read_text(encoding="utf-8").split("\n")
    compile_cell = codeop.Compile()
    failures: list[tuple[int, BaseException]] = []
    for first, last in cells:
        text = "\n" * (first - 1) + "\n".join(lines[first - 1:last]) + "\n"
        try:
            code = parser_limits.compile_module(text, str(source), compile_cell)  # too deep: that cell's SyntaxError
            exec(code, module.__dict__)  # noqa: S102 - the sandbox's side only
        except CELL_ERRORS as error:
            failures.append((first, error))
    return failures
