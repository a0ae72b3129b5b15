"""How the engine finds an exercise: by its name, through its declaration, never by an import.

Each package of ``grader/exercises/`` holding a ``declaration.py`` with ``DECLARATION`` is an
exercise. Its modules are imported here by name read from the declaration (``importlib``), so
no engine module imports one: an exercise added is a folder added, no engine file changed.
"""

from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path

from grader.seam.declaration import Declaration

EXERCISES = Path(__file__).resolve().parent.parent / "exercises"
PACKAGE = "grader.exercises"


class UnknownExercise(LookupError):
    """An exercise's name that no package of grader/exercises/ declares."""


def names() -> tuple[str, ...]:
    """The exercises this grader holds, sorted: each folder with a declaration."""
    return tuple(sorted(path.parent.name for path in EXERCISES.glob("*/declaration.py")))


# The variable that names the exercise a process grades when its caller names none (a batch's
# shard, the sandbox's worker and a platform's run inherit it from the process that chose it).
CHOSEN = "GRADER_EXERCISE"


def course_order() -> tuple[str, ...]:
    """The exercises in the order the course teaches them (grader/exercises/__init__.py's
    ``COURSE_ORDER``), each one this grader holds; the first is graded when none is chosen."""
    known = names()
    order = tuple(getattr(importlib.import_module(PACKAGE), "COURSE_ORDER", ()))
    unlisted = [name for name in known if name not in order]
    if unlisted:
        raise UnknownExercise(f"grader/exercises/__init__.py's COURSE_ORDER leaves out {', '.join(unlisted)}: list every exercise once")
    return tuple(name for name in order if name in known)


def exercise(name: str | None = None) -> Declaration:
    """The declaration of ``name``; when none is named, of the exercise this process was chosen
    to grade (``GRADER_EXERCISE``), else of the course's first."""
    if name is None:
        name = os.environ.get(CHOSEN) or None
    return _declaration(name)


@functools.cache
def _declaration(name: str | None) -> Declaration:
    known = names()
    if name is None:
        order = course_order()
        if not order:
            raise UnknownExercise("this grader holds no exercise")
        name = order[0]
    if name not in known:
        raise UnknownExercise(f"no exercise named {name!r}: {holding()}")
    declared = importlib.import_module(f"{PACKAGE}.{name}.declaration").DECLARATION
    if declared.name != name:
        raise UnknownExercise(f"grader/exercises/{name}/declaration.py declares {declared.name!r}, not {name!r}")
    return _placed(declared, EXERCISES / name)


def holding(declarations=None) -> str:
    """What this grader holds (or ``declarations``), for a message refusing a name: each
    exercise's name and title."""
    held = sorted(declarations if declarations is not None else (_declaration(name) for name in names()), key=lambda d: d.name)
    if not held:
        return "this grader holds no exercise"
    return "this grader holds " + ", ".join(f"{d.name} ({d.title})" for d in held)


def choose(name: str) -> Declaration:
    """Choose ``name`` as the exercise this process, and every process it starts, grades
    (``GRADER_EXERCISE``); before the engine's modules are imported, which read it once
    (grader/scoring.py and the others: one process grades one exercise). An unknown name, or
    another exercise than the one this process already grades, is refused."""
    declaration = _declaration(name)  # UnknownExercise, with the names held, before anything changes
    graded = _graded_already()
    if graded is not None and graded != declaration.name:
        raise UnknownExercise(
            f"this process already grades {graded}, not {declaration.name}: "
            f"choose the exercise before the grader's modules are imported (a new process)"
        )
    os.environ[CHOSEN] = declaration.name
    return declaration


def _graded_already() -> str | None:
    """The exercise the engine's modules were imported for, if they were (grader/scoring.py
    reads the choice when it is imported)."""
    import sys

    scoring = sys.modules.get("grader.scoring")
    exercise = getattr(scoring, "EXERCISE", None)
    return getattr(exercise, "name", None)


def _placed(declared: Declaration, package: Path) -> Declaration:
    from dataclasses import replace

    return replace(declared, package=package)


def module(declaration: Declaration, part: str):
    """One of an exercise's modules, named in its declaration (``declaration.operations``)."""
    return importlib.import_module(f"{PACKAGE}.{declaration.name}.{part}")


def optional(declaration: Declaration, part: str | None):
    """One of the modules an exercise may declare or not (``declaration.mistakes``): None where
    it declares none, and the engine does without it."""
    return None if part is None else module(declaration, part)


def operations(name: str | None = None):
    """The module of calls the worker may make on a student's objects for ``name``."""
    declaration = exercise(name)
    return module(declaration, declaration.operations)


def handle(name: str | None = None) -> type:
    """The class of the grader's handle on one submission of ``name`` (its declaration's
    ``handle``, "module.Class"): a subclass of grader.submission.Submission."""
    declaration = exercise(name)
    module_name, class_name = declaration.handle.rsplit(".", 1)
    return getattr(module(declaration, module_name), class_name)


def student_folders(name: str | None = None) -> tuple[str, ...]:
    """An exercise's folders a student receives, relative to the grader package: its package and
    its visible checks (each folder's own files; never what it keeps back)."""
    declaration = exercise(name)
    return (f"exercises/{declaration.name}", declaration.visible_checks.relative_to(EXERCISES.parent).as_posix())


def worker_modules(name: str | None = None) -> tuple[str, ...]:
    """The files of an exercise the sandbox's worker imports, relative to the grader package:
    its package, its declaration and its operations (which import only the engine)."""
    declaration = exercise(name)
    package = f"exercises/{declaration.name}"
    return ("exercises/__init__.py", f"{package}/__init__.py", f"{package}/declaration.py", f"{package}/{declaration.operations}.py")
