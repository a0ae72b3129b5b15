"""The class file's table of checks (grader/class_view/class_results.py): compacted and expanded
give back exactly what the batch wrote, and what does not fit the table stays whole."""

import json
import re

import pytest

from grader.class_view import class_results


def record(name: str, outcome: str = "passed", message: str = "", attention=None, max_points: int = 2) -> dict:
    return {
        "name": name, "group": "shapes", "max_points": max_points, "outcome": outcome, "message": message,
        "duration": 0.0123, "attention": attention, "points": max_points if outcome == "passed" else 0,
    }


def student(student_id: str, *tests: dict) -> dict:
    score = sum(t["points"] for t in tests)
    return {
        "submission": student_id, "score": score, "max_score": 2 * len(tests),
        "groups": {"shapes": {"earned": score, "max": 2 * len(tests)}}, "tests": list(tests),
    }


CLASS = {
    "alice": student("alice", record("test_shape[alice-b1-s4-d8-h2]"), record("test_mask[alice]", "failed", "expected 0, got 1")),
    "bob": student("bob", record("test_shape[bob-b1-s4-d8-h2]", "failed", attention={"kept_in": "results/bob.json"}),
                   record("test_mask[bob]")),
    # An id pytest writes otherwise in the names (escaped): not in the table, kept whole.
    "zoë": student("zoë", record("test_shape[zo\\xeb-b1-s4-d8-h2]"), record("test_mask[zo\\xeb]")),
}


def written_and_read(tmp_path, documents: dict) -> tuple[dict, dict]:
    checks, kept = class_results.compacted(documents)
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"grading_seed": 5, "checks": checks, "submissions": kept}))
    return json.loads(path.read_text()), class_results.read_class_results(path)


def test_every_check_is_named_once_and_every_test_reads_back_exactly(tmp_path):
    raw, read = written_and_read(tmp_path, CLASS)
    assert raw["checks"] == [["test_shape[{id}-b1-s4-d8-h2]", "shapes", 2], ["test_mask[{id}]", "shapes", 2]]
    assert raw["submissions"]["alice"]["tests"] == [[0, "passed", 0.0123], [1, "failed", 0.0123, {"message": "expected 0, got 1"}]]
    assert raw["submissions"]["bob"]["tests"][0] == [0, "failed", 0.0123, {"attention": {"kept_in": "results/bob.json"}}]
    assert read["submissions"] == CLASS
    assert [list(t) for t in read["submissions"]["bob"]["tests"]] == [list(t) for t in CLASS["bob"]["tests"]]
    assert "checks" not in read


def test_a_student_whose_tests_do_not_fit_keeps_them_whole_and_adds_nothing_to_the_table(tmp_path):
    odd = student("carol", record("test_shape[carol-b1-s4-d8-h2]"), record("test_new_check[carol]") | {"extra": 1})
    checks, kept = class_results.compacted({"carol": odd, **CLASS})
    raw = {"checks": checks, "submissions": kept}
    assert raw["submissions"]["carol"]["tests"] == odd["tests"]
    assert raw["submissions"]["zoë"]["tests"] == CLASS["zoë"]["tests"]
    assert all("new_check" not in name for name, _, _ in raw["checks"])
    assert class_results.expanded(raw)["submissions"] == {"carol": odd, **CLASS}
    # Read back for a grade, carol's checks are not the class's: refused, naming her.
    path = tmp_path / "results.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match=r"submission 'carol': field 'tests' lacks the check 'test_mask' \(shapes\)"):
        class_results.read_class_results(path)


@pytest.mark.parametrize("edit", ["deleted", "copied"])
def test_a_check_row_deleted_or_copied_by_hand_is_refused_naming_the_student(tmp_path, edit):
    """Every student runs the class's checks: a failed check's row deleted (with its points taken
    from the group and the maximum, so that the score still adds up) or a passed one copied is refused."""
    alice = json.loads(json.dumps(CLASS["alice"]))
    if edit == "deleted":
        del alice["tests"][1]  # test_mask, failed
        alice["max_score"] = alice["groups"]["shapes"]["max"] = 2
    else:
        alice["tests"].append(dict(alice["tests"][0]))  # test_shape, passed, again
        alice["score"] = alice["max_score"] = 6
        alice["groups"]["shapes"] = {"earned": 4, "max": 6}
    path = tmp_path / "results.json"
    checks, kept = class_results.compacted({**CLASS, "alice": alice})
    path.write_text(json.dumps({"checks": checks, "submissions": kept}))
    said = "lacks the check 'test_mask' (shapes)" if edit == "deleted" else "holds the check 'test_shape[b1-s4-d8-h2]' (shapes)"
    with pytest.raises(ValueError, match=rf"submission 'alice': field 'tests' {re.escape(said)}"):
        class_results.read_class_results(path)


def test_a_file_without_the_table_an_older_graders_reads_as_it_is(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"submissions": CLASS}))
    assert class_results.read_class_results(path)["submissions"] == CLASS


def test_a_row_edited_by_hand_is_named_not_expanded_into_a_wrong_grade(tmp_path):
    checks, kept = class_results.compacted(CLASS)
    kept["alice"]["tests"][0][0] = 99  # no such check
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"checks": checks, "submissions": kept}))
    with pytest.raises(ValueError, match="'alice' has a test that is not one"):
        class_results.read_class_results(path)
