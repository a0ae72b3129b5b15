"""The grader's data drawn once per generator state (grader/exercises/multi_head_attention/data.py, drawn_once): a shard
asks for the same weights for every student, and nothing may tell a remembered draw from
a fresh one."""

import torch

from grader.exercises.multi_head_attention import data

CONFIG = data.Config(batch=2, seq=5, model_dim=18, num_heads=3)


def drawn_fresh(draw, seed: int, **named):
    """The draw as the undecorated function makes it, and the generator's state after it."""
    rng = data.generator(seed)
    value = draw.__wrapped__(CONFIG, rng, **named)
    return value, rng.get_state()


def test_a_remembered_draw_gives_the_same_tensors_and_leaves_the_generator_where_drawing_would():
    for draw, named in ((data.attention_parameters, {}), (data.head_parameters, {}), (data.random_inputs, {"scale": 2.0})):
        expected, state_after = drawn_fresh(draw, 7, **named)
        for _ in range(2):  # the first call draws, the second is remembered
            rng = data.generator(7)
            value = draw(CONFIG, rng, **named)
            assert torch.equal(rng.get_state(), state_after), draw.__name__
            if isinstance(expected, dict):
                assert value.keys() == expected.keys()
                assert all(torch.equal(value[name], expected[name]) for name in expected)
            else:
                assert torch.equal(value, expected)
            # What the grader draws next from the same generator is what it would have drawn.
            assert torch.equal(torch.rand(3, generator=rng), torch.rand(3, generator=data.generator(0).set_state(state_after)))


def test_every_caller_gets_tensors_of_its_own():
    for _ in range(3):  # drawn, then remembered twice: no caller's change reaches the next
        parameters = data.attention_parameters(CONFIG, data.generator(11))
        assert parameters["output_projection.weight"].abs().sum() > 0
        parameters["output_projection.weight"].zero_()
        inputs = data.random_inputs(CONFIG, data.generator(11))
        assert inputs.abs().max() < 100.0
        inputs.add_(100.0)


def test_another_state_or_other_arguments_give_another_draw():
    rng = data.generator(3)
    first = data.random_inputs(CONFIG, rng)
    second = data.random_inputs(CONFIG, rng)  # the generator moved on: a new draw
    assert not torch.equal(first, second)
    assert not torch.equal(data.random_inputs(CONFIG, data.generator(3), scale=2.0), first)
    assert data.random_inputs(CONFIG, data.generator(3), dtype=torch.float64).dtype == torch.float64
    other = data.Config(batch=2, seq=5, model_dim=24, num_heads=4)
    assert data.attention_parameters(other, data.generator(3))["output_projection.weight"].shape == (24, 24)


def test_a_scattered_mask_always_has_a_row_that_weighs_two_keys():
    # With every row allowing one key, every weight is 1 whatever the scores: a missing scale
    # or a softmax over the wrong axis would match the reference (seed 3 of the hidden
    # reference check drew such a mask: batch 3, seq 2). The mask is otherwise the one drawn.
    for seed in range(200):
        for config in (data.Config(batch=3, seq=2, model_dim=4, num_heads=2), data.Config(batch=1, seq=2, model_dim=4, num_heads=2),
                       data.Config(batch=2, seq=3, model_dim=6, num_heads=3)):
            rng = data.generator(seed)
            allowed = data.scattered_allowed(config, rng)
            assert (allowed.sum(dim=-1) >= 2).any(), (seed, config)
            assert allowed.any(dim=-1).all()  # every row allows at least one key
            assert allowed[:, 0].tolist() == [[False, True] + [False] * (config.seq - 2)] * config.batch  # the first only the next
            # No extra draw: the generator is where one torch.rand of the mask's size leaves it.
            fresh = data.generator(seed)
            torch.rand((config.batch, config.seq, config.seq), generator=fresh)
            assert torch.equal(rng.get_state(), fresh.get_state())


# --- the draw service: every stream of the grading seed, by purpose ---------------------------------
# The first number of each stream for a few (grading seed, draw): a change in how a purpose derives
# its generator moves grades, and shows here first. These are the numbers the grader drew before
# the streams were gathered in grader/exercises/multi_head_attention/data.py (seed * 7919 + draw, seed + 100 + draw, ...).
FIRST_SIZES = {
    (data.HIDDEN_SIZES, 0, 0): 1654615998,
    (data.HIDDEN_SIZES, 7, 1): 510814979,
    (data.HIDDEN_SIZES, 123456, 20): 284543931,
    (data.DIAGNOSIS_PROBES, 7, 0): 478114584,
    (data.RANDOMNESS_QUESTION, 7, 0): 1640879758,
}
FIRST_TENSOR_SEEDS = {  # the generator's seed: the tensors of grader/exercises/multi_head_attention/reference_examples.json use the same
    (data.HIDDEN_HEAD_DATA, 7, 1): 108,
    (data.HIDDEN_MODULE_DATA, 7, 2): 209,
    (data.HIDDEN_GRADIENT_DATA, 7, 0): 307,
}


def test_each_purpose_draws_the_numbers_it_always_drew():
    for (purpose, seed, draw), first in FIRST_SIZES.items():
        assert data.sizes(purpose, seed, draw).randrange(2**31) == first, purpose.name
    for (purpose, seed, draw), generator_seed in FIRST_TENSOR_SEEDS.items():
        assert data.tensors(purpose, seed, draw).initial_seed() == generator_seed, purpose.name
    assert {purpose for purpose, _, _ in (*FIRST_SIZES, *FIRST_TENSOR_SEEDS)} == set(data.PURPOSES)


def test_a_purpose_named_by_words_gives_no_torch_generator():
    # A string seeds Python's Random by its bytes; torch would need a number that is not the purpose's.
    try:
        data.tensors(data.DIAGNOSIS_PROBES, 7)
    except TypeError as error:
        assert "diagnosis" in str(error)
    else:
        raise AssertionError("a torch generator seeded from a purpose's words")


# Calls that seed or build a random generator. Only grader/exercises/multi_head_attention/data.py makes them; one exception:
SEEDING_CALLS = {"Generator", "manual_seed", "Random", "SystemRandom", "seed", "default_rng", "RandomState"}
NOT_A_DRAW = {
    # The worker seeds the student's own torch with the seed a check passes in (the contract's
    # initial_parameters(seed)): the student's constructor draws from it, the grader draws nothing;
    # and at a desk each submission starts with torch's and Python's generators reset
    # (operations.reset_generators): the student's draws, not the grader's.
    "operations.py": {"manual_seed", "seed"},
}


def seeding_calls(path) -> set[str]:
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            dotted = ast.unparse(node.func)
            if name in SEEDING_CALLS or "np.random." in dotted or "numpy.random." in dotted:
                found.add(name)
    return found


def test_no_module_of_the_grader_but_data_builds_a_generator():
    from pathlib import Path

    import grader

    from grader.seam import registry

    package = Path(grader.__file__).resolve().parent
    # Each exercise's draw service: the module its declaration names as its data.
    draw_services = {registry.exercise(name).package / f"{registry.exercise(name).data}.py" for name in registry.names()}
    assert Path(data.__file__).resolve() in draw_services
    found = {}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent).as_posix()
        if path in draw_services:
            assert seeding_calls(path), "the draw service builds the generators"
            continue
        if calls := seeding_calls(path) - NOT_A_DRAW.get(path.name, set()):
            found[relative] = sorted(calls)
    assert found == {}, f"draw from the exercise data.py service (data.sizes, data.tensors, data.generator): {found}"
