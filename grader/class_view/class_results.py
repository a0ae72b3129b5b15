"""A class's results.json read back (by ``export`` and ``report``), checked before it is used.

A hand edit or a truncated copy must end in one message naming the student and the field, not
in a traceback, nor in a wrong grade sent to the LMS: every student's final score is derived
again from their checks, the course's late policy and the overrides file
(grader/term/grade_trail.py), and a stored figure that is not the derived one is refused.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from grader.seam import registry
from grader.term import course_inputs, grade_trail
from grader.feedback.diagnosis_text import check_name
from grader.scoring import TEST_FIELDS

# The failed weights checks whose pictures a feedback page draws (grader/class_view/feedback_pages.py);
# one mistake usually fails many, and the rest say the same on other data.
PICTURES_SHOWN = 3


def student_name(student_id: str, result: dict) -> str:
    """A student as people read them: the roster's name the batch recorded (``student``), else
    the entry's id (a file's name, which may be Canvas's 50 characters)."""
    student = result.get("student") if isinstance(result, dict) else None
    name = student.get("name") if isinstance(student, dict) else None
    return name if isinstance(name, str) and name.strip() else student_id


def roster_name(result: dict) -> str | None:
    """The student's name as the roster gives it (the batch recorded it with ``on_roster``), or
    None: what a feedback page is titled with instead of the file's stem."""
    student = result.get("student") if isinstance(result, dict) else None
    if isinstance(student, dict) and student.get("on_roster") is True and isinstance(student.get("name"), str):
        return student["name"].strip() or None
    return None


def has_picture(test: dict) -> bool:
    """A failed weights check that drew the student's matrix beside the reference's."""
    return isinstance(test, dict) and test.get("outcome") == "failed" and bool(test.get("attention"))


def as_kept_in_the_class_file(document: dict, student_id: str) -> dict:
    """``document`` (one student's result) as the class file keeps it, read whole by the report
    and the export: the pictures a page draws, and for every other failed weights check only
    where its picture is kept (the student's own OUT/results/<id>.json, whole), since most of a
    failing result's bytes are those matrices; each test without the student's id (the key it
    is filed under) and with its duration to the tenth of a millisecond."""
    tests, drawn = [], 0
    for test in document.get("tests", []):
        if not isinstance(test, dict):
            tests.append(test)  # read_class_results names it
            continue
        kept = {key: value for key, value in test.items() if key != "submission"}
        if isinstance(kept.get("duration"), float):
            kept["duration"] = round(kept["duration"], 4)
        if has_picture(test):
            drawn += 1
            if drawn > PICTURES_SHOWN:
                kept["attention"] = {"kept_in": f"results/{student_id}.json"}
        tests.append(kept)
    return document | {"tests": tests}


# A test as the class file keeps it when it is a passed check's: only where it differs.
TEST_DEFAULTS = {"message": "", "attention": None}
# A test of a student's result (scoring.SubmissionResult.to_dict) without the id it is filed under.
TEST_KEYS = (*(name for name in TEST_FIELDS if name != "submission"), "points")
ID = "{id}"  # where a check's name holds the student's id, in the class's table of checks


def compacted(documents: dict[str, dict]) -> tuple[list, dict[str, dict]]:
    """The class's checks named once, and each student's tests as rows of that table.

    Every student runs the same checks, whose names differ only by the student's id: the table
    holds each check once (``[name with {id}, group, max_points]``) and a student's test is
    ``[check, outcome, duration]``, with ``{"message": ..., "attention": ...}`` after it where
    those are not a passed check's empty ones; its points follow from the outcome. A student
    whose tests do not fit this (a name without the id, a key of another kind) keeps them whole.
    ``expanded`` gives back exactly the dictionaries this was given (tests/test_class_results.py)."""
    checks: list[list] = []
    index: dict[tuple, int] = {}
    kept: dict[str, dict] = {}
    for student_id, document in documents.items():
        rows = _as_rows(document.get("tests"), student_id, checks, index)
        kept[student_id] = document if rows is None else document | {"tests": rows}
    return checks, kept


def _as_rows(tests, student_id: str, checks: list, index: dict) -> list | None:
    if not isinstance(tests, list):
        return None
    marker = f"[{student_id}"
    rows, added = [], []
    for test in tests:
        name = test.get("name") if isinstance(test, dict) else None
        if (
            not isinstance(name, str) or name.count(marker) != 1 or ID in name or set(test) != set(TEST_KEYS)
            or test["points"] != (test["max_points"] if test["outcome"] == "passed" else 0)
        ):
            for key in added:  # this student's tests stay whole: no check of theirs in the table
                del index[key]
            del checks[len(checks) - len(added):]
            return None
        key = (name.replace(marker, "[" + ID, 1), test["group"], test["max_points"])
        if key not in index:
            index[key] = len(checks)
            checks.append(list(key))
            added.append(key)
        differs = {field: test[field] for field, default in TEST_DEFAULTS.items() if test[field] != default}
        rows.append([index[key], test["outcome"], test["duration"], *([differs] if differs else [])])
    return rows


def expanded(document: dict) -> dict:
    """A class file's document with every student's tests as dictionaries again (``compacted``
    undone); a document without a table of checks (an older grader's) as it is. A row that does
    not name a check of the table is left as it is, for read_class_results to name."""
    checks = document.get("checks") if isinstance(document, dict) else None
    submissions = document.get("submissions") if isinstance(document, dict) else None
    if not isinstance(checks, list) or not isinstance(submissions, dict):
        return document
    whole = {}
    for student_id, result in submissions.items():
        tests = result.get("tests") if isinstance(result, dict) else None
        if isinstance(tests, list) and tests and all(_is_row(row, checks) for row in tests):
            result = result | {"tests": [_as_test(row, checks[row[0]], student_id) for row in tests]}
        whole[student_id] = result
    return {key: value for key, value in document.items() if key != "checks"} | {"submissions": whole}


def _is_row(row, checks: list) -> bool:
    return (
        isinstance(row, list) and len(row) in (3, 4) and type(row[0]) is int and 0 <= row[0] < len(checks)
        and isinstance(checks[row[0]], list) and len(checks[row[0]]) == 3 and isinstance(checks[row[0]][0], str)
        and (len(row) == 3 or isinstance(row[3], dict))
    )


def _as_test(row: list, check: list, student_id: str) -> dict:
    template, group, max_points = check
    outcome, duration = row[1], row[2]
    differs = row[3] if len(row) == 4 else {}
    return {
        "name": template.replace("[" + ID, f"[{student_id}", 1), "group": group, "max_points": max_points,
        "outcome": outcome, "message": differs.get("message", ""), "duration": duration,
        "attention": differs.get("attention"), "points": max_points if outcome == "passed" else 0,
    }


def read_class_results(path: Path, course=None) -> dict:
    """A class's results.json as the batch wrote it, each student's trail derived again with the
    ``course``'s files (grader/term/course.py's Course; None: no course file), or ``ValueError``
    naming the first thing that is not (a hand edit, a truncated copy, an overrides file changed
    since the batch): the report and the export read every submission's score, and would
    otherwise end in a traceback or export a wrong grade."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"{path} is not JSON ({error})") from None
    return checked(document, path, adjustments_for(document, course))


def adjustments_for(document: dict, course) -> course_inputs.Adjustments:
    """The ``course``'s files read, and every name in them resolved as the batch resolved it
    (grader/term/identity.py, with the roster and the class's ids: each the file stem of the
    entry graded); ``ValueError`` (course_inputs.Refused) naming every problem."""
    ids = []
    if isinstance(document, dict):
        for key in ("submissions", "not_graded"):
            if isinstance(document.get(key), dict):
                ids += [sid for sid in document[key] if isinstance(sid, str)]
    return course_inputs.adjustments(course, ids)


def _refuse_another_exercise(document: dict, submissions: dict, path: Path) -> None:
    """The class file, and each result in it, must be of the exercise this process grades: its
    checks, points and titles are the ones every figure is derived with (a file written before
    results recorded their exercise names none, and is taken as it is)."""
    graded = registry.exercise()
    recorded = [("the class", document.get("exercise"))]
    recorded += [(f"submission {sid!r}", result.get("exercise")) for sid, result in submissions.items() if isinstance(result, dict)]
    for whose, exercise in recorded:
        if exercise is not None and exercise != graded.name:
            known = exercise in registry.names()
            raise ValueError(
                f"{path}: {whose} was graded for the exercise {exercise!r}, not {graded.name} ({graded.title}): "
                + (f"run the command with --exercise {exercise}" if known else f"{registry.holding()}; regrade it with `python -m grader batch --force`")
            )


def checked(document: dict, path: Path, adjustments: course_inputs.Adjustments | None = None) -> dict:
    """``read_class_results`` on a class file already parsed (``path``: where it was read, for the
    messages), with the course's ``adjustments`` (``adjustments_for``; None: no course file);
    ``document`` itself is left as it is."""
    adjustments = adjustments or course_inputs.Adjustments()
    document = expanded(document)
    submissions = document.get("submissions") if isinstance(document, dict) else None
    if not isinstance(submissions, dict):
        raise ValueError(f"{path} holds no \"submissions\" object: is it a batch's results.json?")
    _refuse_another_exercise(document, submissions, path)
    for sid, result in submissions.items():
        where = f"{path}: submission {sid!r}"
        if not isinstance(result, dict):
            raise ValueError(f"{where} is not an object (edited by hand? regrade it with `python -m grader batch --force`)")
        score, most = result.get("score"), result.get("max_score")  # held to their derivation below
        # The final score may be a fraction (a late penalty, an override); max_score never is.
        if type(most) is not int or type(score) not in (int, float) or not 0 <= score <= max(most, 0):
            raise ValueError(
                f"{where} has score {score!r} of max_score {most!r}, not numbers with 0 <= score <= max_score "
                "(edited by hand? regrade it with `python -m grader batch --force`)"
            )
        for key, kind in (("tests", list), ("groups", dict), ("diagnoses", list)):
            if key in result and not isinstance(result[key], kind):
                raise ValueError(f"{where} has a {key!r} that is not a {kind.__name__}")
        if not all(isinstance(test, dict) for test in result.get("tests", [])):
            raise ValueError(f"{where} has a test that is not one of the class's checks (edited by hand? regrade it "
                             "with `python -m grader batch --force`)")
    if problem := _checks_not_the_class(submissions):
        sid, what = problem
        raise ValueError(
            f"{path}: submission {sid!r}: field 'tests' {what} (edited by hand? every student is graded on the same checks; "
            "regrade it with `python -m grader batch --force`, and change a score in the overrides file, never in results.json)"
        )
    for sid, result in submissions.items():
        try:
            grade_trail.verify(result, adjustments, sid)
        except grade_trail.TrailError as error:
            if error.by_course:
                why = ("the course's files changed since the batch, or results.json was edited by hand: run the batch again, "
                       "which grades nothing again and applies them; a score is changed in the overrides file, never in results.json")
            else:
                why = ("edited by hand? A score is changed in the overrides file, [files] overrides of the course file, "
                       "never in results.json: the next batch would put the graded one back")
            raise ValueError(f"{path}: submission {sid!r}: {error} ({why})") from None
    return document


def _checks_not_the_class(submissions: dict[str, dict]) -> tuple[str, str] | None:
    """The first student whose checks are not the class's, and how: every student of one batch
    runs the same checks (one grader, one seed), so a check's row deleted, added or copied in
    results.json would change a score that still adds up. The class's checks are those most of
    its students hold (of two that differ, the one holding more: a deleted row is the edit that
    raises a score)."""
    held = {
        sid: Counter((str(test.get("group")), check_name(str(test.get("name")), sid)) for test in result.get("tests", []))
        for sid, result in submissions.items()
    }
    kinds = Counter(frozenset(checks.items()) for checks in held.values())
    if len(kinds) < 2:
        return None
    the_class = Counter(dict(max(kinds, key=lambda kind: (kinds[kind], sum(count for _, count in kind)))))
    for sid, checks in held.items():
        missing, extra = sorted((the_class - checks).elements()), sorted((checks - the_class).elements())
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            return sid, f"lacks the check {_check_text(missing[0])}{more}, which the class's other students have"
        if extra:
            more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
            return sid, f"holds the check {_check_text(extra[0])}{more} beyond the class's checks (a row added or copied)"
    return None


def _check_text(check: tuple[str, str]) -> str:
    group, name = check
    return f"{name!r} ({group})"
