# This file is generated from the reference solution by `python -m grader stubs`.
# The lesson is in LESSON.md, beside this file. Fill in every function that raises
# NotImplementedError, then run `pytest grader`.
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
* Every tensor returned keeps the dtype and device of ``inputs``: float32 inputs give
  float32 outputs and weights.
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
    # TODO: return the width of one head. A width that does not split exactly into the
    #       heads (or fewer than one head) is a configuration mistake: raise ValueError, naming
    #       both numbers, so that it is caught when the model is built.
    raise NotImplementedError("head_dimension is not written yet")


def causal_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Return the causal mask: a bool tensor of shape ``(seq_len, seq_len)``.

    ``mask[query, key]`` is ``True`` when position ``query`` may attend to position
    ``key``, that is when ``key <= query``: the lower triangle, diagonal included.
    """
    # TODO: a position may attend to itself and to every earlier position, never to a later
    #       one: a model that predicts the next token must not see it. Return bools.
    raise NotImplementedError("causal_mask is not written yet")


class AttentionHead(nn.Module):
    """One head of scaled dot-product self-attention."""

    def __init__(self, model_dim: int, head_dim: int) -> None:
        """Create the head's own projections of the input.

        The grader loads its weights into them by name, so this layout is the contract:

        * ``query``, ``key``, ``value``: each ``nn.Linear(model_dim, head_dim, bias=False)``
          (a weight of shape ``(head_dim, model_dim)`` and no bias);
        * ``head_dim``: the width of one head, kept as an attribute.
        """
        super().__init__()
        # TODO: give the head its own query, key and value projections: each reads all
        #       model_dim input features and produces head_dim of them. A head is one way of
        #       retrieving information; its own projections are what make it a different way.
        raise NotImplementedError("AttentionHead.__init__ is not written yet")

    def forward(self, inputs: torch.Tensor, allowed_mask: torch.Tensor) -> HeadResult:
        """Attend over ``inputs`` where ``allowed_mask`` allows it.

        Args:
            inputs: ``(batch, seq, model_dim)``.
            allowed_mask: bool, broadcastable to ``(batch, seq, seq)``; ``True`` = may
                attend. Every row allows at least one position.

        Returns:
            ``HeadResult`` with ``output`` ``(batch, seq, head_dim)`` and ``weights``
            ``(batch, seq, seq)``, where masked positions have weight exactly zero and
            every row sums to one; both in the dtype and on the device of ``inputs``.
        """
        # TODO: score how well every query matches every key, scaled by 1/sqrt(head_dim) (or
        #       the scores grow with the head's width and the softmax saturates); make the
        #       positions the mask forbids impossible *before* turning each query's scores into
        #       probabilities over the keys, so that they get weight exactly zero while every
        #       row still sums to one; the output mixes the values with those weights.
        raise NotImplementedError("AttentionHead.forward is not written yet")


def concatenate_heads(head_results: list[HeadResult]) -> torch.Tensor:
    """Join the heads' outputs along the feature axis, head 0 first.

    Each ``result.output`` is ``(batch, seq, head_dim)``; the result is
    ``(batch, seq, num_heads * head_dim)``.
    """
    # TODO: put the heads' outputs side by side on the feature axis, each head's block
    #       whole and head 0's first: the output projection learns which features came from
    #       which head, so the order must be the same on every call.
    raise NotImplementedError("concatenate_heads is not written yet")


class MultiHeadSelfAttention(nn.Module):
    """Several independent attention heads, concatenated and projected back."""

    def __init__(self, model_dim: int, num_heads: int) -> None:
        """Check the configuration, then create the heads and the output projection.

        Raises ``ValueError`` here, at construction, when ``model_dim`` does not divide
        exactly by ``num_heads``. The grader loads its weights by name, so this layout is
        the contract:

        * ``heads``: an ``nn.ModuleList`` of ``num_heads`` ``AttentionHead(model_dim, head_dim)``,
          head ``h`` at index ``h``;
        * ``output_projection``: ``nn.Linear(model_dim, model_dim)`` (weight
          ``(model_dim, model_dim)`` and a bias ``(model_dim,)``);
        * ``head_dim``, ``model_dim``, ``num_heads``: kept as attributes.
        """
        super().__init__()
        # TODO: fail now, not halfway through training, when the width does not split into
        #       the heads. Then create the heads, each with projections of its own, freshly
        #       initialised (heads that share or copy weights compute the same attention: one
        #       way of retrieving instead of several), and the one projection that mixes the
        #       concatenated heads back into model_dim features.
        raise NotImplementedError("MultiHeadSelfAttention.__init__ is not written yet")

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
            ``weights`` ``(batch, heads, seq, seq)``, head ``h`` at index ``h``; both in
            the dtype and on the device of ``inputs``.
        """
        # TODO: without a mask, attend causally; run every head on the same inputs and the
        #       same mask; join their outputs in head order and mix them with the output
        #       projection, once; return every head's attention matrix, head h at index h of
        #       axis 1.
        raise NotImplementedError("MultiHeadSelfAttention.forward is not written yet")
