"""Moodle as well as Canvas (tests/moodle_term.py builds the files as Moodle writes them): the
download in both of its settings, the grading worksheet as the roster with its times and
extensions, and the uploads read back as Moodle's import code reads them (the worksheet as
mod/assign/feedback/offline/importgradeslib.php and locallib.php's process_import_grades take it,
the feedback zip as mod/assign/feedback/file/importziplib.php finds each file's student)."""

from __future__ import annotations

import csv
import datetime
import io
import json
import re
import shutil
import subprocess
import zipfile
import zoneinfo
from pathlib import Path

import pytest

import moodle_term
import tiers
from grader.__main__ import main
from grader.batch import class_zip, intake
from grader.lms import choice
from grader.term.lms_files import moodle_names, moodle_worksheet
from grader.term import course, course_inputs, identity
from grading import command_in as run
from handmade_class import document, write_out

BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")
LOAD_PROOF = ("--call-timeout", "60")


# --- Moodle's import code, as an oracle -------------------------------------------------------------


def moodle_upload_reads(text: str, maximum: float) -> dict[str, tuple[float, str]]:
    """participant id -> (grade, feedback comment) for every row Moodle's "Upload grading worksheet"
    would apply: lib/csvlib.class.php load_csv_content (byte-order mark dropped, newlines made \\n,
    the content trimmed, a row of another width refuses the file), importgradeslib.php init (columns
    by their English headers; all three required) and next (the id after "Participant "), and
    process_import_grades' skips (no grade, below 0, above the maximum)."""
    content = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").strip()
    rows = [row for row in csv.reader(io.StringIO(content)) if row]
    header = rows[0]
    assert all(len(row) == len(header) for row in rows), "csvweirdcolumns: Moodle refuses the whole file"
    id_index, grade_index, modified_index = (header.index(name) for name in ("Identifier", "Grade", "Last modified (grade)"))
    comment_index = header.index("Feedback comments") if "Feedback comments" in header else None
    applied = {}
    for row in rows[1:]:
        participant = row[id_index][len("Participant "):]
        if row[grade_index] == "":
            continue
        grade = float(row[grade_index])
        if grade < 0 or grade > maximum:
            continue  # "Out of range": skipped without a word
        applied[participant] = (grade, row[comment_index] if comment_index is not None else "")
        assert row[modified_index] == "-"  # as downloaded: the stale check compares it with Moodle's own
    return applied


def moodle_feedback_import_finds(names: list[str], participants: set[str], plugins: set[str]) -> dict[str, str]:
    """participant id -> file name for each member importziplib.php's is_valid_filename_for_import takes."""
    found = {}
    for name in names:
        parts = name.split("/")
        if parts[-1].startswith((".", "~")):
            continue
        while parts:
            pieces = parts.pop(0).split("_", 4)
            if len(pieces) < 4 or not pieces[1].isdigit() or pieces[1] not in participants:
                continue
            if f"{pieces[2]}_{pieces[3]}" not in plugins:
                continue
            found[pieces[1]] = "/".join([pieces[4] if len(pieces) == 5 else "", *parts])
            break
    return found


# --- the download's names ----------------------------------------------------------------------------


@pytest.mark.parametrize("folders", [True, False], ids=["in folders", "flat"])
def test_each_student_of_the_download_is_read_by_participant_id_in_both_settings(folders):
    for member in moodle_term.download(folders):
        reading = moodle_names.parse_moodle_name(member.split("/")[0])
        assert reading is not None and reading.user_id.startswith("29315") and reading.plugin == "assignsubmission_file"
    aoife = next(member for member in moodle_term.download(folders) if member.startswith("Aoife"))
    assert aoife.startswith("Aoife OConnell_2931501_")  # clean_filename dropped the apostrophe


def test_a_flat_download_is_unpacked_into_the_folders_the_other_setting_makes(tmp_path):
    flat = moodle_term.write_download(tmp_path / "flat.zip", moodle_term.download(folders=False))
    unpacked = class_zip.unpack_class_zip(flat, tmp_path / "out")
    folders = sorted(path.name for path in unpacked.folder.iterdir())
    assert folders == sorted({member.split("/")[0] for member in moodle_term.download(folders=True)})
    assert sorted(path.name for path in (unpacked.folder / "Lee Park_2931505_assignsubmission_file").iterdir()) == [
        "helpers.py", "multi_head_attention.py"]
    assert moodle_names.as_folder(("Jane Doe_12_assignsubmission_file_", "x.py")) == ("Jane Doe_12_assignsubmission_file", "x.py")


def test_the_file_a_student_named_differently_is_found_by_content_in_moodles_folder(tmp_path):
    rita = tmp_path / "Rita Moreno_2931510_assignsubmission_file"
    rita.mkdir()
    (rita / "multi_head_attention (1).py").write_text(moodle_term.SOLUTION, encoding="utf-8")
    (rita / "notes.py").write_text(moodle_term.HELPERS, encoding="utf-8")
    entry = intake.stage_entry(rita, tmp_path / "staging")
    assert entry.problem == "" and entry.source_path.read_text(encoding="utf-8") == moodle_term.SOLUTION
    (rita / "multi_head_attention (1).py").unlink()
    refused = intake.stage_entry(rita, tmp_path / "staging")
    assert refused.problem == f"{rita.name}/ holds none of the exercise's work (notes.py)."


# --- the worksheet as the roster --------------------------------------------------------------------


def worksheet_file(tmp_path: Path, students=moodle_term.STUDENTS) -> Path:
    path = tmp_path / "worksheet.csv"
    path.write_text(moodle_term.worksheet(students), encoding="utf-8", newline="")
    return path


def test_the_worksheet_is_recognised_as_moodles_roster_and_said(tmp_path):
    lms, chosen = choice.choose(None, worksheet_file(tmp_path))
    assert lms.kind == "moodle" and chosen.said() == "LMS: Moodle (recognised from worksheet.csv's columns)"


def test_every_name_of_the_worksheet_resolves_and_two_students_of_one_name_are_kept_apart(tmp_path):
    rows = choice.LMSS["moodle"].read_roster(worksheet_file(tmp_path))
    stems = [member.split("/")[0] for member in moodle_term.download()]
    names = identity.Identities(rows, stems)
    for key in ("Participant 2931501", "2931501", "aoife@uni.example", "Aoife O'Connell", "Aoife OConnell"):
        assert names.resolve(key).student.name == "Aoife O'Connell", key
    assert "matches 2 students" in names.resolve("María García").problem(True)
    marias = {names.student_of(stem).key for stem in stems if stem.startswith("María")}
    assert len(marias) == 2 and all(names.student_of(stem).on_roster for stem in stems)


def test_the_worksheets_dates_are_read_in_the_courses_time_zone():
    read = moodle_worksheet.parse_date
    assert read("Friday, 17 October 2025, 9:12 PM", BERLIN) == datetime.datetime(2025, 10, 17, 21, 12, tzinfo=BERLIN)
    assert read("Friday, 17 October 2025, 9:12 PM", BERLIN).utcoffset() == datetime.timedelta(hours=2)
    assert read("Monday, 3 November 2025, 12:05 AM", BERLIN).isoformat() == "2025-11-03T00:05:00+01:00"
    assert read("Friday, October 17, 2025, 9:12 PM", BERLIN).hour == 21  # en_us: the month first
    assert read("-", BERLIN) is None


@pytest.mark.parametrize("text, said", [
    ("Freitag, 17. Oktober 2025, 21:12", "is not a date as Moodle writes it in English"),
    ("Thursday, 17 October 2025, 9:12 PM", "2025-10-17 is a Friday, not a Thursday"),
])
def test_a_date_moodle_did_not_write_in_english_is_refused_by_name(text, said):
    with pytest.raises(moodle_worksheet.DateError, match=said):
        moodle_worksheet.parse_date(text, BERLIN)


def course_with(tmp_path: Path, text: str = moodle_term.COURSE) -> course.Course:
    (tmp_path / "course.toml").write_text(text, encoding="utf-8")
    (tmp_path / "overrides.csv").write_text(moodle_term.OVERRIDES, encoding="utf-8")
    worksheet_file(tmp_path)
    return course.load(tmp_path / "course.toml")


def test_the_worksheets_times_and_extensions_apply_and_the_course_file_wins(tmp_path):
    stems = [member.split("/")[0] for member in moodle_term.download()]
    emma = next(stem for stem in stems if stem.startswith("Emma"))
    adjustments = course_inputs.adjustments(course_with(tmp_path), stems)
    student = adjustments.student(emma)
    assert adjustments.deadline(student) == (datetime.datetime(2025, 10, 19, 23, 59, tzinfo=BERLIN), True)
    assert adjustments.submitted_at(student, emma) == datetime.datetime(2025, 10, 18, 10, 30, tzinfo=BERLIN)
    later = moodle_term.COURSE.replace("[files]", '[extensions]\n"estone@uni.example" = "2025-10-25T23:59:00+02:00"\n\n[files]')
    adjustments = course_inputs.adjustments(course_with(tmp_path, later), stems)
    assert adjustments.deadline(adjustments.student(emma))[0].day == 25


def test_a_worksheet_with_dates_and_no_time_zone_is_refused_naming_the_key(tmp_path):
    inputs = course_inputs.read(course_with(tmp_path, moodle_term.COURSE.replace('timezone = "Europe/Berlin"\n', "")))
    assert any("set [assignment] timezone" in problem for problem in inputs.problems)


@pytest.mark.parametrize("line, said", [
    ('timezone = "Berlin"', '[assignment] timezone must be a time zone\'s IANA name'),
    ('kind = "blackboard"', '[lms] kind must be "canvas" or "moodle"'),
])
def test_a_bad_lms_or_time_zone_in_the_course_file_is_refused(tmp_path, line, said):
    text = moodle_term.COURSE.replace('timezone = "Europe/Berlin"', line) if "timezone" in line else moodle_term.COURSE.replace('kind = "moodle"', line)
    with pytest.raises(course.CourseError, match=re.escape(said)):
        course_with(tmp_path, text)


# --- the export: the worksheet and the feedback zip, read back as Moodle reads them -------------------


@pytest.fixture
def graded(tmp_path):
    """An OUT whose results name Moodle's entries (the folders of the download), and the worksheet."""
    documents = {}
    for participant, name, *_, files in moodle_term.STUDENTS:
        if files:
            stem = f"{moodle_term.prefix(participant, name)}_assignsubmission_file"
            documents[stem] = document(stem, 2, participant != "2931503") | {"graded_from": stem}
    out = write_out(tmp_path / "out", documents)
    return out, worksheet_file(tmp_path)


def export(out: Path, roster: Path, *options: str) -> int:
    return main(["export", str(out), "--roster", str(roster), "--out", str(out.parent / "grades.csv"), *options])


def test_the_exported_worksheet_is_taken_by_moodles_upload_for_every_graded_student(graded, capsys):
    out, roster = graded
    assert export(out, roster, "--feedback-zip", str(out.parent / "feedback.zip")) == 0
    said = capsys.readouterr().out
    assert "LMS: Moodle (recognised from worksheet.csv's columns)" in said
    applied = moodle_upload_reads((out.parent / "grades.csv").read_text(encoding="utf-8"), 20.0)
    graded_participants = {participant for participant, *_, files in moodle_term.STUDENTS if files}
    assert set(applied) == graded_participants  # Tom, who handed nothing in, is left as he was
    assert applied["2931501"][0] == 16.0 and applied["2931503"][0] == 8.0  # 4 of 5, 2 of 5: of 20
    assert applied["2931501"][1] == "Autograder: raw score 4 of 5; final score 4 of 5, 16 of 20 here."
    with zipfile.ZipFile(out.parent / "feedback.zip") as archive:
        names = archive.namelist()
    found = moodle_feedback_import_finds(names, graded_participants | {"2931504"}, {"assignfeedback_file", "assignsubmission_file"})
    assert set(found) == graded_participants and set(found.values()) == {"autograder-feedback.html"}


def test_a_grade_is_never_above_moodles_maximum(graded):
    out, roster = graded
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for entry in results["submissions"].values():  # an override above the points, as the trail allows it to be noted
        entry["score"] = entry["max_score"] + 2
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
    from grader.lms.moodle import MOODLE

    rows = MOODLE.read_roster(roster)
    found = identity.match(list(results["submissions"]), rows)
    text, _ = MOODLE.write_grades(roster, found, results["submissions"], None, None)
    assert set(grade for grade, _ in moodle_upload_reads(text, 20.0).values()) == {20.0}


def test_an_export_whose_roster_matches_nobody_stops_and_says_why(graded, tmp_path, capsys):
    out, _ = graded
    stranger = worksheet_file(tmp_path / "other", [("1", "Zed Zulu", "z@x", None, None, {})]) if (tmp_path / "other").mkdir() is None else None
    assert export(out, stranger) == 2
    err = capsys.readouterr().err
    assert "none of the class's 9 submissions matches a student of" in err and "nothing written" in err
    assert not (out.parent / "grades.csv").exists()


def test_a_feedback_zip_for_no_one_stops_and_says_why(graded, capsys):
    out, roster = graded
    shutil.rmtree(out / "feedback")
    assert export(out, roster, "--feedback-zip", str(out.parent / "feedback.zip")) == 2
    err = capsys.readouterr().err
    assert "no student's feedback could go into" in err and "no feedback page (OUT/feedback)" in err
    assert not (out.parent / "feedback.zip").exists()


def test_a_course_file_naming_canvas_and_a_moodle_worksheet_are_refused_naming_both(tmp_path):
    stated = course_with(tmp_path, moodle_term.COURSE.replace('kind = "moodle"', 'kind = "canvas"'))
    with pytest.raises(ValueError, match="kind = 'canvas', but the roster .* is Moodle's"):
        choice.choose(stated, tmp_path / "worksheet.csv")


# --- a whole Moodle term, from its download to its gradebook ------------------------------------------


@pytest.fixture(scope="module", params=[True, False], ids=["in folders", "flat"])
@tiers.slow_tier("slow")  # a Moodle term graded by the batch
def term(request, tmp_path_factory):
    folder = moodle_term.write_term(tmp_path_factory.mktemp("moodle-term") / "course", folders=request.param)
    first = run(folder, "batch", "submissions.zip", "--out", "out", "--quiet", "--jobs", "2", *LOAD_PROOF)
    assert first.returncode == 0, first.stdout + first.stderr
    return folder, first


def test_every_students_grade_reaches_moodle_with_the_late_penalty_the_extension_and_the_override(term):
    folder, first = term
    assert first.stdout.startswith("9 students graded") and "LMS: Moodle (course.toml [lms] kind)" in first.stdout
    exported = run(folder, "export", "out", "--out", "grades.csv", "--feedback-zip", "feedback.zip")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    text = (folder / "grades.csv").read_text(encoding="utf-8")
    grades = [row["Grade"] for row in csv.DictReader(io.StringIO(text))]
    assert grades == moodle_term.EXPORTED
    applied = moodle_upload_reads(text, 20.0)
    assert "late penalty -10 (1 day late" in applied["2931507"][1]
    assert "override 55 (presented the work in office hours)" in applied["2931509"][1]
    with zipfile.ZipFile(folder / "feedback.zip") as archive:
        found = moodle_feedback_import_finds(archive.namelist(), set(applied) | {"2931504"}, {"assignfeedback_file"})
    assert set(found) == set(applied)  # every graded student gets their feedback page


def test_a_deadline_with_no_submission_time_says_whom_it_could_not_apply_to(term, tmp_path):
    folder = Path(shutil.copytree(term[0], tmp_path / "course"))
    (folder / "course.toml").write_text(moodle_term.COURSE.replace('roster = "worksheet.csv"\n', ""), encoding="utf-8")
    again = run(folder, "batch", "submissions.zip", "--out", "out", "--quiet", "--jobs", "2", *LOAD_PROOF)
    assert again.returncode == 0, again.stdout + again.stderr
    line = next(line for line in again.stdout.splitlines() if line.startswith("NO SUBMISSION TIME"))
    assert "for 9 of 9 graded students" in line and "Larry Late (2931507)" in line
    assert "LMS: Moodle (recognised from the download's names)" in again.stdout


# --- Moodle's names by agreement, as Canvas's (grader/term/identity.py) ------------------------------


def test_a_file_whose_name_and_participant_id_disagree_gets_no_grade_and_no_feedback_file(tmp_path, capsys):
    # Eve's entry carries Aoife's participant id: Moodle's import would file its page under Aoife.
    eve = "Eve Adams_2931501_assignsubmission_file"
    stems = [eve if participant == "2931501" else f"{moodle_term.prefix(participant, name)}_assignsubmission_file"
             for participant, name, *_, files in moodle_term.STUDENTS if files]
    out = write_out(tmp_path / "out", {stem: document(stem, 2, True) | {"graded_from": stem} for stem in stems})
    assert export(out, worksheet_file(tmp_path), "--feedback-zip", str(tmp_path / "feedback.zip")) == 0
    said = capsys.readouterr().out
    assert f"{eve}: not matched to a row of the worksheet (its name part 'Eve Adams' is not the roster's for ID 2931501" in said
    applied = moodle_upload_reads((tmp_path / "grades.csv").read_text(encoding="utf-8"), 20.0)
    with zipfile.ZipFile(tmp_path / "feedback.zip") as archive:
        found = moodle_feedback_import_finds(archive.namelist(), set(applied) | {"2931501"}, {"assignfeedback_file"})
    assert "2931501" not in applied and "2931501" not in found and len(found) == 8


def test_canvas_late_marker_is_not_read_in_a_moodle_course(tmp_path):
    # Tom has no submission time in the worksheet; his flat file's name (blind-marked: no space in it)
    # reads as a Canvas name marked LATE as well.
    stem = "Participant_2931504_assignsubmission_file_LATE_1_2_multi_head_attention"
    adjustments = course_inputs.adjustments(course_with(tmp_path), [stem])
    assert adjustments.student(stem).name == "Tom Baker"
    assert adjustments.lateness(stem, stem + ".py") is None  # nothing known: not "marked late by Canvas"


def test_a_site_username_twice_as_names_are_compared_is_refused_in_the_worksheet(tmp_path):
    path = worksheet_file(tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[0] += ",Username"
    lines[1] += ",ann lee"
    lines[2] += ",ANN  LEE"
    lines[3:] = [line + "," for line in lines[3:]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="SIS Login ID 'ANN  LEE' is also on line 2"):
        choice.LMSS["moodle"].read_roster(path)
