"""A small Canvas term as an instructor gets it: the gradebook CSV Canvas exports, its "Download
Submissions" zip, and a course file (with its overrides and submission times) written as a person
would, naming students by whatever name they had at hand.

Canvas's formats, as canvas-lms writes them:
- the gradebook (lib/gradebook_exporter.rb): a byte-order mark, ``Student`` (the sortable name),
  ``ID`` (the user id), ``SIS User ID``, ``SIS Login ID``, ``Section``, each assignment as
  "Title (id)", the totals; a row of "Manual Posting" when an assignment's grades are hidden,
  then "    Points Possible";
- the download (lib/content_zipper.rb): ``sortablename[_LATE]_userid_attachmentid_displayname``,
  one member per uploaded file; a file uploaded again under its name is "name-1.py" (Attachment.
  make_unique_filename) with a later (higher) attachment id.

    student      ids (Canvas, SIS, login)      handed in                               the course says
    Doe, Jane    123456, 2024001, jdoe         the solution, 2 days after the deadline  extension (as "doejane"), time (as "jdoe")
    Smith, Ann   123457, 2024002, asmith       the solution, LATE                        time, 2 days late (as SIS id "2024002")
    Lee, Kim     123458, 2024003, klee         a broken first try, then the solution (-1)  a comment (as "Lee, Kim")
    O'Neil, Sam  123459, 2024004, soneil       a file with a syntax error, LATE          (Canvas's marker alone)
    Ng, Eve      123460, 2024005, eng          the untouched stub                       override 55 (as her file's stem)
    Roe, Bob     123461, 2024006, broe         nothing                                  extension (as Canvas id "123461")
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from grading import REPO_ROOT

SOLUTION = (REPO_ROOT / "solutions" / "multi_head_attention.py").read_text(encoding="utf-8")
STUB = (REPO_ROOT / "exercises" / "multi_head_attention.py").read_text(encoding="utf-8")
SYNTAX_ERROR = SOLUTION.replace("def head_dimension(", "def head_dimension(:", 1)
BROKEN_FIRST_TRY = SOLUTION.replace("def causal_mask(", "def causal_mask(:", 1)  # holds work: the student was writing

ROSTER = (
    "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (111),HW3 Multi-head attention (777),"
    "Current Points,Final Points,Current Score,Unposted Current Score,Final Score,Unposted Final Score\r\n"
    ",,,,,,Manual Posting,,,,,,\r\n"
    "    Points Possible,,,,,10,20,(read only),(read only),(read only),(read only),(read only),(read only)\r\n"
    '"Doe, Jane",123456,2024001,jdoe,CS 101 A,9,,9,9,90,90,90,90\r\n'
    '"Smith, Ann",123457,2024002,asmith,CS 101 A,8,,8,8,80,80,80,80\r\n'
    '"Lee, Kim",123458,2024003,klee,CS 101 B,7,,7,7,70,70,70,70\r\n'
    '"O\'Neil, Sam",123459,2024004,soneil,CS 101 B,10,,10,10,100,100,100,100\r\n'
    '"Ng, Eve",123460,2024005,eng,CS 101 B,6,,6,6,60,60,60,60\r\n'
    '"Roe, Bob",123461,2024006,broe,CS 101 B,5,,5,5,50,50,50,50\r\n'
)

EVE_STEM = "ngeve_123460_7890600_multi_head_attention"
DOWNLOAD = {
    "doejane_123456_7890123_multi_head_attention.py": SOLUTION,
    "smithann_LATE_123457_7890200_multi_head_attention.py": SOLUTION,
    "leekim_123458_7890300_multi_head_attention.py": BROKEN_FIRST_TRY,
    "leekim_123458_7890412_multi_head_attention-1.py": SOLUTION,
    "oneilsam_LATE_123459_7890500_multi_head_attention.py": SYNTAX_ERROR,
    f"{EVE_STEM}.py": STUB,
}

COURSE = """\
# HW3, written from the docs
[assignment]
name = "HW3 Multi-head attention"
lms_id = 777
points = 20
deadline = "2026-12-05T23:59:00-05:00"

[late]
penalty_per_day = 10
max_days = 3
grace_minutes = 15
unknown_delay_days = 1

[extensions]
doejane = "2026-12-08T23:59:00-05:00"   # Jane: as Canvas writes her name in its files
123461 = "2026-12-08T23:59:00-05:00"    # Bob, by his Canvas id: he handed nothing in

[files]
roster = "gradebook.csv"
overrides = "overrides.csv"
submitted_at = "submitted_at.csv"
"""
OVERRIDES = f"""student,score,reason
{EVE_STEM},55,presented the work in office hours
"Lee, Kim",,Your first upload did not parse; the second is graded.
"""
SUBMITTED_AT = """student,submitted_at
jdoe,2026-12-07T22:00:00-05:00
2024002,2026-12-07T10:00:00-05:00
"""
# What each roster student is sent, in points of 20 (the roster's order): Jane inside her
# extension, Ann two known days late (-20%), Kim's later attempt, Sam's syntax error (0, nothing
# to take), Eve's override of 55 of 100, Bob nothing.
EXPORTED = ["20", "16", "20", "0", "11", ""]


def write_download(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def write_term(folder: Path, download: dict[str, str] = DOWNLOAD) -> Path:
    """The course's folder: course.toml, the gradebook, overrides, submission times, the download."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "course.toml").write_text(COURSE, encoding="utf-8")
    (folder / "gradebook.csv").write_text(ROSTER, encoding="utf-8", newline="")
    (folder / "overrides.csv").write_text(OVERRIDES, encoding="utf-8")
    (folder / "submitted_at.csv").write_text(SUBMITTED_AT, encoding="utf-8")
    write_download(folder / "submissions.zip", download)
    return folder


# --- the course's second exercise, a term of its own ---------------------------------------------
# Two students of the same section hand in the feed-forward exercise's file: its reference and its
# untouched stub. The course file names the exercise; nothing else in the term says which it is.

SECOND_EXERCISE = "feed_forward"
SECOND_SOLUTION = (REPO_ROOT / "solutions" / f"{SECOND_EXERCISE}.py").read_text(encoding="utf-8")
SECOND_STUB = (REPO_ROOT / "exercises" / f"{SECOND_EXERCISE}.py").read_text(encoding="utf-8")
SECOND_ASSIGNMENT = "HW4 Feed-forward network (778)"
SECOND_ROSTER = (
    f"\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,{SECOND_ASSIGNMENT},"
    "Current Points,Final Points,Current Score,Unposted Current Score,Final Score,Unposted Final Score\r\n"
    "    Points Possible,,,,,20,(read only),(read only),(read only),(read only),(read only),(read only)\r\n"
    '"Doe, Jane",123456,2024001,jdoe,CS 101 A,,0,0,0,0,0,0\r\n'
    '"Ng, Eve",123460,2024005,eng,CS 101 B,,0,0,0,0,0,0\r\n'
)
SECOND_DOWNLOAD = {
    f"doejane_123456_7891123_{SECOND_EXERCISE}.py": SECOND_SOLUTION,
    f"ngeve_123460_7891600_{SECOND_EXERCISE}.py": SECOND_STUB,
}
SECOND_COURSE = f"""\
[assignment]
name = "HW4 Feed-forward network"
exercise = "{SECOND_EXERCISE}"
lms_id = 778
points = 20

[files]
roster = "gradebook.csv"
"""
SECOND_EXPORTED = ["20", "0"]  # the reference's full marks and the stub's zero, in points of 20


def write_second_term(folder: Path) -> Path:
    """The second exercise's course folder: course.toml naming it, the gradebook, the download."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "course.toml").write_text(SECOND_COURSE, encoding="utf-8")
    (folder / "gradebook.csv").write_text(SECOND_ROSTER, encoding="utf-8", newline="")
    write_download(folder / "submissions.zip", SECOND_DOWNLOAD)
    return folder
