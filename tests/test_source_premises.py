"""A cause said of the student's code only where the code shows it (grader/exercises/multi_head_attention/source_premises.py).

Heads that start with the same weights are a fact of the numbers; *why* they do is a fact of the
source: a torch.manual_seed before each head, a copy.deepcopy of one, one head's weights loaded into
another, or none of these. The check's hint and the diagnosis's fix name the cause the code shows,
and no other (a file that seeds once at its top, as it should, is not told it seeds each head).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import catalogue
from grader.exercises.multi_head_attention.visible import test_head_distinctness as distinctness
from grader.exercises.multi_head_attention import source_premises
from grader.exercises.multi_head_attention.hidden import mistakes

SEED_AT_THE_TOP = "import torch\ntorch.manual_seed(0)\n\nclass AttentionHead:\n    pass\n"
SEED_IN_A_HELPER = (
    "import torch\n\ndef fresh_head(d, h):\n    torch.random.manual_seed(1)\n    return AttentionHead(d, h)\n\n"
    "class MultiHeadSelfAttention:\n    def __init__(self, d, n):\n        self.heads = [fresh_head(d, d // n) for _ in range(n)]\n"
)
DEEPCOPY = (
    "from copy import deepcopy\n\nclass MultiHeadSelfAttention:\n    def __init__(self, d, n):\n"
    "        one = AttentionHead(d, d // n)\n        self.heads = [deepcopy(one) for _ in range(n)]\n"
)
COPY_IMPORTED_ONLY = "import copy\n\nclass MultiHeadSelfAttention:\n    def __init__(self, d, n):\n        self.n = n\n"
LOADED = (
    "class MultiHeadSelfAttention:\n    def __init__(self, d, n):\n        self.heads = [AttentionHead(d, d // n) for _ in range(n)]\n"
    "        for head in self.heads[1:]:\n            head.query.weight.data.copy_(self.heads[0].query.weight)\n"
)


@pytest.mark.parametrize(("code", "seeds", "copies", "loads"), [
    (SEED_AT_THE_TOP, False, False, False),
    (SEED_IN_A_HELPER, True, False, False),
    (DEEPCOPY, False, True, False),
    (COPY_IMPORTED_ONLY, False, False, False),
    (LOADED, False, False, True),
    ("def broken(:\n", False, False, False),
])
def test_a_cause_is_read_only_where_the_model_makes_the_call(code, seeds, copies, loads):
    assert source_premises.seeds_in_the_model(code) is seeds
    assert source_premises.copies_a_head(code) is copies
    assert source_premises.loads_one_heads_weights(code) is loads


def _source_of(name: str, folder) -> str:
    entry = next(m for m in catalogue.MUTANTS if m.name == name)
    return catalogue.write_implementation(entry, folder).read_text()


@pytest.mark.parametrize(("name", "said", "unsaid"), [
    ("heads_deep_copied_from_one", "copy.deepcopy", "manual_seed"),
    ("heads_given_the_first_heads_weights", "load_state_dict", "manual_seed"),
    ("heads_initialised_to_a_constant", "", "manual_seed"),
    ("reseeded_before_each_head", "manual_seed", "deepcopy"),
])
def test_the_fix_of_identical_heads_names_the_cause_the_code_shows(tmp_path, name, said, unsaid):
    (id,) = next(m for m in catalogue.MUTANTS if m.name == name).mistakes
    fix = mistakes.BY_ID[id].fix_for(_source_of(name, tmp_path))
    assert said in fix and unsaid not in fix, fix


@pytest.mark.parametrize(("name", "hint"), [
    ("heads_deep_copied_from_one", distinctness.COPIED_HINT),
    ("heads_given_the_first_heads_weights", distinctness.LOADED_HINT),
    ("heads_initialised_to_a_constant", distinctness.SAME_START_HINT),
    ("reseeded_heads", distinctness.RESEEDED_HINT),
])
def test_the_hint_of_identical_heads_names_the_cause_the_code_shows(tmp_path, name, hint):
    path = catalogue.write_implementation(next(m for m in catalogue.MUTANTS if m.name == name), tmp_path)
    assert distinctness.same_start_hint(SimpleNamespace(source=path)) == hint
