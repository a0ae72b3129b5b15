"""The student release: everything a student needs, nothing of the answers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader import STUDENT_SUBPACKAGES, scoring
from grader.handout import behaviour_scan, release
import shared
from grading import REPO_ROOT


@pytest.fixture(scope="module")
def student_release(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "mha-exercise"
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "release", str(out)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return out


def test_the_release_holds_the_exercise_the_visible_grader_and_the_set_up(student_release):
    for path in ("exercises/multi_head_attention.py", "exercises/example.py", "grader/conftest.py",
                 "grader/exercises/multi_head_attention/visible/test_shapes.py", "README.md", "requirements.txt", "Makefile"):
        assert (student_release / path).is_file(), path


def test_the_release_holds_no_solutions_no_hidden_tests_and_no_repository_tests(student_release):
    names = {path.relative_to(student_release).as_posix() for path in student_release.rglob("*")}
    assert not [n for n in names if n.startswith(("solutions", "grader/hidden", "tests")) or "/hidden" in n]
    # Of the grader, the package's own modules and its student folders: every instructor layer stays home.
    folders = {path.name for path in (student_release / "grader").iterdir() if path.is_dir()}
    assert folders == set(STUDENT_SUBPACKAGES)


def test_every_module_of_the_release_imports_there(student_release):
    modules = sorted(
        ".".join(path.relative_to(student_release).with_suffix("").parts)
        for path in (student_release / "grader").rglob("*.py") if path.stem not in ("__main__", "__init__")
    )
    assert "grader.conftest" in modules and "grader.submission" in modules and "grader.exercises.multi_head_attention.premises" in modules
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\nprint('imported', len(sys.argv) - 1)"
    finished = subprocess.run(
        [sys.executable, "-c", script, *modules], cwd=student_release, capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == f"imported {len(modules)}"


def test_isolate_in_the_release_says_it_is_an_instructor_feature(student_release):
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "grader", "-q", "-p", "no:cacheprovider", "--isolate"],
        cwd=student_release, capture_output=True, text=True, timeout=120,
    )
    assert finished.returncode == pytest.ExitCode.USAGE_ERROR, finished.stdout + finished.stderr
    assert "--isolate is an instructor feature" in finished.stderr


def test_instructor_commands_in_the_release_say_so(student_release):
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", "x", "--out", "y"], cwd=student_release, capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 2
    assert "`batch` is not available in this copy (it is an instructor's command)" in finished.stderr


def test_the_release_holds_no_class_report_or_gradebook_export(student_release):
    instructors = {"report.py", "report_plots.py", "class_statistics.py", "feedback_pages.py", "export.py", "roster.py"}
    names = {path.name for path in student_release.rglob("*.py")}
    assert not names & instructors
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "report", "OUT"], cwd=student_release, capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 2 and "instructor's command" in finished.stderr


def test_no_line_of_solution_text_appears_anywhere_in_the_release(student_release):
    assert release.leaked_solution_lines(student_release) == []


def test_the_leak_scan_finds_solution_text_when_it_is_there(student_release, tmp_path):
    leaky = tmp_path / "leaky"
    (leaky / "grader").mkdir(parents=True)
    (leaky / "grader" / "notes.py").write_text(
        "    weights = torch.softmax(scores, dim=-1)  # (batch, seq, seq)\n"
    )
    assert release.leaked_solution_lines(leaky) == ["grader/notes.py: weights = torch.softmax(scores, dim=-1)  # (batch, seq, seq)"]


@pytest.mark.slow  # the scan calls every function of the grader: 15 to 25 s, once per run (tests/shared.py)
def test_no_function_of_the_release_computes_the_references_numbers(student_release, tmp_path_factory):
    """The leak scan by behaviour: every function shipped, called with a reference module's
    parameters, inputs and masks, returns neither its output nor its attention weights."""
    assert shared.callable_solutions(tmp_path_factory, student_release) == []  # once per run for these files


def planted_grader(folder: Path, helpers: str) -> Path:
    """``folder`` holding a grader package of one module, grader/helpers.py."""
    (folder / "grader").mkdir(parents=True)
    (folder / "grader" / "__init__.py").write_text("")
    (folder / "grader" / "helpers.py").write_text(helpers)
    return folder


@pytest.mark.slow
def test_the_behaviour_scan_finds_a_callable_solution_that_no_solution_line_gives_away(tmp_path):
    """A forward pass spelled otherwise than the solution (the text scan misses it) is found by
    what it computes."""
    leaky = planted_grader(
        tmp_path / "leaky",
        "import torch\n\n\n"
        "def attend(inputs, parameters, allowed):\n"
        "    q, k = (inputs.double() @ parameters[n + '.weight'].double().T for n in ('query', 'key'))\n"
        "    s = (q @ k.mT) * q.shape[-1] ** -0.5\n"
        "    return {'w': s.masked_fill(~allowed, float('-inf')).softmax(-1)}\n"
    )
    assert release.leaked_solution_lines(leaky) == []
    found = behaviour_scan.callable_solutions(leaky)
    assert found and all(line.startswith("grader.helpers.attend(inputs, parameters, allowed) -> the reference's head weights")
                         for line in found), found


@pytest.mark.slow
def test_the_behaviour_scan_gives_each_function_its_calls_and_names_one_it_could_not_finish(tmp_path):
    """A message builder given tensors where its sentences go (as ``checks.fail`` is) makes all
    its calls, well within the time limit: the scan never prints a tensor's numbers (which cost
    ``checks.fail`` and five others most of their calls). A function that never returns is named."""
    planted = planted_grader(
        tmp_path / "planted",
        "def describe(problem, expected, got):\n"
        "    return f'{problem}\\n  expected: {expected}\\n  got:      {got}'\n\n\n"
        "def spin(inputs):\n"
        "    while True:\n"
        "        pass\n"
    )
    report = behaviour_scan.probe(planted, seconds_per_function=2)
    assert report["unfinished"] == ["grader.helpers.spin: stopped by the time limit after 1 of its calls"], report
    assert report["found"] == [] and report["called"] > 1000  # describe made every call it had


def test_pytest_grader_runs_in_the_release_and_says_hidden_tests_come_later(student_release, golden):
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "grader", "-q", "-p", "no:cacheprovider"],
        cwd=student_release, capture_output=True, text=True, timeout=300,
    )
    output = finished.stdout + finished.stderr
    assert finished.returncode == 1, output  # the stubs fail every visible check
    # What the student reads is the grader's, not pytest's: no warning about the grader's own modules.
    assert "warnings summary" not in output and "Warning" not in output, output
    assert "8. reference (hidden)  run when your work is graded" in output
    visible, hidden = scoring.visible_and_hidden_points()
    score, not_written = output.strip().splitlines()[-2:]
    assert score == f"Score: 0/{visible}" and visible + hidden == 100
    golden.check("the stubs' last line in the release", not_written)


def test_the_release_records_its_level_and_its_makefile_offers_only_the_students_targets(student_release):
    assert (student_release / "grader" / "scaffolding.txt").read_text().strip() == "standard"
    makefile = (student_release / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w.-]*):", makefile, flags=re.MULTILINE))
    assert targets == {"grade", "example"}, targets  # and .venv, the environment alone
    finished = subprocess.run(["make", "-n", "test"], cwd=student_release, capture_output=True, text=True, timeout=60)
    assert finished.returncode != 0 and "No rule to make target 'test'" in finished.stderr


def test_the_student_readme_says_what_to_hand_in_and_how_to_set_up(student_release):
    readme = (student_release / "README.md").read_text()
    assert "## What to hand in" in readme and "exercises/LESSON.md" in readme
    assert "Python 3.11" in readme and ".venv/bin/python -m pytest grader" in readme
    assert "--extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt" in readme
    assert f"({scoring.visible_and_hidden_points()[0]} of the 100 points)" in readme and "constructors included" in readme
    assert (student_release / "exercises" / "LESSON.md").is_file()


@pytest.mark.slow
def test_a_guided_release_gives_the_constructors_and_records_its_level(tmp_path):
    out = tmp_path / "guided"
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "release", str(out), "--level", "guided"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert (out / "grader" / "scaffolding.txt").read_text().strip() == "guided"
    stub = (out / "exercises" / "multi_head_attention.py").read_text()
    assert "self.heads = nn.ModuleList(" in stub and "# HINT:" in stub and "__init__ is not written yet" not in stub
    assert "constructors included" not in (out / "README.md").read_text()
    assert release.leaked_solution_lines(out) == []  # the level is read from the release
    assert release.leaked_solution_lines(out, level="standard"), "the constructors are given at the guided level"
    graded = subprocess.run(
        [sys.executable, "-m", "pytest", "grader", "-q", "-p", "no:cacheprovider", "--results-json", str(tmp_path / "r.json")],
        cwd=out, capture_output=True, text=True, timeout=300,
    )
    assert graded.returncode == 1, graded.stdout[-2000:]
    assert json.loads((tmp_path / "r.json").read_text())["scaffolding"] == "guided"


def test_without_grader_hidden_the_grader_diagnoses_nothing_and_imports_none_of_it(student_release, tmp_path):
    import json

    import catalogue

    mutant = catalogue.write_implementation(next(m for m in catalogue.MUTANTS if m.mistake == "missing_scale"), tmp_path)
    results = tmp_path / "results.json"
    script = (
        "import sys, pytest\n"
        f"pytest.main(['grader', '-q', '-p', 'no:cacheprovider', '--submission', {str(mutant)!r}, '--results-json', {str(results)!r}])\n"
        "print('hidden modules:', sorted(m for m in sys.modules if m.startswith('grader.hidden') or '.hidden' in m))\n"
    )
    finished = subprocess.run([sys.executable, "-c", script], cwd=student_release, capture_output=True, text=True, timeout=300)
    assert "hidden modules: []" in finished.stdout, finished.stdout[-2000:] + finished.stderr[-2000:]
    (result,) = json.loads(results.read_text())["submissions"].values()
    assert result["diagnoses"] == [] and result["score"] < result["max_score"]


# The release as handed out, and as Classroom 50's template repository (the same release).
HAND_OUTS = {"release": ("release", "{out}"), "classroom50 template": ("classroom50", "{out}/../c50")}


@pytest.mark.slow
@pytest.mark.parametrize("hand_out", HAND_OUTS, ids=list(HAND_OUTS))
def test_git_add_takes_the_students_work_and_leaves_the_virtualenv_caches_and_results_out(hand_out, tmp_path):
    command, out = HAND_OUTS[hand_out]
    out = Path(out.format(out=tmp_path / "out"))
    finished = subprocess.run([sys.executable, "-m", "grader", command, str(out)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    folder = out / "template" if command == "classroom50" else out
    # What make grade and a run leave behind: the virtualenv (torch inside), pytest's and Python's caches, results.
    for left_behind in (".venv/lib/python3.11/site-packages/torch/__init__.py", ".pytest_cache/README.md",
                        "grader/__pycache__/conftest.cpython-311.pyc", "results.json", "feedback/alice.md", "result.json"):
        (folder / left_behind).parent.mkdir(parents=True, exist_ok=True)
        (folder / left_behind).write_text("generated\n")
    subprocess.run(["git", "init", "-q", str(folder)], check=True, capture_output=True)
    added = subprocess.run(["git", "add", "-A", "--dry-run"], cwd=folder, check=True, capture_output=True, text=True).stdout
    assert "add 'exercises/multi_head_attention.py'" in added and "add '.gitignore'" in added
    for left_behind in (".venv", ".pytest_cache", "__pycache__", "results.json", "feedback/", "result.json"):
        assert left_behind not in added
