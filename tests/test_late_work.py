"""Late work: how late, by the course's policy (per day or part of a day, grace, max_days, extensions),
from submitted_at.csv, Gradescope's submission_metadata.json or Canvas's LATE marker."""

from __future__ import annotations

import datetime
import json

import pytest

from grader.term import grade_trail, late_work
from grader.term.course import LatePolicy

DEADLINE = datetime.datetime.fromisoformat("2026-12-05T23:59:00-05:00")
POLICY = LatePolicy(penalty_per_day=10, max_days=3, grace_minutes=15, unknown_delay_days=1)


def graded(score: int = 100) -> dict:
    return {"score": score, "max_score": 100, "groups": {"shapes": {"earned": score, "max": 100}}}


def final(submitted: str | None, *, deadline=DEADLINE, marked_late=False, extended=False, score=100) -> dict:
    moment = datetime.datetime.fromisoformat(submitted) if submitted else None
    late = late_work.lateness(moment, marked_late, "submitted_at", deadline, POLICY, extended=extended)
    return graded(score) | grade_trail.adjust(score, 100, late, None).fields


def test_a_student_two_days_late_loses_twenty_points():
    result = final("2026-12-07T10:00:00-05:00")  # a day and ten hours: two days or parts of a day
    assert (result["raw_score"], result["late"]["days_late"], result["late"]["penalty"], result["score"]) == (100, 2, 20, 80)
    assert "2 days late" in result["late"]["note"]


def test_a_student_inside_an_extension_loses_nothing():
    extension = datetime.datetime.fromisoformat("2026-12-07T23:59:00-05:00")
    result = final("2026-12-07T10:00:00-05:00", deadline=extension, extended=True)
    assert result["score"] == 100 and result["late"]["penalty"] == 0 and "the extension's deadline" in result["late"]["note"]


@pytest.mark.parametrize(
    "submitted, days, score",
    [
        ("2026-12-05T23:00:00-05:00", 0, 100),  # before the deadline
        ("2026-12-06T00:10:00-05:00", 0, 100),  # within the 15 minutes of grace
        ("2026-12-06T00:20:00-05:00", 1, 90),  # past the grace: a part of a day is a day
        ("2026-12-06T05:20:00+00:00", 1, 90),  # 00:20 at -05:00: another offset, the same moment
        ("2026-12-08T23:59:00-05:00", 3, 70),  # max_days itself
        ("2026-12-09T01:00:00-05:00", 4, 0),  # past max_days: everything
    ],
)
def test_the_penalty_follows_the_policy(submitted, days, score):
    result = final(submitted)
    assert result["late"]["days_late"] == days and result["score"] == score


def test_the_penalty_never_takes_more_than_the_raw_score():
    result = final("2026-12-08T10:00:00-05:00", score=20)  # 30% of 100 points from 20
    assert result["late"]["penalty"] == 20 and result["score"] == 0


@pytest.mark.parametrize(
    "name, late",
    [
        ("smithjane_LATE_1234_5678_multi_head_attention.py", True),  # canvas-lms's content_zipper.rb today
        ("smithjane_late_1234_5678_multi_head_attention.py", True),  # older Canvas, lower case
        ("LATE_anon_x7Yq2_5678_attention.py", True),  # an anonymous assignment: no name, the id is anon_...
        ("anon_x7Yq2_5678_attention.ipynb", False),
        ("smithjane_1234_5678_multi_head_attention.py", False),
        ("late_homework.py", False),  # not a Canvas name
        ("latecomer_1234_5678_x.py", False),
    ],
)
def test_canvas_late_marker(name, late):
    assert late_work.canvas_marked_late(name) is late


def test_a_canvas_marker_with_no_time_counts_the_policys_unknown_delay_and_says_so():
    result = final(None, marked_late=True)
    assert result["late"]["source"] == "canvas marker" and result["late"]["submitted_at"] == ""
    assert result["late"]["days_late"] == 1 and result["score"] == 90
    assert "no submission time known" in result["late"]["note"] and "unknown delay" in result["late"]["note"]


def test_a_canvas_marker_with_no_time_takes_nothing_from_a_student_with_an_extension():
    extension = datetime.datetime.fromisoformat("2026-12-07T23:59:00-05:00")
    result = final(None, deadline=extension, marked_late=True, extended=True)
    assert result["score"] == 100 and result["late"]["percent"] == 0
    assert "has an extension (2026-12-07T23:59:00-05:00) and no submission time is known: nothing taken" in result["late"]["note"]


def test_nothing_known_is_no_lateness():
    assert late_work.lateness(None, False, "submitted_at", DEADLINE, POLICY) is None


def test_submitted_at_csv_is_read_and_a_bad_row_names_its_line(tmp_path):
    path = tmp_path / "submitted_at.csv"
    path.write_text("student,submitted_at\nalice,2026-12-07T10:00:00-05:00\n\nbob,2026-12-05T12:00:00Z\n", encoding="utf-8")
    times = late_work.read_submitted_at(path)
    assert times["alice"].at.isoformat() == "2026-12-07T10:00:00-05:00" and times["bob"].at.utcoffset() == datetime.timedelta(0)
    assert (times["alice"].line, times["bob"].line) == (2, 4)
    path.write_text("student,submitted_at\nalice,2026-12-07T10:00:00-05:00\nbob,yesterday\n", encoding="utf-8")
    with pytest.raises(late_work.LateWorkError, match=r"submitted_at\.csv:3: bob: 'yesterday' is not a date and time"):
        late_work.read_submitted_at(path)
    path.write_text("student,submitted_at\nbob,2026-12-05T12:00:00\n", encoding="utf-8")  # no offset: which zone?
    with pytest.raises(late_work.LateWorkError, match=r":2: .* with its UTC offset"):
        late_work.read_submitted_at(path)


@pytest.mark.parametrize(
    "text, message",
    [
        # The last row used to win silently: four days late, then "on time".
        ("alice,2026-12-09T10:00:00-05:00\nAlice ,2026-12-05T10:00:00-05:00\n", r":3: a second submission time for Alice \(the first is on line 2\)"),
        ("alice,2026-12-09T10:00:00-05:00\nbob," + "x" * 200_000 + "\n", r":3: cannot be read as CSV \(field larger than field limit"),
        ("alice\n", r":2: a row needs a student and a time"),
    ],
)
def test_a_bad_submission_times_file_is_refused_in_one_message_naming_its_line(tmp_path, text, message):
    path = tmp_path / "submitted_at.csv"
    path.write_text("student,submitted_at\n" + text, encoding="utf-8")
    with pytest.raises(late_work.LateWorkError, match=message) as refused:
        late_work.read_submitted_at(path)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 400


def test_gradescopes_submission_metadata_gives_the_time(tmp_path):
    # The shape of Gradescope's documented example (gradescope-autograders.readthedocs.io, submission_metadata).
    metadata = {
        "id": 123456, "created_at": "2018-07-01T14:22:32.365935-07:00",
        "assignment": {"due_date": "2018-07-31T23:00:00.000000-07:00", "title": "Programming Assignment 1"},
        "users": [{"email": "student@example.com", "id": 1234, "name": "Student User"}],
    }
    path = tmp_path / "submission_metadata.json"
    path.write_text(json.dumps(metadata), encoding="utf-8")
    assert late_work.gradescope_submitted_at(path) == datetime.datetime.fromisoformat("2018-07-01T14:22:32.365935-07:00")
    path.write_text(json.dumps({"id": 1}), encoding="utf-8")
    with pytest.raises(late_work.LateWorkError, match="created_at"):
        late_work.gradescope_submitted_at(path)


def gradescope_root(tmp_path, created_at: str | None, email: str = "smith@example.edu"):
    """Gradescope's /autograder: the zip's late_policy.json in source/, and the submission's metadata."""
    from grader.term.course import load
    from grader.platforms import gradescope_late

    (tmp_path / "course.toml").write_text(
        '[assignment]\ndeadline = "2026-12-05T23:59:00-05:00"\n[late]\npenalty_per_day = 10\nmax_days = 3\n'
        'grace_minutes = 15\n[extensions]\njones = "2026-12-07T23:59:00-05:00"\n', encoding="utf-8",
    )
    (tmp_path / "source").mkdir()
    policy = gradescope_late.policy_document(load(tmp_path / "course.toml"))
    (tmp_path / "source" / gradescope_late.POLICY_FILE).write_text(json.dumps(policy), encoding="utf-8")
    if created_at is not None:
        metadata = {"id": 1, "created_at": created_at, "users": [{"email": email, "id": 1234, "name": "S"}]}
        (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
    return tmp_path


REPORT = {"score": 100.0, "tests": [{"name": "all", "score": 100.0, "max_score": 100.0, "visibility": "visible"}]}


def test_on_gradescope_two_days_late_loses_twenty_points_and_says_so(tmp_path):
    from grader.platforms import gradescope_late

    root = gradescope_root(tmp_path, "2026-12-07T10:00:00-05:00")
    report = gradescope_late.apply(REPORT, root / "source", root / "submission_metadata.json")
    assert report["score"] == 80.0
    assert report["tests"][-1]["name"] == "Late work" and "2 days late" in report["tests"][-1]["output"]


def test_on_gradescope_an_extension_is_found_by_the_students_email(tmp_path):
    from grader.platforms import gradescope_late

    root = gradescope_root(tmp_path, "2026-12-07T10:00:00-05:00", email="jones@example.edu")
    assert gradescope_late.apply(REPORT, root / "source", root / "submission_metadata.json")["score"] == 100.0


GRADESCOPE_ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section\r\n    Points Possible,,,,\r\n"
    '"Jones, Sam",1002,U2,sjones,A\r\n"Smith, Ann",1003,U3,asmith,A\r\n'
)


@pytest.mark.parametrize("name", ['"Jones, Sam"', "1002", "U2", "SJONES"])
def test_on_gradescope_an_extension_by_any_of_the_students_names_is_resolved_through_the_roster(tmp_path, name):
    """The course file names the student as the roster does (their name, Canvas id, SIS id, login
    in any case); Gradescope knows their email: the zip carries the login the roster resolves."""
    from grader.term.course import load
    from grader.platforms import gradescope_late

    (tmp_path / "roster.csv").write_text(GRADESCOPE_ROSTER, encoding="utf-8")
    (tmp_path / "course.toml").write_text(
        '[assignment]\ndeadline = "2026-12-05T23:59:00-05:00"\n[late]\npenalty_per_day = 10\n'
        f'[extensions]\n{name} = "2026-12-07T23:59:00-05:00"\n[files]\nroster = "roster.csv"\n', encoding="utf-8",
    )
    (tmp_path / "source").mkdir()
    policy = gradescope_late.policy_document(load(tmp_path / "course.toml"))
    (tmp_path / "source" / gradescope_late.POLICY_FILE).write_text(json.dumps(policy), encoding="utf-8")
    metadata = {"id": 1, "created_at": "2026-12-07T10:00:00-05:00", "users": [{"email": "sjones@example.edu", "id": 9, "name": "Sam"}]}
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
    assert gradescope_late.apply(REPORT, tmp_path / "source", tmp_path / "submission_metadata.json")["score"] == 100.0
    metadata["users"][0]["email"] = "asmith@example.edu"  # another student: the deadline's two days late
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
    assert gradescope_late.apply(REPORT, tmp_path / "source", tmp_path / "submission_metadata.json")["score"] == 80.0


def test_building_for_gradescope_refuses_an_extension_the_roster_does_not_resolve(tmp_path, capsys):
    from grader.__main__ import main

    (tmp_path / "roster.csv").write_text(GRADESCOPE_ROSTER, encoding="utf-8")
    (tmp_path / "course.toml").write_text(
        '[assignment]\ndeadline = "2026-12-05T23:59:00-05:00"\n'
        '[extensions]\njonse = "2026-12-07T23:59:00-05:00"\n[files]\nroster = "roster.csv"\n', encoding="utf-8",
    )
    zip_path = tmp_path / "autograder.zip"
    assert main(["gradescope", str(zip_path), "--course", str(tmp_path / "course.toml")]) == 2
    said = capsys.readouterr().err
    assert f"error: {tmp_path / 'course.toml'}:4: extension for 'jonse' matches no student on the roster" in said
    assert not zip_path.exists()


def test_on_gradescope_an_unreadable_submission_time_costs_nothing_and_is_said(tmp_path):
    from grader.platforms import gradescope_late

    root = gradescope_root(tmp_path, None)
    report = gradescope_late.apply(REPORT, root / "source", root / "submission_metadata.json")
    assert report["score"] == 100.0 and report["tests"][-1]["visibility"] == "hidden"
    assert "no late penalty taken" in report["tests"][-1]["output"]


def test_without_a_policy_in_the_zip_gradescope_results_are_unchanged(tmp_path):
    from grader.platforms import gradescope_late

    (tmp_path / "source").mkdir()
    assert gradescope_late.apply(REPORT, tmp_path / "source", tmp_path / "submission_metadata.json") == REPORT


def test_a_late_record_reads_the_same_wherever_the_courses_folder_is(tmp_path):
    """The note named submitted_at.csv by its absolute path: the export and the report, which derive
    the record again, refused a class whose folder had been moved or copied to another machine,
    saying that the course's files had changed or results.json had been edited by hand."""
    import shutil

    from grader.term import course_inputs
    from grader.term.course import load

    first = tmp_path / "term"
    first.mkdir()
    (first / "course.toml").write_text(
        '[assignment]\ndeadline = "2026-12-05T23:59:00-05:00"\n[late]\npenalty_per_day = 10\n'
        '[files]\nsubmitted_at = "times.csv"\n', encoding="utf-8",
    )
    (first / "times.csv").write_text("student,submitted_at\nother,2026-12-05T10:00:00-05:00\n", encoding="utf-8")
    moved = tmp_path / "copied elsewhere" / "term"
    shutil.copytree(first, moved)
    marked = "hughestom_LATE_110208_4400114_multi_head_attention"

    def note(folder):
        adjustments = course_inputs.adjustments(load(folder / "course.toml"), [marked, "other"])
        return adjustments.lateness(marked, marked + ".py").note

    assert note(first) == note(moved)
    assert note(first).endswith("; times.csv has no row for this student") and str(tmp_path) not in note(first)
