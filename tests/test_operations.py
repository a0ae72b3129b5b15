"""The calls the grader makes on a submission (grader/exercises/multi_head_attention/operations.py) reuse the modules they
build: a reused module must compute what a freshly built one would, whatever the student's
forward did to it, so that reuse changes the grader's speed and never a grade.

Each submission here is trusted test code, imported in this process only to exercise the
operations directly.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from grader.exercises.multi_head_attention import operations
from grader.reading import loading

SOLUTION = (Path(__file__).resolve().parent.parent / "solutions" / "multi_head_attention.py").read_text(encoding="utf-8")
BODY_START = "        ### BEGIN SOLUTION\n        if allowed_mask is None:"  # the module forward's first line


def submission_with_forward_prologue(tmp_path: Path, prologue: str):
    """The solution whose module's forward first runs ``prologue`` (indented for the method)."""
    assert SOLUTION.count(BODY_START) == 1, "the module forward of the solution no longer starts as expected"
    body = textwrap.indent(textwrap.dedent(prologue), " " * 8)
    path = tmp_path / "multi_head_attention.py"
    path.write_text(SOLUTION.replace(BODY_START, body + BODY_START), encoding="utf-8")
    return loading.import_source(path)


def seeded_run(student, seq: int = 5, seed: int = 3) -> dict:
    inputs = torch.randn(2, seq, 8, generator=torch.Generator().manual_seed(seq))
    return operations.run_attention(student, model_dim=8, num_heads=2, inputs=inputs, seed=seed, output_gradient=torch.ones(2, seq, 8))


def fresh_seeded_run(student, **arguments) -> dict:
    operations._built_modules.pop(student, None)  # as if no module had been built yet
    return seeded_run(student, **arguments)


def same(first: dict, second: dict) -> bool:
    return torch.equal(first["output"], second["output"]) and all(
        torch.equal(first["parameter_gradients"][name], second["parameter_gradients"][name])
        for name in first["parameter_gradients"]
    )


@pytest.mark.parametrize(
    "prologue",
    [
        # A forward that changes its own weights in place: each fresh module starts from its
        # initial weights, so must a reused one.
        "with torch.no_grad():\n    self.output_projection.weight.mul_(2)\n",
        # Randomness in the forward (dropout, say) draws from the state the construction left.
        "inputs = inputs + 0.1 * torch.rand_like(inputs)\n",
        # A buffer of its own, overwritten in the forward.
        "if not hasattr(self, 'calls'):\n    self.register_buffer('calls', torch.zeros(()))\n"
        "self.calls += 1\ninputs = inputs * self.calls\n",
    ],
    ids=["weights-changed-in-place", "random-draws", "buffer-counting-calls"],
)
def test_a_reused_module_answers_a_repeated_request_as_a_fresh_one_would(tmp_path, prologue):
    student = submission_with_forward_prologue(tmp_path, prologue)
    fresh = fresh_seeded_run(student)
    assert same(fresh, fresh_seeded_run(student)), "the same request to two fresh modules must agree"
    assert same(fresh, seeded_run(student)), "a reused module answered unlike a fresh one"
    assert same(fresh, seeded_run(student))


def test_a_module_whose_forward_replaced_a_buffer_with_another_size_is_built_afresh(tmp_path):
    student = submission_with_forward_prologue(
        tmp_path, "self.register_buffer('seen', torch.zeros(inputs.shape[1]))\n"
    )
    expected = fresh_seeded_run(student, seq=7)
    seeded_run(student, seq=4)  # leaves a buffer of another size behind
    assert same(expected, seeded_run(student, seq=7))


def test_another_seed_builds_another_module(tmp_path):
    student = submission_with_forward_prologue(tmp_path, "")
    assert not same(seeded_run(student, seed=1), seeded_run(student, seed=2))
    assert same(fresh_seeded_run(student, seed=2), seeded_run(student, seed=2))


def test_the_graders_weights_replace_every_weight_of_a_reused_module(tmp_path):
    student = submission_with_forward_prologue(tmp_path, "with torch.no_grad():\n    self.heads[0].query.weight.add_(1)\n")
    built = dict(operations.initial_parameters(student, 8, 2, seed=0)["parameters"])
    inputs = torch.randn(1, 4, 8, generator=torch.Generator().manual_seed(0))
    first = operations.run_attention(student, model_dim=8, num_heads=2, inputs=inputs, parameters=built)
    again = operations.run_attention(student, model_dim=8, num_heads=2, inputs=inputs, parameters=built)
    assert torch.equal(first["output"], again["output"])


# --- state kept between calls (grader/submission.py asks afresh from the first call that changes it) ---


@pytest.mark.parametrize(("name", "changes"), [
    ("calls_counted_on_the_head", True),  # an attribute of the head
    ("output_remembered_by_shape", True),  # a global of the file
    ("keys_smoothed_with_the_last_call", True),  # an attribute of a class
    ("", False),  # the solution
])
def test_a_forward_pass_that_changes_what_the_code_keeps_says_so(tmp_path, name, changes):
    import catalogue
    from grader.exercises.multi_head_attention import data

    path = (catalogue.write_implementation(next(m for m in catalogue.MUTANTS if m.name == name), tmp_path) if name
            else catalogue.SOLUTION_PATH)
    student = loading.import_source(path)
    config = data.Config(batch=2, seq=5, model_dim=12, num_heads=3)
    rng = data.generator(4)
    inputs, parameters = data.random_inputs(config, rng), data.attention_parameters(config, rng)
    head = {name.removeprefix("heads.0."): value for name, value in parameters.items() if name.startswith("heads.0.")}
    runs = [operations.run_attention(student, model_dim=12, num_heads=3, inputs=inputs, parameters=parameters) for _ in range(2)]
    # The first call changes it; asked again right after, the last output remembered is that answer
    # itself, and the smoothing leaves it as it was: nothing changed, nothing said.
    assert [run.get("state_changed", False) for run in runs] == [changes, changes and name != "output_remembered_by_shape"]
    if name != "output_remembered_by_shape":  # the module's output alone remembers
        alone = operations.run_head(student, model_dim=12, head_dim=4, parameters=head, inputs=inputs,
                                    allowed_mask=data.causal_allowed(5))
        assert alone.get("state_changed", False) is changes
