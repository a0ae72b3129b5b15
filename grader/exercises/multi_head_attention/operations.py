"""The calls the grader can make on a submission.

This is the only code that touches the student's objects. It runs beside the student's
code (in the grader's process at a student's desk, in the sandboxed worker when
grading for real) and speaks plain data only: every argument and every result is a
number, a string, a list/dict of those, or a ``torch.Tensor``. The grader chooses all
inputs and weights; nothing here decides whether an answer is right.
"""

from __future__ import annotations

import contextlib
import random
import re
import warnings
import weakref
from types import ModuleType
from typing import Any

import torch

from grader import student_clock
from grader.reading import state_kept
from grader.seam.contract_errors import BackwardError, ContractViolation, NotDefined

_student = student_clock.running  # the student's code runs inside: its clock (grader/student_clock.py)


IN_PLACE_HINT = (
    "autograd needs that tensor for the backward pass, and your code changed it in place afterwards "
    "(x /= ..., x += ..., or a method ending in _ such as masked_fill_): make a new tensor instead, "
    "x = x / ..."
)


def head_dimension(student: ModuleType, model_dim: int, num_heads: int) -> Any:
    function = _require(student, "head_dimension")
    with _student("head_dimension"):
        return function(model_dim, num_heads)


def causal_mask(student: ModuleType, seq_len: int) -> Any:
    function = _require(student, "causal_mask")
    with _student("causal_mask"):
        mask = function(seq_len)
    return _plain(mask)


def construct_attention(student: ModuleType, model_dim: int, num_heads: int) -> str:
    """Build the module and nothing else: configuration errors must surface here."""
    _construct(student, "MultiHeadSelfAttention", (model_dim, num_heads))
    return "constructed"


def _construct(student: ModuleType, class_name: str, sizes: tuple, dtype: torch.dtype | None = None) -> torch.nn.Module:
    """The student's ``class_name(*sizes)``, in ``dtype`` when given: the student's constructor on the student's clock."""
    constructor = _require(student, class_name)
    with _student(f"{class_name}.__init__"):
        module = constructor(*sizes)
        return module if dtype is None else module.to(dtype)


def run_head(
    student: ModuleType,
    model_dim: int,
    head_dim: int,
    parameters: dict[str, torch.Tensor],
    inputs: torch.Tensor,
    allowed_mask: torch.Tensor,
    output_gradient: torch.Tensor | None = None,
    rng_seed: int | None = None,
    fresh: bool = False,
) -> dict[str, Any]:
    """One AttentionHead with the grader's weights; optionally backpropagate. ``rng_seed``:
    torch's generator is seeded first (the grader asks the same question twice with it).
    ``fresh``: a head built for this call alone, which no earlier call has run."""
    head, held = _with_parameters(student, "AttentionHead", (model_dim, head_dim), inputs.dtype, parameters, fresh)
    if rng_seed is not None:
        _seed(rng_seed)
    inputs = inputs.clone().requires_grad_(output_gradient is not None)
    before = _state(student, head)
    with torch.enable_grad(), _student("AttentionHead.forward"):  # the grader may call this from inside a backward pass
        result = head(inputs, allowed_mask)
    output, weights = _fields(result, "AttentionHead.forward", "HeadResult")
    return {"output": _plain(output), "weights": _plain(weights)} | held | _gradients(
        head, inputs, output, output_gradient, student, lambda: head(inputs, allowed_mask).output
    ) | _state_changed(before, student, head)


def concatenate_heads(
    student: ModuleType, head_outputs: list[torch.Tensor], head_weights: list[torch.Tensor],
    output_gradient: torch.Tensor | None = None,
) -> Any:
    """The student's concatenate_heads of these outputs; with ``output_gradient``, also the
    gradient each head's output receives, {"joined", "output_gradients"} (None: none reached
    it), for the diagnosis's counterfactual of the module's forward (grader/exercises/multi_head_attention/hidden/counterfactual.py)."""
    if output_gradient is not None:
        head_outputs = [output.clone().requires_grad_() for output in head_outputs]
    result_class, function = _require(student, "HeadResult"), _require(student, "concatenate_heads")
    with _student("concatenate_heads"):
        results = [result_class(output=output, weights=weights) for output, weights in zip(head_outputs, head_weights)]
        with torch.enable_grad():
            joined = function(results)
    if output_gradient is None:
        return _plain(joined)
    gradients: tuple = (None,) * len(head_outputs)
    if isinstance(joined, torch.Tensor) and joined.requires_grad:
        if joined.shape != output_gradient.shape:
            raise ContractViolation(f"concatenate_heads returned {tuple(joined.shape)}, not {tuple(output_gradient.shape)}")
        with torch.enable_grad(), _student("concatenate_heads"):  # its backward pass is the student's code too
            gradients = torch.autograd.grad((joined * output_gradient).sum(), head_outputs, allow_unused=True)
    return {"joined": _plain(joined), "output_gradients": [_plain(gradient) for gradient in gradients]}


def run_attention(
    student: ModuleType,
    model_dim: int,
    num_heads: int,
    inputs: torch.Tensor,
    allowed_mask: torch.Tensor | None = None,
    seed: int = 0,
    parameters: dict[str, torch.Tensor] | None = None,
    output_gradient: torch.Tensor | None = None,
    rng_seed: int | None = None,
    fresh: bool = False,
) -> dict[str, Any]:
    """MultiHeadSelfAttention built under ``seed``; the grader's weights loaded if given
    (``fresh``: into a module built for this call alone)."""
    held: dict = {}
    if parameters is None:
        _seed(seed)
        module = _construct(student, "MultiHeadSelfAttention", (model_dim, num_heads), inputs.dtype)
    else:
        module, held = _with_parameters(student, "MultiHeadSelfAttention", (model_dim, num_heads), inputs.dtype, parameters, fresh)
    if rng_seed is not None:
        _seed(rng_seed)
    inputs = inputs.clone().requires_grad_(output_gradient is not None)
    before = _state(student, module)
    with torch.enable_grad():  # the grader may call this from inside a backward pass
        try:
            with _student("MultiHeadSelfAttention.forward"):
                result = module(inputs) if allowed_mask is None else module(inputs, allowed_mask)
        except RuntimeError as error:
            _name_a_default_mask_of_the_wrong_size(error, module, inputs, model_dim, num_heads, allowed_mask)
            raise
    output, weights = _fields(result, "MultiHeadSelfAttention.forward", "MultiHeadResult")
    rerun = lambda: (module(inputs) if allowed_mask is None else module(inputs, allowed_mask)).output  # noqa: E731
    return {"output": _plain(output), "weights": _plain(weights)} | held | _gradients(
        module, inputs, output, output_gradient, student, rerun
    ) | _state_changed(before, student, module)


_SIZES_DISAGREE = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")


def _name_a_default_mask_of_the_wrong_size(error: RuntimeError, module, inputs: torch.Tensor, model_dim: int, num_heads: int,
                                          given_mask) -> None:
    """A forward without a mask that fails because two sizes disagree, one of them the sequence
    length and the other a number the default mask is often sized by: say so beside the
    student's error (the line that raised is the head's masked_fill, far from the cause).

    The premise is checked before it is said: the same forward given the right (seq, seq)
    causal mask must run. Two sizes that disagree elsewhere (a softmax's sum without keepdim
    divides (batch, seq, seq) by (batch, seq)) fail with the right mask too, and get no hint."""
    match = _SIZES_DISAGREE.search(str(error))
    if given_mask is not None or match is None or not error.args:
        return
    batch, seq = inputs.shape[0], inputs.shape[1]
    sizes = {int(match[1]), int(match[2])}
    others = {"model_dim (inputs.shape[-1])": model_dim, "the batch (inputs.shape[0])": batch, "head_dim": model_dim // max(num_heads, 1)}
    culprit = next((name for name, size in others.items() if size != seq and sizes == {seq, size}), None)
    if culprit is not None and _runs_with_the_causal_mask(module, inputs):
        error.args = (
            f"{error.args[0]}\n  hint:     with allowed_mask=None the default causal mask seems sized by {culprit}: "
            f"it must be (seq, seq), causal_mask(inputs.shape[1]) = {seq} positions here",
            *error.args[1:],
        )


def _runs_with_the_causal_mask(module: torch.nn.Module, inputs: torch.Tensor) -> bool:
    seq = inputs.shape[1]
    causal = torch.ones(seq, seq, dtype=torch.bool, device=inputs.device).tril()
    try:
        with torch.no_grad(), _student("MultiHeadSelfAttention.forward"):
            module(inputs, causal)
    except Exception:  # noqa: BLE001 - any failure means the default mask is not the (only) cause
        return False
    return True


def initial_parameters(student: ModuleType, model_dim: int, num_heads: int, seed: int) -> dict:
    """The module's parameters right after construction under ``seed``.

    ``shared`` lists groups of parameter names that are one tensor in memory: a head
    reused for every position of the ModuleList shows up here.
    """
    _seed(seed)
    module = _construct(student, "MultiHeadSelfAttention", (model_dim, num_heads))
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
# module's parameters, so a reused module computes what a fresh one would unless its forward
# keeps state of its own, which the call then reports (``_state_changed``).
_built_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# --- State kept between calls ---------------------------------------------------------------------
# A forward pass that changes what the module keeps (an attribute of the module or of one of its
# parts, a buffer, a global of the student's file, an attribute of one of its classes: a count of
# calls, the last output remembered, keys smoothed with the last call's) may answer the next
# question differently: the grader's handle then asks every question afresh (grader/submission.py).
# The parameters are not state: the grader loads its own into the module before every call.
# Reading it is the grader's own work (grader/reading/state_kept.py: what the student's code owns,
# each object once, within a budget), done off the student's clock: outside ``student_clock.running``.
# A part past the budget is unread: every question is then asked afresh, and it is not read again.

# What each module and each file kept after the last call that read it: the state before a call is
# the state after the one before (nothing but the student's code changes it, and a change made
# between two forward passes, by another of its functions, is then reported by the next one).
_states_after: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# Per module and per file, the parts too large to read, by name: taken by identity from then on.
_latched: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _state(student: ModuleType, module: torch.nn.Module) -> tuple:
    """What ``module`` and the student's file keep (grader/reading/state_kept.py), after the last call when known."""
    return tuple(_states_after.get(owner) or _read_state(owner, student) for owner in (module, student))


def _read_state(owner: Any, student: ModuleType) -> state_kept.Reading:
    parts = state_kept.file_parts(student) if owner is student else [("module", owner)]
    try:
        latched = _latched.setdefault(owner, {})
    except TypeError:  # an owner that cannot be weakly referenced: its large parts are read every time
        latched = {}
    return state_kept.read_parts(parts, getattr(student, "__name__", ""), latched)


def _state_changed(before: tuple, student: ModuleType, module: torch.nn.Module) -> dict:
    """``{"state_changed": True}`` when the call changed what the module or the file keeps, as far
    as it was read; else ``{"state_unread": True}`` when some of it was too large to read; else {}."""
    after = tuple(_read_state(owner, student) for owner in (module, student))
    for owner, state in zip((module, student), after):
        with contextlib.suppress(TypeError):  # an owner that cannot be weakly referenced: read afresh next time
            _states_after[owner] = state
    if after != before:
        return {"state_changed": True}
    return {"state_unread": True} if any(state.unread for state in after) else {}


def _with_parameters(
    student: ModuleType, class_name: str, sizes: tuple, dtype, parameters: dict, fresh: bool = False
) -> tuple[torch.nn.Module, dict]:
    """The module built for these sizes (``fresh``: built anew and not kept), the grader's weights
    loaded; and ``{"not_held": [...]}``, the grader's biases it has no place for (see ``_load``), or {}."""
    built = {} if fresh else _built_modules.setdefault(student, {})
    key = (class_name, sizes, dtype)
    module = built.get(key)
    if module is None:
        module = _construct(student, class_name, sizes, dtype)
    held = _load(module, parameters)
    built[key] = module  # only once its weights loaded: a module that refuses them is not kept
    return module, {"not_held": held["not_held"]} if held.get("not_held") else {}


def reset_generators() -> None:
    """torch's generator and Python's ``random`` at a state of their own, the same every time."""
    _seed(0)
    random.seed(0)


def _seed(seed: int) -> None:
    """torch.manual_seed for the CPU, the only device here. torch.manual_seed itself also
    queues a lazy seeding of every accelerator, recording a stack trace each time: a third
    of a millisecond per call, on calls that take a few."""
    torch.random.default_generator.manual_seed(seed)


def _require(student: ModuleType, name: str) -> Any:
    if not hasattr(student, name):
        raise NotDefined(
            name,
            f"expected your file to define `{name}`, but it does not: keep every name of the "
            "exercise (was it renamed or deleted?)",
        )
    return getattr(student, name)


def _load(module: torch.nn.Module, parameters: dict[str, torch.Tensor]) -> dict:
    """Load the grader's weights: every parameter by its name and shape.
    A buffer of the student's own (a stored mask, say) is not a weight and keeps its value.

    A bias on one side only is a layout the lesson does not teach, and it does not stop the
    grading of the attention itself: a bias the contract does not have (nn.Linear's default
    where the contract says bias=False) is held at zero, which is what bias=False means; a
    bias of the contract the module has no place for (bias=False where the contract has one)
    is not loaded, and the grader holds it at zero in its own computation of the reference
    (grader/submission.py ``Submission.as_held``). Both sides then compute with the same
    weights, and the layout check alone says so (grader/exercises/multi_head_attention/visible/test_head_distinctness.py). Any other
    extra keeps the value the constructor gave it. Returns which:
    ``{"held_at_zero": [...], "kept": [...], "not_held": [...]}``, empty lists left out ({}
    for the contract's layout). A parameter missing (other than such a bias) or shaped
    otherwise cannot be graded around."""
    found = dict(module.named_parameters(remove_duplicate=False))  # as state_dict() names them
    not_held = [name for name in parameters if name not in found and bias_of_a_projection(name, found)]
    loaded = {name: value for name, value in parameters.items() if name not in not_held}
    if not set(loaded) <= set(found) or any(found[name].shape != loaded[name].shape for name in loaded):
        raise ContractViolation(_layout_problem(type(module).__name__, found, parameters))
    extra = [name for name in found if name not in parameters]
    zeroed = [name for name in extra if is_bias(name)]
    # Names and shapes are checked above: copy each weight in place (load_state_dict does
    # the same with a module walk and hooks that cost more than the forward pass).
    try:
        with torch.no_grad():
            for name, value in loaded.items():
                found[name].copy_(value)
            for name in zeroed:
                found[name].zero_()
    except RuntimeError:  # a parameter that cannot be written (an expanded view, say)
        raise ContractViolation(_layout_problem(type(module).__name__, found, parameters)) from None
    held = {"held_at_zero": zeroed, "kept": [name for name in extra if name not in zeroed], "not_held": not_held}
    return {kind: names for kind, names in held.items() if names}


def is_bias(name: str) -> bool:
    return name.rpartition(".")[2] == "bias"


def bias_of_a_projection(name: str, found: dict) -> bool:
    """``name`` is a bias whose projection's weight is in ``found`` (``output_projection.bias``
    beside ``output_projection.weight``): for a module without it, a projection built with bias=False."""
    prefix = name.rpartition(".")[0]
    return is_bias(name) and bool(prefix) and f"{prefix}.weight" in found


def _layout_problem(class_name: str, found: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> str:
    """Which parameters the grader's weights need and the student's module lacks, has extra,
    or holds in another shape: names and shapes, as the constructors' docstrings state them."""
    missing = [name for name in expected if name not in found]
    extra = [name for name in found if name not in expected]
    reshaped = [name for name in expected if name in found and found[name].shape != expected[name].shape]
    problems = []
    if missing:
        problems.append(f"missing {names_and_shapes(missing, expected)}")
    if extra:
        problems.append(f"unexpected {names_and_shapes(extra, found)}")
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
        f"  expected: {names_and_shapes(list(expected), expected)}\n"
        f"  got:      {'; '.join(problems) or 'another layout'}{hint}"
    )


def names_and_shapes(names: list[str], tensors: dict[str, torch.Tensor]) -> str:
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
    student: ModuleType | None = None,
    rerun=None,
) -> dict[str, Any]:
    """Gradients of sum(output * output_gradient) for the inputs and every parameter.

    ``None`` stands for "no gradient reached it" (detached, no_grad, or unused). An error in
    the backward pass is raised as a ``BackwardError`` naming the student's forward line
    (``rerun``: the forward again, run under anomaly mode only then: it is slow).
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
            try:
                # The backward pass runs what the student's forward built (a Function of theirs, a hook): theirs.
                with _student(f"{_FORWARD_OF.get(type(module).__name__, 'your code')} (its backward pass)"):
                    gradients = torch.autograd.grad(loss, targets, allow_unused=True)
            except RuntimeError as error:
                raise _backward_error(error, student, rerun, output_gradient, targets) from None
    by_parameter = {id(p): g for p, g in zip(unique, gradients[1:])}
    return {
        "input_gradient": _plain(gradients[0]),
        "parameter_gradients": {name: _plain(by_parameter[id(p)]) for name, p in named},
    }


_FORWARD_OF = {"AttentionHead": "AttentionHead.forward", "MultiHeadSelfAttention": "MultiHeadSelfAttention.forward"}


def _backward_error(error: RuntimeError, student, rerun, output_gradient, targets) -> BackwardError:
    """The backward pass's error with the forward line that made the tensor it failed on:
    the forward and backward again under anomaly mode, whose warning holds that line
    (torch/autograd/anomaly_mode.py: "Traceback of forward call that caused the error")."""
    message = str(error)
    line = 0
    source = getattr(student, "__file__", None)
    if rerun is not None and source:
        with warnings.catch_warnings(record=True) as caught, torch.autograd.detect_anomaly(check_nan=False):
            warnings.simplefilter("always")
            try:
                with _student("the forward pass again, for its backward pass's error"):
                    output = rerun()
                    torch.autograd.grad((output * output_gradient).sum(), targets, allow_unused=True)
            except Exception:  # noqa: BLE001 - the same error again, expected; its warning is what we want
                pass
        pattern = re.compile(r'File "' + re.escape(source) + r'", line (\d+)')
        lines = [int(n) for warning in caught for n in pattern.findall(str(warning.message))]
        line = lines[-1] if lines else 0
    if "modified by an inplace operation" in message:
        message = message.split(" Hint:", 1)[0] + f"\n  hint:     {IN_PLACE_HINT}"
    return BackwardError(message, line)


def _plain(value: Any) -> Any:
    """Detach tensors so the grader gets values, not a handle on the student's graph.

    A parameter becomes a plain tensor; any other ``torch.Tensor`` subclass is passed on
    unchanged, and the grader rejects it by type.
    """
    if type(value) in (torch.Tensor, torch.nn.Parameter):
        return value.detach().clone()
    return value


# --- One function replaced: the diagnosis's counterfactual ---------------------------------------
# The diagnosis asks whether a failing check passes when one function of the student's is the
# reference's (grader/exercises/multi_head_attention/hidden/counterfactual.py). The reference's code never comes here: the
# function is replaced by a stand-in that answers each call with the output the grader computed,
# in its own process, for exactly that call (``served``: [request, answer] pairs), and records a
# call it has no answer for (``missing``). A missing head or concatenation gets a placeholder, so
# the run goes on to show the calls after it (every head at once); a missing head width or mask
# stops the run, as everything after it depends on the answer. The grader answers what is missing
# and asks again; a run with nothing missing is the counterfactual. The backward pass of a head
# or of the concatenation is served the same way; a head width and a mask need no gradient.
REPLACEABLE = ("head_dimension", "causal_mask", "AttentionHead.forward", "concatenate_heads")
REPLAYABLE = ("head_dimension", "causal_mask", "construct_attention", "run_head", "concatenate_heads", "run_attention", "initial_parameters")


class _Unanswered(BaseException):
    """A call the grader has not answered yet: the run stops (BaseException: no `except Exception` swallows it)."""


def replaced(student: ModuleType, function: str, served: list, replayed: str, arguments: dict) -> dict:
    """``replayed(**arguments)`` (an operation's name) with ``function`` replaced by the stand-in; {"result": ...}, or
    {"missing": [requests]} while the grader still has calls to answer."""
    if function not in REPLACEABLE or replayed not in REPLAYABLE:
        raise ContractViolation(f"{function} cannot be replaced in {replayed}")
    missing: list = []
    owner, name = (_require(student, "AttentionHead"), "forward") if function == "AttentionHead.forward" else (student, function)
    own = name in vars(owner)
    original = vars(owner).get(name)
    setattr(owner, name, _stand_in(student, function, served, missing))
    # A module is built by calling head_dimension: replaced, it must be built anew (and the
    # student's own kept for later calls). The other functions are looked up when called.
    built = _built_modules.pop(student, None) if function == "head_dimension" else None
    try:
        try:
            result = globals()[replayed](student, **arguments)
        except _Unanswered:
            result = None
        except Exception:
            if not missing:
                raise
        return {"missing": missing} if missing else {"result": result}
    finally:
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)
        if function == "head_dimension":
            _built_modules.pop(student, None)
            if built is not None:
                _built_modules[student] = built


def _stand_in(student: ModuleType, function: str, served: list, missing: list):
    def answer(request: dict, placeholder=None):
        for asked, given in served:
            if _same_request(asked, request):
                if given.get("unanswerable"):
                    raise ContractViolation(f"the grader cannot answer this call of {function} with the reference's")
                return given
        missing.append(request)
        if placeholder is None:
            raise _Unanswered()
        return placeholder()

    if function == "head_dimension":
        def head_dimension(model_dim, num_heads):
            given = answer({"model_dim": model_dim, "num_heads": num_heads})
            if "raises" in given:
                raise {"ValueError": ValueError, "ZeroDivisionError": ZeroDivisionError}.get(given["raises"], ValueError)(given["message"])
            return given["value"]
        return head_dimension
    if function == "causal_mask":
        return lambda seq_len, device=None: answer({"seq_len": seq_len})["mask"]
    if function == "concatenate_heads":
        def concatenate_heads(head_results):
            leaves = [result.output for result in head_results]
            request = {"outputs": [_plain(leaf) for leaf in leaves]}
            joined = answer(request, lambda: {"joined": torch.zeros(0)})["joined"]
            if torch.is_grad_enabled() and all(isinstance(leaf, torch.Tensor) for leaf in leaves) and any(
                leaf.requires_grad for leaf in leaves
            ):
                # The backward pass is served as a head's is: the reference's product for the gradient that reaches it.
                def vjp(gradient):
                    asked = {"vjp_of": request, "gradient": _plain(gradient)}
                    return answer(asked, lambda: {"gradients": [torch.zeros_like(leaf) for leaf in leaves]})["gradients"]

                joined = _Served.apply(joined, vjp, *leaves)
            return joined
        return concatenate_heads

    def forward(self, inputs, allowed_mask):
        named = sorted(self.named_parameters())
        request = {"parameters": {n: _plain(p) for n, p in named}, "inputs": _plain(inputs), "allowed_mask": _plain(allowed_mask)}
        given = answer(request, lambda: {"output": inputs[..., :0], "weights": inputs[..., :0]})
        output = given["output"]
        leaves = [inputs, *(p for _, p in named)]
        if torch.is_grad_enabled() and any(leaf.requires_grad for leaf in leaves if isinstance(leaf, torch.Tensor)):
            # The backward pass is served too: the reference's vector-Jacobian product for the
            # gradient that reaches this output, asked for like any other answer.
            def vjp(gradient):
                asked = {"vjp_of": request, "gradient": _plain(gradient)}
                return answer(asked, lambda: {"gradients": [torch.zeros_like(leaf) for leaf in leaves]})["gradients"]

            output = _Served.apply(output, vjp, *leaves)
        return _require(student, "HeadResult")(output=output, weights=given["weights"])

    return forward


class _Served(torch.autograd.Function):
    """A served output in the autograd graph: its backward pass is the served product."""

    @staticmethod
    def forward(ctx, output, vjp, *leaves):
        ctx.vjp = vjp
        return output.clone()

    @staticmethod
    def backward(ctx, gradient):
        return (None, None, *ctx.vjp(gradient))


def _same_request(asked: Any, request: Any) -> bool:
    if isinstance(asked, torch.Tensor) or isinstance(request, torch.Tensor):
        return (
            type(asked) is torch.Tensor and type(request) is torch.Tensor and asked.dtype == request.dtype
            and asked.shape == request.shape and torch.equal(asked, request)
        )
    if isinstance(asked, dict) and isinstance(request, dict):
        return asked.keys() == request.keys() and all(_same_request(asked[k], request[k]) for k in asked)
    if isinstance(asked, (list, tuple)) and isinstance(request, (list, tuple)):
        return len(asked) == len(request) and all(_same_request(a, b) for a, b in zip(asked, request))
    return type(asked) is type(request) and asked == request
