"""Command line of the grader: ``python -m grader COMMAND``.

Grading itself is ``pytest grader``; these commands produce the files around it. Each
command lives in a module of its own exposing ``add_arguments(parser)`` and
``run(arguments) -> int``, imported only when needed: the student release ships without
the instructor's modules, and ``python -m grader`` must still work there.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "stubs": ("grader.handout.stubs", "regenerate exercises/multi_head_attention.py from solutions/"),
    "notebook": ("grader.handout.notebook", "regenerate exercises/multi_head_attention.ipynb from solutions/"),
    "examples": ("grader.handout.reference_examples", "regenerate grader/reference_examples.json from solutions/"),
    "release": ("grader.handout.release", "write what students receive (no solutions, no hidden tests)"),
    "wheel": ("grader.handout.wheel", "build the student grader as one wheel, for notebooks on Colab or a hosted Jupyter"),
    "batch": ("grader.batch.run", "grade a whole class, isolated, into a gradebook"),
    "nbgrader": ("grader.handout.nbgrader_course", "write an nbgrader course for the exercise"),
    "gradescope": ("grader.handout.gradescope", "build a Gradescope autograder zip"),
    "report": ("grader.batch.report", "rebuild a batch's class report (OUT/report.html)"),
    "export": ("grader.batch.export", "write a batch's grades as a CSV for Canvas's gradebook import (or plain)"),
    "prairielearn": ("grader.handout.prairielearn", "write a PrairieLearn externally graded question and its image"),
    "classroom50": ("grader.handout.classroom50", "write a Classroom 50 autograder and template repository (GitHub Actions)"),
    "course": ("grader.batch.course", "write a starting course file (course.toml), or check one"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = next((word for word in argv if word in COMMANDS), None)
    for name, (module_name, help_text) in COMMANDS.items():
        command_parser = commands.add_parser(name, help=help_text)
        if name == chosen:
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError:
                parser.exit(2, f"`{name}` is not available in this copy (it is an instructor's command)\n")
            module.add_arguments(command_parser)
            command_parser.set_defaults(run=module.run)
            _read_course(name, command_parser, argv, parser)
    arguments = parser.parse_args(argv)
    return arguments.run(arguments)


def _read_course(name: str, command_parser, argv: list[str], parser) -> None:
    """The course file's settings become the command's defaults (grader/batch/course.py)."""
    try:
        from grader.batch import course
    except ModuleNotFoundError:  # the student release: no course file there
        return
    if name not in course.OPTIONS:
        return
    course.add_course_option(command_parser)
    try:
        notes = course.apply_to_parser(name, command_parser, argv)
    except course.CourseError as error:
        parser.exit(2, f"error: {error}\n")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
