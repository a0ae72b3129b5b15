"""Group 5 — configuration: the layers have the contract's names, widths and biases, and the
module keeps its sizes."""

from __future__ import annotations

import pytest

from grader.exercises.feed_forward import premises
from grader.seam.failing import fail

SIZES = [(6, 10), (5, 3)]  # a hidden layer wider and one narrower than the model


def contract(model_dim: int, hidden_dim: int) -> dict[str, tuple]:
    return {"expand.weight": (hidden_dim, model_dim), "expand.bias": (hidden_dim,),
            "project.weight": (model_dim, hidden_dim), "project.bias": (model_dim,)}


def said(shapes: dict[str, tuple]) -> str:
    return ", ".join(f"{name} {shape}" for name, shape in shapes.items()) or "no parameters"


@pytest.mark.points(2)
@pytest.mark.parametrize(("model_dim", "hidden_dim"), SIZES, ids=[f"d{d}-f{f}" for d, f in SIZES])
def test_the_layers_widen_to_hidden_dim_and_come_back(submission, model_dim, hidden_dim):
    found = {name: tuple(value.shape) for name, value in submission.initial_parameters(model_dim, hidden_dim)["parameters"].items()}
    weights = {name: shape for name, shape in found.items() if not name.endswith(".bias")}
    expected = {name: shape for name, shape in contract(model_dim, hidden_dim).items() if name.endswith(".weight")}
    if weights != expected:
        fail(f"FeedForward({model_dim}, {hidden_dim})'s weights are not the contract's.", said(expected), said(weights),
             premises.widened_by_four_hint(weights.get("expand.weight", ()), model_dim, hidden_dim))


@pytest.mark.points(2)
def test_both_layers_have_a_bias(submission):
    found = {name: tuple(value.shape) for name, value in submission.initial_parameters(6, 10)["parameters"].items()}
    biases = {name: shape for name, shape in contract(6, 10).items() if name.endswith(".bias")}
    missing = [name for name in biases if found.get(name) != biases[name]]
    if missing:
        fail("FeedForward(6, 10) lacks a bias the contract has.", said(biases),
             said({name: shape for name, shape in found.items() if name.endswith(".bias")}),
             "nn.Linear has a bias unless built with bias=False: without it a hidden unit cannot move its "
             "threshold away from zero." if any(f"{name.removesuffix('bias')}weight" in found for name in missing) else "")


@pytest.mark.points(1)
def test_the_module_keeps_its_sizes(submission):
    attributes = submission.initial_parameters(6, 10)["attributes"]
    if attributes != {"model_dim": 6, "hidden_dim": 10}:
        fail("FeedForward(6, 10) does not keep its sizes as attributes.", "model_dim = 6, hidden_dim = 10 (ints)",
             ", ".join(f"{name} = {value}" for name, value in attributes.items()) or "neither", "")
