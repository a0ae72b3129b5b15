"""The feed-forward exercise's known mistakes: one small trusted implementation per misconception.

Each mistake is the reference's forward pass with one step written the way a student with that
misconception writes it. It runs in the grader's process on the grader's data, never on anything
a student wrote: the hidden checks name a mistake only when its implementation reproduces the
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


@dataclass(frozen=True)
class Mistake:
    id: str
    title: str  # what the student did, in words a student knows
    why: str  # what it does to the model, in the lesson's terms
    fix: str  # the principle, not the code
    forward: Callable[[dict, torch.Tensor], torch.Tensor] = field(repr=False)  # (weights, inputs) -> output
    function: str = FORWARD


def _network(parameters: dict, inputs: torch.Tensor, activation=F.gelu, expand_bias=True, project_bias=True,
             after=False, residual=False) -> torch.Tensor:
    hidden = F.linear(inputs, parameters["expand.weight"], parameters["expand.bias"] if expand_bias else None)
    if not after:
        hidden = activation(hidden)
    output = F.linear(hidden, parameters["project.weight"], parameters["project.bias"] if project_bias else None)
    if after:
        output = activation(output)
    return output + inputs if residual else output


MISTAKES = (
    Mistake("activation_left_out", "the activation left out",
            "two linear layers in a row are one linear layer: the network can only compute what one layer can",
            "apply the nonlinearity to the first layer's output, before the second layer",
            lambda p, x: _network(p, x, activation=lambda h: h)),
    Mistake("relu_instead_of_gelu", "ReLU in place of GELU",
            "ReLU switches every negative hidden feature off entirely; the contract's GELU lets a little through smoothly",
            "use the exact GELU, nn.GELU()",
            lambda p, x: _network(p, x, activation=torch.relu)),
    Mistake("gelu_tanh_approximation", "GELU's tanh approximation",
            "the approximation differs from the exact GELU by up to about 1e-3, more than the reference allows",
            "use the exact form, nn.GELU() (approximate='none')",
            lambda p, x: _network(p, x, activation=lambda h: F.gelu(h, approximate="tanh"))),
    Mistake("activation_after_the_second_layer", "the activation applied after the second layer",
            "the two layers then act as one linear layer followed by GELU, and the output can no longer be negative "
            "below about -0.17",
            "the nonlinearity goes between the layers, on the hidden_dim-wide features",
            lambda p, x: _network(p, x, after=True)),
    Mistake("first_bias_not_added", "the first layer's bias held but never added",
            "every hidden unit switches at zero, whatever the bias learned",
            "call the layer (self.expand(inputs)), which adds its bias, rather than multiplying by its weight alone",
            lambda p, x: _network(p, x, expand_bias=False)),
    Mistake("second_bias_not_added", "the second layer's bias held but never added",
            "the output cannot be shifted away from what the hidden features give",
            "call the layer (self.project(hidden)), which adds its bias",
            lambda p, x: _network(p, x, project_bias=False)),
    Mistake("residual_added_inside", "the residual connection added inside FeedForward",
            "the block around the network adds the inputs once more: the residual is then counted twice",
            "return the network's output alone: the residual connection belongs to the block around it",
            lambda p, x: _network(p, x, residual=True)),
)


def matching(parameters: dict, inputs: torch.Tensor, got: torch.Tensor) -> Mistake | None:
    """The one known mistake whose implementation gives ``got`` on these weights and inputs
    (None when none does, or when more than one does: a guess is never said as a diagnosis)."""
    found = [mistake for mistake in MISTAKES if checks.close(got, mistake.forward(parameters, inputs))]
    return found[0] if len(found) == 1 else None


def hint(parameters: dict, inputs: torch.Tensor, got: torch.Tensor) -> str:
    mistake = matching(parameters, inputs, got)
    if mistake is None:
        return ""
    return f"your output is what {mistake.title} gives on these numbers: {mistake.why}. Fix: {mistake.fix}. (known mistake: {mistake.id})"
