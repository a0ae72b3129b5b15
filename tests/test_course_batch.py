"""A term's cycle with a course file: one seed through incremental runs, --only and --force; --only
leaves every other result byte-identical; late work and overrides reach the gradebook, the report and
the export and survive a regrade; every 0 has a status; the batch ends with a summary on stdout."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from grading import REPO_ROOT
from grading import command_in as run
import tiers

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
STUB = REPO_ROOT / "exercises" / "multi_head_attention.py"

COURSE = """\
# HW3, autumn term
[assignment]
name = "HW3 Multi-head attention"   # the LMS column
lms_id = 777
points = 100
deadline = "2026-12-05T23:59:00-05:00"

[late]
penalty_per_day = 10   # percent per day
max_days = 3
grace_minutes = 15

[extensions]
carl = "2026-12-07T23:59:00-05:00"

[files]
overrides = "overrides.csv"
submitted_at = "submitted_at.csv"
roster = "roster.csv"
"""
ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section\r\n"
    "    Points Possible,,,,\r\n"
    + "".join(f"{name.title()},{1000 + n},U{n},{name},A\r\n" for n, name in enumerate(["alice", "bob", "carl", "dave", "eve"]))
)


# Honest code must not time out on a machine many others load: a call may take a minute, and so
# may a test (tests/grading.py's command_in gives the shards' sessions two minutes a test; the
# grader's own defaults are 10 s, grader/timeouts.py). The statuses of an endless loop and the
# rest are tested on recorded results in tests/test_status.py.
LOAD_PROOF = ("--call-timeout", "60")


# canvas-lms's Download Submissions name of a late upload (lib/content_zipper.rb; grader/term/late_work.py).
CANVAS_LATE = "smithjane_LATE_1234_5678_multi_head_attention.py"


def canvas_row(rows: dict[str, dict]) -> dict:
    """The Canvas-named student's row, whatever id the intake derives from the name."""
    (row,) = [row for sid, row in rows.items() if "1234" in sid]
    return row


def batch(folder: Path, *extra: str) -> subprocess.CompletedProcess:
    finished = run(folder, "batch", "class", "--out", "out", "--quiet", "--jobs", "2", *LOAD_PROOF, *extra)
    return finished


def gradebook(folder: Path) -> dict[str, dict]:
    with open(folder / "out" / "gradebook.csv", newline="", encoding="utf-8") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


def result_bytes(folder: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted((folder / "out" / "results").glob("*.json"))}


def seeds(folder: Path) -> set[int]:
    return {json.loads(path.read_text())["grading_seed"] for path in (folder / "out" / "results").glob("*.json")}


def course_seed(folder: Path) -> int:
    return tomllib.loads((folder / "course.toml").read_text(encoding="utf-8"))["assignment"]["grading_seed"]


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # a term's class graded by the batch
def term(tmp_path_factory):
    folder = tmp_path_factory.mktemp("term")
    (folder / "course.toml").write_text(COURSE, encoding="utf-8")
    (folder / "overrides.csv").write_text("student,score,reason\nbob,50,graded by hand\neve,40,handed in late on paper\ndave,150,a typo\n", encoding="utf-8")
    (folder / "submitted_at.csv").write_text(
        "student,submitted_at\n"
        "alice,2026-12-07T10:00:00-05:00\n"  # a day and ten hours late: two days
        "carl,2026-12-07T10:00:00-05:00\n",  # the same, inside his extension
        encoding="utf-8",
    )
    (folder / "roster.csv").write_text(ROSTER, encoding="utf-8")
    submissions = folder / "class"
    submissions.mkdir()
    for name in ("alice", "carl"):
        (submissions / f"{name}.py").write_text(SOLUTION.read_text())
    (submissions / "bob.py").write_text(STUB.read_text())
    (submissions / "dave.py").write_text("def head_dimension(:\n")
    (submissions / CANVAS_LATE).write_text(SOLUTION.read_text())  # no time known: Canvas's marker alone
    first = batch(folder)
    return folder, first


def test_the_first_run_records_one_seed_in_the_course_file_keeping_its_comments(term):
    folder, first = term
    assert first.returncode == 0, first.stdout + first.stderr
    text = (folder / "course.toml").read_text(encoding="utf-8")
    assert "# HW3, autumn term" in text and "# percent per day" in text and 'carl = "2026-12-07T23:59:00-05:00"' in text
    assert seeds(folder) == {course_seed(folder)}


def test_a_student_two_days_late_loses_twenty_points_and_one_inside_an_extension_none(term):
    folder, _ = term
    rows = gradebook(folder)
    assert (rows["alice"]["raw_score"], rows["alice"]["late_penalty"], rows["alice"]["score"]) == ("100", "20", "80")
    assert "2 days late" in rows["alice"]["late"]
    assert (rows["carl"]["late_penalty"], rows["carl"]["score"]) == ("0", "100")
    assert "extension" in rows["carl"]["late"]


def test_canvas_late_marker_alone_counts_the_policys_unknown_delay_and_says_so(term):
    folder, _ = term
    row = canvas_row(gradebook(folder))
    assert (row["raw_score"], row["late_penalty"], row["score"]) == ("100", "10", "90")
    assert "marked late by Canvas, with no submission time known: counted as 1 day late" in row["late"]


def test_every_0_has_a_status_and_the_override_replaces_the_score_beside_the_raw_one(term):
    folder, _ = term
    rows = gradebook(folder)
    assert {sid: row["status"] for sid, row in rows.items()} == {
        "alice": "graded", "bob": "not written", "carl": "graded", "dave": "syntax error", **{
            sid: "graded" for sid in rows if "1234" in sid
        },
    }
    assert (rows["bob"]["raw_score"], rows["bob"]["override"], rows["bob"]["override_reason"], rows["bob"]["score"]) == (
        "0", "50", "graded by hand", "50",
    )
    page = (folder / "out" / "report.html").read_text(encoding="utf-8")
    assert '<td class="status text">syntax error</td>' in page and '<td class="status text">not written</td>' in page
    assert '<td class="override text">50 (graded by hand)</td>' in page


def test_the_batch_ends_with_a_summary_on_stdout(term):
    folder, first = term
    lines = first.stdout.splitlines()
    assert lines[0] == "5 students graded (5 in this run), mean 64.0, median 80 of 100"  # 80, 50, 100, 0, 90
    assert lines[1] == "1 at 0: 1 syntax error"
    assert lines[2].startswith("slowest: ") and len(re.findall(r"\d\.\d s\b", lines[2])) == 3  # three ids, their seconds
    assert f"NOT APPLIED: {folder / 'overrides.csv'}:3: override for 'eve': Eve has no submission" in lines
    assert lines[-1] == f"report: {(folder / 'out' / 'report.html').resolve()}"


def test_an_override_of_a_student_without_a_submission_is_said(term):
    folder, first = term
    assert "overrides.csv:3: override for eve: Eve has no submission; not applied" in first.stderr  # the log's warning, on the terminal
    document = json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))
    assert document["not_applied"] == [
        {"file": str(folder / "overrides.csv"), "line": 3, "key": "eve", "what": "override", "reason": "Eve has no submission"},
        {"file": str(folder / "overrides.csv"), "line": 4, "key": "dave", "what": "override", "reason": "its score 150 is above max_score 100"},
    ]
    # Above the points: not applied (dave keeps his 0), and said once, with the other rows not applied.
    assert first.stderr.count("override for dave: its score 150 is above max_score 100; not applied") == 1
    assert gradebook(folder)["dave"]["score"] == "0"
    page = (folder / "out" / "report.html").read_text(encoding="utf-8")
    assert "overrides.csv:3: override for <code>eve</code>: Eve has no submission" in page


def test_the_export_reads_the_course_and_sends_the_final_scores(term):
    folder, _ = term
    finished = run(folder, "export", "out", "--out", "grades.csv")
    assert finished.returncode == 0, finished.stderr
    lines = (folder / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0].endswith(",HW3 Multi-head attention (777)")
    assert [line.rsplit(",", 1)[1] for line in lines[2:]] == ["80", "50", "100", "0", ""]  # alice, bob, carl, dave; eve: none


@pytest.mark.slow
def test_an_incremental_run_and_only_keep_the_seed_and_only_leaves_the_others_byte_identical(term):
    folder, _ = term
    seed = course_seed(folder)
    with open(folder / "class" / "dave.py", "a", encoding="utf-8") as handle:
        handle.write("# a change\n")
    incremental = batch(folder)
    assert incremental.returncode == 0, incremental.stderr
    assert incremental.stdout.startswith("5 students graded (1 in this run)")
    assert canvas_row(gradebook(folder))["late_penalty"] == "10"  # the marker is read from the name, graded or not
    assert seeds(folder) == {seed}
    before = result_bytes(folder)
    only = batch(folder, "--only", "alice", "bob")
    assert only.returncode == 0, only.stderr
    assert only.stdout.startswith("5 students graded (2 in this run)")
    after = result_bytes(folder)
    assert {name: after[name] for name in after if name not in ("alice.json", "bob.json")} == {
        name: before[name] for name in before if name not in ("alice.json", "bob.json")
    }
    log = (folder / "out" / "batch.log").read_text(encoding="utf-8")
    assert [line for line in log.splitlines() if " to grade, " in line][-1].endswith(" 2 to grade, 3 already graded")
    assert seeds(folder) == {seed} and course_seed(folder) == seed


def test_only_refuses_to_mix_seeds_and_an_unknown_id(term):
    folder, _ = term
    before = result_bytes(folder)
    mixed = batch(folder, "--only", "dave", "--grading-seed", str(course_seed(folder) + 1))
    assert mixed.returncode == 2 and "--only would mix grading seeds" in mixed.stderr
    unknown = batch(folder, "--only", "nobody")
    assert unknown.returncode == 2 and "--only: no submission for nobody" in unknown.stderr
    assert result_bytes(folder) == before


@pytest.mark.slow
def test_the_override_survives_force(term):
    folder, _ = term
    forced = batch(folder, "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.startswith("5 students graded (5 in this run)")
    rows = gradebook(folder)
    assert (rows["bob"]["score"], rows["bob"]["override"]) == ("50", "50")
    assert seeds(folder) == {course_seed(folder)}


def test_a_hand_edited_result_is_graded_again_and_said(term):
    folder, _ = term
    path = folder / "out" / "results" / "dave.json"
    document = json.loads(path.read_text())
    document["score"] = 70  # its groups still add up to 0
    path.write_text(json.dumps(document))
    again = batch(folder)
    assert again.returncode == 0 and again.stdout.startswith("5 students graded (1 in this run)")
    assert "dave: its result's field 'score' is 70, but its groups add up to 0" in again.stderr
    assert gradebook(folder)["dave"]["score"] == "0"


@pytest.mark.slow
def test_without_a_course_file_the_seed_is_recorded_in_out_and_kept(tmp_path):
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "alice.py").write_text(SOLUTION.read_text())
    assert batch(tmp_path).returncode == 0
    recorded = int((tmp_path / "out" / "grading-seed.txt").read_text())
    assert seeds(tmp_path) == {recorded}
    (tmp_path / "class" / "bob.py").write_text(STUB.read_text())
    assert batch(tmp_path).returncode == 0
    assert seeds(tmp_path) == {recorded}
