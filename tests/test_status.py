"""Every result's status, read from what the grader recorded (the error's kind as the grader wrote
it, the budgets, the intake), and the summary's reason for each 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.batch import summary
from grader.term.status import status_of
from grader.feedback.errors import ErrorDescription
from grader.sandbox.isolated import _timed_out


def result(**fields) -> dict:
    failing = {"name": "test_x", "group": "shapes", "outcome": "failed", "message": "expected 1, got 2", "max_points": 1}
    return {"score": 0, "max_score": 1, "import_error": "", "tests": [failing], "intake_problem": ""} | fields


def import_error(type_name: str, message: str) -> str:
    """As the grader records an import that failed (grader/submission.py: kind "import")."""
    return ErrorDescription("import", type_name, message, "alice.py:1").for_student()


@pytest.mark.parametrize(
    "fields, status",
    [
        ({}, "graded"),
        ({"intake_problem": "no multi_head_attention.py in the folder"}, "refused at intake"),
        ({"import_error": import_error("SyntaxError", "invalid syntax")}, "syntax error"),
        ({"import_error": import_error("IndentationError", "unexpected indent")}, "syntax error"),
        ({"import_error": import_error("Timeout", _timed_out(5, "import"))}, "timed out"),
        ({"import_error": import_error("ModuleNotFoundError", "No module named 'numpyy'")}, "import error"),
        ({"time_budget": {"ran_out": {"submission": "120 s spent"}}}, "timed out"),
        ({"tests": [{"outcome": "failed", "message": "head_dimension is not written yet: this test needs it (NotImplementedError)"}]}, "not written"),
        ({"tests": [
            {"outcome": "failed", "message": "head_dimension is not written yet: this test needs it"},
            {"outcome": "failed", "message": "expected 1, got 2"},
        ]}, "graded"),  # partly written: graded, its failures say the rest
    ],
)
def test_each_result_gets_the_status_that_explains_it(fields, status):
    assert status_of(result(**fields)) == status


def test_a_student_who_writes_timed_out_in_a_message_is_not_timed_out():
    assert status_of(result(import_error=import_error("ValueError", "Timeout: timed out after 5 s"))) == "import error"


def test_the_summary_says_why_each_0_is_a_0():
    documents = {
        "a": result(status="not written"),
        "b": result(status="syntax error"),
        "c": result(status="graded", raw_score=1, late={"penalty": 1}),
        "d": result(status="graded", override={"score": 0, "reason": "plagiarism"}),
        "e": result(status="not written"),
        "f": {"status": "no result", "student": {"name": "Roe, Bob", "on_roster": True}},
    }
    not_applied = [{"file": "overrides.csv", "line": 3, "key": "zed", "what": "override", "reason": "no submission by that name"}]
    text = summary.summary(documents, None, Path("OUT"), 5, not_applied, ["results/old.json"])
    assert "5 students graded (5 in this run), mean 0.0, median 0 of 1" in text
    assert "5 at 0: 2 not written, 1 syntax error, 1 late, 1 override" in text
    assert "1 without a result (the grader failed; see OUT/batch.log): Roe, Bob" in text  # the roster's name, not the file's
    assert "NOT APPLIED: overrides.csv:3: override for 'zed': no submission by that name" in text
    assert "1 file of entries no longer graded (an earlier attempt, or gone from the submissions) moved to OUT/superseded: results/old.json" in text
