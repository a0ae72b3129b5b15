"""GitHub Classroom: ``python -m grader classroom OUT_DIR``, a template repository for an assignment.

Writes the student release (``grader.handout.release``: the stubs, the notebook, the visible
grader; no solution, no hidden tests) plus ``.github/workflows/classroom.yml``, the
autograding workflow GitHub Classroom runs on every push:

1. check out the student's repository, set up Python 3.12, install the pinned requirements
   with torch's CPU build (``grader.handout.autograder.pip_install_lines``);
2. ``python -m grader.classroom_report`` (step id ``checks``): ``pytest grader`` on the
   student's exercises/, and every visible check as one test of the reporter's result
   (``grader/classroom_report.py`` gives the format), passed on as the step's ``result``;
3. classroom-resources/autograding-grading-reporter, which reads it from ``CHECKS_RESULTS``
   (the runner id, upper-cased, then ``_RESULTS``), prints each check, and sends GitHub
   Classroom the points: the sum of the checks' scores, out of the visible total.

The reporter's README (classroom-resources/autograding-grading-reporter) sets the rules the
workflow follows: the workflow is named ``Autograding Tests``, has one job,
``run-autograding-tests``, and is the only workflow triggered by a push. GitHub Classroom's
own templates add ``if: github.actor != 'github-classroom[bot]'`` (no run on the template's
first commit) and the ``checks: write`` permission.

The hidden group cannot live in a student's repository (a student can read, and rewrite,
everything there, the workflow included). Grade it after the deadline with the batch over
the cloned repositories: each clone is a folder holding ``exercises/multi_head_attention.py``,
which the batch's intake takes as that student's submission (README, "GitHub Classroom").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.handout import release
from grader.handout.autograder import pip_install_lines

WORKFLOW_PATH = Path(".github") / "workflows" / "classroom.yml"
WORKFLOW_NAME = "Autograding Tests"  # the reporter's README: no other name is allowed
JOB_ID = "run-autograding-tests"  # the reporter's README: one job, named so
RUNNER_ID = "checks"  # the step id; the reporter reads CHECKS_RESULTS
REPORTER = "classroom-resources/autograding-grading-reporter@v1"
REPORT_COMMAND = "python -m grader.classroom_report"
PYTHON_VERSION = "3.12"

WORKFLOW = """\
# GitHub Classroom autograding for the multi-head attention exercise (python -m grader classroom).
# On every push: the visible checks (pytest grader), each reported with its own points to
# GitHub Classroom by its autograding reporter. The hidden checks are not in this repository:
# your instructor runs them after the deadline.
# GitHub Classroom reads the points only from a workflow named "{name}" with the single
# job "{job}": keep both names, and trigger no other workflow on push.
name: {name}
"on":
  - push
  - workflow_dispatch
  - repository_dispatch
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  {job}:
    runs-on: ubuntu-latest
    if: github.actor != 'github-classroom[bot]'
    timeout-minutes: 30
    steps:
      - name: Checkout code
        uses: actions/checkout@v4
      - name: Set up Python
        uses: actions/setup-python@v5
        with:
          python-version: "{python}"
          cache: pip
      - name: Install the grader's requirements (CPU build of torch)
        run: |
{install}
      - name: Visible checks
        id: {runner}
        run: {command}
      - name: Autograding Reporter
        uses: {reporter}
        env:
          {variable}: "${{{{ steps.{runner}.outputs.result }}}}"
        with:
          runners: {runner}
"""

STUDENT_SECTION = """

## Autograding on GitHub

Every push to this repository runs the visible checks on GitHub (the Actions tab shows the
run: `pytest grader`'s report, then one line per check). Each check earns its own points, and
GitHub Classroom records their sum, out of the visible total. `make grade` gives you the same
checks and points before you push. Both grade `exercises/multi_head_attention.py`: if you work
in the notebook, copy your finished code into that file before you push. The hidden checks run when your instructor grades the
assignment after the deadline. Do not rename or edit `.github/workflows/classroom.yml`: your
instructor grades the code you push, not the workflow's output.
"""


def workflow_yaml() -> str:
    install = "\n".join(f"          {line}" for line in pip_install_lines("python"))
    return WORKFLOW.format(
        name=WORKFLOW_NAME, job=JOB_ID, python=PYTHON_VERSION, install=install, runner=RUNNER_ID,
        command=REPORT_COMMAND, reporter=REPORTER, variable=f"{RUNNER_ID.upper()}_RESULTS",
    )


def write_template(out_dir: Path) -> Path:
    """The student release in ``out_dir`` (replaced), with the autograding workflow."""
    out = release.write_release(out_dir)
    workflow = out / WORKFLOW_PATH
    workflow.parent.mkdir(parents=True)
    workflow.write_text(workflow_yaml(), encoding="utf-8")
    readme = out / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + STUDENT_SECTION, encoding="utf-8")
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", type=Path, help="folder to (re)create: the template repository for the assignment")


def run(arguments: argparse.Namespace) -> int:
    out = write_template(arguments.out_dir)
    leaks = release.leaked_solution_lines(out)
    if leaks:
        print("the template holds solution text; fix before handing it out:", *leaks[:10], sep="\n  ", file=sys.stderr)
        return 1
    print(f"wrote the template repository to {out} (the release and {WORKFLOW_PATH.as_posix()}; no solution text).")
    print("Push it to GitHub, mark it as a template repository, and use it as the assignment's starter code.")
    return 0
