"""Overrides (student,score,reason; a comment: a reason without a score) and the numbers of a
results.json that must add up: an override reaches the export and the report from the overrides file;
a hand-edited score whose groups add up to another number is refused."""

from __future__ import annotations

import json

import pytest

from grader.__main__ import main
from grader.class_view import class_results
from grader.term import course_inputs, grade_trail, overrides
from grader.term.course import load
from handmade_class import class_documents, read_results, write_out

ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section\r\n"
    "    Points Possible,,,,\r\n"
    '"One, S",1001,U1,s1,A\r\n'
    '"Two, S",1002,U2,s2,A\r\n'
)


def test_an_overrides_file_is_read_with_its_reasons(tmp_path):
    path = tmp_path / "overrides.csv"
    path.write_text(
        "student,score,reason\nbob,50,regraded by hand, after office hours\neve,87.5,medical\ncarl,,well structured code\n",
        encoding="utf-8",
    )
    read = overrides.read_overrides(path)
    assert read["bob"].to_dict() == {"score": 50, "reason": "regraded by hand, after office hours"}
    assert read["eve"].score == 87.5 and read["eve"].line == 3
    assert (read["carl"].score, read["carl"].reason) == (None, "well structured code")  # a comment: no score


def test_a_reason_without_a_score_is_a_comment_for_that_student(tmp_path):
    path = tmp_path / "overrides.csv"
    path.write_text("student,score,reason\nbob,,Good use of masks; see me about the scale.\n", encoding="utf-8")
    comment = overrides.read_overrides(path)["bob"]
    assert comment.is_comment and comment.score is None and comment.line == 2
    assert comment.to_dict() == {"score": None, "reason": "Good use of masks; see me about the scale."}


@pytest.mark.parametrize(
    "text, message",
    [
        ("name,points\nbob,50\n", r":1: the first line must be the header student,score,reason"),
        ("student,score,reason\nbob,fifty,why\n", r":2: bob: the score must be a number of 0 or more \(found 'fifty'\)"),
        ("student,score,reason\nbob,-5,why\n", r":2: bob: the score must be a number of 0 or more"),
        ("student,score,reason\nbob,nan,why\n", r":2: bob: the score must be a number of 0 or more"),
        ("student,score,reason\nbob,inf,why\n", r":2: bob: the score must be a number of 0 or more"),
        ("student,score,reason\nbob,50,\n", r":2: bob: an override needs a reason"),
        ("student,score,reason\nbob,,\n", r":2: bob: a row needs a score and a reason, or a reason alone"),
        ("student,score,reason\n,50,why\n", r":2: a row needs a student"),
        ("student,score,reason\nbob,50,a\nBob ,60,b\n", r":3: a second override for Bob \(the first is on line 2\)"),
        ("student,score,reason\nbob,50,a\neve," + "x" * 200_000 + ",b\n", r":3: cannot be read as CSV \(field larger than field limit"),
        (b"student,score,reason\nb\xf6b,50,a\n", r":2: not UTF-8 text"),
        # Python 3.11's csv reads a NUL into the cell: the reason would reach the student's file
        # in Canvas's feedback zip, which Python then refuses to run.
        ("student,score,reason\nbob,50,a\nbob2,50,regraded\x00\n", r"overrides\.csv:3: a NUL byte"),
        ("student,score,reason\n" + "x" * 100_000 + ",fifty,why\n", r":2: x{57}\.\.\.: the score must be a number"),
    ],
)
def test_a_bad_overrides_file_names_its_line(tmp_path, text, message):
    path = tmp_path / "overrides.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(overrides.OverrideError, match=message) as refused:
        overrides.read_overrides(path)
    assert str(refused.value).count("\n") == 0 and len(str(refused.value)) < 500  # one message, of a line


def test_every_bad_row_is_named_at_once(tmp_path):
    path = tmp_path / "overrides.csv"
    path.write_text("student,score,reason\nbob,fifty,why\neve,50,\ncarl,40,fine\n", encoding="utf-8")
    with pytest.raises(overrides.OverrideError) as refused:
        overrides.read_overrides(path)
    assert [line.split("overrides.csv", 1)[1][:3] for line in str(refused.value).splitlines()] == [":2:", ":3:"]


COURSE = '[files]\noverrides = "overrides.csv"\n'


def course_with_overrides(folder, rows: str) -> str:
    """A course file naming an overrides file of ``rows``; its path, for --course."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "course.toml").write_text(COURSE, encoding="utf-8")
    (folder / "overrides.csv").write_text(f"student,score,reason\n{rows}", encoding="utf-8")
    return str(folder / "course.toml")


def overridden_out(tmp_path):
    """The hand-made class with s2's 3 of 5 overridden to 5 by the overrides file, as the batch writes it."""
    course = course_with_overrides(tmp_path / "course", "s2,5,regraded by hand\n")
    documents = class_documents()
    adjustments = course_inputs.adjustments(load(course), documents)
    documents = {sid: result | grade_trail.derive(result, adjustments, sid).fields for sid, result in documents.items()}
    return write_out(tmp_path / "out", documents), course


def test_an_override_keeps_the_raw_score_beside_it_and_adds_up(tmp_path):
    result = class_documents()["s2"]
    trail = grade_trail.adjust(3, 5, None, overrides.Override(5, "regraded", 2)).fields
    assert (trail["raw_score"], trail["override"], trail["score"]) == (3, {"score": 5, "reason": "regraded"}, 5)
    adjustments = course_inputs.adjustments(load(course_with_overrides(tmp_path, "s2,5,regraded\n")), ["s1", "s2"])
    assert adjustments.override("s2") == overrides.Override(5, "regraded", 2)
    assert grade_trail.verify(result | trail, adjustments, "s2").final == 5


def test_the_export_sends_the_overridden_score_and_the_plain_file_shows_its_trail(tmp_path, capsys):
    out, course = overridden_out(tmp_path)
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    target = tmp_path / "grades.csv"
    options = ["--roster", str(roster), "--assignment", "HW3 (777)", "--out", str(target), "--course", course]
    assert main(["export", str(out), *options]) == 0
    assert target.read_text(encoding="utf-8").splitlines()[3] == '"Two, S",1002,U2,s2,A,100'  # 5 of 5, not 3 of 5
    assert "1 overridden scores sent (the overrides file): Two, S" in capsys.readouterr().out
    assert json.loads((out / "export.json").read_text(encoding="utf-8"))["overrides_sent"] == ["s2"]
    assert main(["export", str(out), *options, "--format", "plain"]) == 0
    row = target.read_text(encoding="utf-8").splitlines()[2]
    assert ",s2,100,60,,100,regraded by hand,," in row  # final, raw, no late penalty, the override and its reason, no comment


def test_the_report_shows_the_override_beside_the_raw_score(tmp_path):
    out, course = overridden_out(tmp_path)
    assert main(["report", str(out), "--course", course]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert '<td class="override text">5 (regraded by hand)</td>' in page
    assert '<td class="number raw-score">3</td>' in page


@pytest.mark.parametrize("command", ["export", "report"])
def test_a_hand_edited_score_whose_groups_add_up_to_another_number_is_refused(tmp_path, capsys, command):
    out = write_out(tmp_path / "out", class_documents())
    document = read_results(out)
    document["submissions"]["s2"]["score"] = 5  # its groups still say 3
    (out / "results.json").write_text(json.dumps(document), encoding="utf-8")
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    options = ["--roster", str(roster), "--assignment", "HW3 (777)", "--out", str(tmp_path / "grades.csv")] if command == "export" else []
    assert main([command, str(out), *options]) == 2
    err = capsys.readouterr().err
    assert "submission 's2'" in err and "field 'score' is 5, but its raw score, late penalty and override make 3" in err
    assert "overrides file" in err
    assert not (tmp_path / "grades.csv").exists()


def test_a_hand_edited_override_or_penalty_that_no_longer_follows_is_refused(tmp_path):
    out, course = overridden_out(tmp_path)
    document = read_results(out)
    document["submissions"]["s2"]["score"] = 4  # neither the override nor the raw score
    (out / "results.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError, match=r"submission 's2': field 'score' is 4, but its raw score, late penalty and override make 5"):
        class_results.read_class_results(out / "results.json", load(course))
