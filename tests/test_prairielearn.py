"""The PrairieLearn question (grader/platforms/prairielearn.py): what it writes, and its entrypoint on a /grade-like root.

Each run lays a root out the way PrairieLearn's grader host does (apps/grader-host and
docs/externalGrading.md in PrairieLearn's repository): ROOT/tests holds the question's
tests folder as the command wrote it, ROOT/student the submitted files, ROOT/data/data.json
the question's data, ROOT/results an empty folder (world-writable here, the most permissive
harness). The entrypoint then runs from ROOT with PRAIRIELEARN_ROOT=ROOT and this
virtualenv's python first on PATH, without Docker. The image itself is not built here (no
Docker, no network).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import pytest

import catalogue
import autograder_harness as harness
from autograder_harness import (
    HONEST_TWIN,
    MARKER,
    MUTANT,
    SECOND,
    SECOND_SOLUTION,
    SECOND_STUB,
    SOLUTION,
    STUB,
    TOO_DEEP,
    Run,
    assert_the_forger_failed,
    bash_only_path,
    forger_source,
    notebook_of,
    open_results_folder,
    run_script,
    write_submission,
)
from grader.platforms import prairielearn
from grader.platforms.autograder import instructor_note, pinned, protect
from grader.sandbox import processes
from grader.scoring import GROUP_TITLES
from grading import REPO_ROOT
import tiers

HIDDEN_TITLE = GROUP_TITLES["reference"]
BAD_CALL_TIMEOUTS = ("0", "-1", "inf", "nan", "abc")

# --- results.json, as PrairieLearn's external-grading documentation describes it ------------------
# docs/externalGrading.md, "Grading results": score in [0, 1], mandatory when gradable;
# gradable (default true); format_errors a string or a list of strings; message, output;
# images; tests with name, description, points, max_points, message, output, images.

IMAGES = {
    "type": "array",
    "items": {
        "anyOf": [
            {"type": "string"},
            {"type": "object", "required": ["url"], "properties": {"url": {"type": "string"}, "label": {"type": "string"}}},
        ]
    },
}
TEST_SCHEMA = {
    "type": "object",
    # Optional in PrairieLearn's format; this autograder always writes them.
    "required": ["name", "description", "points", "max_points", "message", "output"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "points": {"type": "number", "minimum": 0},
        "max_points": {"type": "number", "minimum": 0},
        "message": {"type": "string"},
        "output": {"type": "string"},
        "images": IMAGES,
    },
    "additionalProperties": False,
}
RESULTS_SCHEMA = {
    "type": "object",
    "properties": {
        "gradable": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "format_errors": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "message": {"type": "string"},
        "output": {"type": "string"},
        "images": IMAGES,
        "tests": {"type": "array", "items": TEST_SCHEMA},
    },
    "additionalProperties": False,
    "required": ["gradable", "message", "output", "tests"],  # always written here
    "if": {"properties": {"gradable": {"const": True}}},
    "then": {"required": ["score"]},
}
RESULTS_LIMIT = 1024 * 1024  # the grader host refuses a larger results.json

# --- the submissions ---------------------------------------------------------------------------

FORGER = forger_source(
    '[_Path("@ROOT@"), _Path("/grade"), _Path(_os.environ.get("PRAIRIELEARN_ROOT", "/grade"))]',
    {"gradable": True, "score": 1.0, "message": "@MARKER@ forged", "output": "", "tests": [
        {"name": "forged", "description": "", "points": 100, "max_points": 100, "message": "@MARKER@", "output": ""}
    ]},
    ("tests/solutions/multi_head_attention.py", "tests/grader/exercises/multi_head_attention/hidden/test_reference.py"),
)


def build(out: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", "prairielearn", str(out), *arguments],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """What the command writes, as an instructor would run it."""
    out = tmp_path_factory.mktemp("prairielearn") / "course"
    completed = build(out)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return out


@pytest.fixture(scope="module")
@tiers.slow_tier("platform")  # a second hand-out built: the second exercise's tests stay out of the fast tier
def second_course(tmp_path_factory) -> Path:
    """The command's question for the course's second exercise."""
    out = tmp_path_factory.mktemp("prairielearn-second") / "course"
    completed = build(out, "--exercise", SECOND.name)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return out


def question(course: Path, exercise: str = "multi_head_attention") -> Path:
    return course / "questions" / exercise  # the question is named after its exercise


def make_root(course: Path, files: dict[str, str], exercise: str = "multi_head_attention") -> Path:
    """A grading job's folder as PrairieLearn's grader host lays it out."""
    root = Path(tempfile.mkdtemp(prefix="mha-prairielearn-test-"))
    root.chmod(0o755)
    shutil.copytree(question(course, exercise) / "tests", root / "tests")
    for folder in [root / "tests", *(p for p in (root / "tests").rglob("*") if p.is_dir())]:
        folder.chmod(0o755)
    write_submission(root / "student", files, root)
    (root / "data").mkdir()
    (root / "data" / "data.json").write_text(json.dumps({"params": {}, "submitted_answers": {}}))
    open_results_folder(root)
    return root


def entrypoint_of(course: Path, exercise: str = "multi_head_attention") -> str:
    return json.loads((question(course, exercise) / "info.json").read_text())["externalGradingOptions"]["entrypoint"]


def run_entrypoint(
    course: Path, root: Path, path_without_bwrap: Path | None = None, exercise: str = "multi_head_attention", **variables: str
) -> Run:
    # The entrypoint as info.json names it, under this root instead of /grade.
    script = root / Path(entrypoint_of(course, exercise)).relative_to(prairielearn.DEFAULT_ROOT)
    return run_script(script, root, "PRAIRIELEARN_ROOT", path_without_bwrap, **variables)


@pytest.fixture(scope="module")
@tiers.slow_tier("platform")  # the entrypoint run as PrairieLearn runs it, once per case
def runs(course, second_course, tmp_path_factory) -> dict[str, Run]:
    """Every entrypoint run of this module, side by side."""
    no_bwrap = bash_only_path(tmp_path_factory.mktemp("path") / "bin")
    # $PYTHON, when set, is the python the entrypoint runs: this one leaves a trace.
    traced = tmp_path_factory.mktemp("python") / "python"
    traced.write_text(f'#!/usr/bin/env bash\ntouch "$(dirname "$0")/ran"\nexec {sys.executable} "$@"\n')
    traced.chmod(0o755)
    plans = {
        "solution": ({"multi_head_attention.py": SOLUTION.read_text()}, {}),
        "stubs": ({"multi_head_attention.py": STUB.read_text()}, {}),
        "mutant_notebook": ({"homework/attention.ipynb": notebook_of(catalogue.implementation_source(MUTANT))}, {}),
        "misnamed": ({"notes.txt": "my answer is in my head\n"}, {"PYTHON": str(traced)}),
        "forger": ({"multi_head_attention.py": FORGER}, {}),
        "forger_process": ({"multi_head_attention.py": FORGER}, {"GRADER_SANDBOX": "process"}),
        "twin_without_bwrap": ({"multi_head_attention.py": SOLUTION.read_text() + HONEST_TWIN}, {"no_bwrap": True}),
        "bad_configuration": ({"multi_head_attention.py": SOLUTION.read_text()}, {"GRADER_SANDBOX": "sideways"}),
        "too_deep": ({"multi_head_attention.py": SOLUTION.read_text() + TOO_DEEP}, {}),
        **{
            f"call_timeout_{value}": ({"multi_head_attention.py": SOLUTION.read_text()}, {"GRADER_CALL_TIMEOUT": value})
            for value in BAD_CALL_TIMEOUTS
        },
        # The second exercise's reference and stub, in its own question, graded beside the first's.
        "second_solution": ({SECOND.student_file: SECOND_SOLUTION.read_text()}, {"exercise": SECOND.name}),
        "second_stubs": ({SECOND.student_file: SECOND_STUB.read_text()}, {"exercise": SECOND.name}),
    }
    graded_course = {name: (second_course if "exercise" in variables else course) for name, (_, variables) in plans.items()}
    roots = {
        name: make_root(graded_course[name], files, plans[name][1].get("exercise", "multi_head_attention"))
        for name, (files, _) in plans.items()
    }

    def start(name: str) -> Run:
        variables = dict(plans[name][1])
        path = no_bwrap if variables.pop("no_bwrap", False) else None
        return run_entrypoint(graded_course[name], roots[name], path, **variables)

    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            done = dict(zip(plans, pool.map(start, plans)))
        for name, run in done.items():
            print(f"{name}: the entrypoint took {run.seconds:.1f} s")
        done["misnamed"].python_traced = (traced.parent / "ran").exists()
        yield done
    finally:
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)


def visible(run: Run) -> list[dict]:
    return [t for t in run.results["tests"] if t["name"] != HIDDEN_TITLE]


def hidden_entry(run: Run) -> dict:
    (entry,) = [t for t in run.results["tests"] if t["name"] == HIDDEN_TITLE]
    return entry


def group_points(run: Run, group: str) -> tuple[int, int]:
    tests = [t for t in run.results["tests"] if t["name"].startswith(GROUP_TITLES[group])]
    return sum(t["points"] for t in tests), sum(t["max_points"] for t in tests)


def points(run: Run) -> tuple[int, int]:
    return sum(t["points"] for t in run.results["tests"]), sum(t["max_points"] for t in run.results["tests"])


# --- what the command writes ----------------------------------------------------------------------


def test_info_json_asks_for_external_grading_with_the_image_the_entrypoint_and_a_timeout_within_limits(course):
    info = json.loads((question(course) / "info.json").read_text())
    assert info["gradingMethod"] == "External" and info["type"] == "v3"
    options = info["externalGradingOptions"]
    assert options["enabled"] is True and options["image"] == prairielearn.DEFAULT_IMAGE
    assert 0 < options["timeout"] <= 600
    assert "serverFilesCourse" not in options  # one question: the grader rides in its tests/
    entrypoint = Path(options["entrypoint"])
    assert entrypoint.parts[:3] == ("/", "grade", "tests")
    script = question(course) / entrypoint.relative_to("/grade")
    assert script.is_file() and script.stat().st_mode & stat.S_IXUSR
    assert script.read_text().startswith("#!/usr/bin/env bash\n")


def test_the_tests_folder_holds_the_grader_its_hidden_tests_and_the_solution_but_not_the_repository_tests(course):
    tests = question(course) / "tests"
    for relative in ("grader/platforms/prairielearn.py", "grader/batch/run.py", "grader/exercises/multi_head_attention/hidden/test_reference.py",
                     "solutions/multi_head_attention.py", "initial_code.py"):
        assert (tests / relative).is_file(), relative
    assert not (tests / "tests").exists() and not (tests / "exercises").exists()
    assert not list(tests.rglob("__pycache__"))
    assert (tests / "solutions" / "multi_head_attention.py").read_text() == SOLUTION.read_text()


def test_question_html_shows_the_lesson_and_an_editor_that_starts_from_the_stub(course):
    html = (question(course) / "question.html").read_text()
    assert "<markdown>" in html and "`True` = may attend" in html
    assert '<pl-file-editor file-name="multi_head_attention.py"' in html
    assert 'source-file-name="tests/initial_code.py"' in html
    assert (question(course) / "tests" / "initial_code.py").read_text() == STUB.read_text()
    assert "<pl-external-grader-results>" in html.split("<pl-submission-panel>")[1]
    assert "{{" not in html  # question.html is a Mustache template


def test_the_second_exercises_question_is_its_own_named_and_titled_after_it(course, second_course):
    first, second = (json.loads((question(c, e) / "info.json").read_text()) for c, e in (
        (course, "multi_head_attention"), (second_course, SECOND.name)))
    assert second["title"] == SECOND.title and second["uuid"] != first["uuid"]
    tests = question(second_course, SECOND.name) / "tests"
    assert (tests / "initial_code.py").read_text() == SECOND_STUB.read_text()
    assert (tests / "solutions" / SECOND.solution).read_text() == SECOND_SOLUTION.read_text()
    assert f'<pl-file-editor file-name="{SECOND.student_file}"' in (question(second_course, SECOND.name) / "question.html").read_text()


def test_the_upload_variant_takes_a_python_file_or_a_notebook(tmp_path):
    completed = build(tmp_path / "course", "--upload", "--image", "someone/mha-grader", "--timeout", "120")
    assert completed.returncode == 0, completed.stderr
    html = (tmp_path / "course" / "questions" / "multi_head_attention" / "question.html").read_text()
    assert '<pl-file-upload optional-file-patterns="*.py,*.ipynb">' in html and "pl-file-editor" not in html
    options = json.loads((tmp_path / "course" / "questions" / "multi_head_attention" / "info.json").read_text())
    assert options["externalGradingOptions"]["image"] == "someone/mha-grader"
    assert options["externalGradingOptions"]["timeout"] == 120


def test_the_command_refuses_a_timeout_prairielearn_does_not_allow(tmp_path):
    completed = build(tmp_path / "course", "--timeout", "601")
    assert completed.returncode == 2 and "600" in completed.stderr
    assert not (tmp_path / "course").exists()


def test_the_dockerfile_builds_python_3_11_or_newer_with_cpu_torch_and_bubblewrap(course):
    dockerfile = (course / "Dockerfile").read_text()
    base = dockerfile.split("\nFROM ", 1)[1].split("\n", 1)[0]
    version = tuple(int(part) for part in base.split(":")[1].split("-")[0].split("."))
    assert base.startswith("python:") and version >= (3, 11), base
    assert "apt-get install -y --no-install-recommends bubblewrap" in dockerfile
    # torch's CPU build through the same probe as make and Gradescope's setup.sh: the index when it
    # answers, else pip's own sources (a build behind a mirror; make rehearse builds it so).
    assert "ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu" in dockerfile
    assert '$(/opt/mha-grader-venv/bin/python /opt/mha-grader/torch_index.py "$TORCH_INDEX")' in dockerfile
    assert "-r /opt/mha-grader/requirements.txt" in dockerfile and pinned("torch") in (course / "requirements.txt").read_text()
    assert "COPY requirements.txt torch_index.py /opt/mha-grader/" in dockerfile
    assert (course / "requirements.txt").read_text() == (REPO_ROOT / "requirements.txt").read_text()
    assert (course / "torch_index.py").read_bytes() == (REPO_ROOT / "grader" / "torch_index.py").read_bytes()


# --- the entrypoint's results.json ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["solution", "stubs", "mutant_notebook", "misnamed", "forger", "forger_process", "twin_without_bwrap", "bad_configuration",
     "too_deep"],
)
def test_every_run_writes_a_results_json_that_follows_prairielearns_format(runs, name):
    run = runs[name]
    assert run.results is not None, f"no results.json (exit {run.returncode}):\n{run.output[-3000:]}"
    assert run.returncode == 0, run.output[-3000:]  # PrairieLearn reads results.json only after exit 0
    jsonschema.validate(run.results, RESULTS_SCHEMA)
    assert (run.root / "results" / "results.json").stat().st_size < RESULTS_LIMIT
    assert all(test["points"] <= test["max_points"] for test in run.results["tests"])
    if run.results["gradable"]:
        earned, maximum = points(run)
        assert maximum == 100 and run.results["score"] == pytest.approx(earned / maximum)
    assert sorted(p.name for p in (run.root / "results").iterdir()) == ["results.json"]


def test_the_solution_scores_one_and_every_check_passes(runs):
    run = runs["solution"]
    assert run.results["gradable"] is True and run.results["score"] == 1.0
    assert all(t["points"] == t["max_points"] and t["output"] == "" for t in run.results["tests"])
    assert run.results["message"] == "Graded multi_head_attention.py. Score 100/100."


def test_the_stubs_score_zero_and_every_visible_check_says_why(runs):
    run = runs["stubs"]
    assert run.results["gradable"] is True and run.results["score"] == 0
    assert all(t["points"] == 0 and "not written yet" in t["output"] for t in visible(run))
    assert hidden_entry(run)["points"] == 0


@pytest.mark.parametrize(("name", "full"), [("second_solution", True), ("second_stubs", False)])
def test_the_second_exercise_scores_its_reference_one_and_its_stub_zero_in_its_own_groups(runs, name, full):
    run = runs[name]
    assert run.results is not None and run.returncode == 0, run.output[-3000:]
    jsonschema.validate(run.results, RESULTS_SCHEMA)
    totals = harness.second_exercise_totals()
    assert run.results["gradable"] is True and run.results["score"] == (1.0 if full else 0)
    assert points(run) == ((sum(totals.values()) if full else 0), sum(totals.values()))
    hidden_title = SECOND.group_titles[SECOND.hidden_group]
    for group, title in SECOND.group_titles.items():
        tests = [t for t in run.results["tests"] if t["name"].startswith(title)]
        assert sum(t["max_points"] for t in tests) == totals[group], title  # each check under its group's own title
        assert sum(t["points"] for t in tests) == (totals[group] if full else 0), title
    # The hidden group reaches students as one entry, its points only: no hidden check named.
    (hidden,) = [t for t in run.results["tests"] if t["name"] == hidden_title]
    assert hidden["max_points"] == totals[SECOND.hidden_group] and hidden["output"] == ""
    assert "test_reference" not in json.dumps(run.results) and "matches_the_reference" not in json.dumps(run.results)
    assert run.results["message"] == f"Graded {SECOND.student_file}. Score {points(run)[0]}/{points(run)[1]}."


def test_a_buggy_notebook_is_graded_and_loses_points_in_its_groups(runs):
    run = runs["mutant_notebook"]
    assert run.results["gradable"] is True and 0 < run.results["score"] < 1
    assert run.results["message"].startswith("Graded homework/attention.ipynb (no file is named multi_head_attention.py).")
    for group in MUTANT.losing_groups:
        earned, maximum = group_points(run, group)
        assert earned < maximum, f"the mutant kept every point of {group}"
    failed = [t for t in visible(run) if t["points"] < t["max_points"]]
    # Each failure says what was expected, or (named by the diagnosis) points to it.
    assert failed and all("expected" in t["output"].lower() or "explained by the diagnosis" in t["output"] for t in failed)
    if MUTANT.mistake:
        assert "What went wrong:" in run.results["output"]


def test_code_too_deep_for_pythons_parser_is_graded_and_the_student_reads_which_line(runs):
    """Python raises MemoryError on such code, not SyntaxError (grader/reading/parser_limits.py):
    the student's own problem, never the autograder's failure."""
    run = runs["too_deep"]
    assert run.results["gradable"] is True and run.results["score"] == 0, run.output[-3000:]
    line = SOLUTION.read_text().count("\n") + 1
    assert (
        "MemoryError: too deeply nested for Python's parser, which stops reading the code there before any of it runs; "
        f"write it as several simpler statements (multi_head_attention.py, line {line})"
    ) in run.results["output"]
    assert f"at multi_head_attention.py:{line}: _too_deep = ---" in run.results["output"]


def test_a_submission_without_a_file_to_grade_is_not_gradable_and_says_why(runs):
    run = runs["misnamed"]
    assert run.results["gradable"] is False and "score" not in run.results and run.results["tests"] == []
    assert run.results["format_errors"] == [
        "Nothing was graded: your submission (notes.txt) holds no multi_head_attention.py, notebook or .zip."
    ]


def test_the_entrypoint_runs_the_python_named_by_PYTHON(runs):
    assert runs["misnamed"].python_traced


def test_hidden_checks_reach_students_as_one_entry_with_points_only_and_instructors_in_full(runs):
    run = runs["mutant_notebook"]
    entry = hidden_entry(run)
    assert entry["max_points"] > 0 and entry["output"] == ""
    text = json.dumps(run.results)
    assert "matches_the_reference" not in text and "test_reference" not in text
    assert f"Hidden checks (not shown to students): {entry['points']}/{entry['max_points']}\n" in run.output
    assert "test_module_matches_the_reference[0]" in run.output
    if entry["points"] < entry["max_points"]:
        assert entry["message"] == prairielearn.HIDDEN_MESSAGE


def test_what_the_submission_printed_reaches_instructors_only(runs):
    for name in ("forger", "forger_process"):
        run = runs[name]
        assert f"{MARKER} printed at import" in run.output, name
        assert MARKER not in json.dumps(run.results), name


def test_a_submission_that_forges_results_json_gets_exactly_its_honest_score(runs):
    honest = runs["twin_without_bwrap"].results["score"]
    assert 0 < honest < 1
    for name in ("forger", "forger_process"):
        run = runs[name]
        assert run.results["score"] == honest, f"{name} scored {run.results['score']}, its honest twin {honest}"
        assert len(run.results["tests"]) > 40 and run.results["tests"][0]["name"] != "forged"


def test_the_forger_could_neither_write_any_results_nor_read_the_tests_folder(runs):
    for name in ("forger", "forger_process"):
        assert_the_forger_failed(runs[name].output, Path("/grade/results/results.json"), name)


def test_the_entrypoint_closes_the_results_folder_and_locks_tests_and_data_before_grading(runs):
    root = runs["forger_process"].root
    assert stat.S_IMODE((root / "results").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "tests").stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "data").stat().st_mode) == 0o700


def test_the_sandbox_actually_used_is_in_the_instructors_log_only(runs):
    forced = runs["forger_process"]
    assert "Sandbox: process (NOT bubblewrap): GRADER_SANDBOX=process was set" in forced.output
    fallback = runs["twin_without_bwrap"]
    assert "Sandbox: process (NOT bubblewrap): falling back to the plain-process sandbox" in fallback.output
    assert "The tests folder (solution, hidden tests) was made unreadable" in fallback.output
    for run in (forced, fallback):
        assert "sandbox" not in json.dumps(run.results).lower()


@pytest.mark.skipif(not processes.bwrap_available(), reason="bubblewrap cannot run here")
def test_where_bubblewrap_runs_the_default_sandbox_is_bubblewrap(runs):
    assert "Sandbox: bwrap (bubblewrap)." in runs["forger"].output


def test_a_grader_failure_is_not_gradable_and_says_it_is_the_autograders_fault(runs):
    run = runs["bad_configuration"]
    assert run.results["gradable"] is False and "format_errors" not in run.results
    assert run.results["message"] == prairielearn.FAILURE_MESSAGE
    assert "not of your code" in run.results["message"]
    assert "GRADER FAILURE" in run.output and "GRADER_SANDBOX='sideways'" in run.output
    assert "sideways" not in json.dumps(run.results)


@pytest.mark.parametrize("value", BAD_CALL_TIMEOUTS)
def test_a_call_timeout_that_is_not_positive_seconds_is_not_gradable_and_named_to_instructors(runs, value):
    # Before: 0, -1, inf and nan graded the reference 0/1 and said gradable; abc left no results.json.
    run = runs[f"call_timeout_{value}"]
    assert run.results is not None, run.output[-2000:]
    assert run.results["gradable"] is False and run.results["message"] == prairielearn.FAILURE_MESSAGE
    assert f"GRADER_CALL_TIMEOUT={value!r} is not usable" in run.output
    assert "Traceback" not in run.output


# --- results under PrairieLearn's 1 MB, whatever a submission makes the messages ---------------------


def test_results_stay_under_one_megabyte_when_messages_are_huge():
    message = "your code raised ValueError: " + "x" * 200_000
    document = {
        "groups": {"shapes": {"earned": 0, "max": 60}, "reference": {"earned": 0, "max": 20}},
        "import_error": "",
        "tests": [
            {"name": f"test_{i}[submission-b1]", "group": "shapes", "outcome": "failed", "message": message,
             "points": 0, "max_points": 1}
            for i in range(60)
        ] + [{"name": "test_h", "group": "reference", "outcome": "failed", "message": message, "points": 0, "max_points": 20}],
    }
    report = prairielearn.prairielearn_results(document, "graded multi_head_attention.py")
    text = prairielearn.results_text(report)
    assert len(text.encode()) <= prairielearn.RESULTS_LIMIT < RESULTS_LIMIT
    parsed = json.loads(text)
    jsonschema.validate(parsed, RESULTS_SCHEMA)
    assert all(t["output"].startswith("your code raised ValueError: xxx") for t in parsed["tests"][:-1])
    assert "cut to fit the results file" in parsed["tests"][0]["output"]
    assert [t["name"] for t in parsed["tests"]][:2] == ["1. shapes: test_0[b1]", "1. shapes: test_1[b1]"]


# --- what cannot be locked is said, not claimed locked ------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_folders_the_grader_cannot_close_are_named_in_the_instructors_note(tmp_path):
    mine, theirs = tmp_path / "tests", tmp_path / "data"
    mine.mkdir()
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    assert protect(tmp_path / "results", (mine, theirs, tmp_path / "absent")) == [theirs]
    assert stat.S_IMODE(mine.stat().st_mode) == 0o700
    document = {"sandbox": "process", "sandbox_note": "falling back", "output": ""}
    note = instructor_note(
        document, sandbox_requested="auto", found="graded x.py", running_as_root=True,
        private="the tests folder", runner="run_grader", left_open=[theirs],
    )
    assert f"NOT closed to it: {theirs}" in note and "was made unreadable" not in note


@pytest.mark.platform
def test_the_command_says_the_next_steps_with_an_image_name_that_can_be_pushed(tmp_path):
    # PrairieLearn's docs/dockerImages.md: build for linux/amd64, push, name it in the question, sync it.
    placeholder = build(tmp_path / "default")
    assert placeholder.returncode == 0, placeholder.stderr
    assert "--image YOU/mha-grader" in placeholder.stdout and "externalGradingOptions.image" in placeholder.stdout
    named = build(tmp_path / "named", "--image", "someone/mha-grader")
    for step in ("docker build --platform linux/amd64 -t someone/mha-grader", "docker push someone/mha-grader",
                 "externalGradingOptions.image is 'someone/mha-grader'", 'under "Docker images", sync someone/mha-grader'):
        assert step in named.stdout, step
    assert "YOU/" not in named.stdout
