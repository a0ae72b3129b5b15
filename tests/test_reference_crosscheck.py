"""The reference solution is right: it agrees with PyTorch's own attention, weight for weight.

The solution is loaded from its file path, so these tests check exactly the file that the
stubs are generated from, whatever else is importable.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

SOLUTION_FILE = Path(__file__).resolve().parent.parent / "solutions" / "multi_head_attention.py"
TOLERANCE = dict(rtol=1e-10, atol=1e-12)  # float64 throughout


def load_solution():
    name = "crosscheck_reference_multi_head_attention"
    spec = importlib.util.spec_from_file_location(name, SOLUTION_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


reference = load_solution()

# (batch, seq, model_dim, num_heads)
CONFIGS = [
    pytest.param(1, 4, 8, 2, id="lesson-example-b1-s4-d8-h2"),
    pytest.param(1, 5, 12, 3, id="b1-s5-d12-h3"),
    pytest.param(2, 3, 6, 1, id="one-head-b2-s3-d6-h1"),
    pytest.param(3, 7, 16, 4, id="batch3-s7-d16-h4"),
    pytest.param(2, 1, 8, 2, id="seq1-b2-d8-h2"),
    pytest.param(2, 6, 8, 8, id="width1-heads-b2-s6-d8-h8"),
]


def build(model_dim: int, num_heads: int, seed: int = 0):
    torch.manual_seed(seed)
    return reference.MultiHeadSelfAttention(model_dim, num_heads).double().eval()


def torch_multihead_attention_like(module) -> torch.nn.MultiheadAttention:
    """A torch.nn.MultiheadAttention holding exactly the weights of our module."""
    d, heads = module.model_dim, module.num_heads
    theirs = torch.nn.MultiheadAttention(d, heads, bias=True, batch_first=True).double().eval()
    with torch.no_grad():
        for block, name in enumerate(("query", "key", "value")):
            # rows [block*d, (block+1)*d): that projection of every head, head h at h*hd
            stacked = torch.cat([getattr(head, name).weight for head in module.heads], dim=0)
            theirs.in_proj_weight[block * d : (block + 1) * d] = stacked
        theirs.in_proj_bias.zero_()  # our projections have no bias
        theirs.out_proj.weight.copy_(module.output_projection.weight)
        theirs.out_proj.bias.copy_(module.output_projection.bias)
    return theirs


def random_allowed_mask(batch: int, seq: int, seed: int = 1) -> torch.Tensor:
    """A random (batch, seq, seq) boolean mask in which every query may attend somewhere."""
    generator = torch.Generator().manual_seed(seed)
    mask = torch.rand(batch, seq, seq, generator=generator) < 0.5
    mask[:, torch.arange(seq), torch.randint(seq, (seq,), generator=generator)] = True
    return mask


def assert_close(ours: torch.Tensor, theirs: torch.Tensor, what: str) -> None:
    assert ours.shape == theirs.shape, f"{what}: shape {tuple(ours.shape)} != torch's {tuple(theirs.shape)}"
    difference = (ours - theirs).abs().max().item() if ours.numel() else 0.0
    assert torch.allclose(ours, theirs, **TOLERANCE), (
        f"{what}: differs from torch by up to {difference:.3g}"
    )


@pytest.mark.parametrize("batch, seq, model_dim, num_heads", CONFIGS)
def test_module_matches_torch_multihead_attention_with_the_causal_mask(batch, seq, model_dim, num_heads):
    module = build(model_dim, num_heads)
    theirs = torch_multihead_attention_like(module)
    inputs = torch.randn(batch, seq, model_dim, dtype=torch.float64)

    ours = module(inputs)  # default mask: causal
    # torch's convention: True = may NOT attend; built from torch alone, not from causal_mask
    not_allowed = torch.ones(seq, seq, dtype=torch.bool).triu(diagonal=1)
    their_output, their_weights = theirs(
        inputs, inputs, inputs, attn_mask=not_allowed, need_weights=True, average_attn_weights=False
    )
    assert_close(ours.output, their_output, "output")
    assert_close(ours.weights, their_weights, "per-head attention weights (batch, heads, q, k)")


@pytest.mark.parametrize("batch, seq, model_dim, num_heads", CONFIGS)
def test_module_matches_torch_multihead_attention_with_a_custom_per_example_mask(
    batch, seq, model_dim, num_heads
):
    module = build(model_dim, num_heads, seed=3)
    theirs = torch_multihead_attention_like(module)
    inputs = torch.randn(batch, seq, model_dim, dtype=torch.float64)
    allowed = random_allowed_mask(batch, seq)  # (batch, seq, seq)

    ours = module(inputs, allowed)
    # torch wants a 3-D mask as (batch * heads, q, k), batch-major.
    not_allowed = (~allowed).repeat_interleave(num_heads, dim=0)
    their_output, their_weights = theirs(
        inputs, inputs, inputs, attn_mask=not_allowed, need_weights=True, average_attn_weights=False
    )
    assert_close(ours.output, their_output, "output under a custom mask")
    assert_close(ours.weights, their_weights, "per-head weights under a custom mask")
    assert not ours.weights.masked_select(~allowed.unsqueeze(1)).any(), "a masked position got weight"


@pytest.mark.parametrize("batch, seq, model_dim, num_heads", CONFIGS)
@pytest.mark.parametrize("mask_kind", ["causal", "custom"])
def test_each_head_matches_torch_scaled_dot_product_attention(batch, seq, model_dim, num_heads, mask_kind):
    module = build(model_dim, num_heads, seed=5)
    inputs = torch.randn(batch, seq, model_dim, dtype=torch.float64)
    if mask_kind == "causal":
        allowed, sdpa_mask = reference.causal_mask(seq), dict(is_causal=True)
    else:
        allowed = random_allowed_mask(batch, seq, seed=7)
        sdpa_mask = dict(attn_mask=allowed)  # boolean, True = takes part: our convention
    identity = torch.eye(seq, dtype=torch.float64).expand(batch, seq, seq)

    head_outputs = []
    for index, head in enumerate(module.heads):
        ours = head(inputs, allowed)
        queries, keys, values = head.query(inputs), head.key(inputs), head.value(inputs)
        their_output = F.scaled_dot_product_attention(queries, keys, values, **sdpa_mask)
        # Attending over the identity returns the attention weights themselves.
        their_weights = F.scaled_dot_product_attention(queries, keys, identity, **sdpa_mask)
        assert_close(ours.output, their_output, f"head {index} output ({mask_kind} mask)")
        assert_close(ours.weights, their_weights, f"head {index} weights ({mask_kind} mask)")
        head_outputs.append(their_output)

    combined = module.output_projection(torch.cat(head_outputs, dim=-1))
    assert_close(module(inputs, allowed).output, combined, f"module output from SDPA heads ({mask_kind})")


@pytest.mark.parametrize("seq_len", [1, 2, 4, 9])
def test_causal_mask_is_the_lower_triangle_of_torch_tril(seq_len):
    mask = reference.causal_mask(seq_len)
    expected = torch.tril(torch.ones(seq_len, seq_len)).bool()
    assert mask.dtype == torch.bool, f"causal_mask dtype is {mask.dtype}, not torch.bool"
    assert mask.shape == (seq_len, seq_len), f"causal_mask shape is {tuple(mask.shape)}"
    assert torch.equal(mask, expected), f"causal_mask({seq_len}) differs from torch.tril:\n{mask}"


def test_causal_mask_lands_on_the_device_asked_for():
    assert reference.causal_mask(3, device="cpu").device.type == "cpu"


@pytest.mark.parametrize(
    "model_dim, num_heads, expected",
    [(128, 4, 32), (8, 2, 4), (8, 1, 8), (12, 3, 4), (6, 6, 1), (512, 8, 64)],
)
def test_head_dimension_divides_the_width_among_the_heads(model_dim, num_heads, expected):
    got = reference.head_dimension(model_dim, num_heads)
    assert got == expected, f"head_dimension({model_dim}, {num_heads}) = {got!r}, expected {expected}"
    assert isinstance(got, int), f"head_dimension returned {type(got).__name__}, not int"


@pytest.mark.parametrize("model_dim, num_heads", [(8, 3), (10, 4), (128, 0), (8, -2), (3, 4)])
def test_head_dimension_rejects_a_width_that_does_not_divide_naming_both_numbers(model_dim, num_heads):
    with pytest.raises(ValueError) as raised:
        reference.head_dimension(model_dim, num_heads)
    message = str(raised.value)
    assert str(model_dim) in message and str(num_heads) in message, (
        f"the ValueError should name {model_dim} and {num_heads}: {message!r}"
    )


def test_an_invalid_configuration_fails_when_the_module_is_built():
    with pytest.raises(ValueError, match="num_heads=3"):
        reference.MultiHeadSelfAttention(8, 3)
