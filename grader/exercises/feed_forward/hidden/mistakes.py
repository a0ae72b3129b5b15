"""The feed-forward exercise's known mistakes: one small trusted implementation per misconception.

Each mistake is the reference's forward pass (``REFERENCE_STEPS``, cut into named steps) with
one or two steps written the way a student with that misconception writes them (its ``forms``).
Each is said once, here: the hidden check's hint (``hint``) and the engine's diagnosis (through
hidden/vocabulary.py, on the probes of hidden/probes.py) read the same entry. It runs in the
grader's process on the grader's data, never on anything a student wrote: the hidden checks name a mistake only when its implementation reproduces the
student's output on the very weights and inputs of the check (``matching``), so the hint's
premise holds on the student's numbers. Instructor code (it holds the solution): never shipped.

The ids are a stable vocabulary: reports, spreadsheets and our tests rely on them. Add
mistakes, never rename one. (Mistakes of the constructor, a hidden layer of the wrong width or a
layer without its bias, are said by the configuration group's checks, whose premises read the
module's parameters; dropout left on in evaluation by the dropout group's.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from grader.exercises.feed_forward import checks

FORWARD = "FeedForward.forward"
FUNCTIONS = (FORWARD,)  # the functions the diagnosis probes, in the lesson's order

Steps = dict[str, Callable]


# --- the forward pass, cut into the steps students get wrong ---------------------------------------
# forward(steps, parameters, inputs) = residual(after(project(activation(expand(inputs)))), inputs).
# ``parameters`` are the grader's weights as the student's module holds them (a bias it has no
# place for is zero: Submission.as_held), so that a layer built without its bias, which the
# configuration group says, is never taken for a bias held but not added.


def _layer(name: str, with_bias: bool = True) -> Callable:
    return lambda parameters, tensor: F.linear(tensor, parameters[f"{name}.weight"], parameters[f"{name}.bias"] if with_bias else None)


def forward(steps: Steps, parameters: dict, inputs: torch.Tensor) -> torch.Tensor:
    hidden = steps["activation"](steps["expand"](parameters, inputs))
    return steps["residual"](steps["after"](steps["project"](parameters, hidden)), inputs)


_SAME = lambda tensor: tensor  # noqa: E731 - a step left out
REFERENCE_STEPS: dict[str, Steps] = {
    FORWARD: {
        "expand": _layer("expand"),
        "activation": F.gelu,
        "project": _layer("project"),
        "after": _SAME,  # what follows the second layer: nothing
        "residual": lambda output, inputs: output,  # the residual belongs to the block around the network
    },
}


@dataclass(frozen=True)
class Mistake:
    """One misconception, said once: the hidden check's hint and the diagnosis both read it."""

    id: str
    title: str  # what the student did, in words a student knows
    why: str  # what it does to the model, in the lesson's terms
    fix: str  # the principle, not the code
    forms: tuple[Steps, ...] = field(repr=False, default=())  # each: step name -> replacement
    function: str = FORWARD
    signature = None  # no property of the answers stands in for a form: a mistake is named only when a form reproduces them

    def fix_for(self, code: str) -> str:
        return self.fix  # no part of a fix here depends on the student's code

    def seen_in(self, probes: tuple = (), observed: list | None = None) -> str:
        return ""  # the why says it all: nothing of the answers to add

    def forms_in(self, function: str) -> tuple[Steps, ...]:
        return self.forms if function == self.function else ()

    def steps_in(self, function: str) -> frozenset[str]:
        return frozenset(name for form in self.forms_in(function) for name in form)

    def output(self, parameters: dict, inputs: torch.Tensor) -> torch.Tensor:
        """The forward pass with this mistake (its first form) on these weights and inputs."""
        return forward(REFERENCE_STEPS[FORWARD] | self.forms[0], parameters, inputs)


MISTAKES = (
    Mistake("activation_left_out", "the activation left out",
            "two linear layers in a row are one linear layer: the network can only compute what one layer can",
            "apply the nonlinearity to the first layer's output, before the second layer",
            ({"activation": _SAME},)),
    Mistake("relu_instead_of_gelu", "ReLU in place of GELU",
            "ReLU switches every negative hidden feature off entirely; the contract's GELU lets a little through smoothly",
            "use the exact GELU, nn.GELU()",
            ({"activation": torch.relu},)),
    Mistake("gelu_tanh_approximation", "GELU's tanh approximation",
            "the approximation differs from the exact GELU by up to about 1e-3, more than the reference allows",
            "use the exact form, nn.GELU() (approximate='none')",
            ({"activation": lambda hidden: F.gelu(hidden, approximate="tanh")},)),
    Mistake("activation_after_the_second_layer", "the activation applied after the second layer",
            "the two layers then act as one linear layer followed by GELU, and the output can no longer be negative "
            "below about -0.17",
            "the nonlinearity goes between the layers, on the hidden_dim-wide features",
            ({"activation": _SAME, "after": F.gelu},)),
    Mistake("first_bias_not_added", "the first layer's bias held but never added",
            "every hidden unit switches at zero, whatever the bias learned",
            "call the layer (self.expand(inputs)), which adds its bias, rather than multiplying by its weight alone",
            ({"expand": _layer("expand", with_bias=False)},)),
    Mistake("second_bias_not_added", "the second layer's bias held but never added",
            "the output cannot be shifted away from what the hidden features give",
            "call the layer (self.project(hidden)), which adds its bias",
            ({"project": _layer("project", with_bias=False)},)),
    Mistake("residual_added_inside", "the residual connection added inside FeedForward",
            "the block around the network adds the inputs once more: the residual is then counted twice",
            "return the network's output alone: the residual connection belongs to the block around it",
            ({"residual": lambda output, inputs: output + inputs},)),
)
BY_ID = {mistake.id: mistake for mistake in MISTAKES}


def of_function(function: str) -> tuple[Mistake, ...]:
    """The known mistakes of ``function``, in the library's order."""
    return tuple(mistake for mistake in MISTAKES if mistake.forms_in(function))


def matching(parameters: dict, inputs: torch.Tensor, got: torch.Tensor) -> Mistake | None:
    """The one known mistake whose implementation gives ``got`` on these weights and inputs
    (None when none does, or when more than one does: a guess is never said as a diagnosis)."""
    found = [mistake for mistake in MISTAKES if checks.close(got, mistake.output(parameters, inputs))]
    return found[0] if len(found) == 1 else None


def hint(parameters: dict, inputs: torch.Tensor, got: torch.Tensor) -> str:
    mistake = matching(parameters, inputs, got)
    if mistake is None:
        return ""
    return f"your output is what {mistake.title} gives on these numbers: {mistake.why}. Fix: {mistake.fix}. (known mistake: {mistake.id})"
