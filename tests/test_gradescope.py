"""The Gradescope autograder (grader/platforms/gradescope.py): the zip, and run_autograder on a Gradescope-like root.

Each run lays a root out the way Gradescope does: ROOT/source holds the unzipped
autograder (modes from the zip), ROOT/run_autograder a copy of its script, ROOT/submission
the student's files, ROOT/results an empty folder. run_autograder then runs from ROOT with
GRADESCOPE_ROOT=ROOT and this virtualenv's python first on PATH. setup.sh never runs here
(it needs the network).

The roots live in the system's temporary folder, world-traversable, with a world-writable
results folder (the most permissive harness), so that a forger running as "nobody" in the
plain-process sandbox has a real chance and only run_autograder's own precautions stop it.
All runs go side by side in one module fixture: each costs a torch start-up or two.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import pytest

import autograder_harness as harness
import catalogue
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
    assert_the_forger_failed,
    bash_only_path,
    forger_source,
    notebook_of,
    open_results_folder,
    run_script,
    write_submission,
)
from grader.platforms import gradescope
from grader.exercises.multi_head_attention.hidden import mistakes
from grader.sandbox import landlock, processes
from grader.scoring import GROUP_TITLES
from grading import REPO_ROOT
import tiers

# --- Gradescope's results.json, as its specification describes it ---------------------------

VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
FORMAT = {"enum": ["text", "simple_format", "html", "md", "ansi"]}
TEST_SCHEMA = {
    "type": "object",
    # Optional in Gradescope's specification; this autograder always writes them.
    "required": ["name", "number", "score", "max_score", "status", "output", "visibility"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "number": {"type": "string", "pattern": r"^\d+\.\d+$"},
        "score": {"type": "number", "minimum": 0},
        "max_score": {"type": "number", "minimum": 0},
        "status": {"enum": ["passed", "failed"]},
        "output": {"type": "string"},
        "visibility": VISIBILITY,
        "name_format": FORMAT,
        "output_format": FORMAT,
        "tags": {"type": "array", "items": {"type": "string"}},
        "extra_data": {"type": "object"},
    },
    "additionalProperties": False,
}
RESULTS_SCHEMA = {
    "type": "object",
    "required": ["score", "execution_time", "tests"],
    "properties": {
        "score": {"type": "number", "minimum": 0},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "output_format": FORMAT,
        "test_output_format": FORMAT,
        "test_name_format": FORMAT,
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "minItems": 1, "items": TEST_SCHEMA},
        "leaderboard": {"type": "array"},
    },
    "additionalProperties": False,
}

# --- the submissions ---------------------------------------------------------------------------

# The forger (tests/autograder_harness.py) with Gradescope's roots: the one it was told about,
# /autograder, $GRADESCOPE_ROOT.
FORGER = forger_source(
    '[_Path("@ROOT@"), _Path("/autograder"), _Path(_os.environ.get("GRADESCOPE_ROOT", "/autograder"))]',
    {"score": 100.0, "execution_time": 1.0, "output": "@MARKER@ forged", "stdout_visibility": "visible",
     "tests": [{"name": "forged", "number": "1.1", "score": 100.0, "max_score": 100.0, "status": "passed",
                "output": "@MARKER@", "visibility": "visible"}]},
    ("source/solutions/multi_head_attention.py", "source/grader/exercises/multi_head_attention/hidden/test_reference.py"),
)


# --- laying out a root and running run_autograder ------------------------------------------------


class Run(harness.Run):
    """run_autograder's run, read the way Gradescope reads it."""

    def tests(self, visibility: str | None = None) -> list[dict]:
        return [t for t in self.results["tests"] if visibility is None or t["visibility"] == visibility]

    def instructor_note(self) -> str:
        hidden = [t for t in self.tests("hidden") if t["max_score"] == 0]
        assert len(hidden) == 1, f"expected one instructors-only entry, found {len(hidden)}"
        return hidden[0]["output"]

    def graded(self) -> list[dict]:
        return [t for t in self.results["tests"] if t["max_score"] > 0]

    def group_points(self, group: str) -> tuple[float, float]:
        tests = [t for t in self.graded() if t["name"].startswith(GROUP_TITLES[group] + ":")]
        return sum(t["score"] for t in tests), sum(t["max_score"] for t in tests)


def extract_like_gradescope(archive_path: Path, root: Path) -> None:
    """Unzip into ROOT/source with the zip's modes, and copy run_autograder to ROOT, as Gradescope does."""
    source = root / "source"
    with zipfile.ZipFile(archive_path) as archive:
        for info in archive.infolist():
            target = source / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(info))
            target.chmod(stat.S_IMODE(info.external_attr >> 16) or 0o644)
    for folder in [source, *(p for p in source.rglob("*") if p.is_dir())]:
        folder.chmod(0o755)
    shutil.copy2(source / "run_autograder", root / "run_autograder")


def make_root(archive_path: Path, files: dict[str, str]) -> Path:
    root = Path(tempfile.mkdtemp(prefix="mha-gradescope-test-"))
    root.chmod(0o755)
    extract_like_gradescope(archive_path, root)
    write_submission(root / "submission", files, root)
    open_results_folder(root)
    return root


def run_autograder(root: Path, path_without_bwrap: Path | None = None, **variables: str) -> Run:
    run = run_script(root / "run_autograder", root, "GRADESCOPE_ROOT", path_without_bwrap, **variables)
    return Run(**vars(run))


@pytest.fixture(scope="module")
def zips(tmp_path_factory) -> dict[str, Path]:
    """The autograder built by the command itself, with the default and another hidden visibility."""
    folder = tmp_path_factory.mktemp("zips")
    built = {}
    for visibility in ("after_published", "after_due_date"):
        arguments = [] if visibility == "after_published" else ["--hidden-visibility", visibility]
        path = folder / f"autograder-{visibility}.zip"
        completed = subprocess.run(
            [sys.executable, "-m", "grader", "gradescope", str(path), *arguments],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )
        assert completed.returncode == 0, completed.stdout + completed.stderr
        built[visibility] = path
    # The course's second exercise: the same command, told which exercise.
    path = folder / f"autograder-{SECOND.name}.zip"
    completed = subprocess.run(
        [sys.executable, "-m", "grader", "gradescope", str(path), "--exercise", SECOND.name],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    built[SECOND.name] = path
    return built


@pytest.fixture(scope="module")
@tiers.slow_tier("platform")  # run_autograder run as Gradescope runs it, once per case
def runs(zips, tmp_path_factory) -> dict[str, Run]:
    """Every run_autograder run of this module, side by side."""
    no_bwrap = bash_only_path(tmp_path_factory.mktemp("path") / "bin")
    mutant_notebook = notebook_of(catalogue.implementation_source(MUTANT))
    plans = {
        "solution": (zips["after_published"], {"multi_head_attention.py": SOLUTION.read_text()}, {}),
        "stubs": (zips["after_published"], {"multi_head_attention.py": STUB.read_text()}, {}),
        "mutant": (zips["after_due_date"], {"homework/attention.ipynb": mutant_notebook}, {}),
        "forger": (zips["after_published"], {"multi_head_attention.py": FORGER}, {}),
        "forger_process": (
            zips["after_published"], {"multi_head_attention.py": FORGER}, {"GRADER_SANDBOX": "process"}
        ),
        "twin_without_bwrap": (
            zips["after_published"], {"multi_head_attention.py": SOLUTION.read_text() + HONEST_TWIN}, {"no_bwrap": True}
        ),
        "bad_configuration": (
            zips["after_published"], {"multi_head_attention.py": SOLUTION.read_text()}, {"GRADER_SANDBOX": "sideways"}
        ),
        # A .py too deeply nested for Python's parser beside a complete notebook with such a cell.
        "too_deep": (zips["after_published"], {
            "multi_head_attention.py": SOLUTION.read_text() + TOO_DEEP,
            "multi_head_attention.ipynb": notebook_of(SOLUTION.read_text(), TOO_DEEP),
        }, {}),
        # The second exercise's reference and stub, in its own zip, graded beside the first's.
        "second_solution": (zips[SECOND.name], {SECOND.student_file: SECOND_SOLUTION.read_text()}, {}),
        "second_stubs": (zips[SECOND.name], {SECOND.student_file: SECOND_STUB.read_text()}, {}),
    }
    roots = {name: make_root(archive, files) for name, (archive, files, _) in plans.items()}

    def start(name: str) -> Run:
        variables = dict(plans[name][2])
        path = no_bwrap if variables.pop("no_bwrap", False) else None
        return run_autograder(roots[name], path, **variables)

    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            done = dict(zip(plans, pool.map(start, plans)))
        for name, run in done.items():
            print(f"{name}: run_autograder took {run.seconds:.1f} s")
        yield done
    finally:
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)


def graded_runs(runs: dict[str, Run]) -> dict[str, Run]:
    return {name: run for name, run in runs.items() if name != "bad_configuration"}


# --- the zip ----------------------------------------------------------------------------------


def test_the_zip_has_setup_and_run_autograder_at_its_root_as_executable_shell_scripts(zips):
    with zipfile.ZipFile(zips["after_published"]) as archive:
        for name in ("setup.sh", "run_autograder"):
            info = archive.getinfo(name)
            assert stat.S_IMODE(info.external_attr >> 16) == 0o755, f"{name} is not mode 755 in the zip"
            assert archive.read(name).startswith(b"#!/usr/bin/env bash\n"), f"{name} has no bash #! line"


def test_the_zip_ships_the_grader_its_hidden_tests_the_solution_and_requirements_but_not_tests_or_exercises(zips):
    with zipfile.ZipFile(zips["after_published"]) as archive:
        names = set(archive.namelist())
    assert {"grader/platforms/gradescope.py", "grader/batch/run.py", "grader/exercises/multi_head_attention/hidden/test_reference.py",
            "solutions/multi_head_attention.py", "requirements.txt"} <= names
    assert not [n for n in names if n.startswith(("tests/", "exercises/")) or "__pycache__" in n or n.endswith(".pyc")]
    assert archive_text(zips["after_published"], "requirements.txt") == (REPO_ROOT / "requirements.txt").read_text()


def archive_text(path: Path, name: str) -> str:
    with zipfile.ZipFile(path) as archive:
        return archive.read(name).decode()


def test_setup_installs_bubblewrap_and_the_pinned_requirements_with_torchs_cpu_build(zips):
    setup = archive_text(zips["after_published"], "setup.sh")
    assert "apt-get install -y bubblewrap" in setup
    assert "-m pip install --disable-pip-version-check \\\n" in setup and "-r requirements.txt" in setup
    # The CPU index only when it answers (grader/torch_index.py, shipped in the zip): no GPU here.
    assert 'grader/torch_index.py "$TORCH_INDEX")' in setup and "download.pytorch.org/whl/cpu" in setup
    with zipfile.ZipFile(zips["after_published"]) as archive:
        assert "grader/torch_index.py" in archive.namelist()
    assert "torch==2.13.0" in archive_text(zips["after_published"], "requirements.txt")


def test_run_autograder_carries_the_hidden_visibility_chosen_at_build_time(zips):
    assert "--hidden-visibility after_published" in archive_text(zips["after_published"], "run_autograder")
    assert "--hidden-visibility after_due_date" in archive_text(zips["after_due_date"], "run_autograder")


def test_the_zip_gets_the_mode_a_new_file_gets_so_a_ta_on_a_shared_machine_can_upload_it(tmp_path):
    umask = os.umask(0o022)
    try:
        path = gradescope.build_zip(tmp_path / "autograder.zip")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_the_command_refuses_a_visibility_gradescope_does_not_know(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "grader", "gradescope", str(tmp_path / "a.zip"), "--hidden-visibility", "sometimes"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 2 and "invalid choice" in completed.stderr
    assert not (tmp_path / "a.zip").exists()


# --- run_autograder's results.json -----------------------------------------------------------


@pytest.mark.parametrize(
    "name", [
        "solution", "stubs", "mutant", "forger", "forger_process", "twin_without_bwrap", "bad_configuration", "too_deep",
        "second_solution", "second_stubs",
    ]
)
def test_every_run_writes_a_results_json_that_follows_gradescopes_schema(runs, name):
    run = runs[name]
    assert run.results is not None, f"no results.json (exit {run.returncode}):\n{run.output[-3000:]}"
    jsonschema.validate(run.results, RESULTS_SCHEMA)
    assert run.results["score"] == sum(test["score"] for test in run.results["tests"])
    assert all(test["score"] <= test["max_score"] for test in run.results["tests"])
    numbers = [test["number"] for test in run.results["tests"]]
    assert len(numbers) == len(set(numbers)), "test numbers repeat"
    assert 0 < run.results["execution_time"] <= run.seconds
    assert run.results.get("stdout_visibility") == "hidden"
    assert sorted(p.name for p in (run.root / "results").iterdir()) == ["results.json"]


def test_the_solution_scores_full_marks_and_every_check_passes(runs):
    run = runs["solution"]
    assert run.returncode == 0, run.output
    assert run.results["score"] == sum(t["max_score"] for t in run.graded()) == 100
    assert all(t["status"] == "passed" and t["output"] == "" for t in run.graded())


def test_the_stubs_score_zero_and_every_check_fails_with_a_message(runs):
    run = runs["stubs"]
    assert run.returncode == 0, run.output
    assert run.results["score"] == 0 and sum(t["max_score"] for t in run.graded()) == 100
    assert all(t["status"] == "failed" and t["output"] for t in run.graded())


def test_a_buggy_notebook_loses_points_in_its_groups_and_students_read_why(runs):
    run = runs["mutant"]
    assert run.returncode == 0, run.output
    assert 0 < run.results["score"] < 100
    for group in MUTANT.losing_groups:
        earned, maximum = run.group_points(group)
        assert earned < maximum, f"the mutant kept every point of {group}"
    failed_visible = [t for t in run.graded() if t["status"] == "failed" and t["visibility"] == "visible"]
    # The diagnosis at the top names the misconception; the checks it explains say so in a
    # line, the others keep expected / got / hint.
    explained = [t for t in failed_visible if "explained by the diagnosis at the top" in t["output"]]
    assert failed_visible and explained
    assert all("expected" in t["output"].lower() for t in failed_visible if t not in explained)
    assert all("hint:" not in t["output"] for t in explained)
    assert html.escape(mistakes.BY_ID[MUTANT.mistake].title) in run.results["output"]
    assert "graded homework/attention.ipynb" in run.results["output"].lower()


def test_code_too_deep_for_pythons_parser_beside_a_complete_notebook_grades_the_notebook_and_says_why(runs):
    """Python raises MemoryError on such code, not SyntaxError: once "The autograder failed
    before it could grade your submission" (grader/reading/parser_limits.py)."""
    run = runs["too_deep"]
    assert run.returncode == 0, run.output
    assert run.results["score"] == 100, run.results["output"]
    said = html.unescape(run.results["output"])
    assert "graded multi_head_attention.ipynb (it holds more of the work" in said.lower()
    assert "multi_head_attention.py does not parse (code too deeply nested for Python's parser), so which of the exercise's 7" in said
    assert "(the cell starting `_too_deep = ---" in said and "raised MemoryError: too deeply nested for Python's parser" in said


def second_exercise_groups(run: Run) -> dict[str, tuple[float, float, set[str]]]:
    """The second exercise's points per group as Gradescope shows them: (earned, max, visibilities),
    each check found by its group's title, the exercise's own."""
    found = {}
    for group, title in SECOND.group_titles.items():
        tests = [t for t in run.graded() if t["name"].startswith(title + ":")]
        found[group] = (sum(t["score"] for t in tests), sum(t["max_score"] for t in tests), {t["visibility"] for t in tests})
    return found


@pytest.mark.parametrize(("name", "full"), [("second_solution", True), ("second_stubs", False)])
def test_the_second_exercise_scores_its_reference_full_and_its_stub_zero_in_its_own_groups(runs, name, full):
    run = runs[name]
    assert run.returncode == 0, run.output[-3000:]
    totals = harness.second_exercise_totals()
    groups = second_exercise_groups(run)
    assert {group: maximum for group, (_, maximum, _) in groups.items()} == totals  # every check under its group's title
    assert sum(t["max_score"] for t in run.graded()) == sum(totals.values())
    assert run.results["score"] == (sum(totals.values()) if full else 0)
    assert all((t["status"] == "passed") == full for t in run.graded())
    for group, (earned, maximum, visibilities) in groups.items():
        assert earned == (maximum if full else 0), group
        assert visibilities == ({"after_published"} if group == SECOND.hidden_group else {"visible"}), group
    # The summary students read: the exercise's file, its groups by their titles, the hidden one's points unshown.
    said = run.results["output"]
    assert said.startswith(f"Graded {SECOND.student_file}.")
    hidden_title = SECOND.group_titles[SECOND.hidden_group]
    for group, title in SECOND.group_titles.items():
        if group != SECOND.hidden_group:
            assert f"{title}: {groups[group][0]:g}/{totals[group]}" in said, title
    assert f"{hidden_title}: {totals[SECOND.hidden_group]} points, shown when your instructor publishes the grades" in said


def test_hidden_tests_take_the_visibility_chosen_at_build_time_and_the_others_are_visible(runs):
    for name, visibility in (("solution", "after_published"), ("mutant", "after_due_date")):
        reference = [t for t in runs[name].graded() if t["name"].startswith(GROUP_TITLES["reference"])]
        others = [t for t in runs[name].graded() if not t["name"].startswith(GROUP_TITLES["reference"])]
        assert reference and {t["visibility"] for t in reference} == {visibility}, name
        assert others and {t["visibility"] for t in others} == {"visible"}, name


def test_the_summary_students_read_hides_the_hidden_points_until_they_are_shown(runs):
    solution, mutant = runs["solution"].results["output"], runs["mutant"].results["output"]
    assert "1. shapes: 15/15" in solution
    assert "8. reference (hidden): 15 points, shown when your instructor publishes the grades" in solution
    assert "8. reference (hidden): 15 points, shown after the due date" in mutant
    assert "15/15" not in solution.split("8. reference")[1] and "100" not in solution


def test_what_the_submission_printed_reaches_instructors_only(runs):
    for name in ("forger", "forger_process"):
        run = runs[name]
        assert f"{MARKER} printed at import" in run.instructor_note(), name
        assert MARKER not in run.results["output"], name
        assert not [t for t in run.tests() if t["visibility"] != "hidden" and MARKER in t["output"] + t["name"]], name
        assert run.results["stdout_visibility"] == "hidden"


def test_a_submission_that_forges_results_json_gets_exactly_its_honest_score(runs):
    honest = runs["twin_without_bwrap"].results["score"]
    assert 0 < honest < 100
    for name in ("forger", "forger_process"):
        run = runs[name]
        assert run.returncode == 0, run.output
        assert run.results["score"] == honest, f"{name} scored {run.results['score']}, its honest twin {honest}"
        assert len(run.graded()) > 40 and run.results["tests"][0]["name"] != "forged"


def test_the_forger_could_neither_write_any_results_nor_read_the_hidden_tests(runs):
    for name in ("forger", "forger_process"):
        assert_the_forger_failed(runs[name].instructor_note(), Path("/autograder/results/results.json"), name)


def test_run_autograder_closes_the_results_folder_and_locks_the_source_before_grading(runs):
    root = runs["forger_process"].root
    assert stat.S_IMODE((root / "results").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "source").stat().st_mode) == 0o700


def test_forcing_the_process_sandbox_is_reported_to_instructors_only(runs):
    run = runs["forger_process"]
    assert run.results["extra_data"]["sandbox"] == "process"
    entry = next(t for t in run.tests("hidden") if t["max_score"] == 0)
    assert entry["status"] == "failed"  # flags, for instructors, a submission graded without bubblewrap
    assert "Sandbox: process (NOT bubblewrap): GRADER_SANDBOX=process was set" in entry["output"]
    if os.geteuid() == 0:
        assert "as the unprivileged user nobody" in entry["output"]
    assert "sandbox" not in run.results["output"].lower()
    assert "Sandbox:" in run.output  # run_autograder's stdout: instructors only


def test_without_bubblewrap_grading_falls_back_to_the_process_sandbox_and_says_why(runs):
    run = runs["twin_without_bwrap"]
    assert run.returncode == 0, run.output
    assert run.results["extra_data"]["sandbox"] == "process"
    assert "bubblewrap" in run.results["extra_data"]["sandbox_note"]
    assert "Sandbox: process (NOT bubblewrap): falling back to the plain-process sandbox" in run.instructor_note()
    confined = "Landlock (ABI" in run.instructor_note() and "open no TCP connection" in run.instructor_note()
    assert confined == (landlock.abi_version() >= 1)


@pytest.mark.skipif(not processes.bwrap_available(), reason="bubblewrap cannot run here")
def test_where_bubblewrap_runs_the_default_sandbox_is_bubblewrap(runs):
    run = runs["forger"]
    assert run.results["extra_data"]["sandbox"] == "bwrap"
    assert run.instructor_note().startswith("Sandbox: bwrap (bubblewrap).")
    assert next(t for t in run.tests("hidden") if t["max_score"] == 0)["status"] == "passed"


def test_a_grader_that_cannot_run_still_writes_results_json_saying_so(runs):
    run = runs["bad_configuration"]
    assert run.returncode == 1
    assert run.results["score"] == 0
    assert "could not grade this submission" in run.results["output"]
    assert "not of your code" in run.results["output"]
    hidden = run.tests("hidden")
    assert hidden and "GRADER_SANDBOX='sideways'" in hidden[0]["output"]
    assert "sideways" not in run.results["output"] + "".join(t["output"] for t in run.tests("visible"))


# --- choosing the file and writing results, without grading -------------------------------------


def write_files(folder: Path, names: list[str]) -> None:
    folder.mkdir(exist_ok=True)
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


@pytest.mark.parametrize(
    ("names", "chosen"),
    [
        (
            ["notes.txt", "deep/er/multi_head_attention.py", "src/multi_head_attention.py", "helper.py"],
            "src/multi_head_attention.py",
        ),
        (["attention.ipynb", "helper.py"], "attention.ipynb"),
        (["my attention (1).py", "README.md"], "my attention (1).py"),
        (["handin.zip"], "handin.zip"),
        (["__MACOSX/._multi_head_attention.py", ".ipynb_checkpoints/x.ipynb", "work.py"], "work.py"),
        (["a.py", "b.py"], None),
        (["notes.txt"], None),
        ([], None),
    ],
)
def test_the_file_to_grade_is_the_named_one_else_the_only_notebook_script_or_zip(tmp_path, names, chosen):
    folder = tmp_path / "submission"
    write_files(folder, names)
    path, found = gradescope.choose_submission_file(folder)
    if chosen is None:
        assert path is None and found.startswith("nothing was graded")
    else:
        assert path == folder / chosen and chosen in found


def test_with_both_the_py_file_and_the_notebook_the_one_that_holds_the_work_is_graded(tmp_path):
    from grader.handout import notebook

    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "multi_head_attention.py").write_text((REPO_ROOT / "exercises" / "multi_head_attention.py").read_text())
    (folder / "multi_head_attention.ipynb").write_text(notebook.notebook_text(filled=True))
    path, found = gradescope.choose_submission_file(folder)
    assert path == folder / "multi_head_attention.ipynb" and "holds more of the work" in found
    (folder / "multi_head_attention.ipynb").write_text(notebook.notebook_text())  # the untouched notebook
    path, _ = gradescope.choose_submission_file(folder)
    assert path == folder / "multi_head_attention.py"


def test_a_one_line_py_file_does_not_hide_a_complete_notebook(tmp_path):
    from grader.handout import notebook

    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "multi_head_attention.py").write_text("import torch\n")  # neither file says NotImplementedError
    (folder / "multi_head_attention.ipynb").write_text(notebook.notebook_text(filled=True))
    path, found = gradescope.choose_submission_file(folder)
    assert path == folder / "multi_head_attention.ipynb"
    assert "writes 7 of the exercise's 7 functions" in found and "multi_head_attention.py defines none" in found


def test_a_helpers_module_beside_the_finished_exercise_is_not_what_is_graded(tmp_path):
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "attention.py").write_text(SOLUTION.read_text())  # not named multi_head_attention.py
    (folder / "attention_helpers.py").write_text("def scaled(scores, d):\n    return scores / d ** 0.5\n")
    path, found = gradescope.choose_submission_file(folder)
    assert path == folder / "attention.py" and "attention_helpers.py defines none" in found


def test_a_symbolic_link_in_a_submission_is_never_graded(tmp_path):
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "multi_head_attention.py").symlink_to(SOLUTION)
    (folder / "linked").symlink_to(SOLUTION.parent, target_is_directory=True)
    path, found = gradescope.choose_submission_file(folder)
    assert path is None and "empty" in found


def test_a_submission_that_cannot_be_imported_tells_the_student_why_at_the_top():
    document = {
        "score": 0, "max_score": 2, "import_error": "SyntaxError at <module> line 3", "output": "hello <b>",
        "groups": {"shapes": {"earned": 0, "max": 1}, "reference": {"earned": 0, "max": 1}},
        "tests": [
            {"name": "test_a[submission-x]", "group": "shapes", "outcome": "failed", "message": "",
             "points": 0, "max_points": 1},
            {"name": "test_b[submission]", "group": "reference", "outcome": "failed", "message": "m",
             "points": 0, "max_points": 1},
        ],
        "grading_seed": 7, "grader_version": "0", "sandbox": "bwrap", "sandbox_note": "",
    }
    report = gradescope.gradescope_results(document, found="graded multi_head_attention.py")
    jsonschema.validate(report | {"execution_time": 0.1}, RESULTS_SCHEMA)
    assert "could not be imported" in report["output"] and "&lt;module&gt;" in report["output"]
    assert "hello" not in report["output"]
    names = [t["name"] for t in report["tests"]]
    assert names[1:] == ["1. shapes: test_a[x]", "8. reference (hidden): test_b"]
    assert report["tests"][1]["output"] == "this check did not pass (failed)"
