"""A Canvas term end to end (tests/canvas_term.py): the download zip as it comes, the gradebook CSV
as Canvas exports it, a course file and its files naming students by login, SIS id, Canvas id, roster
name, Canvas's name in files and a file's stem. Every name applies; one that matches nobody, or two
students, stops `course check` and the batch with its file and line and nothing written; two attempts
export the later; students are counted and named; a resubmission in a later download moves the old
result aside, said; a corrected file regrades one student, said, never silently restored."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest

import tiers

import canvas_term
from grading import command_in as run

# As in tests/test_course_batch.py: honest code must not time out on a loaded machine.
LOAD_PROOF = ("--call-timeout", "60")


def batch(folder: Path, *extra: str) -> subprocess.CompletedProcess:
    return run(folder, "batch", "submissions.zip", "--out", "out", "--quiet", "--jobs", "2", *LOAD_PROOF, *extra)


def exported(folder: Path) -> list[str]:
    finished = run(folder, "export", "out", "--out", "grades.csv")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    with open(folder / "grades.csv", newline="", encoding="utf-8") as handle:
        return [row[-1] for row in list(csv.reader(handle))[2:]]


def final_score(folder: Path, name: str) -> float:
    """A student's final score (of 100) as the batch's gradebook has it."""
    return next(result["score"] for result in results(folder).values() if result["student"]["name"] == name)


def results(folder: Path) -> dict:
    return json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))["submissions"]


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # a Canvas term graded by the batch
def term(tmp_path_factory):
    folder = canvas_term.write_term(tmp_path_factory.mktemp("canvas-term") / "course")
    first = batch(folder)
    assert first.returncode == 0, first.stdout + first.stderr
    return folder, first


def copy_of(term, tmp_path: Path) -> Path:
    """The graded term, in a folder of the test's own (later runs change OUT)."""
    folder, _ = term
    return Path(shutil.copytree(folder, tmp_path / "course"))


# --- every name an instructor used applies -------------------------------------------------------


def test_every_name_the_instructor_used_reaches_the_exported_points(term):
    folder, _ = term
    assert exported(folder) == canvas_term.EXPORTED


def test_each_students_trail_says_which_rule_applied(term):
    folder, _ = term
    by_name = {result["student"]["name"]: result for result in results(folder).values()}
    assert "extension" in by_name["Doe, Jane"]["late"]["note"] and by_name["Doe, Jane"]["late"]["penalty"] == 0
    assert by_name["Smith, Ann"]["late"]["days_late"] == 2 and by_name["Smith, Ann"]["late"]["source"] == "submitted_at"
    assert "unknown delay" in by_name["O'Neil, Sam"]["late"]["note"]  # Canvas's marker alone
    assert by_name["O'Neil, Sam"]["late"]["note"].endswith("submitted_at.csv has no row for this student")  # not "give one"
    assert by_name["Ng, Eve"]["override"] == {"score": 55, "reason": "presented the work in office hours"}
    assert by_name["Lee, Kim"]["comment"] == "Your first upload did not parse; the second is graded."
    assert "override" not in by_name["Lee, Kim"] and by_name["Lee, Kim"]["score"] == 100


def test_a_name_for_a_student_without_a_submission_is_said_not_applied(term):
    folder, first = term
    line = f"NOT APPLIED: {folder / 'course.toml'}:16: extension for '123461': Roe, Bob has no submission"
    assert line in first.stdout.splitlines()


def test_the_feedback_pages_are_titled_with_the_roster_names(term):
    folder, _ = term
    page = (folder / "out" / "feedback" / f"{canvas_term.EVE_STEM}.md").read_text(encoding="utf-8")
    assert page.startswith("# Feedback for Ng, Eve\n")
    html_page = (folder / "out" / "feedback" / f"{canvas_term.EVE_STEM}.html").read_text(encoding="utf-8")
    assert "<title>Feedback for Ng, Eve</title>" in html_page


def test_the_export_and_the_report_refuse_a_name_the_batch_would_refuse(term, tmp_path):
    """They derive every final score again, resolving the course's names as the batch does: a row
    added since the batch that matches nobody on the roster stops them, with its file and line."""
    folder = copy_of(term, tmp_path)
    (folder / "grades.csv").unlink(missing_ok=True)  # another test's export
    with open(folder / "overrides.csv", "a", encoding="utf-8") as handle:
        handle.write("jdoe2,90,a typo for jdoe\n")
    for command in (("export", "out", "--out", "grades.csv"), ("report", "out")):
        finished = run(folder, *command)
        assert finished.returncode == 2, finished.stdout + finished.stderr
        assert "overrides.csv:4: override for 'jdoe2' matches no student on the roster" in finished.stderr
    assert not (folder / "grades.csv").exists()


# --- one student, one entry, counted and named as students --------------------------------------


def test_the_summary_counts_students_and_names_them(term):
    folder, first = term
    lines = first.stdout.splitlines()
    assert lines[0].startswith("5 students graded (5 in this run)")  # six files, five students
    slowest = next(line for line in lines if line.startswith("slowest: "))
    assert "_" not in slowest and any(name in slowest for name in ("Doe, Jane", "Smith, Ann", "Lee, Kim"))


def test_the_later_attempt_is_graded_and_the_earlier_superseded_and_said(term):
    folder, _ = term
    kim = [result for result in results(folder).values() if result["student"]["name"] == "Lee, Kim"]
    assert [result["graded_from"] for result in kim] == ["leekim_123458_7890412_multi_head_attention-1.py"]
    assert "superseded: leekim_123458_7890300_multi_head_attention.py (an earlier attempt: Canvas's attachment 7890300" in kim[0]["intake_note"]
    log = (folder / "out" / "batch.log").read_text(encoding="utf-8")
    assert "superseded: leekim_123458_7890300_multi_head_attention.py" in log
    page = (folder / "out" / "report.html").read_text(encoding="utf-8")
    assert "superseded: leekim_123458_7890300_multi_head_attention.py" in page


def test_the_report_rows_show_the_roster_names_not_the_file_stems(term):
    folder, _ = term
    page = (folder / "out" / "report.html").read_text(encoding="utf-8")
    names = [line.split(">", 1)[1].split("<", 1)[0] for line in page.split('<td class="student text name')[1:]]
    assert names == ["Doe, Jane", "Lee, Kim", "Ng, Eve", "O&#x27;Neil, Sam", "Smith, Ann"]
    assert '<span id="graded-count">5</span>' in page


# --- a name that matches nobody, or two students: said with its line, nothing written ----------------


BAD_NAMES = {
    "course.toml": ("[extensions]\n", '[extensions]\njdoee = "2026-12-08T23:59:00-05:00"\n', ":15: extension for 'jdoee' matches no student on the roster"),
    "overrides.csv": ("student,score,reason\n", "student,score,reason\n2024009,40,typo\n", ":2: override for '2024009' matches no student"),
    "submitted_at.csv": ("jdoe,", "123457,2026-12-06T10:00:00-05:00\njdoe,", ":2: submission time for '123457'"),
}


@pytest.mark.parametrize("name", BAD_NAMES)
def test_course_check_and_the_batch_name_a_bad_key_with_its_file_and_line_and_write_nothing(tmp_path, name):
    folder = canvas_term.write_term(tmp_path / "course")
    old, new, said = BAD_NAMES[name]
    path = folder / name
    path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    if name == "submitted_at.csv":  # Ann twice: by her Canvas id and by her SIS id
        said = ":4: a second submission time for Smith, Ann ('2024002'; the first is '123457' on line 2)"
    check = run(folder, "course", "check")
    assert check.returncode == 2 and f"{name}{said}" in check.stderr, check.stderr
    refused = batch(folder)
    assert refused.returncode == 2 and f"{name}{said}" in refused.stderr, refused.stderr
    assert "nothing graded, nothing written" in refused.stderr
    assert not (folder / "out").exists() and "grading_seed" not in (folder / "course.toml").read_text(encoding="utf-8")


def test_a_name_two_students_share_is_refused_naming_both(tmp_path):
    folder = canvas_term.write_term(tmp_path / "course")
    # Bob's SIS User ID is also Kim's Canvas id in this copy of the gradebook.
    (folder / "gradebook.csv").write_text(canvas_term.ROSTER.replace("2024006", "123458"), encoding="utf-8", newline="")
    (folder / "overrides.csv").write_text("student,score,reason\n123458,40,for Kim?\n", encoding="utf-8")
    check = run(folder, "course", "check")
    assert check.returncode == 2
    assert "overrides.csv:2: override for '123458' matches 2 students: Lee, Kim (as ID); Roe, Bob (as SIS User ID)" in check.stderr


def test_course_check_lists_whom_each_name_resolves_to(tmp_path):
    folder = canvas_term.write_term(tmp_path / "course")
    check = run(folder, "course", "check")
    assert check.returncode == 0, check.stderr
    lines = check.stdout.splitlines()
    assert "course.toml:15: extension for doejane: Doe, Jane" in lines
    assert f"overrides.csv:2: override for {canvas_term.EVE_STEM}: Ng, Eve" in lines
    assert "submitted_at.csv:3: submission time for 2024002: Smith, Ann" in lines


# --- a later download, a corrected file ---------------------------------------------------------


def test_a_resubmission_in_a_later_download_is_graded_and_the_old_result_moved_aside_and_said(term, tmp_path):
    folder = copy_of(term, tmp_path)
    download = {name: text for name, text in canvas_term.DOWNLOAD.items() if not name.startswith("oneilsam")}
    download["oneilsam_LATE_123459_7890999_multi_head_attention-1.py"] = canvas_term.SOLUTION  # Sam uploaded again, fixed
    canvas_term.write_download(folder / "submissions.zip", download)
    again = batch(folder)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.startswith("5 students graded (1 in this run)")
    old = "oneilsam_LATE_123459_7890500_multi_head_attention"
    moved = next(line for line in again.stdout.splitlines() if "moved to" in line)
    assert f"results/{old}.json" in moved and f"feedback/{old}.md" in moved
    assert (folder / "out" / "superseded" / "results" / f"{old}.json").is_file()
    assert not (folder / "out" / "results" / f"{old}.json").exists() and not (folder / "out" / "feedback" / f"{old}.md").exists()
    assert final_score(folder, "O'Neil, Sam") == 90  # 100, less Canvas's one unknown day


def test_a_corrected_file_regrades_one_student_a_hand_edit_in_unpacked_is_named_and_the_file_stays(term, tmp_path):
    folder = copy_of(term, tmp_path)
    sam = "oneilsam_LATE_123459_7890500_multi_head_attention.py"
    (folder / "out" / "unpacked" / sam).write_text(canvas_term.SOLUTION, encoding="utf-8")  # the old way: silently undone
    (tmp_path / "fixed.py").write_text(canvas_term.SOLUTION, encoding="utf-8")
    regraded = batch(folder, "--only", f"soneil={tmp_path / 'fixed.py'}")
    assert regraded.returncode == 0, regraded.stdout + regraded.stderr
    assert f"{sam} in {folder / 'out' / 'unpacked'} differed from the class zip and was rewritten from it" in regraded.stderr
    assert "fixed.py kept as" in regraded.stderr and "graded in place of " + sam in regraded.stderr
    assert regraded.stdout.startswith("5 students graded (1 in this run)")
    assert final_score(folder, "O'Neil, Sam") == 90  # 100, less Canvas's one unknown day
    rerun = batch(folder)  # the replacement stays, and each run says so
    assert rerun.returncode == 0 and "graded from replacements/" in rerun.stderr and final_score(folder, "O'Neil, Sam") == 90


def test_a_replacement_is_kept_in_out_replaced_by_a_later_one_and_dropped_by_an_empty_file(tmp_path):
    from grader.batch import class_intake
    from grader.term import course_inputs

    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.py").write_text(canvas_term.STUB, encoding="utf-8")
    out = tmp_path / "out"
    given = tmp_path / "fixed.py"
    given.write_text(canvas_term.SOLUTION, encoding="utf-8")
    inputs = course_inputs.read(None)
    said = class_intake.save_replacements(out, class_intake.prepare(folder, inputs, [f"alice={given}"]))
    kept = class_intake.replacement_of(out, "alice.py", class_intake.read_replacements(out))
    assert kept == out / "replacements" / "alice" / "fixed.py" and kept.read_text() == canvas_term.SOLUTION
    assert said == [f"alice: {given} kept as {kept}; graded in place of alice.py from now on (--only alice= drops it)"]
    said = class_intake.save_replacements(out, class_intake.prepare(folder, inputs, [f"alice={given}"]))
    assert "(it replaces the earlier replacement replacements/alice/fixed.py)" in said[0]
    said = class_intake.save_replacements(out, class_intake.prepare(folder, inputs, ["alice="]))
    assert said == ["alice: the replacement replacements/alice/fixed.py dropped; graded from alice.py again"]
    assert class_intake.replacement_of(out, "alice.py", class_intake.read_replacements(out)) is None and not kept.exists()


# --- every bad course value: its file, line and key; exit 2; nothing written -------------------------------


@pytest.mark.parametrize(
    "old, new, said",
    [
        ("penalty_per_day = 10", "penalty_per_day = -50", ":9: [late] penalty_per_day must be a number from 0 to 100"),
        ("penalty_per_day = 10", "penalty_per_day = nan", ":9: [late] penalty_per_day must be a number from 0 to 100"),
        ("grace_minutes = 15", "grace_minutes = inf", ":11: [late] grace_minutes must be a number from 0 to 10080"),
        ("max_days = 3", "max_days = -2", ":10: [late] max_days must be a whole number from 0 to 365"),
        ("unknown_delay_days = 1", "unknown_delay_days = 1.5", ":12: [late] unknown_delay_days must be a whole number"),
        ("points = 20", "points = -20", ":5: [assignment] points must be a number above 0"),
    ],
)
def test_a_bad_course_value_stops_the_batch_naming_its_file_line_and_key_writing_nothing(tmp_path, old, new, said):
    folder = canvas_term.write_term(tmp_path / "course")
    (folder / "course.toml").write_text(canvas_term.COURSE.replace(old, new, 1), encoding="utf-8")
    refused = batch(folder)
    assert refused.returncode == 2 and f"course.toml{said}" in refused.stderr and "Traceback" not in refused.stderr
    assert not (folder / "out").exists()
    check = run(folder, "course", "check")
    assert check.returncode == 2 and f"course.toml{said}" in check.stderr


def test_results_of_entries_no_longer_graded_are_moved_aside_and_each_named_a_second_time_too(tmp_path):
    from grader.batch import class_intake

    for folder, name in (("results", "old.json"), ("feedback", "old.md"), ("feedback", "old.html"), ("results", "kept.json"), ("graded", "old.py")):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / name).write_text("{}", encoding="utf-8")
    moved = class_intake.set_aside_gone(tmp_path, ["kept"])
    assert moved == ["results/old.json", "feedback/old.html", "feedback/old.md", "graded/old.py"]
    assert (tmp_path / "results" / "kept.json").is_file() and (tmp_path / "superseded" / "results" / "old.json").is_file()
    (tmp_path / "results" / "old.json").write_text("{}", encoding="utf-8")  # graded again, then gone again
    assert class_intake.set_aside_gone(tmp_path, ["kept"]) == ["results/old.json (in place of the copy an earlier run set aside)"]


# --- the course's second exercise, named by the course file --------------------------------------


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # a second Canvas term graded by the batch
def second_term(tmp_path_factory):
    folder = canvas_term.write_second_term(tmp_path_factory.mktemp("canvas-second-term") / "course")
    finished = batch(folder)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return folder


def test_the_second_exercise_exports_its_reference_full_and_its_stub_zero_to_canvas(second_term):
    assert exported(second_term) == canvas_term.SECOND_EXPORTED
    with open(second_term / "grades.csv", newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert header[-1] == canvas_term.SECOND_ASSIGNMENT  # Canvas matches the column by its title and id


def test_the_second_exercises_results_and_feedback_name_it_and_its_own_groups(second_term):
    from grader.seam import registry

    declared = registry.exercise(canvas_term.SECOND_EXERCISE)
    graded = json.loads((second_term / "out" / "results.json").read_text(encoding="utf-8"))
    assert graded["exercise"] == declared.name
    by_name = {result["student"]["name"]: result for result in graded["submissions"].values()}
    assert {name: result["exercise"] for name, result in by_name.items()} == {"Doe, Jane": declared.name, "Ng, Eve": declared.name}
    total = by_name["Doe, Jane"]["max_score"]
    assert (by_name["Doe, Jane"]["score"], by_name["Ng, Eve"]["score"]) == (total, 0)
    assert set(by_name["Doe, Jane"]["groups"]) == set(declared.group_titles)
    for stem, result in ((Path(name).stem, result) for name, result in graded["submissions"].items()):
        page = (second_term / "out" / "feedback" / f"{stem}.md").read_text(encoding="utf-8")
        assert f"**Score: {result['score']}/{total}**" in page
        for group, title in declared.group_titles.items():
            points = result["groups"][group]
            assert f"| {title} | {points['earned']}/{points['max']} |" in page, title
    report = (second_term / "out" / "report.html").read_text(encoding="utf-8")
    assert all(title in report for title in declared.group_titles.values())
