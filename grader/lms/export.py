"""Grades for the LMS: ``python -m grader export OUT --roster ROSTER.csv --assignment "Title (12345)" --out FILE``.

``--format canvas`` (the default) writes what Canvas's gradebook import accepts:

    Student,ID,SIS User ID,SIS Login ID,Section,Title (12345)
        Points Possible,,,,,100
    Doe\\, Jane,1234,s001,jdoe,Section A,87.5

one row per roster student in the roster's order, the final score scaled to ``--points``
(default 100), empty where the student has no submission. The final score is derived here
again (grader/term/grade_trail.py: the checks' outcomes and points, the course's late policy,
the overrides file, each row resolved to its student as the batch resolved it:
grader/term/course_inputs.py), and a results.json that no longer agrees is refused, naming the
student and the field: the number sent is the one each student's feedback page shows, out of the
grader's points. ``--format plain`` writes the roster's columns, the final score, its trail
(raw score, late penalty, override and its reason, an instructor's comment) and the points per
group, for Moodle and spreadsheets. The course file (grader/term/course.py) supplies
``--assignment`` ("name (lms_id)"), ``--points`` and ``--roster``. Which
submission is whose: ``grader/term/identity.py``, the rule every instructor's file follows
(a roster row's SIS Login ID, SIS User ID, Canvas ID or name, or the user id in a name Canvas's
"Download Submissions" gave). Roster students without a submission and
submissions not on the roster are printed and recorded in ``OUT/export.json``, and the
class report (rebuilt here) lists them.

``--feedback-zip FILE`` also writes the zip Canvas's "Re-Upload Submissions" takes: each
student graded from a file Canvas's "Download Submissions" named gets that file back with
their feedback in front (``grader/lms/feedback_zip.py``, which cites how Canvas matches
it). A ``--assignment`` without Canvas's "(id)" is warned about: Canvas then matches the
column by its exact title, or creates a new assignment of that name.

Every text cell is neutralised against formula injection (OWASP's rule): a cell starting
with ``=``, ``+``, ``-``, ``@``, a tab, a carriage return or a line feed gets a leading
``'``, so a student named ``=HYPERLINK(...)`` stays text in any spreadsheet. Plain numbers
(``-3``) are left as they are.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
import time
from pathlib import Path

from grader import results, settings, untrusted
from grader.class_view import class_files, class_results
from grader.lms import choice
from grader.lms.canvas import canvas_csv  # noqa: F401 - the gradebook import, as this command has always named it
from grader.lms.cells import neutralise, number, scaled
from grader.term import identity, roster
from grader.scoring import GROUP_TITLES, GROUPS
from grader.seam import registry
from grader.term.status import NOT_GRADED_IN_THIS_RUN

MATCH_FILE = "export.json"  # read by grader/class_view/report.py


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="a batch's output folder (holding results.json)")
    parser.add_argument("--roster", type=Path, required=True,
                        help="the gradebook CSV exported from Canvas, or the grading worksheet downloaded from Moodle")
    parser.add_argument(
        "--assignment", type=settings.COLUMN_TITLE, default=None,
        help='Canvas: the gradebook column, as Canvas names it: "Title (12345)" (Moodle\'s worksheet is its own column)',
    )
    parser.add_argument("--points", type=settings.POINTS, default=None,
                        help="the assignment's points possible (default: Moodle's Maximum grade in its worksheet, else 100)")
    parser.add_argument("--format", choices=("canvas", "moodle", "plain"), default=None,
                        help="the grade import to write (default: the course's LMS's: grader/lms/choice.py)")
    parser.add_argument("--out", dest="file", type=Path, required=True, help="the CSV to write")
    parser.add_argument(
        "--feedback-zip", type=Path, default=None,
        help="also write the LMS's feedback upload: Canvas's Re-Upload Submissions (each student's file with their feedback "
             "in front), Moodle's feedback files zip (each student's feedback page)",
    )
    parser.add_argument(
        "--submissions", type=Path, default=None,
        help="where the students' files are, for --feedback-zip (default: the folder or zip the batch graded)",
    )


def run(arguments: argparse.Namespace) -> int:
    if arguments.out.is_dir():
        for said in class_files.finish_interrupted(arguments.out):  # a set of class files a killed run left half moved
            print(f"note: {said}", file=sys.stderr)
    if not (arguments.out / "results.json").is_file():
        print(f"error: {arguments.out} holds no results.json: run `python -m grader batch` first", file=sys.stderr)
        return 2
    course = getattr(arguments, "course_settings", None)
    try:
        lms, chosen = choice.choose(course, arguments.roster)
        document = class_results.read_class_results(arguments.out / "results.json", course)
        rows = lms.read_roster(arguments.roster)
    except (OSError, ValueError) as error:  # RosterError and course_inputs.Refused are ValueErrors
        return _refused(str(error))
    grades_format = arguments.format or lms.grades_format
    print(chosen.said())
    if grades_format == "canvas" and not arguments.assignment:
        return _refused("Canvas's gradebook import needs the column: give --assignment \"Title (12345)\" (or [assignment] name and lms_id)")
    if grades_format == "moodle" and lms is not choice.LMSS["moodle"]:
        return _refused(f"--format moodle writes Moodle's grading worksheet back: give the worksheet Moodle downloads as --roster, not {arguments.roster.name}")
    submissions = document.get("submissions", {})
    # A student whose grading failed has no result, but has handed in: matched like the others
    # (their cell left empty and said), never reported as "without a submission".
    not_graded = [sid for sid in document.get("not_graded") or {} if sid not in submissions]
    waiting = {sid for sid in not_graded if _status(document["not_graded"][sid]) == NOT_GRADED_IN_THIS_RUN}
    found = identity.match([*submissions, *not_graded], rows)
    if (submissions or not_graded) and not found.submission_of_row:
        return _refused(matched_nobody(found, arguments.roster, lms))
    try:
        if grades_format == "plain":
            text, notes = plain_csv(found, submissions, 100.0 if arguments.points is None else arguments.points), []
        else:
            text, notes = (lms if grades_format == lms.kind else choice.LMSS[grades_format]).write_grades(
                arguments.roster, found, submissions, arguments.assignment, arguments.points)
    except ValueError as error:  # RosterError: a worksheet Moodle's upload could not take back
        return _refused(str(error))
    results.write_atomically(arguments.file, text)
    results.write_atomically(arguments.out / MATCH_FILE, json.dumps(match_record(found, arguments, submissions), indent=2) + "\n")
    _rebuild_report(arguments.out, course)
    _print_summary(found, arguments.file, not_graded, submissions, waiting)
    if grades_format == "canvas" and not CANVAS_COLUMN_ID.search(arguments.assignment):
        print(f"WARNING: {untrusted.printable(column_without_id_warning(arguments.assignment))}", file=sys.stderr)
    for note in notes:
        print(f"WARNING: {untrusted.printable(note)}", file=sys.stderr)
    for warning in higher_grades_not_sent(found, submissions):
        print(f"WARNING: {untrusted.printable(warning)}", file=sys.stderr)
    if arguments.feedback_zip:
        return _write_feedback_zip(arguments, document, lms, found)
    return 0


def _refused(message: str) -> int:
    for line in message.splitlines():
        print(f"error: {untrusted.printable(line)}", file=sys.stderr)
    return 2


def matched_nobody(found: identity.Match, roster_path: Path, lms) -> str:
    """Why an export whose roster matches none of the class is refused: the grades would all be empty."""
    reasons = list(dict.fromkeys(found.not_on_roster.values()))[:3]
    return (
        f"none of the class's {len(found.not_on_roster)} submissions matches a student of {roster_path} "
        f"({len(found.rows)} students): nothing written, every grade would be empty. Is it {lms.title}'s roster of this "
        f"course and this assignment? The first reasons: {'; '.join(reasons) or 'the roster has no students'}"
    )


# Canvas's gradebook import (canvas-lms lib/gradebook_importer.rb, parse_assignments) reads an
# assignment column's header as "Title (id)" and finds the assignment by that id; a header
# without one is matched to an assignment whose title is exactly the header, and when none
# has it, the import creates a NEW assignment of that name.
CANVAS_COLUMN_ID = re.compile(r"\(\d+\)\s*$")


def column_without_id_warning(assignment: str) -> str:
    return (
        f"the column {assignment!r} has no Canvas assignment id (\"Title (12345)\", as Canvas's own gradebook export "
        "names it): Canvas will match it to an assignment titled exactly that, and if none is, create a new assignment "
        "of that name on import. Copy the column's header from a gradebook exported from Canvas."
    )


def _write_feedback_zip(arguments: argparse.Namespace, document: dict, lms, found: identity.Match) -> int:
    """The LMS's feedback upload; a zip for no one is not written, and the export fails saying why."""
    originals = arguments.submissions or (Path(document["submissions_folder"]) if document.get("submissions_folder") else None)
    summary = lms.write_feedback_zip(arguments.feedback_zip, arguments.out, document.get("submissions", {}), found, originals)
    if not summary.written:
        arguments.feedback_zip.unlink(missing_ok=True)  # a zip for no one would upload nothing, without a word
        print(f"error: no student's feedback could go into {arguments.feedback_zip} ({lms.title}): nothing written", file=sys.stderr)
        for sid, why in summary.left_out.items():
            print(f"error:   {untrusted.printable(sid)}: {untrusted.printable(why)}", file=sys.stderr)
        return 2
    print(f"{arguments.feedback_zip}: feedback for {len(summary.written)} students, {lms.feedback_zip_said()}")
    if summary.left_out:
        print(f"{len(summary.left_out)} students not in the zip (give them OUT/feedback/<id>.html another way):")
        for sid, why in summary.left_out.items():
            print(f"  {untrusted.printable(sid)}: {untrusted.printable(why)}")
    return 0


def higher_grades_not_sent(found: identity.Match, submissions: dict[str, dict]) -> list[str]:
    """One sentence per roster student for whom another of their submissions scored higher
    than the one exported: the LMS would get the lower grade, so the instructor is told."""
    warnings = []
    for row, others in found.also_matched.items():
        sent = found.submission_of_row[row]
        score = _fraction(submissions.get(sent))
        better = [(sid, _fraction(submissions.get(sid))) for sid in others if _fraction(submissions.get(sid)) > score]
        if better:
            best, fraction = max(better, key=lambda item: item[1])
            warnings.append(
                f"{roster.describe(found.rows[row])}: exported {sent} ({score:.0%}), but {best} scored {fraction:.0%}; "
                "the higher grade was NOT sent. Give the batch this roster ([files] roster in the course file): it grades one entry "
                "per student, the latest attempt; then grade again."
            )
    return warnings


def _status(record) -> str:
    return str(record.get("status", "")) if isinstance(record, dict) else ""


def _fraction(document: dict | None) -> float:
    return document["score"] / document["max_score"] if document and document.get("max_score") else 0.0


def plain_csv(found: identity.Match, submissions: dict[str, dict], points: float) -> str:
    groups = [g for g in GROUPS if any(g in d.get("groups", {}) for d in submissions.values())]
    group_max = {g: max(d["groups"][g]["max"] for d in submissions.values() if g in d.get("groups", {})) for g in groups}
    # The roster's identity columns (its other assignments' columns stay in the LMS).
    columns = [column for column in roster.COLUMNS if not found.rows or column in found.rows[0]]
    buffer = io.StringIO()
    table = csv.writer(buffer)
    trail = [f"raw score (of {number(points)})", "late penalty", "override", "override reason", "comment"]
    table.writerow([
        *map(neutralise, columns), "submission", f"score (of {number(points)})", *trail,
        *(f"{GROUP_TITLES[g]} (of {group_max[g]})" for g in groups),
    ])
    for index, row in enumerate(found.rows):
        sid = found.submission_of_row.get(index)
        document = submissions.get(sid, {}) if sid else {}
        cells = [
            scaled(document, points), *trail_cells(document, points),
            *(document.get("groups", {}).get(g, {}).get("earned", "") for g in groups),
        ] if document else [""] * (1 + len(trail) + len(groups))
        table.writerow([*(neutralise(row.get(column, "")) for column in columns), neutralise(sid or ""), *cells])
    return buffer.getvalue()


def trail_cells(document: dict, points: float) -> list[str]:
    """The raw score, the late penalty and the override, in the LMS's points, the reason, and an
    instructor's comment."""
    def in_points(value) -> str:
        return number(value / document["max_score"] * points) if document.get("max_score") and value != "" else ""

    late, override = document.get("late") or {}, document.get("override") or {}
    return [
        in_points(document.get("raw_score", document["score"])), in_points(late.get("penalty", "")),
        in_points(override.get("score", "")), neutralise(override.get("reason", "")), neutralise(document.get("comment", "")),
    ]


def match_record(found: identity.Match, arguments: argparse.Namespace, submissions: dict[str, dict]) -> dict:
    return {
        "assignment": arguments.assignment,
        "exercise": registry.exercise().name,  # the exercise whose grades these are (the class file's, checked)
        "roster": arguments.roster.name,
        "file": arguments.file.name,
        "exported_at": time.strftime("%Y-%m-%d %H:%M %Z"),
        "matched": len(found.submission_of_row),
        "matched_by": found.matched_by,
        "roster_without_submission": [roster.describe(row) for row in found.without_submission],
        "submissions_not_on_roster": [{"submission": sid, "reason": why} for sid, why in found.not_on_roster.items()],
        "higher_grades_not_sent": higher_grades_not_sent(found, submissions),
        "overrides_sent": sorted(sid for sid in found.submission_of_row.values() if (submissions.get(sid) or {}).get("override")),
        "late_penalties_sent": sorted(
            sid for sid in found.submission_of_row.values() if ((submissions.get(sid) or {}).get("late") or {}).get("penalty")
        ),
    }


def _print_summary(
    found: identity.Match, file: Path, not_graded: list[str], submissions: dict[str, dict], waiting: set[str] = frozenset(),
) -> None:
    print(f"{file}: {len(found.submission_of_row)} of {len(found.rows)} roster students have a submission")
    still = [sid for sid in found.submission_of_row.values() if sid in waiting]
    if still:
        print(f"{len(still)} on the roster whose submission is {NOT_GRADED_IN_THIS_RUN} (--only named others; left empty: a run without --only grades them):")
        for sid in still:
            print(f"  {untrusted.printable(found.names.get(sid, sid))}")
    failed = [sid for sid in found.submission_of_row.values() if sid in not_graded and sid not in waiting]
    if failed:
        print(f"{len(failed)} on the roster whose submission could not be graded (left empty; see OUT/batch.log, then regrade):")
        for sid in failed:
            print(f"  {untrusted.printable(found.names.get(sid, sid))}")
    missing = found.without_submission
    if missing:
        print(f"{len(missing)} on the roster without a submission (left empty):")
        for row in missing:
            print(f"  {untrusted.printable(roster.describe(row))}")
    overridden = [sid for sid in found.submission_of_row.values() if (submissions.get(sid) or {}).get("override")]
    if overridden:
        names = ", ".join(untrusted.printable(found.names.get(sid, sid)) for sid in overridden)
        print(f"{len(overridden)} overridden scores sent (the overrides file): {names}")
    if found.not_on_roster:
        print(f"{len(found.not_on_roster)} submissions not on the roster (not exported):")
        for sid, why in found.not_on_roster.items():
            print(f"  {untrusted.printable(_with_name(found, sid))}: {untrusted.printable(why)}")


def _with_name(found: identity.Match, sid: str) -> str:
    """A submission as people read it: the name its own file gives (Canvas's "smithjane (1234)"),
    and its id when that says more."""
    name = found.names.get(sid, sid)
    return sid if name == sid else f"{name}: {sid}"


def _rebuild_report(out: Path, course) -> None:
    try:
        from grader.class_view import report
    except ImportError:  # matplotlib missing: the CSV and export.json are written all the same
        return
    report.write_report(out, course=course)
