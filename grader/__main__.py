"""Command line of the grader: ``python -m grader COMMAND``.

Grading itself is ``pytest grader``; these commands produce the files around it.
"""

from __future__ import annotations

import argparse
import sys

from grader import batch, stubs


def command_stubs(arguments: argparse.Namespace) -> int:
    if arguments.check:
        if stubs.stubs_are_current():
            print(f"{stubs.EXERCISE_PATH.name} is up to date with the solution.")
            return 0
        print(f"{stubs.EXERCISE_PATH.name} is stale: run `python -m grader stubs`.", file=sys.stderr)
        return 1
    path = stubs.write_stubs()
    print(f"wrote {path.relative_to(stubs.REPO_ROOT)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    stub_parser = commands.add_parser("stubs", help="regenerate exercises/ from solutions/")
    stub_parser.add_argument("--check", action="store_true", help="only report whether exercises/ is stale")
    stub_parser.set_defaults(run=command_stubs)
    batch_parser = commands.add_parser("batch", help="grade a whole class, isolated, into a gradebook")
    batch.add_arguments(batch_parser)
    batch_parser.set_defaults(run=batch.run)
    arguments = parser.parse_args(argv)
    return arguments.run(arguments)


if __name__ == "__main__":
    sys.exit(main())
