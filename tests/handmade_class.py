"""A batch's OUT folder written by hand, with numbers small enough to work out on paper.

Three checks, five points: ``test_a`` (shapes, two cases of one point), ``test_b``
(probabilities, one case of two points), ``test_c`` (configuration, one point nobody earns).

    student  test_a  test_b  test_c  score
    s1       2       2       0       4
    s2       1       2       0       3
    s3       0       2       0       2
    s4       0       0       0       0

The statistics these give are worked out in tests/test_report.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from grader import results
from grader.scoring import GROUPS

HOSTILE_ID = "<img src=x onerror=alert(1)>"

# student -> (test_a cases passed, test_b passed)
OUTCOMES = {"s1": (2, True), "s2": (1, True), "s3": (0, True), "s4": (0, False)}
DIAGNOSIS = {
    "function": "concatenate_heads",
    "mistake": "interleaved_heads",
    "title": "Heads interleaved instead of side by side",
    "why": "Each head's features must stay together.",
    "explains": ["test_a[s2-case]", "test_a[s2-case]"],
}
OTHER_DIAGNOSIS = {"function": "attention_weights", "mistake": "softmax_over_queries", "title": "Softmax over the query axis", "explains": "test_b"}
# As the diagnosis writes it when no known mistake matches: no misconception, a function to look at.
UNKNOWN_DIAGNOSIS = {"function": "causal_mask", "mistake": "unknown", "title": "a mistake that matches none of the known ones", "explains": []}
DIAGNOSES = {"s2": [DIAGNOSIS], "s3": [DIAGNOSIS, OTHER_DIAGNOSIS], "s4": [UNKNOWN_DIAGNOSIS]}


def check_record(name: str, group: str, submission: str, points: int, passed: bool, message: str = "") -> dict:
    return {
        "name": f"{name}[{submission}-case]", "group": group, "submission": submission, "max_points": points,
        "outcome": "passed" if passed else "failed", "message": "" if passed else (message or "expected 1, got 2"),
        "duration": 0.01, "points": points if passed else 0,
    }


def document(student: str, a_passed: int, b_passed: bool, *, diagnoses: bool = True, **extra) -> dict:
    tests = [
        check_record("test_a", "shapes", student, 1, a_passed >= 1),
        check_record("test_a", "shapes", student, 1, a_passed >= 2),
        check_record("test_b", "probabilities", student, 2, b_passed),
        check_record("test_c", "configuration", student, 1, False),
    ]
    earned = {"shapes": a_passed, "probabilities": 2 * b_passed, "configuration": 0}
    maximum = {"shapes": 2, "probabilities": 2, "configuration": 1}
    result = {
        "submission": student,
        "score": sum(earned.values()),
        "max_score": 5,
        "groups": {group: {"earned": earned[group], "max": maximum[group]} for group in earned},
        "import_error": "",
        "output": "",
        "tests": tests,
        "graded_from": f"{student}.py",
        "intake_problem": "",
    }
    if diagnoses and student in DIAGNOSES:
        result["diagnoses"] = DIAGNOSES[student]
    return result | extra


def in_every_group(result: dict, points: int = 10) -> dict:
    """``result`` with a failed check of ``points`` in each of the grader's groups it lacks, its
    groups and maximum following (as a grading gives them: figures that are not its checks' are refused)."""
    missing = [group for group in GROUPS if group not in result["groups"]]
    result["tests"] += [check_record(f"test_{group}", group, result["submission"], points, False) for group in missing]
    result["groups"] = {group: result["groups"].get(group, {"earned": 0, "max": points}) for group in GROUPS}
    result["max_score"] += points * len(missing)
    return result


def class_documents(*, diagnoses: bool = True) -> dict[str, dict]:
    return {sid: document(sid, a, b, diagnoses=diagnoses) for sid, (a, b) in OUTCOMES.items()}


def write_out(out: Path, documents: dict[str, dict], **run) -> Path:
    """results.json (as the batch writes it), a feedback page per student, and gradebook.csv."""
    out.mkdir(parents=True, exist_ok=True)
    run = {"assignment": "Hand-made class", "graded_at": "2026-01-02 03:04 UTC", "not_graded": {}} | run
    results.write_class_results(out / "results.json", documents, 1234, ("bwrap", ""), run)
    for sid, result in documents.items():
        lines = [f"# Feedback for {sid}", "", f"**Score: {result['score']}/{result['max_score']}**", ""]
        lines += [f"### {test['name']}\n\n```\n{test['message']}\n```\n" for test in result["tests"] if test["outcome"] != "passed"]
        (out / "feedback").mkdir(exist_ok=True)
        (out / "feedback" / f"{sid}.md").write_text("\n".join(lines), encoding="utf-8")
    return out


def read_results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))
