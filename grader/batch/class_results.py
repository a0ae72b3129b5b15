"""A class's results.json read back (by ``export`` and ``report``), checked before it is used.

A hand edit or a truncated copy must end in one message naming the student and the field, not
in a traceback, nor in a wrong grade sent to the LMS.
"""

from __future__ import annotations

import json
from pathlib import Path

from grader.batch.grade_trail import does_not_add_up

# The failed weights checks whose pictures a feedback page draws (grader/batch/feedback_pages.py);
# one mistake usually fails many, and the rest say the same on other data.
PICTURES_SHOWN = 3


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


def read_class_results(path: Path) -> dict:
    """A class's results.json as the batch wrote it, or ``ValueError`` naming the first thing
    that is not (a hand edit, a truncated copy): the report and the export read every
    submission's score, and would otherwise end in a traceback or export a wrong grade."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"{path} is not JSON ({error})") from None
    submissions = document.get("submissions") if isinstance(document, dict) else None
    if not isinstance(submissions, dict):
        raise ValueError(f"{path} holds no \"submissions\" object: is it a batch's results.json?")
    for sid, result in submissions.items():
        where = f"{path}: submission {sid!r}"
        if not isinstance(result, dict):
            raise ValueError(f"{where} is not an object (edited by hand? regrade it with `python -m grader batch --force`)")
        score, most = result.get("score"), result.get("max_score")
        # The final score may be a fraction (a late penalty, an override); max_score never is.
        if type(most) is not int or type(score) not in (int, float) or not 0 <= score <= max(most, 0):
            raise ValueError(
                f"{where} has score {score!r} of max_score {most!r}, not numbers with 0 <= score <= max_score "
                "(edited by hand? regrade it with `python -m grader batch --force`)"
            )
        for key, kind in (("tests", list), ("groups", dict), ("diagnoses", list)):
            if key in result and not isinstance(result[key], kind):
                raise ValueError(f"{where} has a {key!r} that is not a {kind.__name__}")
        if problem := does_not_add_up(result):
            raise ValueError(
                f"{where}: {problem} (edited by hand? A score is changed in the overrides file, [files] overrides "
                "of the course file, never in results.json: the next batch would put the graded one back)"
            )
    return document
