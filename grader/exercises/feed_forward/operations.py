"""The calls the grader can make on a feed-forward submission.

This is the only code of the exercise that touches the student's objects. It runs beside the
student's code (in the grader's process at a student's desk, in the sandboxed worker when
grading for real) and speaks plain data only: every argument and every result is a number, a
string, a list/dict of those, or a ``torch.Tensor``. The grader chooses all inputs and weights;
nothing here decides whether an answer is right. It imports only the engine and torch: the
sandbox's worker holds this exercise's declaration and operations and nothing else of it
(grader/seam/registry.py ``worker_modules``).
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import torch

from grader import student_clock
from grader.seam.contract_errors import ContractViolation, NotDefined

_student = student_clock.running  # the student's code runs inside: its clock (grader/student_clock.py)
CLASS = "FeedForward"


def initial_parameters(student: ModuleType, model_dim: int, hidden_dim: int, seed: int = 0) -> dict:
    """The module's parameters right after construction under ``seed`` (names as state_dict()
    gives them), and its ``model_dim``/``hidden_dim`` attributes where they are whole numbers."""
    _seed(seed)
    module = _construct(student, model_dim, hidden_dim, 0.0, None)
    attributes = {name: getattr(module, name, None) for name in ("model_dim", "hidden_dim")}
    return {
        "parameters": {name: _plain(value) for name, value in module.named_parameters(remove_duplicate=False)},
        "attributes": {name: value for name, value in attributes.items() if type(value) is int},
    }


def run_feed_forward(
    student: ModuleType,
    model_dim: int,
    hidden_dim: int,
    parameters: dict[str, torch.Tensor],
    inputs: torch.Tensor,
    dropout: float = 0.0,
    training: bool = False,
    output_gradient: torch.Tensor | None = None,
    rng_seed: int | None = None,
) -> dict[str, Any]:
    """``FeedForward(model_dim, hidden_dim, dropout)`` with the grader's weights, in training
    mode or not (``module.train(training)``), on ``inputs``; with ``output_gradient``, the
    gradients of sum(output * output_gradient) for the inputs and every parameter (None: none
    reached it). ``rng_seed``: torch's generator seeded just before the forward pass (dropout's
    draws). ``not_held``: the grader's biases the module has no place for (bias=False)."""
    module = _construct(student, model_dim, hidden_dim, dropout, inputs.dtype)
    not_held = _load(module, parameters)
    module.train(training)
    inputs = inputs.clone().requires_grad_(output_gradient is not None)
    if rng_seed is not None:
        _seed(rng_seed)
    with torch.enable_grad(), _student(f"{CLASS}.forward"):
        output = module(inputs)
    result = {"output": _plain(output)} | _gradients(module, inputs, output, output_gradient)
    return result | ({"not_held": not_held} if not_held else {})


def _construct(student: ModuleType, model_dim: int, hidden_dim: int, dropout: float, dtype: torch.dtype | None) -> torch.nn.Module:
    """The student's ``FeedForward(model_dim, hidden_dim, dropout)`` (without the dropout when it
    is 0, so a constructor of two arguments still builds), on the student's clock."""
    constructor = _require(student, CLASS)
    arguments = (model_dim, hidden_dim, dropout) if dropout else (model_dim, hidden_dim)
    with _student(f"{CLASS}.__init__"):
        module = constructor(*arguments)
        if not isinstance(module, torch.nn.Module):
            raise ContractViolation(f"{CLASS}(...) must be an nn.Module, got {type(module).__name__}")
        return module if dtype is None else module.to(dtype)


def _load(module: torch.nn.Module, parameters: dict[str, torch.Tensor]) -> list[str]:
    """Copy the grader's weights into the module by name and shape. A bias of the contract the
    module has no place for (a layer built with bias=False) is not loaded and is returned: the
    grader computes its reference with that bias at zero (grader/submission.py ``as_held``), so
    the configuration check alone says it is missing. Anything else missing, extra or shaped
    otherwise cannot be graded around: a ContractViolation naming names and shapes."""
    found = dict(module.named_parameters(remove_duplicate=False))
    not_held = [n for n in parameters if n not in found and n.endswith(".bias") and n.removesuffix("bias") + "weight" in found]
    loaded = {name: value for name, value in parameters.items() if name not in not_held}
    extra = [name for name in found if name not in parameters]
    if extra or not set(loaded) <= set(found) or any(found[n].shape != v.shape for n, v in loaded.items()):
        raise ContractViolation(_layout_problem(found, parameters))
    with torch.no_grad():
        for name, value in loaded.items():
            found[name].copy_(value)
    return not_held


def _layout_problem(found: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> str:
    said = lambda tensors: ", ".join(f"{name} {tuple(value.shape)}" for name, value in tensors.items())  # noqa: E731
    return (
        f"the grader could not load its weights into your {CLASS}: its parameters do not have the names and "
        "shapes the constructor's docstring gives.\n"
        f"  expected: {said(expected)}\n"
        f"  got:      {said(found) or 'no parameters'}"
    )


def _gradients(module: torch.nn.Module, inputs: torch.Tensor, output: Any, output_gradient: torch.Tensor | None) -> dict:
    if output_gradient is None:
        return {}
    named = list(module.named_parameters(remove_duplicate=False))
    targets = [inputs, *(parameter for _, parameter in named)]
    if not (type(output) is torch.Tensor and output.requires_grad):
        gradients: tuple = (None,) * len(targets)
    elif output.shape != output_gradient.shape:
        raise ContractViolation(
            f"the output has the wrong shape for backpropagation: expected {tuple(output_gradient.shape)}, got {tuple(output.shape)}"
        )
    else:
        with torch.enable_grad(), _student(f"{CLASS}.forward (its backward pass)"):
            gradients = torch.autograd.grad((output * output_gradient).sum(), targets, allow_unused=True)
    return {
        "input_gradient": _plain(gradients[0]),
        "parameter_gradients": {name: _plain(gradient) for (name, _), gradient in zip(named, gradients[1:])},
    }


def _plain(value: Any) -> Any:
    """Detach tensors so the grader gets values, not a handle on the student's graph; any other
    ``torch.Tensor`` subclass is passed on unchanged, and the grader rejects it by type."""
    if type(value) in (torch.Tensor, torch.nn.Parameter):
        return value.detach().clone()
    return value


def reset_generators() -> None:
    """torch's generator and Python's ``random`` at a state of their own, the same every time
    (grader/submission.py's desk backend calls it before each submission)."""
    _seed(0)
    random.seed(0)


def _seed(seed: int) -> None:
    torch.random.default_generator.manual_seed(seed)


def _require(student: ModuleType, name: str) -> Any:
    if not hasattr(student, name):
        raise NotDefined(name, f"expected your file to define `{name}`, but it does not: keep every name of the exercise (was it renamed or deleted?)")
    return getattr(student, name)
