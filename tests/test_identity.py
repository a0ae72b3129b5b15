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


# --- a Canvas name names a student only where its parts agree with the roster ----------------------

ALICE = {"Student": "Smith, Alice", "ID": "12", "SIS User ID": "", "SIS Login ID": "asmith"}


def roster_row(name: str, user_id: str, login: str) -> dict[str, str]:
    return {"Student": name, "ID": user_id, "SIS User ID": "", "SIS Login ID": login}


@pytest.mark.parametrize(
    ("sortable_name", "user_id"),
    [
        ("eve_12", "999"),  # a name that ends in digits: Alice's id
        ("van_der_berg, piet", "31"),  # underscores inside the name
        ("12", "40"),  # a name that is another student's id
        ("o_12_neil, sam", "55"),  # "_12_" inside the name: Canvas collapses it to "o12neil"
    ],
)
def test_a_canvas_name_names_the_row_whose_id_and_own_spelling_agree_with_it(sortable_name, user_id):
    eve = roster_row(sortable_name, user_id, "eve")
    stem = f"{name_in_canvas_files(sortable_name)}_{user_id}_5000_multi_head_attention"
    identities = Identities([ALICE, eve], [stem, "smithalice_12_777_multi_head_attention"])
    assert identities.student_of(stem).name == sortable_name and identities.why_not_on_roster(stem) == ""
    assert identities.matched_by(stem) == ("ID", "name in Canvas's file names")
    assert identities.student_of("smithalice_12_777_multi_head_attention").name == "Smith, Alice"


def test_a_name_part_that_is_not_the_rows_is_held_apart_and_said_never_taken_on_its_first_number():
    stem = "eve_12_999_5000_multi_head_attention"  # Canvas's own first reading: user 12 (Alice)
    identities = Identities([ALICE], [stem, "smithalice_12_777_multi_head_attention"])
    held = identities.student_of(stem)
    assert not held.on_roster and held != identities.student_of("smithalice_12_777_multi_head_attention")
    why = identities.why_not_on_roster(stem)
    assert "'eve' is not the roster's for ID 12 (Smith, Alice" in why and "'smithalice' in Canvas's file names" in why
    assert [note for note in identities.canvas_notes() if note.startswith(stem)] == [f"{stem}: {why}"]
    # A download's name given in an instructor's file is read the same way: it names nobody.
    assert Identities([ALICE]).resolve(stem).students == ()


def test_two_readings_that_agree_with_two_rows_name_neither():
    rows = [roster_row("Eve", "12", "e1"), roster_row("eve_12", "999", "e2")]
    stem = "eve_12_999_5000_multi_head_attention"
    identities = Identities(rows, [stem])
    assert not identities.student_of(stem).on_roster and "reads as 2 roster students" in identities.why_not_on_roster(stem)


def test_the_export_does_not_send_a_grade_to_the_row_whose_id_a_name_ends_in():
    from grader.term.identity import match

    found = match(["eve_12_999_5000_multi_head_attention", "smithalice_12_777_multi_head_attention"], [ALICE])
    assert found.submission_of_row == {0: "smithalice_12_777_multi_head_attention"} and found.also_matched == {}
    assert "name and user id disagree" in found.not_on_roster["eve_12_999_5000_multi_head_attention"]


def test_the_export_finds_one_canvas_submissions_files_on_the_roster():
    from grader.term.identity import match

    jane = roster_row("Doe, Jane", "123", "jdoe")
    found = match(["doejane_123_456_multi_head_attention"], [jane])
    assert found.submission_of_row == {0: "doejane_123_456_multi_head_attention"} and found.not_on_roster == {}


def test_without_a_roster_two_names_under_one_user_id_stay_two_students_and_are_said_unchecked():
    stems = ["eve_12_999_multi_head_attention", "smithalice_12_777_multi_head_attention"]
    identities = Identities(None, stems)
    assert identities.student_of(stems[0]) != identities.student_of(stems[1])
    notes = identities.canvas_notes()
    assert any("Canvas user 12 has 2 names" in note and "never merged" in note for note in notes), notes
    assert any(note.startswith("no roster: the students of 2 files were read from Canvas's file names alone") for note in notes)
    assert Identities(None, ["alice"]).canvas_notes() == []  # no Canvas name, nothing to check


def test_without_a_roster_a_reading_another_file_contradicts_is_not_taken():
    # Alice's file reads only one way (user 12 named smithalice): Eve's cannot be user 12 too.
    stems = ["eve_12_999_5000_multi_head_attention", "smithalice_12_777_multi_head_attention"]
    identities = Identities(None, stems)
    assert identities.student_of(stems[0]).name == "eve_12 (999)"
    assert not any("has 2 names" in note for note in identities.canvas_notes())


# --- Canvas's names and Moodle's: each read only as its own LMS writes them ----------------------

# A Canvas file a student uploaded as "assignsubmission_file.py": Canvas's name for it reads as
# Moodle's participant 456 too (name "doejane_123"), and 456 is Bob's Canvas id.
BOTH_WAYS = "doejane_123_456_assignsubmission_file"


def test_a_canvas_file_named_like_moodles_plugin_is_its_canvas_users_never_the_moodle_reading():
    jane, bob = roster_row("Doe, Jane", "123", "jdoe"), roster_row("Ng, Bob", "456", "bng")
    identities = Identities([jane, bob], [BOTH_WAYS])
    assert identities.student_of(BOTH_WAYS).name == "Doe, Jane"
    assert identities.matched_by(BOTH_WAYS) == ("ID", "name in Canvas's file names") and identities.lms == "canvas"


def test_without_a_roster_a_name_of_both_lmss_is_read_as_the_downloads_lms_and_alone_as_neither():
    with_others = Identities(None, [BOTH_WAYS, "smithalice_12_777_multi_head_attention"])
    assert with_others.student_of(BOTH_WAYS).name == "doejane (123)" and with_others.recognised == "canvas"
    alone = Identities(None, [BOTH_WAYS])
    assert alone.student_of(BOTH_WAYS).key == f"submission {BOTH_WAYS}" and alone.lms is None
    assert any(note.startswith(f"{BOTH_WAYS}: reads as both a Canvas and a Moodle") for note in alone.canvas_notes())
    # The course file's [lms] kind says which.
    assert Identities(None, [BOTH_WAYS], lms="moodle").student_of(BOTH_WAYS).name == "doejane_123 (456)"


MOODLE_ROW = {"Identifier": "Participant 2931501", "Full name": "Aoife O'Connell", "Student": "Aoife O'Connell", "ID": "2931501",
              "name in Canvas's file names": "Aoife OConnell", "Email address": "aoife@uni.example"}


def test_a_moodle_name_names_the_worksheet_row_whose_participant_id_and_name_agree_with_it():
    own, blind = "Aoife OConnell_2931501_assignsubmission_file", "Participant_2931501_assignsubmission_file"
    identities = Identities([MOODLE_ROW], [own, blind])
    assert identities.student_of(own).name == identities.student_of(blind).name == "Aoife O'Connell"  # blind marking: by the id
    assert identities.same_student_because([own, blind]) == "the roster (ID, name in Canvas's file names)"


def test_a_moodle_name_whose_name_is_not_the_rows_is_held_apart_never_given_the_participant_ids_owner():
    stem = "Eve Adams_2931501_assignsubmission_file"
    identities = Identities([MOODLE_ROW], [stem])
    assert not identities.student_of(stem).on_roster
    assert "'Eve Adams' is not the roster's for ID 2931501" in identities.why_not_on_roster(stem)
    assert "in Moodle's file names" in identities.why_not_on_roster(stem)


def test_with_moodles_worksheet_a_canvas_shaped_name_is_not_read_as_a_participant_id():
    stem = "aoifeoconnell_2931501_9_multi_head_attention"  # Canvas's shape; the id is Aoife's participant id
    identities = Identities([MOODLE_ROW], [stem])
    assert not identities.student_of(stem).on_roster and identities.canvas == {}
    assert Identities([MOODLE_ROW]).resolve(stem).students == ()
