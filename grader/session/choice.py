"""Which exercise a session grades: the one named (``--exercise NAME``, or ``GRADER_EXERCISE``),
else the one whose file the student works in (``--submission exercises/<its student file>`` or
its notebook, or a folder holding only one exercise's), else the course's first.

The engine's modules read the choice once, when they are imported (grader/scoring.py and the
others: one process grades one exercise), and the session's other plugins import them: so the
choice is made here, before those plugins are imported, from the command line pytest was given.
This plugin imports nothing of the engine but the seam.

When: grader/conftest.py is registered, and only then are the plugins it names
(``pytest_plugins``) imported. pytest's ``PytestPluginManager.register`` calls the historic hook
``pytest_plugin_registered`` for the conftest right away, with every plugin registered before it,
among them the session's ``Config`` ("pytestconfig"), and only afterwards ``consider_module``,
which imports ``pytest_plugins`` (pytest-dev/pytest, src/_pytest/config/__init__.py,
``PytestPluginManager.register``; ``Config.__init__`` registers the config itself). The
``pytest_load_initial_conftests`` hook is too early for a conftest: pytest calls it on
installed plugins only ("This hook is not called for conftest files", its hookspec in
src/_pytest/hookspec.py). The options are read from the raw command line
(``config.invocation_params.args``) because pytest has not parsed its own yet; ``pytest_configure``
checks the parsed ones agree (``PYTEST_ADDOPTS`` is seen only there). grader/session/targets.py
collects the chosen exercise's checks only.

PYTEST_DONT_REWRITE: grader/conftest.py imports this module before pytest imports its
``pytest_plugins``, and pytest warns, in what the student reads, about a plugin already
imported whose asserts it cannot rewrite, unless its docstring holds that word
(pytest-dev/pytest, src/_pytest/assertion/rewrite.py, ``mark_rewrite`` and
``is_rewrite_disabled``). It has no assert to rewrite.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from grader.seam import registry
from grader.seam.declaration import Declaration


class ChoiceRefused(pytest.UsageError):
    """The session cannot tell, or was told wrongly, which exercise to grade."""


def pytest_addoption(parser: pytest.Parser) -> None:
    # The group's title is given here: this plugin is registered first (grader/session/targets.py adds to it).
    parser.getgroup("grader", "the grader").addoption(
        "--exercise",
        metavar="NAME",
        default=None,
        help=f"the exercise to grade ({', '.join(registry.names())}); default: ${registry.CHOSEN}, else the one whose file "
        "--submission names, else the course's first",
    )


def choose_from_the_command_line(config: pytest.Config) -> Declaration:
    """Choose the session's exercise from the arguments pytest was started with (see the module's
    docstring for why not from its parsed options), before the engine is imported."""
    named, submissions = _read(config.invocation_params.args)
    return registry.choose(chosen(named, os.environ.get(registry.CHOSEN) or None, submissions).name)


# What ``pytest grader`` grades when no file is named (grader/session/targets.py's DEFAULT_SUBMISSION):
# in a student release, the released exercise's files only.
DEFAULT_SUBMISSION = Path(__file__).resolve().parents[2] / "exercises"


def _read(args: Sequence[str]) -> tuple[str | None, list[str]]:
    reader = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    reader.add_argument("--exercise", default=None)
    reader.add_argument("--submission", action="append", default=[])
    reader.add_argument("--manifest", default=None)  # the batch's: its exercise is named (GRADER_EXERCISE)
    known, _ = reader.parse_known_args([str(arg) for arg in args])
    submissions = known.submission or ([] if known.manifest else [str(DEFAULT_SUBMISSION)])
    return known.exercise, submissions


def chosen(named: str | None, from_environment: str | None, submissions: Iterable[str],
           declarations: Sequence[Declaration] | None = None) -> Declaration:
    """The exercise to grade: named on the command line or in the environment (the two must
    agree), else the one the submissions' files belong to, else the course's first. A file of
    another exercise than the one named is refused: its checks would all fail for nothing."""
    known = {d.name: d for d in (declarations if declarations is not None else [registry.exercise(n) for n in registry.names()])}
    if named and from_environment and named != from_environment:
        raise ChoiceRefused(f"--exercise {named} and {registry.CHOSEN}={from_environment} name different exercises: name one")
    name = named or from_environment
    if name is not None and name not in known:
        raise ChoiceRefused(f"no exercise named {name!r}: {registry.holding(known.values())}")
    found = {path: belongs for path in submissions if (belongs := _exercise_of(Path(path), known.values())) is not None}
    if name is None:
        if len({d.name for d in found.values()}) > 1:
            listed = "; ".join(f"{path} is {d.name}'s" for path, d in found.items())
            raise ChoiceRefused(f"these submissions are of different exercises ({listed}): grade one exercise at a time")
        if found:
            return next(iter(found.values()))
        return known[name] if name else (registry.exercise(None) if declarations is None else declarations[0])
    for path, belongs in found.items():
        if belongs.name != name:
            raise ChoiceRefused(
                f"{path} is {belongs.name}'s file ({belongs.title}), but the exercise chosen is {name}: "
                f"name --exercise {belongs.name}, or grade a file of {name} ({known[name].student_file})"
            )
    return known[name]


def _exercise_of(path: Path, declarations: Iterable[Declaration]) -> Declaration | None:
    """The exercise a submission is of, by its file's name (a file) or by the only exercise whose
    file it holds (a folder); None when its name says nothing (``alice.py``, a folder of both)."""
    declarations = list(declarations)
    if path.is_dir():
        held = [d for d in declarations if any((path / name).is_file() for name in (d.student_file, d.notebook))]
        return held[0] if len(held) == 1 else None
    return next((d for d in declarations if path.name in (d.student_file, d.notebook)), None)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """The parsed options must name the exercise chosen before they were parsed (an option from
    ``PYTEST_ADDOPTS`` or an ini's ``addopts`` was not seen then)."""
    named = config.getoption("exercise")
    graded = registry.exercise()
    if named and named != graded.name:
        raise ChoiceRefused(f"--exercise {named} came too late (from PYTEST_ADDOPTS or addopts?): this session grades {graded.name}; "
                            f"name it on the command line, or set {registry.CHOSEN}={named}")
