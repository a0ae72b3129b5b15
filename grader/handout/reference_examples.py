"""The visible reference group's data: ``python -m grader examples [--check]``.

Writes the exercise's examples (its declaration's ``examples`` module says where and which;
for the first exercise grader/exercises/multi_head_attention/hidden/handouts.py writes
``reference_examples.json`` beside its data): a few fixed examples (inputs, the grader's
weights, a mask) with the outputs and attention weights the reference solution computes for
them, in float64. Its visible check ``test_reference_examples.py`` compares a submission with these
numbers at the student's desk, so a wrong number the lesson is about (a missing scale, a mask
applied after the softmax, the output projection missing or applied twice) costs visible
points; the hidden group still draws its sizes and data at grading time.

``--check`` regenerates the examples and compares them with the file (the expected values
within 1e-9, as another machine's arithmetic may differ in the last digit): a test fails when
the file is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from grader.reading import loading
from grader.handout import stubs
from grader.seam import registry

EXERCISE = registry.exercise()
COMMAND = "python -m grader examples"
CHECK_TOLERANCE = 1e-9


def examples():
    """The exercise's examples maker (its declaration's ``examples`` module), or None where it declares none."""
    return registry.optional(EXERCISE, EXERCISE.examples)


def build_examples(solution: Path = stubs.SOLUTION_PATH) -> dict:
    reference = loading.import_source(solution, "reference_examples_solution")
    return {
        "about": f"generated from solutions/{EXERCISE.solution} by `{COMMAND}`; do not edit",
        **examples().build_examples(reference),
    }


def dumps(document: dict) -> str:
    """Indented JSON, each tensor's values on one line."""
    text = json.dumps(document, indent=2)
    return _inline_lists(text) + "\n"


def _inline_lists(text: str) -> str:
    lines, out, buffer = text.splitlines(), [], None
    for line in lines:
        stripped = line.strip()
        if buffer is not None:
            if stripped.startswith("]"):
                out.append(buffer[0] + ", ".join(buffer[1:]) + stripped)
                buffer = None
            else:
                buffer.append(stripped.rstrip(","))
        elif stripped.endswith("[") and not stripped.startswith("["):
            buffer = [line]
        else:
            out.append(line)
    return "\n".join(out)


def _same(written, fresh, path: str = "") -> str:
    """Where ``written`` differs from ``fresh`` ("" when it does not)."""
    if isinstance(fresh, dict):
        if not isinstance(written, dict) or set(written) != set(fresh):
            return path or "the top level"
        return next((found for key in fresh if (found := _same(written[key], fresh[key], f"{path}/{key}"))), "")
    if isinstance(fresh, list):
        if not isinstance(written, list) or len(written) != len(fresh):
            return path
        return next((found for a, b in zip(written, fresh) if (found := _same(a, b, path))), "")
    if isinstance(fresh, float) and isinstance(written, (int, float)) and not isinstance(written, bool):
        return "" if abs(written - fresh) <= CHECK_TOLERANCE * max(1.0, abs(fresh)) else path
    return "" if written == fresh else path


def examples_path() -> Path | None:
    """Where the exercise's examples are written (None: it declares none)."""
    maker = examples()
    return None if maker is None else maker.EXAMPLES_PATH


def stale_part(solution: Path = stubs.SOLUTION_PATH, examples: Path | None = None) -> str:
    """"" when the file holds what the solution gives now; else where it differs."""
    examples = examples or examples_path()
    try:
        written = json.loads(examples.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{examples.name} is missing or not JSON"
    return _same(written, build_examples(solution))


def write_examples(solution: Path = stubs.SOLUTION_PATH, examples: Path | None = None) -> Path:
    examples = examples or examples_path()
    examples.write_text(dumps(build_examples(solution)), encoding="utf-8")
    return examples


def add_arguments(parser) -> None:
    parser.add_argument("--check", action="store_true", help="only report whether the examples are stale (exit 1 if so)")


def run(arguments) -> int:
    if examples() is None:
        print(f"exercise {EXERCISE.name!r} declares no reference examples (its declaration's examples): nothing to write or check.")
        return 0
    if arguments.check:
        where = stale_part()
        if where:
            print(f"{examples_path().name} is stale ({where}): run `{COMMAND}`.", file=sys.stderr)
            return 1
        print(f"{examples_path().name} is up to date with the solution.")
        return 0
    print(f"wrote {write_examples().relative_to(stubs.REPO_ROOT)}")
    return 0
