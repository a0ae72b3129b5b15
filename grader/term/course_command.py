"""``python -m grader course init|check``: write a starting course file, or check one.

``init`` writes the commented starting file (grader/term/course.py's ``STARTING_FILE``);
``check`` reads a course file and everything it names (grader/term/course_inputs.py), resolves
every name in them to a student with the roster, and says what the batch would refuse. The
command lives beside the course file's reader, not in it: checking needs the course's inputs,
which read the course file themselves.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from grader import untrusted
from grader.term import course_inputs
from grader.term.course import FILE_NAME, STARTING_FILE, CourseError, load
from grader.term.identity import Identities


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = actions.add_parser("init", help="write a commented starting course file")
    init.add_argument("path", type=Path, nargs="?", default=Path(FILE_NAME), help=f"where (default: ./{FILE_NAME})")
    init.add_argument("--force", action="store_true", help="replace an existing file")
    check = actions.add_parser("check", help="read a course file and say what it sets, or what is wrong with it")
    check.add_argument("path", type=Path, nargs="?", default=Path(FILE_NAME))


def run(arguments: argparse.Namespace) -> int:
    if arguments.action == "init":
        if arguments.path.exists() and not arguments.force:
            print(f"error: {arguments.path} exists (--force replaces it)", file=sys.stderr)
            return 2
        arguments.path.parent.mkdir(parents=True, exist_ok=True)
        arguments.path.write_text(STARTING_FILE, encoding="utf-8")
        print(f"wrote {arguments.path}: edit it, then {_where_to_run_commands(arguments.path)}")
        return 0
    return check(arguments.path)


def check(path: Path) -> int:
    """``course check``: what the course file sets, each name in it and in its files resolved to a
    student (with the roster), and every problem the batch would refuse, each with its file and
    line (on stderr); 2 when there is any."""
    try:
        course = load(path)
    except CourseError as error:
        for line in str(error).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    for section, values in course.values.items():
        for key, value in values.items():
            shown = f'"{value.isoformat()}"' if isinstance(value, datetime.datetime) else repr(value)
            print(f"[{section}] {key} = {shown}")
    for student, deadline in course.extensions.items():
        print(f"[extensions] {student} = {deadline.isoformat()}")
    inputs = course_inputs.read(course)
    problems = list(inputs.problems)
    if not problems:
        identities = Identities(inputs.rows)
        resolved = course_inputs.resolve(inputs, identities)
        problems += resolved.errors
        if inputs.rows is None:
            print(
                "no roster ([files] roster): the students' names in [extensions], submitted_at.csv and overrides.csv are "
                "matched to the submissions' file names when the batch runs; a name that matches none is listed there, not applied"
            )
        else:
            print(f"roster: {course.file('roster')}, {len(inputs.rows)} students")
            for assigned in (resolved.extensions, resolved.times, resolved.overrides):
                for keyed, _ in [*assigned.by_student.values(), *assigned.by_entry.values()]:
                    student = identities.resolve(keyed.key).student
                    print(f"{keyed.where}: {keyed.what} for {untrusted.printable(keyed.key)}: {untrusted.printable(student.name)}")
    for problem in problems:
        print(f"error: {untrusted.printable(problem)}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem{'s' if len(problems) != 1 else ''}: the batch refuses to run until they are fixed", file=sys.stderr)
        return 2
    return 0


def _where_to_run_commands(path: Path) -> str:
    """How to run the commands that read the course file: from its folder with this Python
    when it finds the grader from any folder (the instructor's `make .venv` makes it so: a .pth
    file names a folder holding a link to this grader), else from the repository's folder,
    naming the file."""
    import shlex

    repository = Path(__file__).resolve().parents[2]
    # sys.path[0] is the folder `python -m` started in: only a later entry finds the grader anywhere.
    grader = repository / "grader"
    anywhere = any(entry and (Path(entry) / "grader").resolve() == grader for entry in sys.path[1:])
    if anywhere:
        return f"run the commands from its folder with {shlex.quote(sys.executable)} -m grader (or give --course {path})"
    return (
        f"run the commands from {repository} with --course {path.resolve()} (this Python finds the grader only there; "
        f"`make .venv` in {repository} makes its .venv/bin/python find it from any folder)"
    )
