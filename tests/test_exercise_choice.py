"""Every surface takes the exercise: ``pytest grader`` (named, or found from the student's file),
``python -m grader COMMAND --exercise`` and the course file, the sandbox's worker, the results
(each records its exercise; one of another exercise is never taken for this one's), the grade
trail, the release and the platforms' run scripts. The grader holds one exercise here: a second
is a scratch declaration, never imported, where a test needs one."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader.seam import registry
from grader.seam.declaration import Declaration, Group
from grader.session import choice
from grading import REPO_ROOT, command_in, grade

FIRST = registry.exercise(registry.course_order()[0])
SECOND = registry.exercise(registry.course_order()[1])  # the course's next exercise: another file, other checks


def scratch(name: str = "scratch") -> Declaration:
    return Declaration(
        name=name, title="Scratch", student_file=f"{name}.py", notebook=f"{name}.ipynb", lesson=f"{name.upper()}.md",
        solution=f"{name}.py", functions=("f",), groups=(Group("shapes", "1. shapes"), Group("secret", "2. secret", hidden=True)),
        operations="operations", handle="handle.Handle", data="data",
    )


BOTH = (FIRST, scratch())


# --- pytest grader ------------------------------------------------------------------------


def test_pytest_grader_refuses_an_unknown_exercise_naming_those_it_holds_without_a_traceback():
    # One process (a torch import): GRADER_EXERCISE takes the same way (choice.chosen, below).
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "grader", "-q", "-p", "no:cacheprovider", "--exercise", "no_such_exercise"],
        cwd=REPO_ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    said = completed.stdout + completed.stderr
    assert completed.returncode == pytest.ExitCode.USAGE_ERROR, said
    assert f"no exercise named 'no_such_exercise': {registry.holding()}" in said, said
    assert "Traceback" not in said, said
    with pytest.raises(choice.ChoiceRefused, match="no exercise named 'no_such_exercise'"):
        choice.chosen(None, "no_such_exercise", [])


def test_pytest_grader_grades_the_exercise_whose_file_it_is_given_with_its_own_checks_only(tmp_path, monkeypatch):
    monkeypatch.delenv(registry.CHOSEN, raising=False)  # nothing named: the file says which
    run = grade([REPO_ROOT / "solutions" / SECOND.student_file], tmp_path)
    (result,) = run.results.values()
    assert result["score"] == result["max_score"] > 0, run.output[-3000:]
    assert set(result["groups"]) == {group.name for group in SECOND.groups}


def test_the_exercise_is_found_from_the_file_the_student_works_in(tmp_path):
    mine = tmp_path / "scratch.py"
    mine.write_text("")
    assert choice.chosen(None, None, [str(mine)], BOTH).name == "scratch"
    notebook_folder = tmp_path / "work"
    notebook_folder.mkdir()
    (notebook_folder / "scratch.ipynb").write_text("{}")
    assert choice.chosen(None, None, [str(notebook_folder)], BOTH).name == "scratch"
    # A file named by the student (alice.py), or a folder holding both exercises' files, says
    # nothing: the course's first, unless one is named.
    (notebook_folder / FIRST.student_file).write_text("")
    alice = tmp_path / "alice.py"
    alice.write_text("")
    assert choice.chosen(None, None, [str(alice), str(notebook_folder)], BOTH).name == FIRST.name
    assert choice.chosen("scratch", None, [str(alice), str(notebook_folder)], BOTH).name == "scratch"
    assert choice.chosen(None, "scratch", [str(alice)], BOTH).name == "scratch"


def test_a_choice_that_contradicts_itself_or_the_students_file_is_refused(tmp_path):
    mine = tmp_path / "scratch.py"
    theirs = tmp_path / FIRST.student_file
    for path in (mine, theirs):
        path.write_text("")
    with pytest.raises(choice.ChoiceRefused, match=rf"scratch.py is scratch's file \(Scratch\), but the exercise chosen is {FIRST.name}"):
        choice.chosen(FIRST.name, None, [str(mine)], BOTH)
    with pytest.raises(choice.ChoiceRefused, match="name different exercises"):
        choice.chosen("scratch", FIRST.name, [], BOTH)
    with pytest.raises(choice.ChoiceRefused, match="of different exercises"):
        choice.chosen(None, None, [str(mine), str(theirs)], BOTH)
    with pytest.raises(choice.ChoiceRefused, match=rf"no exercise named 'nope': this grader holds {FIRST.name} \({FIRST.title}\), scratch \(Scratch\)"):
        choice.chosen("nope", None, [], BOTH)


def test_a_process_that_grades_one_exercise_refuses_to_be_switched_to_another(monkeypatch):
    from grader import scoring

    monkeypatch.setenv(registry.CHOSEN, FIRST.name)  # restored after the test, whatever choose sets
    assert registry.choose(FIRST.name) is registry.exercise(FIRST.name)
    monkeypatch.setattr(scoring, "EXERCISE", scratch())
    with pytest.raises(registry.UnknownExercise, match=f"this process already grades scratch, not {FIRST.name}"):
        registry.choose(FIRST.name)


# --- python -m grader COMMAND, and the course file ---------------------------------------------


def test_a_command_refuses_an_unknown_exercise_named_or_in_the_course_file(tmp_path, monkeypatch, capsys):
    from grader.__main__ import main
    from grader.term import course

    monkeypatch.chdir(tmp_path)
    assert main(["stubs", "--check", "--exercise", "no_such_exercise"]) == 2
    assert f"error: no exercise named 'no_such_exercise': {registry.holding()}" in capsys.readouterr().err
    (tmp_path / "course.toml").write_text('[assignment]\nexercise = "no_such_exercise"\n')
    with pytest.raises(course.CourseError, match=r"course.toml:2: \[assignment\] exercise must be the name of an exercise \(" + re.escape(registry.holding())):
        course.load(tmp_path / "course.toml")
    (tmp_path / "course.toml").write_text(f'[assignment]\nexercise = "{FIRST.name}"\n')
    assert course.load(tmp_path / "course.toml").get("assignment", "exercise") == FIRST.name


# --- the sandbox --------------------------------------------------------------------------


def test_the_workers_environment_carries_the_exercise_chosen():
    from grader.sandbox import processes

    assert processes.WorkerProcess._environment("/x", "/tmp")[registry.CHOSEN] == registry.exercise().name
    assert registry.CHOSEN in processes.START_ENVIRONMENT  # the warm worker imports the operations before it is started


# --- results, the batch, the grade trail, the class file ------------------------------------


def test_a_result_of_another_exercise_is_graded_again_and_said(tmp_path, caplog):
    from grader.batch import run

    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "alice.json").write_text(json.dumps({"exercise": "scratch", "content_hash": "h", "tests": []}))
    with caplog.at_level(logging.WARNING, logger=run.log.name):
        assert run._has_result(tmp_path, "alice", "h") is False
    assert f"alice: its result is of the exercise 'scratch', not {FIRST.name}: graded again" in caplog.text


def test_the_grade_trail_and_the_class_file_refuse_a_result_of_another_exercise(tmp_path):
    from grader.class_view import class_results
    from grader.term import grade_trail

    with pytest.raises(grade_trail.TrailError, match=f"field 'exercise' is 'scratch', but the grader grades {FIRST.name}"):
        grade_trail.graded({"exercise": "scratch", "tests": [{"name": "test_x", "group": "secret"}]})
    with pytest.raises(ValueError, match=f"the class was graded for the exercise 'scratch', not {FIRST.name}"):
        class_results.checked({"exercise": "scratch", "submissions": {}}, tmp_path / "results.json")


@pytest.mark.slow
def test_a_batch_for_another_exercise_grades_everyone_again_and_its_report_says_which(tmp_path):
    """Once, a batch run again for another exercise kept the first one's results."""
    submissions, out = tmp_path / "submissions", tmp_path / "out"
    submissions.mkdir()
    (submissions / "alice.py").write_text((REPO_ROOT / "solutions" / SECOND.solution).read_text())
    first = command_in(tmp_path, "batch", str(submissions), "--out", str(out), "--exercise", SECOND.name, "--grading-seed", "5", "--quiet")
    assert first.returncode == 0, first.stdout + first.stderr
    document = json.loads((out / "results.json").read_text())
    assert document["exercise"] == document["submissions"]["alice"]["exercise"] == SECOND.name
    assert document["submissions"]["alice"]["score"] == document["submissions"]["alice"]["max_score"] > 0
    assert f"{SECOND.title} (<code>{SECOND.name}</code>)" in (out / "report.html").read_text()
    again = command_in(tmp_path, "batch", str(submissions), "--out", str(out), "--exercise", FIRST.name, "--grading-seed", "5", "--quiet")
    said = again.stdout + again.stderr + (out / "batch.log").read_text()
    assert f"alice: its result is of the exercise '{SECOND.name}', not {FIRST.name}: graded again" in said, said
    regraded = json.loads((out / "results.json").read_text())["submissions"]["alice"]
    assert regraded["exercise"] == FIRST.name and set(regraded["groups"]) <= {group.name for group in FIRST.groups}
    # The report of the first exercise's results refuses to be read as the second's.
    refused = command_in(tmp_path, "report", str(out), "--exercise", SECOND.name)
    assert refused.returncode == 2 and f"run the command with --exercise {FIRST.name}" in refused.stderr


def test_a_result_records_its_exercise(tmp_path):
    from grader import results
    from grader.scoring import SubmissionResult

    results.write_submission_result(tmp_path, SubmissionResult("alice"), grading_seed=1, sandbox=("none", ""), source=None)
    assert json.loads(results.result_file(tmp_path, "alice").read_text())["exercise"] == FIRST.name
    results.write_class_results(tmp_path / "class.json", {}, 1, ("none", ""))
    assert json.loads((tmp_path / "class.json").read_text())["exercise"] == FIRST.name


def test_the_class_report_shows_the_exercises_title():
    from grader.class_view import report

    assert f"<dt>exercise</dt><dd>{FIRST.title} (<code>{FIRST.name}</code>)</dd>" in report._header({}, "HW3", "today")


# --- hand-outs and platforms ----------------------------------------------------------------


def test_the_release_leaves_the_other_exercises_files_home(monkeypatch):
    from grader.handout import release

    other = scratch()
    monkeypatch.setattr(registry, "names", lambda: (FIRST.name, "scratch"))
    monkeypatch.setattr(registry, "exercise", lambda name=None: other if name in (None, "scratch") else FIRST)
    ignored = release._never_copied_for(other)(str(REPO_ROOT / "exercises"), [FIRST.student_file, FIRST.notebook, "scratch.py", "x.pyc"])
    assert ignored == {FIRST.student_file, FIRST.notebook, "x.pyc"}


@pytest.mark.slow
def test_a_release_of_the_second_exercise_holds_its_files_and_grades_it_when_nothing_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv(registry.CHOSEN, raising=False)
    wheel_address = "https://example.org/course/grader.whl"
    built = command_in(tmp_path, "release", str(tmp_path / "release"), "--exercise", SECOND.name, "--install-from", wheel_address)
    assert built.returncode == 0, built.stdout + built.stderr
    handed = {path.name for path in (tmp_path / "release" / "exercises").iterdir()}
    # Its own files only: not the first's, nor the first's focused example and training script.
    assert handed == set(SECOND.handed_out) and not set(FIRST.handed_out) & handed, handed
    run = grade([], tmp_path, cwd=tmp_path / "release")  # pytest grader: exercises/, the stub
    (result,) = run.results.values()
    assert set(result["groups"]) == {group.name for group in SECOND.groups if not group.hidden} and result["score"] == 0
    # The README speaks of this exercise: its title, lesson and conventions, its own points, no
    # focused example it does not have, no reference examples it does not ship.
    readme = (tmp_path / "release" / "README.md").read_text()
    visible, total = map(int, re.search(r"\((\d+) of the (\d+) points\)", readme).groups())
    hidden = int(re.search(r"The remaining (\d+) points", readme).group(1))
    assert visible == result["max_score"] and total == visible + hidden, readme
    assert readme.startswith(f"# {SECOND.title}: your exercise") and f"`exercises/{SECOND.lesson}`" in readme
    assert f"({SECOND.conventions})" in readme and FIRST.conventions not in readme
    assert f"exercises/{SECOND.example.file}" in readme and SECOND.example.shows in readme
    assert f"exercises/{FIRST.example.file}`" not in readme and "reference_examples.json" not in readme and FIRST.lesson not in readme
    said = subprocess.run(["make", "-n", "example"], cwd=tmp_path / "release", capture_output=True, text=True, timeout=60)
    assert f"exercises/{SECOND.example.file}" in said.stdout, said.stdout + said.stderr
    # Its notebook installs its own grader, under its own name: a kernel holding the first
    # exercise's grader does not take it for this one's.
    setup = (tmp_path / "release" / "exercises" / SECOND.notebook).read_text()
    assert repr(SECOND.distribution_name) in setup.replace('\\"', "'").replace('"', "'") and FIRST.distribution_name not in setup


@pytest.mark.slow
def test_the_platforms_hand_outs_of_the_second_exercise_speak_of_it(tmp_path):
    built = command_in(tmp_path, "prairielearn", str(tmp_path / "pl"), "--exercise", SECOND.name)
    assert built.returncode == 0, built.stdout + built.stderr
    info = json.loads((tmp_path / "pl" / "questions" / SECOND.name / "info.json").read_text())
    assert (info["title"], info["topic"]) == (SECOND.title, SECOND.topic)
    built = command_in(tmp_path, "classroom50", str(tmp_path / "c50"), "--exercise", SECOND.name)
    assert built.returncode == 0, built.stdout + built.stderr
    steps = (tmp_path / "c50" / "README.md").read_text()
    slug = SECOND.name.replace("_", "-")
    assert f'{slug} --name "{SECOND.title}"' in steps and (tmp_path / "c50" / "autograders" / slug).is_dir()
    assert FIRST.title not in steps and FIRST.title not in (tmp_path / "c50" / "template" / "README.md").read_text()


def test_the_release_makefile_of_an_exercise_without_a_focused_example_says_so(tmp_path):
    from grader.handout import release

    (tmp_path / "Makefile").write_text(release.student_makefile(scratch()))
    said = subprocess.run(["make", "-n", "example"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "has no focused example" in said.stdout and "python" not in said.stdout.split("focused example")[-1], said.stdout
    (tmp_path / "Makefile").write_text(release.student_makefile(FIRST))
    said = subprocess.run(["make", "-n", "example"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert f"exercises/{FIRST.example.file}" in said.stdout and "no focused example" not in said.stdout, said.stdout


def test_each_exercise_has_a_distribution_name_of_its_own_and_the_first_keeps_its_published_one():
    names = {registry.exercise(name).distribution_name for name in registry.course_order()}
    assert len(names) == len(registry.course_order())
    assert FIRST.distribution_name == "multi-head-attention-grader"  # published wheels keep their name


def test_a_platforms_run_script_grades_the_exercise_it_was_built_for(tmp_path, monkeypatch):
    from grader.platforms import autograder, classroom50_autograder

    script = autograder.entrypoint("# test", root_variable="ROOT", default_root="/r", code_folder="c", module="m")
    assert f"\nexport {registry.CHOSEN}={FIRST.name}\nexec " in script
    (tmp_path / classroom50_autograder.SETTINGS_FILE).write_text(json.dumps({"hidden": "total", "exercise": FIRST.name}))
    monkeypatch.setattr(classroom50_autograder, "BUNDLE", tmp_path)
    assert classroom50_autograder.built_for() == FIRST.name
    assert classroom50_autograder.EXERCISE_VARIABLE == registry.CHOSEN
