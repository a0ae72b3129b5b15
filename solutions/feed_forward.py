"""The position-wise feed-forward network: what each position does with what attention gathered.

Attention moves information between positions: after it, each position holds a mix of what
the others had. It cannot do much with that mix on its own, though: apart from the softmax,
it is a weighted sum of linear projections. The feed-forward network is where each position
computes on what it gathered: it widens the position's features into a larger hidden space,
bends them through a nonlinearity, and projects them back to the model's width, so that the
next layer receives the same shape it would have received from attention.

Conventions used throughout (the grader checks every one of them):

* ``inputs`` has shape ``(batch, seq, model_dim)``; the output has the same shape.
* Each position is computed on its own: the output at position ``t`` depends on the
  inputs at position ``t`` only, with the same weights at every position.
* The hidden layer is ``hidden_dim`` wide (4 * model_dim in GPT-2; any width here).
* The nonlinearity is GELU in its exact form (``nn.GELU()``, ``approximate='none'``).
* Dropout (probability ``dropout``, 0 by default) is applied to the output, and only in
  training mode: ``module.eval()`` makes the module deterministic.
* Every tensor returned keeps the dtype and device of ``inputs``.
"""

from __future__ import annotations

import torch
from torch import nn


class FeedForward(nn.Module):
    """Two linear layers with a GELU between, applied at every position on its own."""

    def __init__(self, model_dim: int, hidden_dim: int, dropout: float = 0.0) -> None:
        """Create the two projections, the nonlinearity and the dropout.

        The grader loads its weights into them by name, so this layout is the contract:

        * ``expand``: ``nn.Linear(model_dim, hidden_dim)`` (a weight of shape
          ``(hidden_dim, model_dim)`` and a bias ``(hidden_dim,)``);
        * ``project``: ``nn.Linear(hidden_dim, model_dim)`` (a weight of shape
          ``(model_dim, hidden_dim)`` and a bias ``(model_dim,)``);
        * ``activation``: ``nn.GELU()``; ``dropout``: ``nn.Dropout(dropout)``;
        * ``model_dim``, ``hidden_dim``: kept as attributes.
        """
        super().__init__()
        # TODO: widen each position's model_dim features into hidden_dim of them (a wider space
        #       in which features can be combined and switched off), then bring them back to
        #       model_dim, so that the next layer gets the width it expects. Both layers have a
        #       bias: without one, a feature can never be switched on or off away from zero.
        #       Keep the nonlinearity and the dropout as modules too.
        ### BEGIN SOLUTION (standard)
        self.model_dim = model_dim
        self.hidden_dim = hidden_dim
        self.expand = nn.Linear(model_dim, hidden_dim)
        self.activation = nn.GELU()
        self.project = nn.Linear(hidden_dim, model_dim)
        self.dropout = nn.Dropout(dropout)
        ### END SOLUTION (standard)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """Transform every position's features on its own.

        Args:
            inputs: ``(batch, seq, model_dim)``.

        Returns:
            ``(batch, seq, model_dim)``, in the dtype and on the device of ``inputs``: position
            ``t`` of the output computed from position ``t`` of the inputs alone.
        """
        # TODO: widen, bend, narrow: the nonlinearity between the two layers is what makes this
        #       more than one linear map (two linear layers in a row are one linear layer).
        #       Work on the last axis only, so that every position is transformed on its own,
        #       with the same weights. Drop out on the output (only in training: nn.Dropout
        #       knows the mode).
        # HINT: hidden = self.activation(self.expand(inputs)); then self.project(hidden), then
        #       self.dropout of that. nn.Linear already works on the last axis of any shape.
        ### BEGIN SOLUTION
        hidden = self.expand(inputs)  # (batch, seq, hidden_dim)
        hidden = self.activation(hidden)  # (batch, seq, hidden_dim)
        output = self.project(hidden)  # (batch, seq, model_dim)
        return self.dropout(output)  # (batch, seq, model_dim)
        ### END SOLUTION
