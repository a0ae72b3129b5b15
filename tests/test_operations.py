"""The calls the grader makes on a submission (grader/exercise/operations.py) reuse the modules they
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

from grader.exercise import operations
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
