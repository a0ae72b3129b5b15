"""Command line of the grader: ``python -m grader COMMAND``.

Grading itself is ``pytest grader``; these commands produce the files around it. Each
command lives in a module of its own exposing ``add_arguments(parser)`` and
``run(arguments) -> int``, imported only when needed: the student release ships without
the instructor's modules, and ``python -m grader`` must still work there. A command is one
entry of ``COMMANDS``: its name, module, reader, one line of help and an example.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.seam import registry

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Command:
    name: str
    module: str
    reader: str  # one of READERS: the group `python -m grader --help` lists it under
    summary: str
    example: str  # shown at the end of the command's --help


# The readers, in the order the index lists them, and what each group is for.
READERS = {
    "hand-outs": "what students and platforms receive",
    "grading": "a class's submissions, graded and reported",
    "maintenance": "the files generated from solutions/, kept in the repository",
}
# Students run no command of this tool: they grade with pytest. The index says so first,
# with the scripts each exercise hands out (its declaration's).
STUDENTS = (
    ("make grade", "grade exercises/ and print the score table (or: pytest grader)"),
    *(
        (f"python exercises/{script.file}", f"{declaration.name}: {script.shows}")
        for declaration in map(registry.exercise, registry.course_order())
        for script in declaration.scripts
    ),
)

COMMANDS = (
    Command("release", "grader.handout.release", "hand-outs",
            "write what students receive (no solutions, no hidden tests)",
            "python -m grader release build/release --level guided"),
    Command("wheel", "grader.handout.wheel", "hand-outs",
            "build the student grader as one wheel, for notebooks on Colab or a hosted Jupyter",
            "python -m grader wheel build/dist"),
    Command("gradescope", "grader.platforms.gradescope", "hand-outs",
            "build a Gradescope autograder zip",
            "python -m grader gradescope autograder.zip --hidden-visibility after_published"),
    Command("prairielearn", "grader.platforms.prairielearn", "hand-outs",
            "write a PrairieLearn externally graded question and its image",
            "python -m grader prairielearn build/prairielearn --image YOU/mha-grader"),
    Command("classroom50", "grader.platforms.classroom50", "hand-outs",
            "write a Classroom 50 autograder and template repository (GitHub Actions)",
            "python -m grader classroom50 build/classroom50"),
    Command("nbgrader", "grader.platforms.nbgrader_course", "hand-outs",
            "write an nbgrader course for the exercise",
            "python -m grader nbgrader build/course"),
    Command("course", "grader.term.course_command", "grading",
            "write a starting course file (course.toml: the assignment's settings every command reads), or check one",
            "python -m grader course init course.toml"),
    Command("sandbox", "grader.batch.sandbox_choice", "grading",
            "say which sandbox a batch will run student code in here, and why (and how to get bubblewrap)",
            "python -m grader sandbox"),
    Command("batch", "grader.batch.run", "grading",
            "grade a whole class, isolated, into a gradebook",
            "python -m grader batch submissions/ --out build/marks"),
    Command("report", "grader.class_view.report", "grading",
            "rebuild a batch's class report (OUT/report.html)",
            "python -m grader report build/marks --assignment 'Homework 3'"),
    Command("export", "grader.lms.export", "grading",
            "write a batch's grades as a CSV for Canvas's gradebook import (or plain)",
            "python -m grader export build/marks --roster roster.csv --assignment 'Homework 3 (12345)' --out grades.csv"),
    Command("stubs", "grader.handout.stubs", "maintenance",
            "regenerate the exercise's file in exercises/ from solutions/",
            "python -m grader stubs --check"),
    Command("notebook", "grader.handout.notebook", "maintenance",
            "regenerate the exercise's notebook in exercises/ (and its lesson) from solutions/",
            "python -m grader notebook --check"),
    Command("examples", "grader.handout.reference_examples", "maintenance",
            "regenerate the exercise's reference_examples.json (grader/exercises/NAME/) from solutions/",
            "python -m grader examples --check"),
)
BY_NAME = {command.name: command for command in COMMANDS}
# The commands that work on one exercise (--exercise): all but the course file's and the sandbox's.
FOR_AN_EXERCISE = frozenset(BY_NAME) - {"course", "sandbox"}


def index() -> str:
    """The commands grouped by reader, one line each: the description of ``--help``."""
    width = max(len(name) for name, _ in STUDENTS) + 2
    lines = ["students (no command of this tool: grading is pytest's):"]
    lines += [f"  {name:<{width}}{summary}" for name, summary in STUDENTS]
    for reader, purpose in READERS.items():
        lines += ["", f"{reader} ({purpose}):"]
        lines += [f"  {command.name:<{width}}{command.summary}" for command in COMMANDS if command.reader == reader]
    lines += ["", "python -m grader COMMAND --help: a command's options, and an example."]
    return "\n".join(lines)


def missing_dependency(error: ModuleNotFoundError, argv: list[str]) -> str:
    """What to do when a library a command needs is not installed for this Python."""
    library = (error.name or "a library").split(".")[0]
    command = shlex.join(["python", "-m", "grader", *argv])
    if Path(sys.prefix).resolve() == (REPO_ROOT / ".venv").resolve():
        fix = ".venv/bin/python -m pip install -r requirements-instructor.txt (make .venv does it when requirements change)"
    else:
        fix = f"make .venv in {REPO_ROOT}, then .venv/bin/{command}"
    return f"{library} is not installed for {sys.executable}: run {fix}\n"


def is_missing_part_of_this_copy(error: ModuleNotFoundError) -> bool:
    """The student release has no grader/handout/, grader/batch/, ...: the command's own
    module (or its package) is what is missing, not a library it imports."""
    return (error.name or "").startswith("grader.")


def parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The parser, with the chosen command's arguments added (its module imported: raises
    ModuleNotFoundError when that module, or a library it imports, is missing)."""
    parser = argparse.ArgumentParser(
        prog="python -m grader", description=index(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # No help= per command: argparse would list them all in one group; the index groups them.
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = next((word for word in argv if word in BY_NAME), None)
    for command in COMMANDS:
        command_parser = commands.add_parser(
            command.name, description=command.summary, epilog=f"example:\n  {command.example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if command.name == chosen:
            module = importlib.import_module(command.module)
            module.add_arguments(command_parser)
            if command.name in FOR_AN_EXERCISE:
                _add_exercise_option(command_parser)
            command_parser.set_defaults(run=module.run)
            _read_course(command.name, command_parser, argv, parser)
    return parser


def _read_course(name: str, command_parser, argv: list[str], parser) -> None:
    """The course file's settings become the command's defaults (grader/term/course.py)."""
    try:
        # By name, as the commands' own modules are: the student's grader imports no layer
        # above it (tests/test_layout.py); the course file is an instructor's.
        course = importlib.import_module("grader.term.course")
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


def _add_exercise_option(parser) -> None:
    # Read (and the exercise chosen) by choose_the_exercise, before the command's module was
    # imported; declared here so that argparse takes it and --help shows it.
    parser.add_argument(
        "--exercise", metavar="NAME", default=registry.exercise().name,
        help=f"the exercise ({', '.join(registry.names())}); default: the course file's [assignment] exercise, "
        f"else ${registry.CHOSEN}, else the course's first (now: %(default)s)",
    )


def exercise_named_in(argv: list[str]) -> str | None:
    """``--exercise NAME`` read ahead of argparse: the command's modules read the choice when
    they are imported (grader/seam/registry.py), before its arguments are parsed."""
    for index, word in enumerate(argv):
        if word == "--exercise" and index + 1 < len(argv):
            return argv[index + 1]
        if word.startswith("--exercise="):
            return word.split("=", 1)[1]
    return None


def choose_the_exercise(argv: list[str]) -> None:
    """The exercise of the command in ``argv``: ``--exercise``, else the course file's
    ``[assignment] exercise``, else ``GRADER_EXERCISE``, else the course's first; chosen for this
    process and every one it starts (a batch's shards, their workers). Raises UnknownExercise."""
    chosen = next((word for word in argv if word in BY_NAME), None)
    if chosen not in FOR_AN_EXERCISE:
        return
    name = exercise_named_in(argv) or _course_exercise(argv)
    if name is not None:
        registry.choose(name)
    else:
        registry.exercise()  # GRADER_EXERCISE, if set, must name an exercise this grader holds


def _course_exercise(argv: list[str]) -> str | None:
    """The course file's ``[assignment] exercise`` (checked there: grader/term/course.py), which a
    ``GRADER_EXERCISE`` naming another exercise contradicts."""
    try:
        course = importlib.import_module("grader.term.course")
    except ModuleNotFoundError:  # the student release: no course file there
        return None
    path = course.find(course.course_path_in(argv))
    if path is None:
        return None
    try:
        name = course.load(path).get("assignment", "exercise")
    except course.CourseError:  # said by the command's own reading of it, with its other settings (_read_course)
        return None
    environment = os.environ.get(registry.CHOSEN)
    if name is not None and environment and environment != name:
        raise registry.UnknownExercise(
            f"{path} sets [assignment] exercise = {name!r} but {registry.CHOSEN}={environment}: "
            f"name the exercise with --exercise, or unset {registry.CHOSEN}"
        )
    return name


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        choose_the_exercise(argv)
    except registry.UnknownExercise as error:
        sys.stderr.write(f"error: {error}\n")
        return 2
    try:
        parser = parser_for(argv)
    except ModuleNotFoundError as error:
        if is_missing_part_of_this_copy(error):
            chosen = next(word for word in argv if word in BY_NAME)
            sys.stderr.write(f"`{chosen}` is not available in this copy (it is an instructor's command); "
                             f"run it from a clone of the repository\n")
        else:
            sys.stderr.write(missing_dependency(error, argv))
        return 2
    arguments = parser.parse_args(argv)
    if arguments.command is None:
        parser.print_help()
        return 0
    try:
        return arguments.run(arguments)
    except OSError as error:
        # A path given on the command line that cannot be written or read (a file where a
        # folder is expected, no permission, a full disk): the user's to fix, no traceback.
        path = error.filename2 or error.filename
        sys.stderr.write(f"error: {error.strerror or error}" + (f": {path}" if path else "") + "\n")
        return 2
    except ModuleNotFoundError as error:
        if is_missing_part_of_this_copy(error):
            raise  # a module of the grader imported by another: a bug of the copy, not the user's
        sys.stderr.write(missing_dependency(error, argv))
        return 2


if __name__ == "__main__":
    sys.exit(main())
