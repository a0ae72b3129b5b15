"""Counterfactuals: does a failing check pass with one of the student's functions replaced by the reference's?

A diagnosis says which failing checks its mistake *explains*, and those checks are then shown
folded under it, without their own messages: a claim about the student's code, which needs
evidence. The evidence is a counterfactual. A failing check is explained by a function's
mistake only when the same check, run again, passes with that one function replaced by the
reference's and everything else the student's. What no single replacement explains keeps its
own message.

How the check is run again without the reference entering the student's reach:

* ``head_dimension``, ``causal_mask``, ``AttentionHead.forward``, ``concatenate_heads``: the
  student's module runs in its sandbox as always, with the function replaced by a stand-in
  (grader/exercises/multi_head_attention/operations.py ``replaced``) that *asks* for each answer. The worker sends the call
  it could not answer (its arguments, plain data); the grader computes the reference's answer
  here, in its own process, and runs the operation again with the answer *served*. The worker
  receives outputs, never code; and a head is answered only on the inputs and weights this
  check itself sent, so the stand-in is no oracle of the reference on data the student picks.
* ``MultiHeadSelfAttention``: its forward is the reference's steps, run here on the student's
  own heads, concatenation and mask, each called through the Submission (the diagnosis's
  probes do the same: grader/exercises/multi_head_attention/hidden/probes.py ``StudentParts``); its backward pass is the
  output projection's here, then the student's concatenate_heads and heads asked for the
  gradient that reaches each. Its construction is the reference's constructor on the student's
  parts: the student's head_dimension, then the student's head built at that width. A module
  built from a seed is replayed with the parameters the student's constructor gives under that
  seed, unless the construction is the mistake (heads shared or copied): that check, like one
  that reads the module's initial parameters, cannot be replayed (``Unproven``), and the
  diagnosis records it as such (``unreplayable``), neither explained nor not.

A replaced head's or concatenation's backward pass is served the same way (the reference's
vector-Jacobian product for the gradient that reaches it); a head width and a mask need none.

Cost: only failing submissions are diagnosed, only the failing checks that use a function a
known diagnosis names are run again, each call at most a few rounds, all within the
diagnosis's budget and at most ``MAX_CALLS`` worker calls per submission.
"""

from __future__ import annotations

import pytest
import torch

from grader.exercises.multi_head_attention.data import Config
from grader.exercises.multi_head_attention.hidden import mistakes
from grader.exercises.multi_head_attention.hidden.probes import StudentParts
from grader.hidden.reference import reference
from grader.hidden.unproven import Unproven
from grader.exercises.multi_head_attention.handle import AttentionSubmission
from grader.submission import Submission

HEAD_WEIGHTS = ("query.weight", "key.weight", "value.weight")  # a head's parameters, as the contract names them
HEAD_BIASES = ("query.bias", "key.bias", "value.bias")
# A call of the module with its heads replaced takes three rounds: the heads' calls, their
# answers (and the gradients that reach them), the gradients' answers.
MAX_ROUNDS = 4
MAX_ASKED = 8  # answers per round: the served answers of one call stay far within the wire's bounds
MAX_CALLS = 600  # per submission: a few hundred milliseconds of the worker's time


class Replaced(AttentionSubmission):
    """The submission as the checks see it, with ``function`` the reference's.

    The Submission's own checks of what comes back (plain tensors, the fields of a result)
    apply unchanged: only the transport of each call differs."""

    def __init__(self, submission: Submission, function: str, calls: list[int], mistake_ids: tuple[str, ...] = ()) -> None:
        super().__init__(submission.name, submission.source, submission.backend, reuse_answers=submission.reuse and submission.answers is not None)
        self.original = submission
        self.timeouts = submission.timeouts  # a loop met in the checks is not run again
        self.not_held = submission.not_held  # the module's layout, as the checks met it
        self.reuses_asked_again = submission.reuses_asked_again  # steady so far: its reuses need not be asked again
        if not self.reuse:
            self.answers = None  # nothing to compare: the checks' own calls did
        self.function = function
        # Whether the module's construction is the student's own and right (its mistakes change
        # only the forward): a module built from a seed can then be replayed.
        self.construction_is_the_students = not any(
            "construct" in mistakes.BY_ID[id].steps_in(mistakes.MODULE) for id in mistake_ids if id in mistakes.BY_ID
        )
        self.calls = calls  # shared by every replacement of one submission: the budget
        self.sent: dict = {}  # the data of the call in progress (what a head may be asked about)
        self.heads: dict = {}  # reference heads by size and dtype, their weights loaded per answer

    def _call(self, operation: str, **arguments):
        self.sent = arguments
        if self.function == mistakes.MODULE:
            return self._module(operation, arguments)
        served: list = []  # [request, answer], for this call only: what travels to the worker stays small
        for _ in range(MAX_ROUNDS):
            self._spend()
            reply = super()._call("replaced", function=self.function, served=served, replayed=operation, arguments=arguments)
            if not isinstance(reply, dict) or not isinstance(reply.get("missing", []), list):
                raise Unproven("the worker's reply is not one of the replacement's")
            if not reply.get("missing"):
                return reply.get("result")
            for request in reply["missing"][:MAX_ASKED]:
                served.append([request, self._answer(request)])
        raise Unproven(f"{operation} asked for more than {MAX_ROUNDS} rounds of answers")

    def _spend(self) -> None:
        self.calls[0] += 1
        if self.calls[0] > MAX_CALLS:
            raise Unproven("the counterfactuals ran out of calls")

    # --- the reference's answers, computed here ---------------------------------------------------

    def _answer(self, request) -> dict:
        try:
            return _ANSWERS[self.function](self, request)
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError):
            return {"unanswerable": True}  # a call the reference cannot answer: the check will not pass

    def _head_dimension(self, request: dict) -> dict:
        model_dim, num_heads = request["model_dim"], request["num_heads"]
        if type(model_dim) is not int or type(num_heads) is not int:
            return {"unanswerable": True}
        try:
            return {"value": reference().head_dimension(model_dim, num_heads)}
        except (ValueError, ZeroDivisionError) as error:
            return {"raises": type(error).__name__, "message": str(error)}

    def _causal_mask(self, request: dict) -> dict:
        seq_len = request["seq_len"]
        if type(seq_len) is not int or not 0 <= seq_len <= 4096:
            return {"unanswerable": True}
        return {"mask": reference().causal_mask(seq_len)}

    def _concatenate(self, request: dict) -> dict:
        if "vjp_of" in request:
            return self._concatenate_backward(request["vjp_of"]["outputs"], request["gradient"])
        outputs = request["outputs"]
        if not all(type(output) is torch.Tensor for output in outputs):
            return {"unanswerable": True}
        module = reference()
        return {"joined": module.concatenate_heads([module.HeadResult(output=o, weights=o) for o in outputs])}

    def _concatenate_backward(self, outputs: list, gradient) -> dict:
        """The reference concatenation's vector-Jacobian product: each head's share of ``gradient``."""
        if not all(type(output) is torch.Tensor for output in outputs) or type(gradient) is not torch.Tensor:
            return {"unanswerable": True}
        module = reference()
        leaves = [output.detach().clone().requires_grad_() for output in outputs]
        with torch.enable_grad():
            joined = module.concatenate_heads([module.HeadResult(output=o, weights=o) for o in leaves])
            if joined.shape != gradient.shape:
                return {"unanswerable": True}
            gradients = torch.autograd.grad((joined * gradient.to(joined.dtype)).sum(), leaves, allow_unused=True)
        return {"gradients": [torch.zeros_like(leaf) if g is None else g for leaf, g in zip(leaves, gradients)]}

    def _head(self, request: dict) -> dict:
        if "vjp_of" in request:
            return self._head_backward(request["vjp_of"], request["gradient"])
        answer = self._head_forward(request)
        return answer if "unanswerable" in answer else {"output": answer["output"].detach(), "weights": answer["weights"].detach()}

    def _head_backward(self, request: dict, gradient) -> dict:
        """The reference head's vector-Jacobian product: the gradients of sum(output * gradient)
        for the inputs and the head's parameters (in the stand-in's order: sorted names)."""
        answer = self._head_forward(request, with_gradients=True)
        if "unanswerable" in answer or type(gradient) is not torch.Tensor or gradient.shape != answer["output"].shape:
            return {"unanswerable": True}
        leaves = answer["leaves"]
        # A scalar loss, not grad_outputs= (grader/exercises/multi_head_attention/operations.py ``_gradients``: no lazy import of sympy).
        with torch.enable_grad():
            loss = (answer["output"] * gradient.to(answer["output"].dtype)).sum()
            gradients = torch.autograd.grad(loss, leaves, allow_unused=True)
        return {"gradients": [torch.zeros_like(leaf) if g is None else g for leaf, g in zip(leaves, gradients)]}

    def _head_forward(self, request: dict, with_gradients: bool = False) -> dict:
        """The reference head on the data of the call in progress only: the inputs it sent and
        the weights of one of the heads it sent (any mask: a pattern, not data)."""
        inputs, parameters, mask = request["inputs"], request["parameters"], request["allowed_mask"]
        sent_inputs = self.sent.get("inputs")
        own = self.sent.get("parameters") or {}
        heads = [own] if self.sent is not None and "query.weight" in own else [
            {n.split(".", 2)[2]: v for n, v in own.items() if n.startswith(f"heads.{h}.")} for h in range(len(own))
        ]
        if not (type(inputs) is torch.Tensor and type(sent_inputs) is torch.Tensor and _equal(inputs, sent_inputs)):
            return {"unanswerable": True}
        weights = {n: v for n, v in parameters.items() if n in HEAD_WEIGHTS} if isinstance(parameters, dict) else {}
        # A bias the student's head has beside the contract's weights is held at zero there
        # (grader/exercises/multi_head_attention/operations.py ``_load``): the reference's forward on that head adds it too.
        biases = {n: v for n, v in parameters.items() if n not in weights} if isinstance(parameters, dict) else {}
        if set(weights) != set(HEAD_WEIGHTS) or not any(
            head.keys() == weights.keys() and all(_equal(head[n], weights[n]) for n in head) for head in heads
        ):
            return {"unanswerable": True}
        if not all(n in HEAD_BIASES and type(v) is torch.Tensor and v.dtype == inputs.dtype and not v.any() for n, v in biases.items()):
            return {"unanswerable": True}
        if type(mask) is not torch.Tensor or mask.dtype is not torch.bool:
            return {"unanswerable": True}
        head_dim, model_dim = parameters["query.weight"].shape
        key = (model_dim, head_dim, inputs.dtype, tuple(sorted(biases)))
        if key not in self.heads:  # building a head costs more than running it
            head = reference().AttentionHead(model_dim, head_dim).to(inputs.dtype)
            for name in biases:  # the student's layout: nn.Linear's bias, which the reference builds without
                setattr(getattr(head, name.removesuffix(".bias")), "bias", torch.nn.Parameter(torch.zeros(head_dim, dtype=inputs.dtype)))
            self.heads[key] = head
        head = self.heads[key]
        head.load_state_dict(parameters)
        if not with_gradients:
            with torch.no_grad():
                result = head(inputs, mask)
            return {"output": result.output, "weights": result.weights}
        inputs = inputs.detach().clone().requires_grad_()
        leaves = [inputs, *(parameter for _, parameter in sorted(head.named_parameters()))]
        with torch.enable_grad():
            result = head(inputs, mask)
        return {"output": result.output, "weights": result.weights, "leaves": leaves}

    # --- the module's forward, the reference's steps on the student's parts ----------------------

    def _module(self, operation: str, arguments: dict):
        if operation == "construct_attention":
            return self._construct(arguments["model_dim"], arguments["num_heads"])
        if operation == "initial_parameters":
            raise Unproven(f"{operation} builds the module: its construction cannot be replayed")
        if operation != "run_attention":  # the student's own parts, as they are
            self._spend()
            return self.original._call(operation, **arguments)
        inputs, parameters = arguments["inputs"], arguments.get("parameters")
        if parameters is None:
            # Built from a seed: the student's construction, then the reference's forward; only
            # where the construction is not part of the mistake (heads shared or copied).
            if not self.construction_is_the_students:
                raise Unproven("the module's construction is part of the mistake: it cannot be replayed")
            built = self.original.initial_parameters(arguments["model_dim"], arguments["num_heads"], arguments.get("seed", 0))
            parameters = {name: value.to(inputs.dtype) for name, value in built["parameters"].items()}
            if self.original.not_held - parameters.keys():  # a bias the module has no place for
                raise Unproven("the module built from a seed lacks a parameter the reference's forward needs")
        else:
            # The reference's forward on the student's module holds the weights as that module does.
            parameters = self.original.as_held(parameters)
        config = Config(batch=inputs.shape[0], seq=inputs.shape[1], model_dim=arguments["model_dim"], num_heads=arguments["num_heads"])
        student = _Counted(self.original, self)
        parts = StudentParts(student, _Shape(config), parameters, inputs)
        with torch.no_grad():
            weights, output = mistakes.module_forward(mistakes.MODULE_STEPS, parts, parameters, arguments.get("allowed_mask"))
        result = {"weights": weights, "output": output}
        if arguments.get("output_gradient") is not None:
            result |= self._module_backward(student, parts, parameters, arguments, output)
        return result

    def _construct(self, model_dim: int, num_heads: int) -> None:
        """The reference's constructor on the student's parts: it asks the student's
        head_dimension (whose refusal is the constructor's), then builds the student's heads,
        here one, given weights of the width it returned (a head that cannot be built at that
        width fails the construction)."""
        student = _Counted(self.original, self)
        head_dim = student.head_dimension(model_dim, num_heads)
        if type(head_dim) is not int or head_dim < 1:
            raise Unproven("head_dimension's answer is no width the reference could build heads with")
        parameters = {f"{name}.weight": torch.zeros(head_dim, model_dim) for name in ("query", "key", "value")}
        student.run_head(model_dim=model_dim, head_dim=head_dim, parameters=parameters, inputs=torch.zeros(1, 1, model_dim),
                         allowed_mask=torch.ones(1, 1, dtype=torch.bool))

    def _module_backward(self, student, parts, parameters: dict, arguments: dict, output: torch.Tensor) -> dict:
        """The gradients of sum(output * output_gradient) through the reference's forward: the
        output projection's here, each head's output's through the student's concatenate_heads,
        the heads' parameters' and the inputs' from the student's own heads (run_head with the
        gradient that reaches each)."""
        gradient = arguments["output_gradient"].to(output.dtype)
        mask, order, heads = mistakes.module_heads(mistakes.MODULE_STEPS, parts, parameters, arguments.get("allowed_mask"))
        concatenated = parts.concatenate(heads)  # the forward's, remembered by ``parts``
        weight = parameters["output_projection.weight"].to(output.dtype)
        rows, flat = gradient.reshape(-1, gradient.shape[-1]), concatenated.to(output.dtype).reshape(-1, concatenated.shape[-1])
        gradients = {"output_projection.weight": rows.T @ flat, "output_projection.bias": rows.sum(dim=0)}
        reaching = student.concatenate_heads_backward(
            [head.output for head in heads], [head.weights for head in heads], (gradient @ weight).to(concatenated.dtype)
        )
        input_gradient = None
        for index, head_gradient in zip(order, reaching):
            prefix = f"heads.{index}."
            own = {name.removeprefix(prefix): value for name, value in parameters.items() if name.startswith(prefix)}
            if head_gradient is None:
                gradients |= {prefix + name: None for name in own}
                continue
            got = student.run_head(model_dim=parts.model_dim, head_dim=parts.head_dim, parameters=own, inputs=parts.inputs,
                                   allowed_mask=mask, output_gradient=head_gradient)
            gradients |= {prefix + name: value for name, value in got.get("parameter_gradients", {}).items()}
            if got.get("input_gradient") is not None:
                input_gradient = got["input_gradient"] if input_gradient is None else input_gradient + got["input_gradient"]
        return {"input_gradient": input_gradient, "parameter_gradients": gradients}


def module_calls(submission: Submission, function: str, grading_seed: int) -> bool:
    """Whether the student's module is shown to call ``function`` when it is built and run
    (allowed_mask=None, as the default mask is a causal_mask call): the module run once with
    ``function`` replaced by the stand-in, which asks for its first answer if it is called.
    False when the run returns without asking, and when it fails before asking (nothing shows
    the call then: no check of the module is blamed on ``function`` without it)."""
    if function == mistakes.MODULE:
        return True
    from grader.exercises.multi_head_attention.hidden import probes  # the module's probe data (probes imports this module's neighbours)

    probe = next(p for p in probes.for_seed(grading_seed)[mistakes.MODULE] if isinstance(p, probes.ModuleProbe))
    data = probe.data()
    arguments = {"model_dim": probe.config.model_dim, "num_heads": probe.config.num_heads, "inputs": data["inputs"].clone(),
                 "parameters": {name: value.clone() for name, value in data["parameters"].items()}, "allowed_mask": None}
    try:
        reply = submission._call("replaced", function=function, served=[], replayed="run_attention", arguments=arguments)
    except (Exception, pytest.fail.Exception):  # noqa: BLE001 - a failure shows no call
        return False
    return isinstance(reply, dict) and bool(reply.get("missing"))


_ANSWERS = {
    mistakes.HEAD_DIMENSION: Replaced._head_dimension,
    mistakes.CAUSAL_MASK: Replaced._causal_mask,
    mistakes.CONCATENATE: Replaced._concatenate,
    mistakes.HEAD: Replaced._head,
}
REPLACEABLE = (mistakes.MODULE, *_ANSWERS)


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return type(b) is torch.Tensor and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


class _Shape:
    """What StudentParts reads of a probe: its sizes."""

    def __init__(self, config: Config) -> None:
        self.config = config


class _Counted:
    """The student's parts, each call counted against the counterfactuals' budget."""

    def __init__(self, submission: Submission, replaced: Replaced) -> None:
        self.submission, self.replaced = submission, replaced

    def __getattr__(self, name: str):
        method = getattr(self.submission, name)

        def counted(*args, **kwargs):
            self.replaced._spend()
            return method(*args, **kwargs)

        return counted
