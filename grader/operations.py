"""The calls the grader can make on a submission.

This is the only code that touches the student's objects. It runs beside the student's
code (in the grader's process at a student's desk, in the sandboxed worker when
grading for real) and speaks plain data only: every argument and every result is a
number, a string, a list/dict of those, or a ``torch.Tensor``. The grader chooses all
inputs and weights; nothing here decides whether an answer is right.
"""

from __future__ import annotations

import re
import weakref
from types import ModuleType
from typing import Any

import torch


class ContractViolation(Exception):
    """The student's code returned something of the wrong kind (not a wrong number)."""


def head_dimension(student: ModuleType, model_dim: int, num_heads: int) -> Any:
    return _require(student, "head_dimension")(model_dim, num_heads)


def causal_mask(student: ModuleType, seq_len: int) -> Any:
    return _plain(_require(student, "causal_mask")(seq_len))


def construct_attention(student: ModuleType, model_dim: int, num_heads: int) -> str:
    """Build the module and nothing else: configuration errors must surface here."""
    _require(student, "MultiHeadSelfAttention")(model_dim, num_heads)
    return "constructed"


def run_head(
    student: ModuleType,
    model_dim: int,
    head_dim: int,
    parameters: dict[str, torch.Tensor],
    inputs: torch.Tensor,
    allowed_mask: torch.Tensor,
    output_gradient: torch.Tensor | None = None,
) -> dict[str, Any]:
    """One AttentionHead with the grader's weights; optionally backpropagate."""
    head = _with_parameters(student, "AttentionHead", (model_dim, head_dim), inputs.dtype, parameters)
    inputs = inputs.clone().requires_grad_(output_gradient is not None)
    with torch.enable_grad():  # the grader may call this from inside a backward pass
        result = head(inputs, allowed_mask)
    output, weights = _fields(result, "AttentionHead.forward", "HeadResult")
    return {"output": _plain(output), "weights": _plain(weights)} | _gradients(
        head, inputs, output, output_gradient
    )


def concatenate_heads(
    student: ModuleType, head_outputs: list[torch.Tensor], head_weights: list[torch.Tensor]
) -> Any:
    results = [
        _require(student, "HeadResult")(output=output, weights=weights)
        for output, weights in zip(head_outputs, head_weights)
    ]
    return _plain(_require(student, "concatenate_heads")(results))


def run_attention(
    student: ModuleType,
    model_dim: int,
    num_heads: int,
    inputs: torch.Tensor,
    allowed_mask: torch.Tensor | None = None,
    seed: int = 0,
    parameters: dict[str, torch.Tensor] | None = None,
    output_gradient: torch.Tensor | None = None,
) -> dict[str, Any]:
    """MultiHeadSelfAttention built under ``seed``; the grader's weights loaded if given."""
    if parameters is None:
        _seed(seed)
        module = _require(student, "MultiHeadSelfAttention")(model_dim, num_heads).to(inputs.dtype)
    else:
        module = _with_parameters(student, "MultiHeadSelfAttention", (model_dim, num_heads), inputs.dtype, parameters)
    inputs = inputs.clone().requires_grad_(output_gradient is not None)
    with torch.enable_grad():  # the grader may call this from inside a backward pass
        result = module(inputs) if allowed_mask is None else module(inputs, allowed_mask)
    output, weights = _fields(result, "MultiHeadSelfAttention.forward", "MultiHeadResult")
    return {"output": _plain(output), "weights": _plain(weights)} | _gradients(
        module, inputs, output, output_gradient
    )


def initial_parameters(student: ModuleType, model_dim: int, num_heads: int, seed: int) -> dict:
    """The module's parameters right after construction under ``seed``.

    ``shared`` lists groups of parameter names that are one tensor in memory: a head
    reused for every position of the ModuleList shows up here.
    """
    _seed(seed)
    module = _require(student, "MultiHeadSelfAttention")(model_dim, num_heads)
    named = list(module.named_parameters(remove_duplicate=False))
    by_storage: dict[int, list[str]] = {}
    for name, parameter in named:
        by_storage.setdefault(parameter.untyped_storage().data_ptr(), []).append(name)
    return {
        "parameters": {name: _plain(parameter) for name, parameter in named},
        "shared": [names for names in by_storage.values() if len(names) > 1],
    }


# Modules built for a submission, reused across calls: building one costs more than the
# forward pass. Every reuse first loads the grader's weights, which replace all of the
# module's state, so a reused module computes exactly what a fresh one would.
_built_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _with_parameters(student: ModuleType, class_name: str, sizes: tuple, dtype, parameters: dict) -> torch.nn.Module:
    built = _built_modules.setdefault(student, {})
    key = (class_name, sizes, dtype)
    module = built.get(key)
    if module is None:
        module = _require(student, class_name)(*sizes).to(dtype)
    _load(module, parameters)
    built[key] = module  # only once its weights loaded: a module that refuses them is not kept
    return module


def _seed(seed: int) -> None:
    """torch.manual_seed for the CPU, the only device here. torch.manual_seed itself also
    queues a lazy seeding of every accelerator, recording a stack trace each time: a third
    of a millisecond per call, on calls that take a few."""
    torch.random.default_generator.manual_seed(seed)


def _require(student: ModuleType, name: str) -> Any:
    if not hasattr(student, name):
        raise ContractViolation(
            f"expected your file to define `{name}`, but it does not: keep every name of the "
            "exercise (was it renamed or deleted?)"
        )
    return getattr(student, name)


def _load(module: torch.nn.Module, parameters: dict[str, torch.Tensor]) -> None:
    """Load the grader's weights: every parameter by its name and shape, no parameter more.
    A buffer of the student's own (a stored mask, say) is not a weight and keeps its value."""
    found = dict(module.named_parameters(remove_duplicate=False))  # as state_dict() names them
    if set(found) != set(parameters) or any(found[name].shape != parameters[name].shape for name in parameters):
        raise ContractViolation(_layout_problem(type(module).__name__, found, parameters))
    # Names and shapes are checked above: copy each weight in place (load_state_dict does
    # the same with a module walk and hooks that cost more than the forward pass).
    try:
        with torch.no_grad():
            for name, value in parameters.items():
                found[name].copy_(value)
    except RuntimeError:  # a parameter that cannot be written (an expanded view, say)
        raise ContractViolation(_layout_problem(type(module).__name__, found, parameters)) from None


def _layout_problem(class_name: str, found: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> str:
    """Which parameters the grader's weights need and the student's module lacks, has extra,
    or holds in another shape: names and shapes, as the constructors' docstrings state them."""
    missing = [name for name in expected if name not in found]
    extra = [name for name in found if name not in expected]
    reshaped = [name for name in expected if name in found and found[name].shape != expected[name].shape]
    problems = []
    if missing:
        problems.append(f"missing {_names_and_shapes(missing, expected)}")
    if extra:
        problems.append(f"unexpected {_names_and_shapes(extra, found)}")
    if reshaped:
        problems.append("shaped " + ", ".join(
            f"{name} {tuple(found[name].shape)} instead of {tuple(expected[name].shape)}" for name in reshaped[:4]
        ) + (" ..." if len(reshaped) > 4 else ""))
    hint = ""
    if missing and not any(name.startswith("heads.") for name in found) and any(n.startswith("heads.") for n in missing):
        hint = "\n  hint:     heads kept in a plain Python list are invisible to PyTorch: use nn.ModuleList"
    return (
        f"the grader could not load its weights into your {class_name}: its parameters do not have the names "
        "and shapes the constructors' docstrings give.\n"
        f"  expected: {_names_and_shapes(list(expected), expected)}\n"
        f"  got:      {'; '.join(problems) or 'another layout'}{hint}"
    )


def _names_and_shapes(names: list[str], tensors: dict[str, torch.Tensor]) -> str:
    """``heads.<h>.query.weight (4, 8) for h = 0, 1, output_projection.bias (8,)``: one entry
    per kind of parameter, the heads' numbers collected."""
    kinds: dict[str, tuple] = {}
    heads: dict[str, list[str]] = {}
    for name in names:
        match = re.fullmatch(r"heads\.(\d+)\.(.+)", name)
        kind = f"heads.<h>.{match[2]}" if match else name
        kinds.setdefault(kind, tuple(tensors[name].shape))
        if match:
            heads.setdefault(kind, []).append(match[1])
    return ", ".join(
        f"{kind} {shape}" + (f" for h = {', '.join(heads[kind])}" if kind in heads else "") for kind, shape in kinds.items()
    )


def _fields(result: Any, function: str, expected: str) -> tuple[Any, Any]:
    if not (hasattr(result, "output") and hasattr(result, "weights")):
        raise ContractViolation(
            f"{function} must return a {expected}: expected an object with .output and "
            f".weights, got {type(result).__name__}"
        )
    return result.output, result.weights


def _gradients(
    module: torch.nn.Module,
    inputs: torch.Tensor,
    output: Any,
    output_gradient: torch.Tensor | None,
) -> dict[str, Any]:
    """Gradients of sum(output * output_gradient) for the inputs and every parameter.

    ``None`` stands for "no gradient reached it" (detached, no_grad, or unused).
    """
    if output_gradient is None:
        return {}
    named = list(module.named_parameters(remove_duplicate=False))
    unique = list({id(p): p for _, p in named}.values())
    targets = [inputs, *unique]
    if not (isinstance(output, torch.Tensor) and output.requires_grad):
        gradients: tuple = (None,) * len(targets)
    elif output.shape != output_gradient.shape:
        raise ContractViolation(
            f"the output has the wrong shape for backpropagation: expected "
            f"{tuple(output_gradient.shape)}, got {tuple(output.shape)}"
        )
    else:
        # A scalar loss rather than grad_outputs=: the same vector-Jacobian product, without
        # the lazy import (sympy, ~0.4 s) that passing grad_outputs triggers in torch 2.x.
        with torch.enable_grad():
            loss = (output * output_gradient).sum()
            gradients = torch.autograd.grad(loss, targets, allow_unused=True)
    by_parameter = {id(p): g for p, g in zip(unique, gradients[1:])}
    return {
        "input_gradient": _plain(gradients[0]),
        "parameter_gradients": {name: _plain(by_parameter[id(p)]) for name, p in named},
    }


def _plain(value: Any) -> Any:
    """Detach tensors so the grader gets values, not a handle on the student's graph.

    A parameter becomes a plain tensor; any other ``torch.Tensor`` subclass is passed on
    unchanged, and the grader rejects it by type.
    """
    if type(value) in (torch.Tensor, torch.nn.Parameter):
        return value.detach().clone()
    return value
