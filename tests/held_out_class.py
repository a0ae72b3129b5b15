"""A held-out class: files in hands the catalogue does not use, graded as a class is.

Data only (tests/test_held_out_class.py grades it). Three hands, each a whole file of its own
(not edits to the solution): einsum everywhere; a head by F.scaled_dot_product_attention with the
weights by hand; an AI assistant's style (docstrings, torch.where for the mask, F.softmax, a
stored scale). Each FILE is a hand with some planted edits: none (a valid rewrite), one known
mistake, two, a layout the lesson does not teach beside a mistake, parameters shared across
heads, state kept between calls, partial work. A file with planted mistakes is graded beside
the same hand with each mistake taken out (``fixed``), so what a diagnosis explains can be held
against the checks that pass once its mistake is fixed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_COMMON = '''
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
import torch.nn.functional as F


@dataclass
class HeadResult:
    output: torch.Tensor
    weights: torch.Tensor


@dataclass
class MultiHeadResult:
    output: torch.Tensor
    weights: torch.Tensor
'''

EINSUM = _COMMON + '''

def head_dimension(model_dim: int, num_heads: int) -> int:
    if num_heads < 1 or model_dim % num_heads:
        raise ValueError(f"cannot split model_dim={model_dim} into num_heads={num_heads} equal heads")
    return model_dim // num_heads


def causal_mask(seq_len: int, device=None) -> torch.Tensor:
    idx = torch.arange(seq_len, device=device)
    return idx[None, :] <= idx[:, None]  # [q, k]: k <= q


class AttentionHead(nn.Module):
    def __init__(self, model_dim: int, head_dim: int) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.query = nn.Linear(model_dim, head_dim, bias=False)
        self.key = nn.Linear(model_dim, head_dim, bias=False)
        self.value = nn.Linear(model_dim, head_dim, bias=False)

    def forward(self, inputs, allowed_mask):
        q = torch.einsum("bsm,dm->bsd", inputs, self.query.weight)
        k = torch.einsum("bsm,dm->bsd", inputs, self.key.weight)
        v = torch.einsum("bsm,dm->bsd", inputs, self.value.weight)
        logits = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(self.head_dim)
        logits = logits.masked_fill(~allowed_mask, float("-inf"))
        attn = logits.softmax(dim=-1)
        out = torch.einsum("bqk,bkd->bqd", attn, v)
        return HeadResult(output=out, weights=attn)


def concatenate_heads(head_results):
    return torch.cat([r.output for r in head_results], dim=-1)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, model_dim: int, num_heads: int) -> None:
        super().__init__()
        self.head_dim = head_dimension(model_dim, num_heads)
        self.model_dim, self.num_heads = model_dim, num_heads
        self.heads = nn.ModuleList([AttentionHead(model_dim, self.head_dim) for _ in range(num_heads)])
        self.output_projection = nn.Linear(model_dim, model_dim)

    def forward(self, inputs, allowed_mask=None):
        if allowed_mask is None:
            allowed_mask = causal_mask(inputs.shape[1], inputs.device)
        results = [h(inputs, allowed_mask) for h in self.heads]
        joined = concatenate_heads(results)
        out = torch.einsum("bsm,om->bso", joined, self.output_projection.weight) + self.output_projection.bias
        return MultiHeadResult(output=out, weights=torch.stack([r.weights for r in results], dim=1))
'''

SDPA = _COMMON + '''

def head_dimension(model_dim: int, num_heads: int) -> int:
    if num_heads <= 0:
        raise ValueError(f"num_heads={num_heads} must be positive (model_dim={model_dim})")
    if model_dim % num_heads != 0:
        raise ValueError(f"model_dim={model_dim} is not a multiple of num_heads={num_heads}")
    return model_dim // num_heads


def causal_mask(seq_len: int, device=None) -> torch.Tensor:
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


class AttentionHead(nn.Module):
    def __init__(self, model_dim: int, head_dim: int) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.query = nn.Linear(model_dim, head_dim, bias=False)
        self.key = nn.Linear(model_dim, head_dim, bias=False)
        self.value = nn.Linear(model_dim, head_dim, bias=False)

    def forward(self, inputs, allowed_mask):
        q, k, v = self.query(inputs), self.key(inputs), self.value(inputs)
        # the weights by hand (SDPA does not return them), the output by SDPA
        scores = (q @ k.transpose(-2, -1)) * self.head_dim ** -0.5
        weights = torch.softmax(scores.masked_fill(allowed_mask.logical_not(), float("-inf")), dim=-1)
        output = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed_mask)
        return HeadResult(output, weights)


def concatenate_heads(head_results):
    return torch.cat(tuple(result.output for result in head_results), dim=2)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, model_dim: int, num_heads: int) -> None:
        super().__init__()
        self.head_dim = head_dimension(model_dim, num_heads)
        self.model_dim = model_dim
        self.num_heads = num_heads
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(AttentionHead(model_dim, self.head_dim))
        self.output_projection = nn.Linear(model_dim, model_dim)

    def forward(self, inputs, allowed_mask=None):
        mask = causal_mask(inputs.size(1), device=inputs.device) if allowed_mask is None else allowed_mask
        results = [head(inputs, mask) for head in self.heads]
        return MultiHeadResult(
            output=self.output_projection(concatenate_heads(results)),
            weights=torch.stack([result.weights for result in results], dim=1),
        )
'''

ASSISTANT = _COMMON + '''

def head_dimension(model_dim: int, num_heads: int) -> int:
    """Compute the per-head dimension.

    Args:
        model_dim: The model's hidden size.
        num_heads: The number of attention heads.

    Returns:
        The dimension of each head.

    Raises:
        ValueError: If model_dim is not divisible by num_heads.
    """
    if num_heads < 1:
        raise ValueError(f"num_heads must be >= 1, got num_heads={num_heads} (model_dim={model_dim})")
    if model_dim % num_heads != 0:
        raise ValueError(f"model_dim ({model_dim}) must be divisible by num_heads ({num_heads})")
    return model_dim // num_heads


def causal_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Create a causal (lower-triangular) boolean mask."""
    mask = torch.tril(torch.ones((seq_len, seq_len), device=device))
    return mask.bool()


class AttentionHead(nn.Module):
    """A single attention head."""

    def __init__(self, model_dim: int, head_dim: int) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.scale = 1.0 / math.sqrt(head_dim)
        self.query = nn.Linear(model_dim, head_dim, bias=False)
        self.key = nn.Linear(model_dim, head_dim, bias=False)
        self.value = nn.Linear(model_dim, head_dim, bias=False)

    def forward(self, inputs: torch.Tensor, allowed_mask: torch.Tensor) -> HeadResult:
        """Compute scaled dot-product attention for this head."""
        # Step 1: project the inputs
        query = self.query(inputs)
        key = self.key(inputs)
        value = self.value(inputs)
        # Step 2: compute the attention scores
        attention_scores = torch.matmul(query, key.transpose(-2, -1)) * self.scale
        # Step 3: apply the mask
        attention_scores = torch.where(allowed_mask, attention_scores, torch.full_like(attention_scores, float("-inf")))
        # Step 4: softmax
        attention_weights = F.softmax(attention_scores, dim=-1)
        # Step 5: weighted sum of the values
        output = torch.matmul(attention_weights, value)
        return HeadResult(output=output, weights=attention_weights)


def concatenate_heads(head_results: list[HeadResult]) -> torch.Tensor:
    """Concatenate the outputs of all heads along the feature dimension."""
    return torch.cat([result.output for result in head_results], dim=-1)


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention."""

    def __init__(self, model_dim: int, num_heads: int) -> None:
        super().__init__()
        self.head_dim = head_dimension(model_dim, num_heads)
        self.model_dim = model_dim
        self.num_heads = num_heads
        self.heads = nn.ModuleList([AttentionHead(model_dim, self.head_dim) for _ in range(num_heads)])
        self.output_projection = nn.Linear(model_dim, model_dim)

    def forward(self, inputs: torch.Tensor, allowed_mask: torch.Tensor | None = None) -> MultiHeadResult:
        """Run all heads and combine them."""
        if allowed_mask is None:
            allowed_mask = causal_mask(inputs.shape[1], device=inputs.device)
        head_results = [head(inputs, allowed_mask) for head in self.heads]
        concatenated = concatenate_heads(head_results)
        output = self.output_projection(concatenated)
        weights = torch.stack([result.weights for result in head_results], dim=1)
        return MultiHeadResult(output=output, weights=weights)
'''

HANDS = {"einsum": EINSUM, "sdpa": SDPA, "assistant": ASSISTANT}


@dataclass(frozen=True)
class Plant:
    """One edit planted in a hand: ``old`` (exactly once in the file) becomes ``new``; ``mistake``
    the id the diagnosis must name ("" for none it could: a layout, sharing, partial work)."""

    old: str
    new: str
    mistake: str = ""


PLANTS: dict[str, Plant] = {
    # einsum
    "einsum_scaled_by_head_dim": Plant("/ math.sqrt(self.head_dim)", "/ self.head_dim", "scaled_by_head_dim"),
    "einsum_no_scale": Plant("logits = torch.einsum(\"bqd,bkd->bqk\", q, k) / math.sqrt(self.head_dim)",
                             "logits = torch.einsum(\"bqd,bkd->bqk\", q, k)", "missing_scale"),
    "einsum_heads_reversed": Plant("torch.cat([r.output for r in head_results], dim=-1)",
                                   "torch.cat([r.output for r in reversed(head_results)], dim=-1)", "heads_in_reverse"),
    "einsum_mask_zero": Plant("logits.masked_fill(~allowed_mask, float(\"-inf\"))", "logits.masked_fill(~allowed_mask, 0.0)",
                              "mask_filled_with_zero"),
    "einsum_output_without_bias": Plant(
        "self.output_projection = nn.Linear(model_dim, model_dim)\n",
        "self.output_projection = nn.Linear(model_dim, model_dim, bias=False)\n",
    ),
    "einsum_bias_used": Plant(
        "out = torch.einsum(\"bsm,om->bso\", joined, self.output_projection.weight) + self.output_projection.bias",
        "out = self.output_projection(joined)",
    ),
    "einsum_values_mixed_with_queries": Plant("out = torch.einsum(\"bqk,bkd->bqd\", attn, v)",
                                              "out = torch.einsum(\"bqk,bkd->bqd\", attn, q)", "values_not_weighted"),
    # sdpa
    "sdpa_flipped_for_sdpa": Plant("attn_mask=allowed_mask)", "attn_mask=~allowed_mask)", "mask_polarity_flipped"),
    "sdpa_flipped_by_hand": Plant("scores.masked_fill(allowed_mask.logical_not(), float(\"-inf\"))",
                                  "scores.masked_fill(allowed_mask, float(\"-inf\"))", "mask_polarity_flipped"),
    "sdpa_assert": Plant(
        "    if model_dim % num_heads != 0:\n"
        "        raise ValueError(f\"model_dim={model_dim} is not a multiple of num_heads={num_heads}\")\n",
        "    assert model_dim % num_heads == 0, f\"model_dim={model_dim} is not a multiple of num_heads={num_heads}\"\n",
        "assert_instead_of_raise",
    ),
    "sdpa_keys_smoothed": Plant(
        "q, k, v = self.query(inputs), self.key(inputs), self.value(inputs)\n",
        "q, k, v = self.query(inputs), self.key(inputs), self.value(inputs)\n"
        "        previous = getattr(AttentionHead, 'previous_keys', None)  # smooth with the last call's keys\n"
        "        if previous is not None and previous.shape == k.shape:\n"
        "            k = 0.5 * (k + previous)\n"
        "        AttentionHead.previous_keys = k.detach()\n",
        "nondeterministic",
    ),
    # assistant
    "assistant_no_diagonal": Plant("torch.tril(torch.ones((seq_len, seq_len), device=device))",
                                   "torch.tril(torch.ones((seq_len, seq_len), device=device), diagonal=-1)", "mask_without_diagonal"),
    "assistant_softmax_over_batch": Plant("F.softmax(attention_scores, dim=-1)", "F.softmax(attention_scores, dim=0)",
                                          "softmax_over_batch"),
    "assistant_key_and_value_shared": Plant(
        "self.heads = nn.ModuleList([AttentionHead(model_dim, self.head_dim) for _ in range(num_heads)])\n",
        "self.heads = nn.ModuleList([AttentionHead(model_dim, self.head_dim) for _ in range(num_heads)])\n"
        "        for head in self.heads[1:]:  # multi-query style: one key and one value projection\n"
        "            head.key, head.value = self.heads[0].key, self.heads[0].value\n",
    ),
    "assistant_output_remembered": Plant(
        "        output = self.output_projection(concatenated)\n",
        "        output = self.output_projection(concatenated)\n"
        "        last = self._last_output.get(tuple(inputs.shape))  # remembered by shape\n"
        "        if last is not None:\n"
        "            output = 0.5 * (output + last)\n"
        "        self._last_output[tuple(inputs.shape)] = output.detach()\n",
        "nondeterministic",
    ),
    "assistant_output_remembered_store": Plant('    """Multi-head self-attention."""\n',
                                               '    """Multi-head self-attention."""\n\n    _last_output: dict = {}\n'),
    "assistant_partial_concatenation": Plant(
        "    return torch.cat([result.output for result in head_results], dim=-1)\n",
        "    # TODO: not done yet\n    raise NotImplementedError\n",
    ),
}


@dataclass(frozen=True)
class File:
    name: str
    hand: str
    plants: tuple[str, ...] = ()

    @property
    def mistakes(self) -> set[str]:
        return {PLANTS[p].mistake for p in self.plants if PLANTS[p].mistake}

    def source(self) -> str:
        text = HANDS[self.hand]
        for plant in self.plants:
            edit = PLANTS[plant]
            if text.count(edit.old) != 1:
                raise ValueError(f"{self.name}: {plant} does not apply once")
            text = text.replace(edit.old, edit.new)
        return text

    def write(self, folder: Path) -> Path:
        path = folder / f"{self.name}.py"
        path.write_text(self.source(), encoding="utf-8")
        return path


FILES = (
    # valid rewrites
    File("einsum_valid", "einsum"),
    File("sdpa_valid", "sdpa"),
    File("assistant_valid", "assistant"),
    File("einsum_projection_by_its_call", "einsum", ("einsum_bias_used",)),
    # one known mistake
    File("einsum_scaled_by_head_dim", "einsum", ("einsum_scaled_by_head_dim",)),
    File("sdpa_mask_flipped_for_sdpa", "sdpa", ("sdpa_flipped_for_sdpa",)),
    File("sdpa_mask_flipped_throughout", "sdpa", ("sdpa_flipped_by_hand", "sdpa_flipped_for_sdpa")),
    File("assistant_without_the_diagonal", "assistant", ("assistant_no_diagonal",)),
    File("assistant_softmax_over_the_batch", "assistant", ("assistant_softmax_over_batch",)),
    File("einsum_heads_in_reverse", "einsum", ("einsum_heads_reversed",)),
    File("sdpa_assert", "sdpa", ("sdpa_assert",)),
    # two
    File("einsum_no_scale_and_heads_reversed", "einsum", ("einsum_no_scale", "einsum_heads_reversed")),
    File("sdpa_flipped_and_assert", "sdpa", ("sdpa_flipped_for_sdpa", "sdpa_assert")),
    File("einsum_queries_mixed_and_mask_zero", "einsum", ("einsum_values_mixed_with_queries", "einsum_mask_zero")),
    # a layout the lesson does not teach beside a mistake, and its twin with the bias
    File("einsum_mask_zero_without_bias", "einsum", ("einsum_mask_zero", "einsum_bias_used", "einsum_output_without_bias")),
    File("einsum_mask_zero_with_bias", "einsum", ("einsum_mask_zero", "einsum_bias_used")),
    # parameters shared across heads
    File("assistant_key_and_value_shared", "assistant", ("assistant_key_and_value_shared",)),
    # state kept between calls
    File("sdpa_keys_smoothed", "sdpa", ("sdpa_keys_smoothed",)),
    File("assistant_output_remembered_by_shape", "assistant", ("assistant_output_remembered_store", "assistant_output_remembered")),
    # partial work
    File("assistant_partial", "assistant", ("assistant_partial_concatenation",)),
)
STATEFUL = ("sdpa_keys_smoothed", "assistant_output_remembered_by_shape")
# Files whose weights hold NaN where the mask hides and no number there (a row with nothing to attend
# to, a softmax over the batch). The mask flipped throughout has NaN rows too, but real weight on
# hidden positions beside them, which its checks rightly call weight.
NOT_NUMBERS = ("assistant_without_the_diagonal", "assistant_softmax_over_the_batch")
MISSING_BIAS, BIAS_TWIN = "einsum_mask_zero_without_bias", "einsum_mask_zero_with_bias"
SHARED = "assistant_key_and_value_shared"


def function_of(mistake: str) -> str:
    from grader.exercises.multi_head_attention.hidden import mistakes

    return mistakes.BY_ID[mistake].function if mistake in mistakes.BY_ID else ""


def fixed(file: File, function: str) -> File:
    """``file`` with its planted mistakes in ``function`` taken out (graded beside it): what the
    diagnosis's counterfactual, which gives that function the reference's behaviour, asks about."""
    kept = tuple(p for p in file.plants if function_of(PLANTS[p].mistake) != function)
    return File(f"{file.name}__fixed_{function.replace('.', '_')}", file.hand, kept)


def every_file() -> list[File]:
    """The class and, for each file with known mistakes, the same file with each wrong function fixed."""
    files = list(FILES)
    for file in FILES:
        for function in sorted({function_of(m) for m in file.mistakes} - {""}):
            files.append(fixed(file, function))
    return files
