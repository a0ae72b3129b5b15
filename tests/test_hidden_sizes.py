"""The hidden checks' sizes (grader/exercises/multi_head_attention/hidden/test_reference.py, drawn_config): drawn from the
grading seed, and never sizes at which a mistake gives the reference's numbers, so that a
submission's score does not depend on the seed it was graded on (Gradescope and PrairieLearn
grade every submission on a fresh one)."""

from __future__ import annotations

import pytest

import catalogue
from grader.exercises.multi_head_attention.data import Config
from grader.exercises.multi_head_attention.hidden import test_reference
from grading import grade

DRAWS = (*test_reference.DRAWS, *(10 + d for d in test_reference.DRAWS), 20)  # the head's, the module's, the gradients'


def test_no_drawn_size_hides_a_mistake_and_one_seed_gives_one_config():
    configs = {(seed, draw): test_reference.drawn_config(seed, draw) for seed in range(1500) for draw in DRAWS}
    assert not [key for key, config in configs.items() if test_reference.hides_a_mistake(config)]
    assert all(config == test_reference.drawn_config(*key) for key, config in list(configs.items())[:300])
    for config in configs.values():
        assert config.batch >= 2 and config.seq >= 2 and config.num_heads >= 2 and config.head_dim >= 2
    # Still drawn: a student cannot know the sizes in advance.
    assert len(set(configs.values())) >= 30  # 39 of them


@pytest.mark.parametrize(
    "config, why",
    [
        (Config(batch=2, seq=3, model_dim=15, num_heads=3), "seq == num_heads: a mask sized by the head count"),
        (Config(batch=3, seq=3, model_dim=10, num_heads=2), "seq == batch: a default mask sized by the batch"),
        (Config(batch=2, seq=5, model_dim=15, num_heads=3), "seq == head_dim: a scale by the sequence length"),
        (Config(batch=3, seq=10, model_dim=10, num_heads=2), "seq == model_dim: a mask sized by the model width"),
        (Config(batch=2, seq=7, model_dim=12, num_heads=3), "head_dim 4: head_dim ** 1/2 == sqrt(head_dim)"),
        (Config(batch=2, seq=7, model_dim=6, num_heads=2), "num_heads == batch"),
    ],
)
def test_each_coincidence_is_named(config, why):
    assert test_reference.hides_a_mistake(config), why


def test_a_fair_config_is_kept():
    assert not test_reference.hides_a_mistake(Config(batch=2, seq=7, model_dim=15, num_heads=3))


# Mutants that a size coincidence let through on some seeds: up to 8 points apart before.
SEED_SENSITIVE = ("scale_by_seq_len", "scale_halved", "scale_power_half", "mask_from_model_dim",
                  "default_mask_from_the_attribute", "default_mask_sized_by_batch")


@pytest.mark.slow
def test_a_mistake_scores_the_same_on_the_seeds_that_used_to_hide_it(tmp_path):
    mutants = [m for m in catalogue.MUTANTS if m.name in SEED_SENSITIVE]
    assert len(mutants) == len(SEED_SENSITIVE)
    paths = [catalogue.write_implementation(mutant, tmp_path / "class") for mutant in mutants]
    scores = {}
    for seed in (1, 5, 6):  # before: 55, 57 and 61 points for one of them
        (tmp_path / f"seed-{seed}").mkdir()
        run = grade(paths, tmp_path / f"seed-{seed}", "--grading-seed", str(seed))
        scores[seed] = {path.stem: run.score(path.stem) for path in paths}
    assert scores[1] == scores[5] == scores[6], scores
