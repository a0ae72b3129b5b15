"""A class's results.json read back (by ``export`` and ``report``), checked before it is used.

A hand edit or a truncated copy must end in one message naming the student and the field, not
in a traceback, nor in a wrong grade sent to the LMS.
"""

from __future__ import annotations

import json
from pathlib import Path

from grader.batch.grade_trail import does_not_add_up


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
