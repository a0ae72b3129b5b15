"""One student, one final score, everywhere; and the gradebook derived, never trusted.

A real small Canvas class graded with a course file: a late student, an overridden one, one the
instructor wrote a comment to, and the stubs. Their feedback page (read in headless Chromium),
its Markdown, the file in Canvas's feedback zip, the gradebook, the report and the export show
the same final score and the same trail. Then the four hand edits of results.json that used to
export the stub's 0 as 100 are each refused naming the student and the field, and no stored
number, whichever is edited, changes a derived score.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import tiers

import browser
from grader.__main__ import main
from grader.class_view import class_results
from grader.term import course as course_file, course_inputs, grade_trail, late_work
from grader.lms import export
from grader.term.overrides import Override
from grader.feedback import trail_text
from grading import REPO_ROOT
from grading import command_in as run

needs_browser = pytest.mark.skipif(not browser.available(), reason="Chromium or Playwright is not installed")

SOLUTION = (REPO_ROOT / "solutions" / "multi_head_attention.py").read_text(encoding="utf-8")
STUB = (REPO_ROOT / "exercises" / "multi_head_attention.py").read_text(encoding="utf-8")
SCALE = "        scores = scores / math.sqrt(self.head_dim)  # (batch, seq, seq)\n"
assert SOLUTION.count(SCALE) == 1
MISSING_SCALE = SOLUTION.replace(SCALE, "")  # a known mistake: some checks fail, most pass

POINTS = 20  # the assignment's points in Canvas
PERCENT_A_DAY = 10
COURSE = f"""\
[assignment]
name = "HW3"
lms_id = 777
points = {POINTS}
deadline = "2026-12-05T23:59:00-05:00"

[late]
penalty_per_day = {PERCENT_A_DAY}
max_days = 3
grace_minutes = 15

[files]
roster = "roster.csv"
overrides = "overrides.csv"
submitted_at = "submitted_at.csv"
"""
# Named as Canvas's "Download Submissions" names them (canvas-lms lib/content_zipper.rb): the
# late one carries Canvas's LATE marker, and submitted_at.csv gives its time.
LATE = "erin_LATE_2001_80001_multi_head_attention"
OVERRIDDEN = "bob_2002_80002_multi_head_attention"
COMMENTED = "carl_2003_80003_multi_head_attention"
STUBS = "dave_2004_80004_multi_head_attention"
FILES = {LATE: MISSING_SCALE, OVERRIDDEN: SOLUTION, COMMENTED: SOLUTION, STUBS: STUB}
OVERRIDE_SCORE, OVERRIDE_REASON = 70, "the reference example was copied, see the syllabus *policy*"
COMMENT = "Clear code and good names: well done."
SUBMITTED = {
    LATE: "2026-12-07T10:00:00-05:00",  # a day and ten hours past the deadline and its grace: two days
    STUBS: "2026-12-06T10:00:00-05:00",  # one day
}
ROSTER = "Student,ID,SIS User ID,SIS Login ID,Section\r\n    Points Possible,,,,\r\n" + "".join(
    f"{stem.split('_')[0].title()},{2001 + n},U{n},{stem.split('_')[0]},A\r\n" for n, stem in enumerate(FILES)
)
STUDENTS = {"late": LATE, "overridden": OVERRIDDEN, "commented": COMMENTED}


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # a Canvas class graded by the batch and exported
def term(tmp_path_factory) -> Path:
    """The class graded with its course file, exported to Canvas with its feedback zip, and as plain CSV."""
    folder = tmp_path_factory.mktemp("term")
    (folder / "course.toml").write_text(COURSE, encoding="utf-8")
    (folder / "roster.csv").write_text(ROSTER, encoding="utf-8")
    (folder / "overrides.csv").write_text(
        f'student,score,reason\n{OVERRIDDEN},{OVERRIDE_SCORE},"{OVERRIDE_REASON}"\n{COMMENTED},,{COMMENT}\n', encoding="utf-8",
    )
    (folder / "submitted_at.csv").write_text(
        "student,submitted_at\n" + "".join(f"{stem},{time}\n" for stem, time in SUBMITTED.items()), encoding="utf-8",
    )
    (folder / "class").mkdir()
    for stem, code in FILES.items():
        (folder / "class" / f"{stem}.py").write_text(code, encoding="utf-8")
    graded = run(folder, "batch", "class", "--out", "out", "--quiet", "--jobs", "2", "--call-timeout", "60")
    assert graded.returncode == 0, graded.stdout + graded.stderr
    exported = run(folder, "export", "out", "--out", "grades.csv", "--feedback-zip", "feedback.zip")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    plain = run(folder, "export", "out", "--out", "plain.csv", "--format", "plain")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    return folder


def gradebook(folder: Path) -> dict[str, dict]:
    with open(folder / "out" / "gradebook.csv", newline="", encoding="utf-8") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


def exported_points(folder: Path, name: str = "grades.csv") -> dict[str, str]:
    """The assignment's cell of each roster row, by the row's Canvas user id."""
    rows = list(csv.reader(io.StringIO((folder / name).read_text(encoding="utf-8"))))
    return {row[1]: row[-1] for row in rows[2:]}


def user_id(stem: str) -> str:
    return re.search(r"_(\d+)_\d+_", stem)[1]


def roster_name(stem: str) -> str:
    """The student's name in ROSTER (the report's rows and the feedback pages say it, not the stem)."""
    return stem.split("_")[0].title()


def markdown(folder: Path, stem: str) -> str:
    return (folder / "out" / "feedback" / f"{stem}.md").read_text(encoding="utf-8")


def zipped(folder: Path, stem: str) -> str:
    with zipfile.ZipFile(folder / "feedback.zip") as archive:
        return archive.read(f"{stem}.py").decode("utf-8")


def expected(folder: Path) -> dict[str, dict]:
    """What each student's trail must be, worked out from the course file's numbers and the raw
    scores the grading gave (the late student's raw score is whatever its checks earned)."""
    raw = int(gradebook(folder)[LATE]["raw_score"])
    penalty = min(raw, 2 * PERCENT_A_DAY)  # two days of 10% of 100 points, never more than the raw score
    return {
        "late": {"raw": raw, "final": raw - penalty, "penalty": penalty},
        "overridden": {"raw": 100, "final": OVERRIDE_SCORE},
        "commented": {"raw": 100, "final": 100},
    }


# --- one final score everywhere ---------------------------------------------------------------


def test_the_gradebook_holds_each_students_trail(term):
    rows, want = gradebook(term), expected(term)
    assert 0 < want["late"]["raw"] < 100  # a partial score: the late penalty is taken from it
    late = rows[LATE]
    assert (late["score"], late["late_penalty"]) == (str(want["late"]["final"]), str(want["late"]["penalty"]))
    assert "2 days late" in late["late"] and "20% of the points taken" in late["late"]
    assert (rows[OVERRIDDEN]["raw_score"], rows[OVERRIDDEN]["override"], rows[OVERRIDDEN]["score"]) == ("100", "70", "70")
    assert rows[OVERRIDDEN]["override_reason"] == OVERRIDE_REASON
    assert (rows[COMMENTED]["score"], rows[COMMENTED]["override"], rows[COMMENTED]["comment"]) == ("100", "", COMMENT)
    assert (rows[STUBS]["score"], rows[STUBS]["late_penalty"]) == ("0", "0")  # late, but nothing to take


def test_the_export_sends_each_final_score_scaled_to_the_assignments_points(term):
    sent, want = exported_points(term), expected(term)
    for who, stem in STUDENTS.items():
        assert float(sent[user_id(stem)]) == pytest.approx(want[who]["final"] * POINTS / 100), who
    plain = {row["submission"]: row for row in csv.DictReader(io.StringIO((term / "plain.csv").read_text(encoding="utf-8")))}
    assert (plain[OVERRIDDEN]["override"], plain[OVERRIDDEN]["override reason"]) == ("14", OVERRIDE_REASON)
    assert plain[COMMENTED]["comment"] == COMMENT
    assert float(plain[LATE]["late penalty"]) == pytest.approx(want["late"]["penalty"] * POINTS / 100)


@pytest.mark.parametrize("who", list(STUDENTS))
def test_the_markdown_and_the_feedback_zips_file_show_the_final_score_the_export_sends(term, who):
    stem, want = STUDENTS[who], expected(term)[who]
    page, in_zip = markdown(term, stem), zipped(term, stem)
    assert page.startswith(f"# Feedback for {roster_name(stem)}\n")  # the roster's name, not the file's stem
    score = re.search(r"\*\*Score: ([\d.]+)/100\*\*", page)
    assert float(score[1]) * POINTS / 100 == pytest.approx(float(exported_points(term)[user_id(stem)]))
    assert float(score[1]) == want["final"]
    if who == "late":
        sentences = [f"The tests: {want['raw']}/100.", "Late: submitted 2026-12-07T10:00:00-05:00, 2 days late",
                     f"20% of the points taken: {want['penalty']} points.", f"Final score: {want['final']}/100."]
    elif who == "overridden":
        sentences = ["The tests: 100/100.", "Your instructor set the score to 70/100: the reference example was copied",
                     "Final score: 70/100."]
    else:
        sentences = [f"Your instructor's comment: {COMMENT}"]
    for sentence in sentences:
        assert sentence in page.replace("\\", ""), sentence  # Markdown escapes aside (the reason's *policy*)
    # The file Canvas attaches: the student's own code with this page in front, as comments.
    feedback, code = in_zip.split("your file, as you submitted it", 1)
    assert f"# **Score: {score[1]}/100**" in feedback and FILES[stem] in code
    for sentence in sentences:
        assert sentence in feedback.replace("\\", ""), sentence


@needs_browser
def test_in_chromium_each_feedback_page_and_the_reports_row_show_the_trail(term):
    want = expected(term)
    with browser.browser() as chromium:
        page = chromium.new_page(viewport={"width": 1366, "height": 768})
        for who, stem in STUDENTS.items():
            page.goto((term / "out" / "feedback" / f"{stem}.html").resolve().as_uri(), wait_until="load")
            text = page.inner_text("main")
            assert page.title() == page.inner_text("h1") == f"Feedback for {roster_name(stem)}"
            final = re.search(r"Score: ([\d.]+)/100", text)[1]
            assert float(final) == want[who]["final"], who
            assert float(final) * POINTS / 100 == pytest.approx(float(exported_points(term)[user_id(stem)]))
            if who == "late":
                assert "Late: submitted 2026-12-07T10:00:00-05:00, 2 days late" in text
                assert f"20% of the points taken: {want['late']['penalty']} points." in text
            if who == "overridden":
                assert f"Your instructor set the score to 70/100: {OVERRIDE_REASON}" in text  # *policy* as written
            if who == "commented":
                assert f"Your instructor's comment: {COMMENT}" in text
        page.goto((term / "out" / "report.html").resolve().as_uri(), wait_until="load")
        cells = page.eval_on_selector_all(
            "#students-table tbody tr",
            "rows => rows.map(row => [row.cells[0].innerText, ...[...row.cells].slice(4, 8).map(cell => cell.innerText)])",
        )
    shown = {cell[0]: cell[1:] for cell in cells}  # by the roster's name: score, raw score, late penalty, override
    late = want["late"]
    assert shown[roster_name(LATE)] == [str(late["final"]), str(late["raw"]), f"{late['penalty']} (2 days, 20%)", ""]
    assert shown[roster_name(OVERRIDDEN)] == ["70", "100", "", f"70 ({OVERRIDE_REASON})"]
    assert shown[roster_name(COMMENTED)] == ["100", "100", "", f"comment: {COMMENT}"]


# --- Gradescope and PrairieLearn with late work --------------------------------------------------


def gradescope_root(tmp_path: Path, created_at: str) -> Path:
    """Gradescope's /autograder for one submission: the zip's late policy in source/ (as `gradescope`
    builds it from the course file) and submission_metadata.json with the submission's time
    (gradescope/autograder_samples docs/submission_metadata.md: "created_at": "Submission time")."""
    from grader.platforms import gradescope_late

    (tmp_path / "course.toml").write_text(COURSE, encoding="utf-8")
    (tmp_path / "source").mkdir()
    policy = gradescope_late.policy_document(course_file.load(tmp_path / "course.toml"))
    (tmp_path / "source" / gradescope_late.POLICY_FILE).write_text(json.dumps(policy), encoding="utf-8")
    metadata = {"id": 1, "created_at": created_at, "users": [{"email": "erin@example.edu", "id": 7, "name": "Erin"}]}
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("visibility", ["visible", "after_published"])
def test_on_gradescope_the_score_and_what_the_student_reads_carry_the_trail(term, tmp_path, visibility):
    from grader.platforms import gradescope, gradescope_late

    document = json.loads((term / "out" / "results" / f"{LATE}.json").read_text(encoding="utf-8"))  # a real grading
    root = gradescope_root(tmp_path, SUBMITTED[LATE])
    report = gradescope.gradescope_results(document, hidden_visibility=visibility)
    report = gradescope_late.apply(report, root / "source", root / "submission_metadata.json", totals_shown=visibility == "visible")
    want = expected(term)["late"]
    # Gradescope's schema (autograder_samples docs/specs.md): the top-level score "overrides total of tests".
    assert report["score"] == want["final"] and sum(test["score"] for test in report["tests"]) == want["raw"]
    late_entry = [test for test in report["tests"] if test["name"] == "Late work"]
    assert late_entry[0]["visibility"] == "visible" and "2 days late" in late_entry[0]["output"]
    summary = report["output"].split("\n\n", 1)[0]  # the top-level "output", what the whole submission says
    assert "Late: submitted 2026-12-07T10:00:00-05:00, 2 days late" in summary and "20% of the points taken" in summary
    if visibility == "visible":
        assert f"The tests: {want['raw']}/100." in summary and f"Final score: {want['final']}/100." in summary
        assert f": {want['penalty']} points." in late_entry[0]["output"]
    else:  # Gradescope shows no total while tests are hidden; points would tell the hidden checks' score
        assert "The tests" not in summary and "Final score" not in summary and "points." not in summary
        assert "points." not in late_entry[0]["output"]
    assert report["extra_data"]["trail"]["score"] == want["final"]


def test_gradescopes_run_takes_the_penalty_by_the_submission_time_and_says_so(tmp_path):
    root = gradescope_root(tmp_path, "2026-12-06T10:00:00-05:00")  # one day late: 10%
    (root / "submission").mkdir()
    (root / "submission" / "multi_head_attention.py").write_text(SOLUTION, encoding="utf-8")
    finished = subprocess.run(  # as run_autograder starts it
        [sys.executable, "-m", "grader.platforms.gradescope", "--root", str(root)], cwd=REPO_ROOT,
        env=os.environ | {"PYTHONPATH": str(REPO_ROOT)}, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert results["score"] == 90.0 and sum(test["score"] for test in results["tests"]) == 100.0
    assert results["output"].startswith("Late: submitted 2026-12-06T10:00:00-05:00, 1 day late")  # hidden checks: no totals
    assert results["extra_data"]["trail"]["late"]["percent"] == PERCENT_A_DAY


def test_prairielearns_build_says_that_lateness_is_prairielearns_own(tmp_path, capsys):
    (tmp_path / "course.toml").write_text(COURSE, encoding="utf-8")
    assert main(["prairielearn", str(tmp_path / "pl"), "--course", str(tmp_path / "course.toml")]) == 0
    said = capsys.readouterr().out
    assert "late work: PrairieLearn does not run course.toml's late policy" in said and "allowAccess" in said
    (tmp_path / "course.toml").write_text(COURSE.replace('deadline = "2026-12-05T23:59:00-05:00"\n', ""), encoding="utf-8")
    assert main(["prairielearn", str(tmp_path / "pl"), "--course", str(tmp_path / "course.toml")]) == 0
    assert "late work" not in capsys.readouterr().out


# --- the gradebook derived, never trusted --------------------------------------------------------


def edited_out(term: Path, tmp_path: Path, edit) -> Path:
    """A copy of the class's OUT whose results.json has had ``edit`` made to the stubs' result."""
    out = tmp_path / "out"
    out.mkdir()
    for name in ("results.json", "gradebook.csv"):
        (out / name).write_bytes((term / "out" / name).read_bytes())
    (out / "feedback").mkdir()
    document = json.loads((out / "results.json").read_text(encoding="utf-8"))
    edit(document["submissions"][STUBS], document)
    (out / "results.json").write_text(json.dumps(document), encoding="utf-8")
    return out


def remove_groups(result: dict, _) -> None:
    del result["groups"]
    result["score"] = result["raw_score"] = 100


def type_an_override(result: dict, _) -> None:
    result["override"] = {"score": 100, "reason": "typed into results.json"}
    result["score"] = 100


def a_negative_percent(result: dict, _) -> None:
    result["late"] |= {"percent": -1000.0, "penalty": -100}
    result["score"] = 100


def full_groups_all_tests_failed(result: dict, _) -> None:
    for points in result["groups"].values():
        points["earned"] = points["max"]
    result["score"] = result["raw_score"] = 100


@pytest.mark.parametrize(
    "edit, field",
    [
        (remove_groups, "field 'groups' is missing, but its checks give shapes 0/15"),
        (type_an_override, "field 'override' is {'score': 100, 'reason': 'typed into results.json'}, but the overrides file gives none"),
        (a_negative_percent, "field 'late.percent' is -1000.0, but the course's deadline, submission times and late policy give 10.0"),
        (full_groups_all_tests_failed, "field 'groups.shapes.earned' is 15, but its checks' outcomes and points give 0"),
    ],
)
@pytest.mark.parametrize("command", ["export", "report"])
def test_each_hand_edit_that_exported_the_stubs_0_as_100_is_refused_naming_the_student_and_the_field(
    term, tmp_path, monkeypatch, capsys, edit, field, command,
):
    out = edited_out(term, tmp_path, edit)
    for name in ("course.toml", "roster.csv", "overrides.csv", "submitted_at.csv"):
        (tmp_path / name).write_bytes((term / name).read_bytes())
    monkeypatch.chdir(tmp_path)  # the course's folder, as an instructor runs the command there
    assert main([command, "out", *(["--out", "grades.csv"] if command == "export" else [])]) == 2
    said = capsys.readouterr().err
    assert f"submission {STUBS!r}: {field}" in said
    assert "overrides file" in said  # where a hand change goes
    assert not (tmp_path / "grades.csv").exists() and not (out / "report.html").exists()


def test_an_override_or_a_late_record_without_the_course_that_made_it_is_refused(term):
    with pytest.raises(ValueError, match=r"submission '\w+': field '(late|override|comment)' is .*, but no course file is read here"):
        class_results.read_class_results(term / "out" / "results.json")


def test_an_overrides_file_changed_since_the_batch_is_refused_until_the_batch_runs_again(term, tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    for name in ("course.toml", "roster.csv", "submitted_at.csv"):
        (course / name).write_bytes((term / name).read_bytes())
    (course / "overrides.csv").write_text(f"student,score,reason\n{OVERRIDDEN},80,regraded again\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"submission {OVERRIDDEN!r}: field 'override.score' is 70, but the overrides file gives 80 "
                                         r"\(the course's files changed since the batch"):
        class_results.read_class_results(term / "out" / "results.json", course_file.load(course / "course.toml"))


def numbers_in(value, path=()):
    """Every number in a JSON document, with the path to it (booleans are not numbers here)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from numbers_in(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from numbers_in(item, (*path, index))
    elif type(value) in (int, float):
        yield path, value


def test_no_stored_number_edited_changes_a_derived_score(term):
    """Each number of results.json in turn (the checks' points, each row's check and duration,
    every group, raw, late and final figure), changed: the export's derivation either refuses the
    file or sends every student the same score as before."""
    document = json.loads((term / "out" / "results.json").read_text(encoding="utf-8"))
    adjustments = class_results.adjustments_for(document, course_file.load(term / "course.toml"))

    def sent() -> dict[str, str]:
        read = class_results.checked(document, Path("results.json"), adjustments)  # read_class_results, parsed
        return {sid: export.scaled(result, POINTS) for sid, result in read["submissions"].items()}

    before = sent()
    edited = refused = 0
    for where, value in list(numbers_in({"checks": document["checks"], "submissions": document["submissions"]})):
        holder = document
        for key in where[:-1]:
            holder = holder[key]
        for changed in {value + 1, 100} - {value}:
            holder[where[-1]] = changed
            edited += 1
            try:
                after = sent()
            except ValueError:
                refused += 1
                continue
            finally:
                holder[where[-1]] = value
            assert after == before, f"{'/'.join(map(str, where))}: {value} -> {changed} changed a score"
    assert sent() == before
    assert edited > 500 and refused > 100  # every figure, and most edits refused (durations change nothing)


def test_each_checks_points_are_held_to_the_graders_own(term):
    """A check's points raised with every figure that follows from them (its group, the maximum, the
    raw and final score): still refused, by the points on the grader's own check."""
    document = class_results.expanded(json.loads((term / "out" / "results.json").read_text(encoding="utf-8")))
    result = document["submissions"][COMMENTED]  # every check passed
    test = result["tests"][0]
    test["max_points"] += 5
    test["points"] = test["max_points"]
    result["groups"][test["group"]]["earned"] += 5
    result["groups"][test["group"]]["max"] += 5
    for key in ("max_score", "raw_score", "score"):
        result[key] += 5
    with pytest.raises(grade_trail.TrailError, match=r"field 'tests\[0\]\.max_points' .* is \d+, but the grader gives test_\w+ \d+ points"):
        grade_trail.verify(result, class_results.adjustments_for(document, course_file.load(term / "course.toml")), COMMENTED)


def test_the_late_percent_is_the_policys_for_the_days_never_the_stored_one():
    deadline = datetime.datetime.fromisoformat("2026-12-05T23:59:00-05:00")
    course = course_file.Course(Path("course.toml"), {"assignment": {"deadline": deadline}, "late": {"penalty_per_day": 15}})
    submitted = late_work.SubmittedAt(datetime.datetime.fromisoformat("2026-12-07T10:00:00-05:00"), 2)
    adjustments = course_inputs.adjustments_of(course_inputs.Inputs(course, times={"s": submitted}), ["s"])
    tests = [{"name": "test_x[s]", "group": "shapes", "max_points": 100, "outcome": "passed"}]
    result = {"tests": tests, "groups": {"shapes": {"earned": 100, "max": 100}}, "max_score": 100, "score": 100}
    trail = grade_trail.derive(result, adjustments, "s")
    assert (trail.fields["late"]["days_late"], trail.fields["late"]["percent"], trail.final) == (2, 30.0, 70)


def test_a_comment_changes_no_score_and_an_override_replaces_the_score_after_the_penalty():
    lateness = course_inputs.Adjustments().lateness("s", "")  # no course: no lateness
    assert lateness is None
    comment = grade_trail.adjust(60, 100, None, Override(None, "see me", 2)).fields
    assert (comment["score"], comment.get("override"), comment["comment"]) == (60, None, "see me")
    assert trail_text.lines(comment) == ["Your instructor's comment: see me"]
    above = grade_trail.adjust(60, 100, None, Override(101, "typo", 2))
    assert above.final == 60 and above.notes == ("its score 101 is above max_score 100",)  # the batch lists it as not applied


@pytest.mark.parametrize("stored", [100.0, True, "100", None, [100]])
def test_a_stored_figure_is_the_derived_one_only_as_json_holds_it(stored):
    """1.0 is not 1, nor True 1, nor "100" 100: each such hand edit is refused, naming its field
    (the comparison's quick path for two whole numbers must not blur them)."""
    tests = [{"name": "test_x[s]", "group": "shapes", "max_points": 100, "outcome": "passed", "points": 100}]
    result = {"tests": tests, "groups": {"shapes": {"earned": 100, "max": 100}}, "max_score": 100, "score": 100}
    assert grade_trail.check_graded(result) is None
    for field, edit in (("score", lambda r: r.update(score=stored)), ("tests[0].points", lambda r: r["tests"][0].update(points=stored)),
                        ("groups.shapes.earned", lambda r: r["groups"]["shapes"].update(earned=stored))):
        edited = json.loads(json.dumps(result))
        edit(edited)
        assert f"field {field!r}" in (grade_trail.check_graded(edited) or ""), (field, stored)
