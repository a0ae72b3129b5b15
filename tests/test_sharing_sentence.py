"""A sentence about shared parameters names every tensor that is shared, never half of them.

The groups are those operations.initial_parameters reports (names of one tensor in memory);
the whole path, from a module that shares its key and value projections to the message a
student reads, is checked through the grader in tests/test_hints.py (its FACTS) and the
catalogue's must_read.
"""

from __future__ import annotations

from grader.exercises.multi_head_attention import premises


def heads(projection: str, count: int = 3) -> list[str]:
    return [f"heads.{h}.{projection}.weight" for h in range(count)]


def sentence(*groups) -> str:
    return premises.sharing_sentence(premises.shared_tensors(groups))


def test_one_shared_projection_is_named():
    assert sentence(heads("key")) == "heads 0, 1 and 2 hold the very same parameter tensor (as their key.weight)"


def test_every_shared_projection_of_the_same_heads_is_named_in_one_sentence():
    said = sentence(heads("key"), heads("value"))
    assert said == "heads 0, 1 and 2 hold the very same parameter tensors, one as their key.weight and one as their value.weight"
    assert "query" not in said


def test_tensors_shared_by_other_heads_and_inside_a_head_are_all_named():
    said = sentence(heads("key", 2), ["heads.2.query.weight", "heads.2.value.weight"])
    assert said == ("heads 0 and 1 hold the very same parameter tensor (as their key.weight); "
                    "inside head 2, query and value are the very same parameter tensor")


def test_the_same_projections_shared_inside_every_head_are_said_once():
    groups = [[f"heads.{h}.{p}.weight" for p in ("query", "key", "value")] for h in range(3)]
    assert sentence(*groups) == "inside each of heads 0, 1 and 2, query, key and value are the very same parameter tensor"
