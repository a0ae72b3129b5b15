"""The premises of this exercise's hints, each reproduced on the student's own numbers.

A hint speaks only when its premise holds: the student's answer is what a named slip computes
on the very inputs and weights the check used (the candidates below are computed here, in the
grader's process, from the grader's data), or the student's answers show the pattern the
sentence states (which positions moved). Otherwise the check's expected / got stands alone.
grader/feedback/'s rule applies: every sentence carries the evidence that licenses it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from grader.exercises.feed_forward import checks

# Activations students put between the layers instead of the exact GELU, by what they wrote.
OTHER_ACTIVATIONS = {
    "no activation at all (the identity)": lambda x: x,
    "ReLU": torch.relu,
    "GELU's tanh approximation (approximate='tanh')": lambda x: F.gelu(x, approximate="tanh"),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "SiLU": F.silu,
}


def activation_hint(got: torch.Tensor, hidden_inputs: torch.Tensor, outside: torch.Tensor | None = None) -> str:
    """With weights that make the network ``outside(activation(hidden_inputs))`` (identities and
    a sign), the activation whose result the student's output is, if another than GELU's."""
    for name, activation in OTHER_ACTIVATIONS.items():
        candidate = activation(hidden_inputs) if outside is None else outside(activation(hidden_inputs))
        if checks.close(got, candidate):
            return (f"your output is the network's with {name} in place of GELU, on these numbers: the contract's nonlinearity is GELU "
                    "in its exact form, nn.GELU() (F.gelu with approximate='none').")
    return ""


def activation_placed_after_hint(got: torch.Tensor, after: torch.Tensor) -> str:
    """The student's output is GELU applied after the second layer (``after``, computed so)."""
    if checks.close(got, after):
        return ("your output is GELU applied after the second layer: the nonlinearity goes between the layers, "
                "on the hidden_dim-wide features, and the second layer's output is returned as it is.")
    return ""


def biases_hint(got: torch.Tensor, inputs: torch.Tensor, first: torch.Tensor, second: torch.Tensor) -> str:
    """With identity weights: the student's output is what the network gives with a bias left
    out, or with the inputs added back (a residual connection inside the module)."""
    candidates = {
        "the first layer's bias left out": F.gelu(inputs) + second,
        "the second layer's bias left out": F.gelu(inputs + first),
        "the inputs added to its output (a residual connection, which belongs to the block around this module)":
            F.gelu(inputs + first) + second + inputs,
    }
    for said, candidate in candidates.items():
        if checks.close(got, candidate):
            return f"your output is the network's with {said}: call each layer (self.expand(...), self.project(...)), which adds its bias, and return its output alone."
    return ""


def moved_positions_hint(moved: torch.Tensor, batch: int, position: int) -> str:
    """Which outputs moved when only ``inputs[batch, position]`` changed (``moved``: (batch, seq) bools)."""
    same_sequence = moved[batch].clone()
    same_sequence[position] = False
    other_sequences = torch.cat([moved[:batch], moved[batch + 1:]])
    if bool(other_sequences.any()):
        return ("an output in another sequence of the batch moved too: a reshape or transpose mixed the batch "
                "and position axes; work on the last axis only (nn.Linear does) and keep (batch, seq) as they are.")
    if bool(same_sequence.any()):
        return ("other positions of the same sequence moved: something in your forward runs over the sequence axis "
                "(a mean, a sum, a softmax or a norm over dim=1, a layer applied to the transposed inputs).")
    return ""


def widened_by_four_hint(shape: tuple, model_dim: int, hidden_dim: int) -> str:
    if shape == (4 * model_dim, model_dim) and hidden_dim != 4 * model_dim:
        return (f"your hidden layer is 4 * model_dim = {4 * model_dim} wide: the usual choice, but the width "
                "is the hidden_dim argument, so the caller decides it.")
    return ""


def dropout_in_evaluation_hint(eval_output: torch.Tensor, plain_output: torch.Tensor, probability: float) -> str:
    """In evaluation mode the student's output is the plain one with entries zeroed and the
    others scaled by 1 / (1 - p): dropout still on."""
    if eval_output.shape != plain_output.shape:
        return ""
    dropped = (eval_output == 0) & (plain_output != 0)
    kept = ~dropped
    scaled = plain_output[kept] / (1 - probability)
    if bool(dropped.any()) and checks.close(eval_output[kept], scaled):
        return ("in evaluation mode your dropout still drops (and scales the rest by 1 / (1 - p)): F.dropout's "
                "training= defaults to True; use nn.Dropout, or pass training=self.training.")
    return ""

