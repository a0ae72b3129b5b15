"""The GitHub Classroom template (grader/handout/classroom.py) and the report its workflow runs (grader/classroom_report.py).

GitHub Actions does not run here: the workflow file is parsed, and the command its report
step runs is run as the runner would run it (bash, from the repository's root, python on
PATH, GITHUB_OUTPUT set), in copies of the template holding the solution, the stubs and a
known mistake. Its result is decoded as the reporter decodes it (src/main.js of
classroom-resources/autograding-grading-reporter: base64, then JSON, from the environment
variable named after the runner) and compared with what the pytest grader gives the same
files on the visible checks.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import pytest
import yaml

import catalogue
from autograder_harness import MUTANT, SOLUTION, STUB
from grader import classroom_report
from grader.batch import intake
from grader.handout import release
from grader.handout.autograder import CPU_TORCH_INDEX, pinned
from grading import REPO_ROOT, grade

HIDDEN_GROUP = "reference"
WORKFLOW = Path(".github") / "workflows" / "classroom.yml"

# --- the reporter's input, as classroom-resources/autograding-command-grader writes it ----------------
# src/main.js, generateResult: version, status, max_score, tests[name, status, score, message,
# test_code, filename, line_no, duration]; the reporter adds up the tests' score
# (src/notify-classroom.js) and prints a test's message when its status is "error".

REPORTER_TEST = {
    "type": "object",
    "required": ["name", "status", "score", "message", "test_code", "filename", "line_no", "duration"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "status": {"enum": ["pass", "fail", "error"]},
        "score": {"type": "number", "minimum": 0},
        "message": {"type": ["string", "null"]},
        "test_code": {"type": "string"},
        "filename": {"type": "string"},
        "line_no": {"type": "integer"},
        "duration": {"type": "number", "minimum": 0},
    },
    "additionalProperties": False,
}
REPORTER_RESULT = {
    "type": "object",
    "required": ["version", "status", "max_score", "tests"],
    "properties": {
        "version": {"const": 1},
        "status": {"enum": ["pass", "fail", "error"]},
        "max_score": {"type": "number", "minimum": 0},
        "tests": {"type": "array", "minItems": 1, "items": REPORTER_TEST},
    },
    "additionalProperties": False,
}
ENVIRONMENT_LIMIT = 128 * 1024  # Linux's MAX_ARG_STRLEN: the longest single environment variable


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("classroom") / "template"
    completed = subprocess.run(
        [sys.executable, "-m", "grader", "classroom", str(out)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return out


@pytest.fixture(scope="module")
def workflow(template) -> dict:
    return yaml.safe_load((template / WORKFLOW).read_text())


def steps(workflow: dict) -> list[dict]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def reporter_step(workflow: dict) -> dict:
    (step,) = [s for s in steps(workflow) if s.get("uses", "").startswith("classroom-resources/autograding-grading-reporter@")]
    return step


def report_steps(workflow: dict) -> dict[str, dict]:
    """The steps whose result the reporter reads, by runner id (its `runners` input)."""
    runners = [name.strip() for name in reporter_step(workflow)["with"]["runners"].split(",") if name.strip()]
    by_id = {step.get("id"): step for step in steps(workflow)}
    return {runner: by_id[runner] for runner in runners}


def run_report_command(template: Path, workdir: Path, submission: str, command: str) -> tuple[dict, str]:
    """The report step's command, run as the runner runs it, in a copy of the template holding ``submission``."""
    repository = workdir / "repository"
    shutil.copytree(template, repository)
    (repository / "exercises" / "multi_head_attention.py").write_text(submission)
    output_file = workdir / "github_output"
    output_file.touch()
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    environment.update(PATH=f"{Path(sys.executable).parent}:{environment['PATH']}", GITHUB_OUTPUT=str(output_file))
    completed = subprocess.run(
        ["bash", "-e", "-c", command], cwd=repository, env=environment, capture_output=True, text=True,
        timeout=300, stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    outputs = dict(line.split("=", 1) for line in output_file.read_text().splitlines())
    return outputs, completed.stdout


def decode_like_the_reporter(workflow: dict, outputs: dict[str, str]) -> dict:
    """What the reporter reads: $<RUNNER>_RESULTS, which the workflow sets from the step's output."""
    ((runner, _),) = report_steps(workflow).items()
    expression = reporter_step(workflow)["env"][f"{runner.upper()}_RESULTS"]
    output_name = expression.removeprefix("${{").removesuffix("}}").strip().removeprefix(f"steps.{runner}.outputs.")
    value = outputs[output_name]
    assert len(value) < ENVIRONMENT_LIMIT
    return json.loads(base64.b64decode(value))


SUBMISSIONS = {
    "solution": SOLUTION.read_text(),
    "stubs": STUB.read_text(),
    "mutant": catalogue.implementation_source(MUTANT),
    # Ends pytest's process at import: the grader writes no results.
    "exits": "import os\nos._exit(0)\n",
}


@pytest.fixture(scope="module")
def reports(template, workflow, tmp_path_factory) -> dict[str, tuple[dict, str]]:
    """The report step's result for each submission, decoded as the reporter decodes it."""
    ((_, step),) = report_steps(workflow).items()

    def report(name: str) -> tuple[dict, str]:
        outputs, log = run_report_command(template, tmp_path_factory.mktemp(name), SUBMISSIONS[name], step["run"])
        return decode_like_the_reporter(workflow, outputs), log

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(zip(SUBMISSIONS, pool.map(report, SUBMISSIONS)))


@pytest.fixture(scope="module")
def pytest_grader(tmp_path_factory) -> dict[str, dict]:
    """The pytest grader's own results for the same files, hidden checks included (this repository)."""
    folder = tmp_path_factory.mktemp("files")
    paths = []
    for name in ("solution", "stubs", "mutant"):
        paths.append(folder / f"{name}.py")
        paths[-1].write_text(SUBMISSIONS[name])
    return grade(paths, tmp_path_factory.mktemp("grading")).results


def visible_points(result: dict) -> tuple[int, int]:
    tests = [test for test in result["tests"] if test["group"] != HIDDEN_GROUP]
    return sum(test["points"] for test in tests), sum(test["max_points"] for test in tests)


# --- the workflow -------------------------------------------------------------------------------


def test_the_workflow_parses_and_has_the_name_and_single_job_github_classroom_reads(workflow):
    assert workflow["name"] == "Autograding Tests"
    assert list(workflow["jobs"]) == ["run-autograding-tests"]
    assert "push" in workflow["on"]  # quoted in the file: a bare `on` is YAML 1.1's True
    job = workflow["jobs"]["run-autograding-tests"]
    assert job["runs-on"] == "ubuntu-latest" and "github-classroom[bot]" in job["if"]
    assert workflow["permissions"]["checks"] == "write"


def test_the_workflow_names_the_reporter_and_hands_it_the_report_steps_result(workflow):
    step = reporter_step(workflow)
    assert step["uses"] == "classroom-resources/autograding-grading-reporter@v1"
    ((runner, report),) = report_steps(workflow).items()
    assert step["env"] == {f"{runner.upper()}_RESULTS": f"${{{{ steps.{runner}.outputs.result }}}}"}
    assert report["run"] == "python -m grader.classroom_report"
    assert steps(workflow).index(report) < steps(workflow).index(step)


def test_the_workflow_installs_python_3_11_or_newer_and_the_pinned_requirements_with_cpu_torch(workflow):
    (setup,) = [s for s in steps(workflow) if s.get("uses", "").startswith("actions/setup-python@")]
    assert tuple(int(part) for part in setup["with"]["python-version"].split(".")) >= (3, 11)
    install = next(s["run"] for s in steps(workflow) if "pip install" in s.get("run", ""))
    assert f"--index-url {CPU_TORCH_INDEX} {pinned('torch')}" in install
    assert "-r requirements.txt" in install


def test_the_template_is_the_student_release_with_the_workflow_and_no_solution(template):
    assert (template / "exercises" / "multi_head_attention.py").read_text() == STUB.read_text()
    assert (template / "grader" / "classroom_report.py").is_file() and (template / "grader" / "conftest.py").is_file()
    assert not (template / "solutions").exists() and not (template / "grader" / "hidden").exists()
    assert not (template / "grader" / "handout").exists()
    assert release.leaked_solution_lines(template) == []
    assert "## Autograding on GitHub" in (template / "README.md").read_text()


# --- the report's points ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["solution", "stubs", "mutant", "exits"])
def test_the_report_is_in_the_reporters_format(reports, name):
    result, _ = reports[name]
    jsonschema.validate(result, REPORTER_RESULT)


@pytest.mark.parametrize("name", ["solution", "stubs", "mutant"])
def test_the_reported_points_are_the_pytest_graders_visible_score(reports, pytest_grader, name):
    result, log = reports[name]
    earned, maximum = visible_points(pytest_grader[name])
    assert sum(test["score"] for test in result["tests"]) == earned
    assert result["max_score"] == maximum
    assert len(result["tests"]) == len([t for t in pytest_grader[name]["tests"] if t["group"] != HIDDEN_GROUP])
    assert f"GitHub Classroom: {earned}/{maximum} points for the visible checks" in log
    assert f"Score: {earned}/{maximum}" in log  # pytest's own report, in the Actions log


def test_each_check_earns_its_own_points_so_a_buggy_implementation_gets_partial_credit(reports):
    result, _ = reports["mutant"]
    assert result["status"] == "fail" and 0 < sum(t["score"] for t in result["tests"]) < result["max_score"]
    assert all(t["score"] > 0 for t in result["tests"] if t["status"] == "pass")
    assert {t["score"] for t in result["tests"] if t["status"] == "fail"} == {0}
    failed = [t for t in result["tests"] if t["status"] == "fail"]
    assert failed and all("expected" in t["message"].lower() for t in failed)


def test_the_solution_passes_and_the_stubs_fail_every_check(reports):
    solution, stubs = reports["solution"][0], reports["stubs"][0]
    assert solution["status"] == "pass" and {t["status"] for t in solution["tests"]} == {"pass"}
    assert stubs["status"] == "fail" and {t["status"] for t in stubs["tests"]} == {"fail"}
    assert not [t for t in solution["tests"] if "[exercises" in t["name"]]  # the submission's name says nothing


def test_a_grader_that_wrote_no_results_reports_an_error_and_no_points_rather_than_a_zero(reports):
    result, log = reports["exits"]
    assert result["status"] == "error" and result["max_score"] == 0
    assert "before writing its results" in result["tests"][0]["message"]
    assert "GitHub Classroom: 0/0 points" in log


def test_the_report_stays_under_the_environments_limit_whatever_the_messages():
    document = {"submissions": {"exercises": {"submission": "exercises", "tests": [
        {"name": f"test_{i}[exercises-b1]", "group": "shapes", "outcome": "failed", "message": "x" * 100_000,
         "points": 0, "max_points": 1, "duration": 0.01}
        for i in range(80)
    ]}}}
    value = classroom_report.encoded(classroom_report.reporter_result(document))
    assert len(value) < ENVIRONMENT_LIMIT
    result = json.loads(base64.b64decode(value))
    jsonschema.validate(result, REPORTER_RESULT)
    assert result["max_score"] == 80 and result["tests"][0]["name"] == "1. shapes: test_0[b1]"


# --- the hidden group: the batch over the cloned repositories -----------------------------------------


def test_the_batch_takes_a_cloned_repository_as_that_students_submission(template, tmp_path):
    clones = tmp_path / "clones"
    clone = clones / "assignment-alice"
    shutil.copytree(template, clone)
    (clone / "exercises" / "multi_head_attention.py").write_text(SOLUTION.read_text())
    (clone / ".git").mkdir()  # a clone's own folder: never searched
    (clone / ".git" / "multi_head_attention.py").write_text("stale = True\n")
    entry = intake.stage_entry(clone, tmp_path / "staging")
    assert entry.problem == "" and entry.student_id == "assignment-alice"
    assert entry.source_path.read_text() == SOLUTION.read_text()
