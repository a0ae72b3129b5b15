"""One student, several names: the one resolver every instructor's file, --only and the export go
through (grader/term/identity.py), on a gradebook as Canvas exports it (tests/canvas_term.py)."""

from __future__ import annotations

import datetime

import pytest

from canvas_term import EVE_STEM, ROSTER
from grader.term import roster
from grader.term.identity import Identities, Keyed, assign, name_in_canvas_files


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    path = tmp_path_factory.mktemp("roster") / "gradebook.csv"
    path.write_text(ROSTER, encoding="utf-8", newline="")
    return roster.read_roster(path)


def test_canvas_gradebook_rows_are_the_students_only(rows):
    # The "Manual Posting" row of hidden grades and "Points Possible" are not students.
    assert [row["Student"] for row in rows] == ["Doe, Jane", "Smith, Ann", "Lee, Kim", "O'Neil, Sam", "Ng, Eve", "Roe, Bob"]


@pytest.mark.parametrize(
    "key, matched_as",
    [
        ("jdoe", "SIS Login ID"),
        ("2024001", "SIS User ID"),
        ("123456", "ID"),
        ("Doe, Jane", "Student"),
        ("  doe,   JANE ", "Student"),  # case and spaces do not count
        ("doejane", "name in Canvas's file names"),
        ("doejane_123456_7890123_multi_head_attention", "Canvas user id in the file name"),  # a download's name, not graded here
        ("doejane_LATE_123456_99_attention.ipynb", "Canvas user id in the file name"),
    ],
)
def test_every_name_of_a_student_resolves_to_them(rows, key, matched_as):
    resolution = Identities(rows).resolve(key)
    assert resolution.student is not None and resolution.student.name == "Doe, Jane"
    assert matched_as in resolution.by[resolution.student.key]


def test_a_submissions_file_stem_resolves_to_its_student_and_names_that_submission(rows):
    identities = Identities(rows, [EVE_STEM, "leekim_123458_7890300_multi_head_attention"])
    resolution = identities.resolve(EVE_STEM)
    assert resolution.student.name == "Ng, Eve" and resolution.entry == EVE_STEM
    assert identities.student_of("leekim_123458_7890300_multi_head_attention").name == "Lee, Kim"


def test_a_name_in_nfd_is_the_name_in_nfc():
    rows = [{"Student": "Jos\u00e9, Ana", "ID": "1", "SIS User ID": "", "SIS Login ID": ""}]
    assert Identities(rows).resolve("Jose\u0301, Ana").student.name == "Jos\u00e9, Ana"


def test_canvas_writes_a_name_into_file_names_as_its_content_zipper_does():
    assert name_in_canvas_files("O'Neil, Sam") == "oneilsam"
    assert name_in_canvas_files("Smith_12_, Jo") == "smith12jo"  # "_<digits>_" collapsed (sanitize_user_name)


def test_a_name_that_is_one_students_sis_id_and_anothers_canvas_id_matches_both_and_is_refused():
    rows = [
        {"Student": "Ann", "ID": "1001", "SIS User ID": "s1", "SIS Login ID": "ann"},
        {"Student": "Ben", "ID": "1002", "SIS User ID": "1001", "SIS Login ID": "ben"},
    ]
    resolution = Identities(rows).resolve("1001")
    assert resolution.student is None and [student.name for student in resolution.students] == ["Ann", "Ben"]
    assert "matches 2 students: Ann (as ID); Ben (as SIS User ID)" in resolution.problem(True)


def test_two_students_of_one_name_are_not_told_apart_by_it():
    rows = [{"Student": "Lee, Kim", "ID": str(n), "SIS User ID": "", "SIS Login ID": f"k{n}"} for n in (1, 2)]
    assert len(Identities(rows).resolve("Lee, Kim").students) == 2


def keyed(*pairs, what="extension"):
    return [(Keyed("course.toml", line, key, what), value) for line, (key, value) in enumerate(pairs, start=10)]


def test_two_rows_for_one_student_under_two_of_their_names_are_refused_naming_both_lines(rows):
    done = assign(Identities(rows), keyed(("jdoe", 1), ("123456", 2)))
    assert done.errors == [
        "course.toml:11: a second extension for Doe, Jane ('123456'; the first is 'jdoe' on line 10): one row per student"
    ]


def test_with_a_roster_a_name_that_matches_nobody_is_refused(rows):
    done = assign(Identities(rows), keyed(("jdoee", 1)))
    assert done.errors and done.errors[0].startswith("course.toml:10: extension for 'jdoee' matches no student on the roster")


def test_submission_times_of_two_attempts_each_by_its_file_name_are_kept_apart(rows):
    stems = ["leekim_123458_7890300_multi_head_attention", "leekim_123458_7890412_multi_head_attention-1"]
    moments = [datetime.datetime(2026, 12, day, tzinfo=datetime.UTC) for day in (1, 2)]
    done = assign(Identities(rows, stems), keyed(*zip(stems, moments), what="submission time"), per_submission=True)
    assert done.errors == [] and set(done.by_entry) == set(stems)
    both = assign(Identities(rows, stems), keyed((stems[0], moments[0]), ("klee", moments[1]), what="submission time"), per_submission=True)
    assert "a second submission time for Lee, Kim" in both.errors[0]  # one by file, one by student: which applies?


def test_without_a_roster_the_file_stem_and_canvas_user_id_and_name_work_and_an_unknown_name_is_listed():
    stems = ["doejane_123456_7890123_multi_head_attention", "alice"]
    identities = Identities(None, stems)
    for key in ("doejane_123456_7890123_multi_head_attention", "123456", "DoeJane"):
        assert identities.resolve(key).student == identities.student_of(stems[0]), key
    assert identities.resolve("alice").student == identities.student_of("alice")
    done = assign(identities, keyed(("alicia", 1)))
    assert done.errors == [] and [(row.key, why) for row, why in done.unmatched] == [
        ("alicia", "matches no submission (names compared: submission's file name, Canvas user id, name in Canvas's file names)")
    ]


def test_files_of_one_name_but_for_its_case_are_said_to_be_one_students_for_that_reason():
    """Alice.py and alice.py were "one student's files by their name (the same, another extension)"."""
    assert Identities(None, ["Alice", "alice"]).same_student_because(["Alice", "alice"]) == (
        "their name (the same, case and Unicode's spelling aside)"
    )
    assert Identities(None, ["alice"]).same_student_because(["alice", "alice"]) == "their name (the same, another extension)"
