"""What the engine's hand-out tools read of multi-head self-attention, made from its solution:
the visible reference group's fixed examples (grader/handout/reference_examples.py, the
declaration's ``examples``) and the behaviour scan's case (grader/handout/behaviour_scan.py, the
declaration's ``scan``). Instructor code: it runs the reference, so it lives in hidden/ and never
ships to students. Each function takes the solution's module, imported by the engine.
"""

from __future__ import annotations

import torch

from grader.exercises.multi_head_attention import data

# --- the visible reference group's data ---------------------------------------------------------

# Where the examples are written, and read by the visible check (test_reference_examples.py).
EXAMPLES_PATH = data.REFERENCE_EXAMPLES_PATH
# (name, what it runs, its sizes, its mask, the seed of its data).
# The lesson's own sizes (head_dim 4, where head_dim / 2 is sqrt(head_dim)) hide some
# confusions: the other examples are at sizes that hide none (data.confusions_hidden_by).
EXAMPLES = (
    ("head-three-heads-wide", "head", data.PROPERTY_CONFIGS[0], "causal", 71),
    ("module-lesson", "module", data.LESSON, "causal", 72),
    ("module-four-heads-custom-mask", "module", data.PROPERTY_CONFIGS[1], "custom", 73),
)
SIGNIFICANT_DIGITS = 10


def _rounded(tensor: torch.Tensor) -> torch.Tensor:
    return (tensor.double() * 10_000).round().div(10_000).float()


def _encoded(tensor: torch.Tensor, digits: int | None = None) -> dict:
    values = tensor.flatten().tolist()
    if tensor.dtype != torch.bool:
        values = [float(f"{value:.{digits}g}") if digits else round(value, 4) for value in values]
    return {"shape": list(tensor.shape), "values": values}


def build_examples(reference) -> dict:
    """The examples and the draws, from the solution's module ``reference``: inputs and weights
    drawn by data.py from fixed seeds and rounded to four decimals (the file stays small and
    readable); the expected values keep ten significant digits."""
    examples = {}
    for name, kind, config, mask_kind, seed in EXAMPLES:
        rng = data.generator(seed)
        inputs = _rounded(data.random_inputs(config, rng))
        if kind == "head":
            parameters = {key: _rounded(value) for key, value in data.head_parameters(config, rng).items()}
            module = reference.AttentionHead(config.model_dim, config.head_dim)
        else:
            parameters = {key: _rounded(value) for key, value in data.attention_parameters(config, rng).items()}
            module = reference.MultiHeadSelfAttention(config.model_dim, config.num_heads)
        allowed = data.causal_allowed(config.seq) if mask_kind == "causal" else data.scattered_allowed(config, rng)
        module.load_state_dict(parameters)
        module = module.double()
        with torch.no_grad():
            if kind == "head":
                result = module(inputs.double(), allowed)
            else:
                result = module(inputs.double(), None if mask_kind == "causal" else allowed)
        examples[name] = {
            "runs": kind,
            "config": {"batch": config.batch, "seq": config.seq, "model_dim": config.model_dim, "num_heads": config.num_heads},
            "mask": mask_kind,
            "inputs": _encoded(inputs),
            "parameters": {key: _encoded(value) for key, value in parameters.items()},
            "allowed_mask": _encoded(allowed),
            "expected_output": _encoded(result.output, SIGNIFICANT_DIGITS),
            "expected_weights": _encoded(result.weights, SIGNIFICANT_DIGITS),
        }
    return {"examples": examples, "draws": _draws(reference)}


def _draws(reference) -> dict:
    """The reference's weights on each visible check's own data (data.DRAWS), for every
    configuration those checks run at: what they compare with and show beside the student's."""
    draws = {}
    for name, draw in data.DRAWS.items():
        draws[name] = {}
        for config in data.PROPERTY_CONFIGS:
            given = data.drawn(draw, config)
            if draw.runs == "head":
                module = reference.AttentionHead(config.model_dim, config.head_dim)
            else:
                module = reference.MultiHeadSelfAttention(config.model_dim, config.num_heads)
            module.load_state_dict(given["parameters"])
            module = module.double()
            with torch.no_grad():
                inputs = given["inputs"].double()
                if draw.runs == "module" and draw.mask == "causal":
                    result = module(inputs)
                else:
                    result = module(inputs, given["allowed"])
            draws[name][config.id] = _encoded(result.weights, SIGNIFICANT_DIGITS)
    return draws


# --- the behaviour scan's case ----------------------------------------------------------------

# Sizes at which no two of the numbers a function may take are equal (data.confusions_hidden_by).
SCAN_CONFIG = data.Config(batch=2, seq=5, model_dim=18, num_heads=3)
SCAN_SEED = 20_260_501  # not a seed of any shipped check


def scan_case(reference) -> dict:
    """Arguments a function could be given, and the reference's numbers on them, from the
    solution's module ``reference``: {"candidates": {...}, "expected": {what: tensor}}."""
    config, rng = SCAN_CONFIG, data.generator(SCAN_SEED)
    inputs = data.random_inputs(config, rng)
    module_parameters = data.attention_parameters(config, rng)
    head_parameters = {name.removeprefix("heads.0."): value for name, value in module_parameters.items()
                       if name.startswith("heads.0.")}
    causal = data.causal_allowed(config.seq)
    custom = data.scattered_allowed(config, rng)
    module = reference.MultiHeadSelfAttention(config.model_dim, config.num_heads)
    module.load_state_dict(module_parameters)
    head = module.heads[0]
    expected = {}
    with torch.no_grad():
        for mask_name, mask in (("causal", causal), ("custom", custom)):
            for what, result in (("module", module(inputs, mask)), ("head", head(inputs, mask))):
                expected[f"{what} output, {mask_name} mask"] = result.output
                expected[f"{what} weights, {mask_name} mask"] = result.weights
    return {
        "candidates": {
            "inputs": inputs, "inputs (float64)": inputs.double(), "causal mask": causal, "custom mask": custom,
            "module parameters": module_parameters, "head parameters": head_parameters,
            "model_dim": config.model_dim, "num_heads": config.num_heads, "head_dim": config.head_dim,
            "seq": config.seq, "batch": config.batch,
        },
        "expected": expected,
    }
