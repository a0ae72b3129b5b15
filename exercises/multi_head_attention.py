# This file is generated from the reference solution by `python -m grader stubs`.
# Fill in every function that raises NotImplementedError, then run `pytest grader`.
"""Multi-head self-attention: combining several attention heads.

One attention head gives the layer one way to retrieve information. Multi-head attention
gives it several: each head has its own query, key and value projections, looks at the
whole input, and produces a few features of its own. The heads' outputs are concatenated
back to the model width and mixed by one output projection.

Conventions used throughout (the grader checks every one of them):

* ``inputs`` has shape ``(batch, seq, model_dim)``.
* ``head_dim = model_dim // num_heads``; ``model_dim`` must divide exactly by ``num_heads``.
* Masks are boolean and say where attention is *allowed*: ``True`` = may attend,
  ``False`` = must get weight exactly zero. A mask of shape ``(seq, seq)`` or
  ``(batch, seq, seq)`` is indexed ``[query position, key position]``.
* Attention weights are indexed ``[..., query position, key position]``; each row
  (one query position) is a probability distribution over key positions.
* Heads are concatenated in order along the feature axis: features ``0:head_dim`` come
  from head 0, the next ``head_dim`` from head 1, and so on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class HeadResult:
    """What one attention head returns."""

    output: torch.Tensor  # (batch, seq, head_dim)
    weights: torch.Tensor  # (batch, seq, seq): [query position, key position]


@dataclass
class MultiHeadResult:
    """What multi-head self-attention returns."""

    output: torch.Tensor  # (batch, seq, model_dim)
    weights: torch.Tensor  # (batch, heads, seq, seq): one attention matrix per head


def head_dimension(model_dim: int, num_heads: int) -> int:
    """Return the number of features each head gets: ``model_dim / num_heads``.

    Raises ``ValueError`` when ``num_heads < 1`` or when ``model_dim`` does not divide
    exactly by ``num_heads``. The message names both numbers, so that a wrong
    configuration is caught when the model is built, not halfway through training.

    >>> head_dimension(128, 4)
    32
    """
    # TODO: raise ValueError (naming model_dim and num_heads) when num_heads < 1 or
    #       model_dim % num_heads != 0; otherwise return the width of one head.
    raise NotImplementedError("head_dimension is not written yet")


def causal_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Return the causal mask: a bool tensor of shape ``(seq_len, seq_len)``.

    ``mask[query, key]`` is ``True`` when position ``query`` may attend to position
    ``key``, that is when ``key <= query``: the lower triangle, diagonal included.
    """
    # TODO: build a (seq_len, seq_len) bool tensor, True on and below the diagonal.
    #       torch.ones(..., dtype=torch.bool) and torch.tril are enough.
    raise NotImplementedError("causal_mask is not written yet")


class AttentionHead(nn.Module):
    """One head of scaled dot-product self-attention."""

    def __init__(self, model_dim: int, head_dim: int) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.query = nn.Linear(model_dim, head_dim, bias=False)
        self.key = nn.Linear(model_dim, head_dim, bias=False)
        self.value = nn.Linear(model_dim, head_dim, bias=False)

    def forward(self, inputs: torch.Tensor, allowed_mask: torch.Tensor) -> HeadResult:
        """Attend over ``inputs`` where ``allowed_mask`` allows it.

        Args:
            inputs: ``(batch, seq, model_dim)``.
            allowed_mask: bool, broadcastable to ``(batch, seq, seq)``; ``True`` = may
                attend. Every row allows at least one position.

        Returns:
            ``HeadResult`` with ``output`` ``(batch, seq, head_dim)`` and ``weights``
            ``(batch, seq, seq)``, where masked positions have weight exactly zero and
            every row sums to one.
        """
        # TODO: project inputs to queries, keys and values; scores = queries @ keys^T
        #       scaled by 1/sqrt(head_dim); give disallowed positions -inf *before* the
        #       softmax over key positions (the last axis); output = weights @ values.
        raise NotImplementedError("AttentionHead.forward is not written yet")


def concatenate_heads(head_results: list[HeadResult]) -> torch.Tensor:
    """Join the heads' outputs along the feature axis, head 0 first.

    Each ``result.output`` is ``(batch, seq, head_dim)``; the result is
    ``(batch, seq, num_heads * head_dim)``.
    """
    # TODO: torch.cat the heads' outputs along the last axis, in order.
    raise NotImplementedError("concatenate_heads is not written yet")


class MultiHeadSelfAttention(nn.Module):
    """Several independent attention heads, concatenated and projected back."""

    def __init__(self, model_dim: int, num_heads: int) -> None:
        super().__init__()
        # Fails here, at construction, when the width does not divide by the head count.
        self.head_dim = head_dimension(model_dim, num_heads)
        self.model_dim = model_dim
        self.num_heads = num_heads
        self.heads = nn.ModuleList(
            AttentionHead(model_dim, self.head_dim) for _ in range(num_heads)
        )
        self.output_projection = nn.Linear(model_dim, model_dim)

    def forward(
        self, inputs: torch.Tensor, allowed_mask: torch.Tensor | None = None
    ) -> MultiHeadResult:
        """Run every head on the same inputs and mask, then combine them.

        Args:
            inputs: ``(batch, seq, model_dim)``.
            allowed_mask: bool, broadcastable to ``(batch, seq, seq)``, ``True`` = may
                attend; ``None`` means ``causal_mask(seq)``.

        Returns:
            ``MultiHeadResult`` with ``output`` ``(batch, seq, model_dim)`` and
            ``weights`` ``(batch, heads, seq, seq)``, head ``h`` at index ``h``.
        """
        # TODO: default to the causal mask; run every head on the same inputs and mask;
        #       concatenate_heads, then the output projection; stack the heads' weights
        #       on a new axis 1.
        raise NotImplementedError("MultiHeadSelfAttention.forward is not written yet")
