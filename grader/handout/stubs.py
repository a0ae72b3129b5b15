"""Generate the student's stub file from the reference solution.

The solution is the single source of truth. Code between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` (nbgrader's markers) is replaced by a ``raise NotImplementedError``
that names the function to write; the ``# TODO`` hint just above each region stays.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"

REPO_ROOT = Path(__file__).resolve().parents[2]
SOLUTION_PATH = REPO_ROOT / "solutions" / "multi_head_attention.py"
EXERCISE_PATH = REPO_ROOT / "exercises" / "multi_head_attention.py"

GENERATED_NOTICE = (
    "# This file is generated from the reference solution by `python -m grader stubs`.\n"
    "# Fill in every function that raises NotImplementedError, then run `pytest grader`.\n"
)


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
        stripped = line.strip()
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


def make_stub(source: str) -> str:
    """Replace each solution region by a NotImplementedError naming its function."""
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


def write_stubs(solution: Path = SOLUTION_PATH, exercise: Path = EXERCISE_PATH) -> Path:
    exercise.parent.mkdir(parents=True, exist_ok=True)
    exercise.write_text(make_stub(solution.read_text(encoding="utf-8")), encoding="utf-8")
    return exercise


def stubs_are_current(solution: Path = SOLUTION_PATH, exercise: Path = EXERCISE_PATH) -> bool:
    expected = make_stub(solution.read_text(encoding="utf-8"))
    return exercise.exists() and exercise.read_text(encoding="utf-8") == expected


def add_arguments(parser) -> None:
    parser.add_argument("--check", action="store_true", help="only report whether exercises/ is stale (exit 1 if so)")


def report_freshness(generated: Path, is_current: bool, command: str) -> int:
    """What `--check` of a generating command says: 0 when up to date, 1 when stale."""
    if is_current:
        print(f"{generated.name} is up to date with the solution.")
        return 0
    print(f"{generated.name} is stale: run `{command}`.", file=sys.stderr)
    return 1


def run(arguments) -> int:
    if arguments.check:
        return report_freshness(EXERCISE_PATH, stubs_are_current(), "python -m grader stubs")
    print(f"wrote {write_stubs().relative_to(REPO_ROOT)}")
    return 0
