"""GitHub Classroom's report of the visible checks: ``python -m grader.classroom_report``.

The step the GitHub Classroom workflow runs on every push (``python -m grader classroom``
writes that workflow). It runs ``pytest grader`` as a student does at their desk, its report
going to stdout (the Actions log, where the student reads every failed check's expected /
got / hint), and turns every visible check into one test of the result GitHub Classroom's
autograding reporter reads. That format is the ``result`` output of
classroom-resources/autograding-command-grader (its src/main.js, ``generateResult``)::

    {"version": 1, "status": "pass" | "fail" | "error", "max_score": <the visible points>,
     "tests": [{"name", "status", "score", "message", "test_code", "filename", "line_no", "duration"}]}

JSON, base64-encoded, written as ``result=...`` to the file named by ``$GITHUB_OUTPUT`` (or
``--output``). classroom-resources/autograding-grading-reporter (src/notify-classroom.js)
adds up the tests' ``score`` into the points GitHub Classroom records, out of ``max_score``:
each check earns its own points, so the credit is partial per check, and the points add up
to the visible total. (The reporter's console table instead counts passed tests, each worth
the same: its "Test Score" column can differ from the points recorded.)

When the grader cannot run (no results written), the result has status "error" and
``max_score`` 0: the reporter then records no points at all rather than a zero, and fails
the workflow run with "Some tests errored.". The hidden group never runs here: it is not in
a student's repository.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from grader import results
from grader.scoring import GROUP_TITLES

REPO_ROOT = Path(__file__).resolve().parent.parent
OUTPUT_NAME = "result"  # the step output the reporter's environment variable takes
HIDDEN_GROUP = "reference"
# The reporter reads the result from an environment variable, and Linux refuses a single
# variable over 128 KiB (MAX_ARG_STRLEN): the JSON must stay under 3/4 of that in base64.
JSON_LIMIT = 96_000


def reporter_result(document: dict) -> dict:
    """The reporter's result for one submission's grading (``--results-json``'s document)."""
    (result,) = document["submissions"].values()
    tests = []
    for test in result["tests"]:
        if test["group"] == HIDDEN_GROUP:
            continue  # never here in a student's repository; never reported as visible points
        passed = test["outcome"] == "passed"
        # test_x[exercises-b1-s4] -> test_x[b1-s4]: the submission's name says nothing here
        name = test["name"].replace(f"[{result['submission']}-", "[").replace(f"[{result['submission']}]", "")
        tests.append({
            "name": f"{GROUP_TITLES[test['group']]}: {name}",
            "status": "pass" if passed else "fail",
            "score": test["points"],
            "message": "" if passed else (test["message"] or f"this check did not pass ({test['outcome']})"),
            "test_code": "",  # the reporter prints it under each test when set: pytest's log has the details
            "filename": "",
            "line_no": 0,  # 0: the reporter adds no " - line N" to the name
            "duration": round(test["duration"] * 1000),  # milliseconds, as the command grader reports them
        })
    return {
        "version": 1,
        "status": "pass" if tests and all(test["status"] == "pass" for test in tests) else "fail",
        "max_score": sum(test["max_points"] for test in result["tests"] if test["group"] != HIDDEN_GROUP),
        "tests": tests,
    }


def error_result(message: str) -> dict:
    """The grader could not grade: an error, and no points recorded (``max_score`` 0)."""
    return {
        "version": 1,
        "status": "error",
        "max_score": 0,
        "tests": [{
            "name": "The grader ran", "status": "error", "score": 0, "message": message,
            "test_code": "", "filename": "", "line_no": 0, "duration": 0,
        }],
    }


def encoded(result: dict) -> str:
    """The result as the reporter decodes it: base64 of its JSON, under the environment's limit."""
    texts = [(test, "message") for test in result["tests"]]
    text = results.fit_json(result, JSON_LIMIT, texts, dumps=lambda value: json.dumps(value, separators=(",", ":")))
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def grade(submission: Path | None = None) -> dict:
    """Run ``pytest grader`` (its report on stdout) and return the reporter's result."""
    with tempfile.TemporaryDirectory(prefix="classroom-report-") as folder:
        results_path = Path(folder) / "results.json"
        command = [sys.executable, "-m", "pytest", "grader", "-p", "no:cacheprovider", "--results-json", str(results_path)]
        if submission is not None:
            command += ["--submission", str(submission)]
        sys.stdout.flush()
        finished = subprocess.run(command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL)
        try:
            document = json.loads(results_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return error_result(
                f"pytest grader stopped (exit {finished.returncode}) before writing its results: see its output "
                "above. Did your code end the process (os._exit, a crash)?"
            )
    if len(document.get("submissions", {})) != 1:
        return error_result("pytest grader graded no submission: see its output above.")
    return reporter_result(document)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.classroom_report", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--output", type=Path, default=os.environ.get("GITHUB_OUTPUT") or None,
        help="the step-output file to append result=BASE64 to (default: $GITHUB_OUTPUT)",
    )
    parser.add_argument("--submission", type=Path, default=None, help="what to grade (default: exercises/, as pytest grader)")
    arguments = parser.parse_args(argv)
    result = grade(arguments.submission)
    earned = sum(test["score"] for test in result["tests"])
    print(f"\nGitHub Classroom: {earned}/{result['max_score']} points for the visible checks ({result['status']}).")
    if arguments.output is None:
        print("(no $GITHUB_OUTPUT: the result is not passed on to a reporter)")
    else:
        results.append_step_output(arguments.output, OUTPUT_NAME, encoded(result))
    return 0  # a failed check is a score, not a failed step: the reporter turns it into points


if __name__ == "__main__":
    sys.exit(main())
