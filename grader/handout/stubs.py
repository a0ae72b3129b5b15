"""Generate the student's stub file from the reference solution.

The solution is the single source of truth. Code between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` (nbgrader's markers) is replaced by a ``raise NotImplementedError``
that names the function to write; the ``# TODO`` just above each region stays.

Scaffolding levels, from the same source (``--level``, default ``standard``):

* ``standard``: the student writes the constructors too (regions marked
  ``### BEGIN SOLUTION (standard)`` become student work); a ``# TODO`` says what the code must
  achieve and why, the docstrings state the contract; ``# HINT:`` comments are left out.
* ``guided``: the constructors are given (their ``(standard)`` markers and the comment just
  above them are dropped, their code kept) and every ``# HINT:`` naming the calls to make stays.

``resolve_level`` turns the solution into plain nbgrader markup for one level; the stubs, the
notebook, the nbgrader course and the release are all made from its result.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.results import SCAFFOLDING_FILE
from grader.seam import registry

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
LEVELS = ("standard", "guided")
DEFAULT_LEVEL = "standard"
STANDARD_ONLY = " (standard)"  # a region that is student work at the standard level only
HINT = "# HINT:"

REPO_ROOT = Path(__file__).resolve().parents[2]
# The exercise's solution and the stub made from it, where its declaration puts them.
SOLUTION_PATH = REPO_ROOT / "solutions" / registry.exercise().solution
EXERCISE_PATH = REPO_ROOT / "exercises" / registry.exercise().student_file

GENERATED_NOTICE = (
    "# This file is generated from the reference solution by `python -m grader stubs`.\n"
    f"# The lesson is in {registry.exercise().lesson}, beside this file. Fill in every function that raises\n"
    "# NotImplementedError, then run `pytest grader`.\n"
)
# Where the release (and `stubs --level`) records the level the exercise was generated at.
LEVEL_FILE = SCAFFOLDING_FILE


class SolutionMarkupError(ValueError):
    """The solution's BEGIN/END SOLUTION markers are unbalanced or misplaced."""


@dataclass(frozen=True)
class SolutionRegion:
    begin: int  # 1-based line number of the BEGIN marker
    end: int  # 1-based line number of the END marker
    indent: str
    function: str  # qualified name of the function the region sits in


def find_regions(source: str) -> list[SolutionRegion]:
    """Locate every solution region and the function that holds it."""
    lines = source.splitlines()
    regions: list[SolutionRegion] = []
    begin = None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip().removesuffix(STANDARD_ONLY)
        if stripped == BEGIN_SOLUTION:
            if begin is not None:
                raise SolutionMarkupError(f"line {number}: nested {BEGIN_SOLUTION}")
            begin = number
        elif stripped == END_SOLUTION:
            if begin is None:
                raise SolutionMarkupError(f"line {number}: {END_SOLUTION} without a BEGIN")
            indent = lines[begin - 1][: len(lines[begin - 1]) - len(lines[begin - 1].lstrip())]
            regions.append(SolutionRegion(begin, number, indent, _enclosing_function(source, begin)))
            begin = None
    if begin is not None:
        raise SolutionMarkupError(f"line {begin}: {BEGIN_SOLUTION} is never closed")
    return regions


def _enclosing_function(source: str, line: int) -> str:
    """The qualified name (``Class.method``) of the innermost def around ``line``."""
    best = ""

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if child.lineno <= line <= (child.end_lineno or child.lineno):
                    if not isinstance(child, ast.ClassDef):
                        best = name
                    visit(child, name + ".")

    visit(ast.parse(source), "")
    if not best:
        raise SolutionMarkupError(f"line {line}: a solution region must sit inside a function")
    return best


def solution_lines(source: str) -> list[str]:
    """Every non-blank line inside a solution region (used to check a release leaks none)."""
    lines = source.splitlines()
    inside: list[str] = []
    for region in find_regions(source):
        inside.extend(line for line in lines[region.begin : region.end - 1] if line.strip())
    return inside


def _comment_block_end(lines: list[str], start: int) -> int:
    """The index after a comment block starting at ``lines[start]`` (``# HINT: ...`` or
    ``# TODO: ...``): its continuation lines are comments indented past the ``#``."""
    end = start + 1
    while end < len(lines) and re.match(r"\s*#\s{2,}\S", lines[end]):
        end += 1
    return end


def resolve_level(source: str, level: str = DEFAULT_LEVEL) -> str:
    """The solution as plain nbgrader markup for ``level`` (see the module docstring)."""
    if level not in LEVELS:
        raise ValueError(f"unknown scaffolding level {level!r}: choose one of {', '.join(LEVELS)}")
    lines = source.splitlines()
    kept: list[str] = []
    index = 0
    while index < len(lines):
        line, stripped = lines[index], lines[index].strip()
        if stripped.startswith(HINT):
            end = _comment_block_end(lines, index)
            if level == "guided":
                kept.extend(lines[index:end])
            index = end
            continue
        if stripped in (BEGIN_SOLUTION + STANDARD_ONLY, END_SOLUTION + STANDARD_ONLY):
            if level == "standard":
                kept.append(line.replace(STANDARD_ONLY, ""))
            elif stripped.startswith(BEGIN_SOLUTION):
                while kept and kept[-1].strip().startswith("#"):  # the TODO for the student's part
                    kept.pop()
            index += 1
            continue
        kept.append(line)
        index += 1
    return "\n".join(kept) + "\n"


def make_stub(source: str, level: str = DEFAULT_LEVEL) -> str:
    """Replace each solution region by a NotImplementedError naming its function."""
    source = resolve_level(source, level)
    lines = source.splitlines()
    output: list[str] = []
    position = 0
    for region in find_regions(source):
        output.extend(lines[position : region.begin - 1])
        output.append(
            f'{region.indent}raise NotImplementedError("{region.function} is not written yet")'
        )
        position = region.end
    output.extend(lines[position:])
    return GENERATED_NOTICE + "\n".join(output) + "\n"


def recorded_level(level_file: Path = LEVEL_FILE) -> str:
    """The level exercises/ was generated at: the one recorded beside the grader, else standard."""
    try:
        level = level_file.read_text(encoding="utf-8").strip()
    except OSError:
        return DEFAULT_LEVEL
    return level if level in LEVELS else DEFAULT_LEVEL


def record_level(level: str, level_file: Path = LEVEL_FILE) -> None:
    """Record ``level`` (the default leaves no file behind)."""
    if level == DEFAULT_LEVEL:
        level_file.unlink(missing_ok=True)
    else:
        level_file.write_text(level + "\n", encoding="utf-8")


def write_stubs(solution: Path = SOLUTION_PATH, exercise: Path = EXERCISE_PATH, level: str = DEFAULT_LEVEL) -> Path:
    exercise.parent.mkdir(parents=True, exist_ok=True)
    exercise.write_text(make_stub(solution.read_text(encoding="utf-8"), level), encoding="utf-8")
    return exercise


def stubs_are_current(solution: Path = SOLUTION_PATH, exercise: Path = EXERCISE_PATH, level: str = DEFAULT_LEVEL) -> bool:
    expected = make_stub(solution.read_text(encoding="utf-8"), level)
    return exercise.exists() and exercise.read_text(encoding="utf-8") == expected


def add_level_argument(parser) -> None:
    parser.add_argument(
        "--level",
        choices=LEVELS,
        default=None,
        help="scaffolding: standard (the student writes the constructors too; TODOs state goals) or "
        "guided (constructors given, API hints); default: the level recorded for exercises/, else standard",
    )


def add_arguments(parser) -> None:
    parser.add_argument("--check", action="store_true", help="only report whether exercises/ is stale (exit 1 if so)")
    add_level_argument(parser)


def report_freshness(generated: Path, is_current: bool, command: str) -> int:
    """What `--check` of a generating command says: 0 when up to date, 1 when stale."""
    if is_current:
        print(f"{generated.name} is up to date with the solution.")
        return 0
    print(f"{generated.name} is stale: run `{command}`.", file=sys.stderr)
    return 1


def run(arguments) -> int:
    level = arguments.level or recorded_level()
    if arguments.check:
        return report_freshness(
            EXERCISE_PATH, stubs_are_current(level=level), f"python -m grader stubs --level {level}"
        )
    written = write_stubs(level=level)
    record_level(level)
    print(f"wrote {written.relative_to(REPO_ROOT)} ({level} scaffolding)")
    return 0
