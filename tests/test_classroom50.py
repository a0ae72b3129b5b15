"""Classroom 50 (grader/handout/classroom50.py): what the command writes, and its autograder run as the runner runs it.

Each run does what Classroom 50's runner does for one submission (foundation50/classroom50,
cli/gh-teacher/skeleton/dotgithub/scripts/runner.py at 0c499034f24703425496698992fedc41fbc1162f):
the assignment's folder is tarred as publish-pages.yaml tars it (``tar -czf <slug>.tar.gz -C
<classroom>/autograders <slug>``), fetched within the runner's 10 MB and extracted with
``filter="data"`` under RUNNER_TEMP/classroom50-runtime (``extract_tarball``); autograder.py
then runs with this virtualenv's python as ``[python, autograder.py]``, the student's checkout
(the template with the student's file) as its working directory, and the environment
``run_entrypoint`` sets: CLASSROOM, ASSIGNMENT, SUBMISSION_TAG, USERNAME, OWNER,
ASSIGNMENT_TYPE, COMMIT_URL, RELEASE_URL, REVIEW_URL, CLASSROOM50_BUNDLE_DIR, GITHUB_*.
``MHA_GRADER_PYTHON`` names this virtualenv, as ``PYTHON`` does for the Gradescope and
PrairieLearn tests, so nothing is installed. result.json is validated against a copy of
Classroom 50's schema (tests/classroom50/result-v1.schema.json: schemas/result-v1.schema.json at
6e593c79b87c99f94fec2ae0badadba761360516) and the cross-field rules its runner checks in code
(runner.py ``validate_result``). What only GitHub can show (a hosted runner, its sudo, the
Pages fetch, the Release) is not rehearsed here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
import yaml

import catalogue
from autograder_harness import HONEST_TWIN, MARKER, MUTANT, RUN_TIMEOUT, SOLUTION, STUB
from grader.handout import classroom50, release
from grader.handout.classroom50_autograder import venv_name
from grader.hidden import mistakes
from grading import REPO_ROOT

SCHEMA = json.loads((Path(__file__).parent / "classroom50" / "result-v1.schema.json").read_text())
SLUG = "multi-head-attention"
CLASSROOM = "dl-2026"
OWNER = "alice"
MAX_FETCH_BYTES = 10 * 1024 * 1024  # runner.py's MAX_FETCH_BYTES
MISSING_SCALE = next(m for m in catalogue.MUTANTS if m.name == "missing_scale")
HIDDEN_TEST_SOURCE = REPO_ROOT / "grader" / "hidden" / "test_reference.py"

# Classroom 50's runtime validator (cli/gh-teacher/internal/assignment/runtime.go at
# 0f5a38fddc1b5dda3277a8b8d88a432d05028da1, mirrored in autograde-runner.yaml's setup step).
RUNTIME_KEYS = {"runs-on", "container", "python", "node", "java", "go", "rust", "apt"}
LANGUAGE_VERSION = re.compile(r"^[A-Za-z0-9._+-]{1,32}$")
APT_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}$")

# Appended to the solution after tests/attacks/forge_results.py: at import and in every forward,
# write a result.json claiming full marks and a release body into the checkout, into every
# visible process's working folder, and into the bundle; read the bundle's solution and hidden
# tests; print a workflow command. Each success prints a "BREACH" line.
CLASSROOM50_FORGER = r'''

# ---- appended by a test: forge Classroom 50's result ----
import os as _os50
from pathlib import Path as _Path50

_CHECKOUT = _Path50("@CHECKOUT@")
_BUNDLE = _Path50("@BUNDLE@")
_FORGED50 = @FORGED@
_HIDDEN50 = ("solutions/multi_head_attention.py", "grader/hidden/test_reference.py", "classroom50.json")


def _forge50():
    own = _Path50.cwd()
    folders = {_CHECKOUT, _BUNDLE}
    try:
        entries = list(_Path50("/proc").iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if entry.name.isdigit():
            try:
                folders.add(_Path50(_os50.readlink(entry / "cwd")))
            except OSError:
                pass
    for folder in folders - {own, _Path50("/"), _Path50("/tmp")}:
        for name, text in (("result.json", _FORGED50), ("release-body.md", "### @MARKER@ 100/100\n")):
            try:
                (folder / name).write_text(text)
            except OSError:
                continue
            print(f"BREACH results: wrote {folder / name}")
    for name in _HIDDEN50:
        try:
            (_BUNDLE / name).read_text()
        except OSError:
            continue
        print(f"BREACH secrets: read {name}")


_forged_forward = AttentionHead.forward


def _forging50_forward(self, inputs, allowed_mask):
    _forge50()
    return _forged_forward(self, inputs, allowed_mask)


AttentionHead.forward = _forging50_forward
print("::error::@MARKER@ a workflow command from student code")
_forge50()
'''


def forged_result() -> str:
    return json.dumps({
        "schema": "classroom50/result/v1", "classroom": CLASSROOM, "assignment": SLUG, "assignment_type": "individual",
        "owner": OWNER, "submission": "submit/forged", "commit": "x", "release": "x", "review": "x",
        "datetime": "2026-01-01T00:00:00Z", "score": 100, "max-score": 100,
        "tests": [{"test-name": MARKER, "passed": True, "score": 100, "max-score": 100}],
    })


def forger(bundle: Path, checkout_placeholder: str = "@CHECKOUT@") -> str:
    attack = (REPO_ROOT / "tests" / "attacks" / "forge_results.py").read_text()
    attack = attack.replace("@REPO_ROOT@", str(bundle)).replace("@MARKER@", MARKER)
    extra = (
        CLASSROOM50_FORGER.replace("@BUNDLE@", str(bundle)).replace("@FORGED@", repr(forged_result()))
        .replace("@MARKER@", MARKER).replace("@CHECKOUT@", checkout_placeholder)
    )
    return SOLUTION.read_text() + "\n\n" + attack + extra


# --- building ----------------------------------------------------------------------------------


def command(out: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", "classroom50", str(out), *arguments],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )


def build(out: Path, *arguments: str) -> Path:
    completed = command(out, *arguments)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return out


def publish_and_fetch(out: Path, runner_temp: Path, slug: str = SLUG) -> tuple[Path, int]:
    """The bundle as the runner gets it: tarred as publish-pages.yaml does, extracted as runner.py does."""
    archive = runner_temp / f"{slug}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(out / "autograders" / slug, arcname=slug)
    runtime = runner_temp / "classroom50-runtime"
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(path=runtime, filter="data")
    return runtime / slug, archive.stat().st_size


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("classroom50") / "out")


@pytest.fixture(scope="module")
def config_with_hidden_checks(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("classroom50-checks") / "out", "--hidden", "checks")


# --- running as the runner runs it ---------------------------------------------------------------


@dataclass
class Run:
    returncode: int
    output: str  # the Actions log: what autograder.py printed
    result: dict | None
    body: str | None
    outputs: str  # what it appended to $GITHUB_OUTPUT
    checkout: Path
    files_before: set[str]
    bundle: Path


def checkout_of(config: Path, exercise: str | None) -> Path:
    """A student's checkout: the template, with ``exercise`` as exercises/multi_head_attention.py
    (and without it, nor the notebook, when None)."""
    checkout = Path(tempfile.mkdtemp(prefix="mha-classroom50-checkout-"))
    checkout.chmod(0o755)
    shutil.copytree(config / "template", checkout, dirs_exist_ok=True)
    target = checkout / "exercises" / "multi_head_attention.py"
    if exercise is None:
        target.unlink()
        (checkout / "exercises" / "multi_head_attention.ipynb").unlink()
    else:
        target.write_text(exercise.replace("@CHECKOUT@", str(checkout)))
    for path in [checkout, *checkout.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return checkout


def files_of(folder: Path) -> set[str]:
    return {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file() or path.is_symlink()}


def run_autograder(config: Path, exercise: str | None, *, prepare=None, drop: tuple[str, ...] = (), **variables: str) -> Run:
    runner_temp = Path(tempfile.mkdtemp(prefix="mha-classroom50-runner-"))
    runner_temp.chmod(0o755)
    # A temporary folder of the run's own, as each job's runner has: the batch removes
    # folders of runs it believes ended, and a run in another pid namespace on this shared
    # machine cannot see that the ones here are alive.
    private_tmp = runner_temp / "tmp"
    private_tmp.mkdir()
    private_tmp.chmod(0o1777)
    bundle, _ = publish_and_fetch(config, runner_temp)
    checkout = checkout_of(config, exercise.replace("@BUNDLE@", str(bundle)) if exercise else exercise)
    if prepare:
        prepare(checkout)
    files_before = files_of(checkout)
    github_output = runner_temp / "github_output"
    github_output.touch()
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "GRADER_SANDBOX", "PYTHONPATH")}
    environment.update({
        "MHA_GRADER_PYTHON": sys.executable,
        # Side by side with the rest of the suite on a loaded machine: no call into the
        # solution may reach its time limit (no run here tests time limits).
        "GRADER_CALL_TIMEOUT": "30",
        "CLASSROOM": CLASSROOM, "ASSIGNMENT": SLUG, "SUBMISSION_TAG": "submit/2026-12-01T10-00-00Z-abc1234",
        "USERNAME": OWNER, "OWNER": OWNER, "ASSIGNMENT_TYPE": "individual",
        "COMMIT_URL": f"https://github.com/org/{CLASSROOM}-{SLUG}-{OWNER}/commit/abc1234",
        "RELEASE_URL": f"https://github.com/org/{CLASSROOM}-{SLUG}-{OWNER}/releases/tag/submit%2F2026",
        "REVIEW_URL": f"https://github.com/org/{CLASSROOM}-{SLUG}-{OWNER}/compare/000...abc1234",
        "PAGES_BASE_URL": "https://org.github.io/classroom50", "CLASSROOM50_BUNDLE_DIR": str(bundle),
        "GITHUB_REPOSITORY": f"org/{CLASSROOM}-{SLUG}-{OWNER}", "GITHUB_SHA": "abc1234", "GITHUB_ACTOR": OWNER,
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_OUTPUT": str(github_output), "RUNNER_TEMP": str(runner_temp),
        "TMPDIR": str(private_tmp),
    })
    environment.update(variables)
    for name in drop:
        environment.pop(name, None)
    completed = subprocess.run(
        [sys.executable, str(bundle / "autograder.py")], cwd=checkout, env=environment, capture_output=True,
        text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL,
    )
    result_path, body_path = checkout / "result.json", checkout / "release-body.md"
    result = json.loads(result_path.read_text()) if result_path.is_file() and not result_path.is_symlink() else None
    body = body_path.read_text() if body_path.is_file() and not body_path.is_symlink() else None
    return Run(
        completed.returncode, completed.stdout + completed.stderr, result, body, github_output.read_text(),
        checkout, files_before, bundle,
    )


def fake_restored_venv(folder: Path) -> Path:
    """A virtualenv as actions/cache restores it: autograder.py's marker file and a python
    (here a script running this one), so no install runs."""
    (folder / "bin").mkdir(parents=True)
    python = folder / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    (folder / ".installed").write_text("installed\n")
    folder.chmod(0o755)
    return folder


def plant_links(checkout: Path) -> None:
    """What a student can commit: result.json as a link to a file outside the checkout, a stale body."""
    (checkout / "outside.txt").write_text("untouched\n")
    (checkout / "result.json").symlink_to(checkout / "outside.txt")
    (checkout / "release-body.md").write_text("### stale 100/100\n")


@pytest.fixture(scope="module")
def runs(config, config_with_hidden_checks, tmp_path_factory) -> dict[str, Run]:
    venv = fake_restored_venv(tmp_path_factory.mktemp("restored") / "venv")
    plans = {
        # The reference, through a restored virtualenv (no MHA_GRADER_PYTHON), over planted files.
        "reference": (config, SOLUTION.read_text(), {"prepare": plant_links, "drop": ("MHA_GRADER_PYTHON",), "MHA_GRADER_VENV": str(venv)}),
        "stub": (config, STUB.read_text(), {}),
        "missing_scale": (config, catalogue.implementation_source(MISSING_SCALE), {}),
        "missing_scale_checks": (config_with_hidden_checks, catalogue.implementation_source(MISSING_SCALE), {}),
        "forger": (config, forger(Path("@BUNDLE@")), {}),
        "forger_process": (config, forger(Path("@BUNDLE@")), {"GRADER_SANDBOX": "process"}),
        "twin": (config, SOLUTION.read_text() + HONEST_TWIN, {}),
        "missing": (config, None, {}),
        "outside_the_runner": (config, SOLUTION.read_text(), {"drop": ("CLASSROOM", "SUBMISSION_TAG")}),
        "grader_failure": (config, SOLUTION.read_text(), {"GRADER_SANDBOX": "no-such-sandbox"}),
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run_autograder, plan[0], plan[1], **plan[2]) for name, plan in plans.items()}
        return {name: future.result() for name, future in futures.items()}


def valid(run: Run) -> dict:
    """result.json, valid for Classroom 50: its schema, and the rules its runner checks in code."""
    assert run.returncode == 0, run.output
    assert run.result is not None, run.output
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(run.result)
    assert (run.result["classroom"], run.result["assignment"], run.result["owner"]) == (CLASSROOM, SLUG, OWNER)
    assert run.result["score"] <= run.result["max-score"]
    assert all(test["score"] <= test["max-score"] for test in run.result["tests"])
    assert run.result["score"] == sum(test["score"] for test in run.result["tests"])
    return run.result


def output_value(run: Run, key: str) -> str:
    values = [line.split("=", 1)[1] for line in run.outputs.splitlines() if line.startswith(f"{key}=")]
    assert len(values) == 1, run.outputs
    return values[0]


def group_points(result: dict, group: str) -> tuple[int, int]:
    tests = [test for test in result["tests"] if test["group"] == group]
    return sum(t["score"] for t in tests), sum(t["max-score"] for t in tests)


# --- what the command writes ----------------------------------------------------------------------


def test_the_bundle_is_what_the_runner_fetches_and_holds_the_grader_beside_its_entrypoint(config, tmp_path):
    bundle, size = publish_and_fetch(config, tmp_path)
    assert size < MAX_FETCH_BYTES
    assert (bundle / "autograder.py").read_text() == (REPO_ROOT / "grader" / "handout" / "classroom50_autograder.py").read_text()
    for needed in ("grader/hidden/test_reference.py", "solutions/multi_head_attention.py", "requirements.txt", "classroom50.json"):
        assert (bundle / needed).is_file(), needed
    assert not (bundle / "tests").exists() and not (bundle / "exercises").exists()


def test_the_template_holds_no_solution_no_hidden_test_and_no_autograde_workflow(config):
    template = config / "template"
    assert release.leaked_solution_lines(template) == []
    assert not (template / "grader" / "hidden").exists() and not (template / "solutions").exists()
    # The accept-time shim lives there; a copy in the template would be clobbered (Assignment Templates).
    assert not (template / ".github" / "workflows" / "autograde.yaml").exists()
    assert "Classroom 50" in (template / "README.md").read_text()


def test_the_runtime_block_passes_classroom50s_validator(config):
    runtime = json.loads((config / "runtime.json").read_text())
    assert set(runtime) <= RUNTIME_KEYS
    assert LANGUAGE_VERSION.match(runtime["python"])
    assert runtime["apt"] and all(APT_PACKAGE.match(package) for package in runtime["apt"])
    assert "bubblewrap" in runtime["apt"]


def test_the_readmes_cache_step_keeps_the_folder_autograder_py_installs_into(config):
    text = (config / "README.md").read_text()
    snippet = text.split("before \"Grade details\":\n\n", 1)[1].split("\n\n", 1)[0]
    (step,) = yaml.safe_load(snippet)
    assert step["uses"].startswith("actions/cache@")
    name = venv_name((REPO_ROOT / "requirements.txt").read_bytes(), (3, 12))
    assert step["with"]["path"] == f"${{{{ runner.tool_cache }}}}/mha-grader/{name}"
    assert name in step["with"]["key"] and SLUG in step["if"]
    assert f"gh teacher assignment add ORG CLASSROOM {SLUG}" in text and "--runtime runtime.json" in text


def test_a_slug_classroom50_would_refuse_is_refused(tmp_path):
    completed = command(tmp_path / "out", "--slug", "Multi_Head")
    assert completed.returncode == 2 and "slugs match" in completed.stderr
    assert not (tmp_path / "out").exists()


# --- grading, as the runner runs it ------------------------------------------------------------


def test_the_reference_gets_full_marks_and_replaces_what_the_checkout_held(runs):
    run = runs["reference"]
    result = valid(run)
    assert result["score"] == result["max-score"] == 100
    assert output_value(run, "status") == "success"
    assert output_value(run, "summary") == "multi-head attention: 100/100"
    assert run.body.startswith("### Multi-head attention: 100/100\n") and "Every check passed." in run.body
    # The planted link was replaced, not followed; the stale body too.
    assert not (run.checkout / "result.json").is_symlink()
    assert (run.checkout / "outside.txt").read_text() == "untouched\n"
    assert "stale" not in run.body
    # Closed to every other user before student code ran: where neither bubblewrap nor Landlock
    # can run, this is what keeps the hidden tests from a child dropped to nobody.
    assert stat.S_IMODE(run.bundle.stat().st_mode) == 0o700


def test_a_restored_virtualenv_is_reused_rather_than_installed_again(runs):
    assert "autograder: reusing the virtualenv" in runs["reference"].output
    assert "installing" not in runs["reference"].output


def test_the_stubs_score_zero_with_every_check_failed(runs):
    result = valid(runs["stub"])
    assert result["score"] == 0 and result["max-score"] == 100
    assert not any(test["passed"] for test in result["tests"])
    assert output_value(runs["stub"], "status") == "failure"
    assert runs["stub"].body.startswith("### Multi-head attention: 0/100\n")


def test_a_missing_scale_loses_points_in_its_groups_and_is_diagnosed_in_the_release(runs):
    run = runs["missing_scale"]
    result = valid(run)
    assert 0 < result["score"] < 100
    for group in MISSING_SCALE.losing_groups:
        earned, maximum = group_points(result, group)
        assert earned < maximum, group
    title = next(mistake.title for mistake in mistakes.MISTAKES if mistake.id == MISSING_SCALE.mistake)
    assert "## What went wrong" in run.body and title in run.body
    failed = [test for test in result["tests"] if not test["passed"] and test["group"] != "reference"]
    assert failed and all(test["message"] in run.body for test in failed)
    assert all("expected" in test["message"].lower() or "diagnosis" in test["message"].lower() for test in failed)


def test_the_hidden_group_is_one_entry_unless_the_instructor_shows_its_checks(runs):
    total, checks = runs["missing_scale"].result, valid(runs["missing_scale_checks"])
    (hidden,) = [test for test in total["tests"] if test["group"] == "reference"]
    shown = [test for test in checks["tests"] if test["group"] == "reference"]
    assert len(shown) > 1 and hidden["max-score"] == sum(test["max-score"] for test in shown)
    assert hidden["passed"] == (hidden["score"] == hidden["max-score"]) and "message" in hidden
    # With one entry, no hidden check is named anywhere the student reads.
    names = [test["test-name"].split(": ", 1)[1] for test in shown]
    for text in (json.dumps(total), runs["missing_scale"].body, runs["missing_scale"].output):
        assert not [name for name in names if name in text]


def forged_files(run: Run) -> list[str]:
    """Files of the bundle and the checkout that hold the forger's marker (but the forger's own source)."""
    own = run.checkout / "exercises" / "multi_head_attention.py"
    return [
        str(path) for folder in (run.bundle, run.checkout) for path in folder.rglob("*")
        if path.is_file() and path != own and MARKER in path.read_text(errors="replace")
    ]


def test_the_results_forger_scores_what_its_honest_twin_scores(runs):
    twin = valid(runs["twin"])
    for name in ("forger", "forger_process"):
        run = runs[name]
        result = valid(run)
        assert result["score"] == twin["score"] < 100, name
        assert "What the submission printed" in run.output, name
        assert MARKER not in json.dumps(result) and MARKER not in run.body, name
        # Judged by what happened to the real files: inside bubblewrap /tmp (where these tests
        # keep the bundle) is the sandbox's own, so the forger's writes there land in its tmpfs.
        assert forged_files(run) == [], name
        breaches = [line.strip() for line in run.output.splitlines() if "BREACH" in line]
        assert not [line for line in breaches if line.startswith(("BREACH secrets", "BREACH results: could rewrite"))], name
        assert not [line for line in breaches if "score line" in line], name
        if name == "forger_process":  # no private /tmp: not one write may succeed
            assert breaches == [], breaches


def test_student_output_cannot_start_a_workflow_command_in_the_log(runs):
    printed = [line for line in runs["forger"].output.splitlines() if MARKER in line]
    assert printed, runs["forger"].output
    assert all(line.startswith("  ") for line in printed), printed


def test_a_checkout_without_the_exercise_is_an_error_result_not_a_zero(runs):
    run = runs["missing"]
    result = valid(run)  # exit status 0: the autograder ran; the runner reads the result
    assert (result["score"], result["max-score"], result["tests"]) == (0, 0, [])
    assert output_value(run, "status") == "error"
    assert "exercises/multi_head_attention.py" in output_value(run, "summary")
    assert run.body.startswith("### Multi-head attention: not graded\n")


def test_no_hidden_test_or_solution_text_is_left_in_the_checkout(runs):
    hidden_lines = {line.strip() for line in HIDDEN_TEST_SOURCE.read_text().splitlines() if len(line.strip()) > 30}
    for name in ("stub", "missing_scale", "missing", "forger"):
        run = runs[name]
        assert files_of(run.checkout) == run.files_before | {"result.json", "release-body.md"}, name
        for written in ("result.json", "release-body.md"):
            text = (run.checkout / written).read_text()
            assert not [line for line in hidden_lines if line in text], (name, written)
    assert release.leaked_solution_lines(runs["stub"].checkout) == []


def test_outside_the_runner_it_fails_as_an_infrastructure_failure(runs):
    run = runs["outside_the_runner"]
    assert run.returncode == 1 and "::error::autograder: CLASSROOM, SUBMISSION_TAG not set" in run.output
    assert run.result is None


def test_a_grader_failure_exits_non_zero_and_leaves_no_result_for_the_runner_to_publish(runs):
    run = runs["grader_failure"]
    assert run.returncode == 1, run.output
    assert "GRADER FAILURE" in run.output and "::error::autograder: the grading failed" in run.output
    assert run.result is None and run.body is None and "status=" not in run.outputs


def test_the_release_body_stays_bounded_however_many_checks_fail_with_long_messages():
    tests = [
        {"name": f"test_{index}", "group": "shapes", "outcome": "failed", "points": 0, "max_points": 1, "message": "m" * 5000}
        for index in range(100)
    ]
    document = {"tests": tests, "groups": {"shapes": {"earned": 0, "max": 100}}, "diagnoses": []}
    metadata = {"CLASSROOM": CLASSROOM, "ASSIGNMENT": SLUG, "SUBMISSION_TAG": "submit/x", "OWNER": OWNER}
    result = classroom50.classroom50_result(document, metadata)
    body = classroom50.release_body(document, result, "graded exercises/multi_head_attention.py", "total")
    assert len(body) <= classroom50.MAX_BODY_CHARS
    assert all(len(test["message"]) <= classroom50.MAX_MESSAGE_CHARS + 20 for test in result["tests"])
    shown = body.count("<details>")
    assert 0 < shown < 100 and f"{100 - shown} more failed checks: their messages are in result.json" in body


@pytest.mark.skipif(os.geteuid() != 0, reason="what root writes through sudo: needs root")
def test_what_the_grading_writes_as_root_belongs_to_the_user_that_reads_it(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    os.chown(folder, 65534, 65534)  # autograder.py's private folder, as the runner's user owns it
    classroom50._write(folder / "result.json", "{}\n")
    assert (folder / "result.json").stat().st_uid == 65534
