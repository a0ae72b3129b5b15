"""The visible checks run at sizes where the confusions students make give other numbers.

At head_dim 4, head_dim / 2 equals sqrt(head_dim): a ``head_dim ** 1/2`` scale passed every
visible check and showed only in the hidden group. So the sizes are chosen (grader/exercises/multi_head_attention/data.py,
``confusions_hidden_by``), and the choice is pinned by behaviour: every mistake of the
catalogue fails at least one check a student sees at the desk.
"""

from __future__ import annotations

import pytest

import catalogue
from grader.exercises.multi_head_attention import data
from grader.handout import reference_examples

VISIBLE_GROUPS = set(catalogue.GROUPS) - {catalogue.REFERENCE}


def test_the_sizes_that_check_numbers_hide_no_confusion():
    """The property checks and the reference examples other than the lesson's own sizes (kept as
    the lesson shows them) are at sizes where no two confused quantities are equal."""
    configs = {config.id: config for config in data.PROPERTY_CONFIGS}
    configs |= {name: config for name, _, config, _, _ in reference_examples.examples().EXAMPLES if config != data.LESSON}
    assert {name: data.confusions_hidden_by(config) for name, config in configs.items() if data.confusions_hidden_by(config)} == {}


def test_head_dim_four_is_where_half_and_square_root_agree():
    """The rule itself: it finds the confusion that hid (and none at sizes without it)."""
    assert any("head_dim / 2" in found for found in data.confusions_hidden_by(data.LESSON))
    assert not data.confusions_hidden_by(data.Config(batch=2, seq=5, model_dim=18, num_heads=3))


# The mutants graded: catalogue_run (tests/conftest.py), the whole catalogue graded once per test run.
@pytest.mark.parametrize("mutant", catalogue.MUTANTS, ids=[m.name for m in catalogue.MUTANTS])
def test_every_known_mistake_fails_a_visible_check(catalogue_run, mutant):
    lost = catalogue_run.lost_groups(mutant.name)
    assert lost & VISIBLE_GROUPS, f"{mutant.name} loses only {sorted(lost)}: nothing at the desk shows it"
    # and the visible groups it names lose points for certain
    assert set(mutant.losing_groups) & VISIBLE_GROUPS <= lost, sorted(lost)
