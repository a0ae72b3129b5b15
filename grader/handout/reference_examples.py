"""The visible reference group's data: ``python -m grader examples [--check]``.

Writes ``grader/exercises/multi_head_attention/reference_examples.json``: a few fixed examples (inputs, the grader's
weights, a mask) with the outputs and attention weights the reference solution computes for
them, in float64. ``grader/exercises/multi_head_attention/visible/test_reference_examples.py`` compares a submission with these
numbers at the student's desk, so a wrong number the lesson is about (a missing scale, a mask
applied after the softmax, the output projection missing or applied twice) costs visible
points; the hidden group still draws its sizes and data at grading time.

Inputs and weights are drawn by ``grader.exercises.multi_head_attention.data`` from fixed seeds and rounded to four decimals
(the file stays small and readable); the expected values keep ten significant digits.
``--check`` regenerates the examples and compares them with the file (the expected values
within 1e-9, as another machine's arithmetic may differ in the last digit): a test fails when
the file is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from grader.exercises.multi_head_attention import data
from grader.reading import loading
from grader.exercises.multi_head_attention.data import Config
from grader.handout import stubs

EXAMPLES_PATH = data.REFERENCE_EXAMPLES_PATH
COMMAND = "python -m grader examples"
# (name, what it runs, its sizes, its mask, the seed of its data).
# The lesson's own sizes (head_dim 4, where head_dim / 2 is sqrt(head_dim)) hide some
# confusions: the other examples are at sizes that hide none (data.confusions_hidden_by).
EXAMPLES = (
    ("head-three-heads-wide", "head", data.PROPERTY_CONFIGS[0], "causal", 71),
    ("module-lesson", "module", data.LESSON, "causal", 72),
    ("module-four-heads-custom-mask", "module", data.PROPERTY_CONFIGS[1], "custom", 73),
)
SIGNIFICANT_DIGITS = 10
CHECK_TOLERANCE = 1e-9


def _rounded(tensor: torch.Tensor) -> torch.Tensor:
    return (tensor.double() * 10_000).round().div(10_000).float()


def _encoded(tensor: torch.Tensor, digits: int | None = None) -> dict:
    values = tensor.flatten().tolist()
    if tensor.dtype != torch.bool:
        values = [float(f"{value:.{digits}g}") if digits else round(value, 4) for value in values]
    return {"shape": list(tensor.shape), "values": values}


def build_examples(solution: Path = stubs.SOLUTION_PATH) -> dict:
    reference = loading.import_source(solution, "reference_examples_solution")
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
    return {
        "about": f"generated from solutions/multi_head_attention.py by `{COMMAND}`; do not edit",
        "examples": examples,
        "draws": _draws(reference),
    }


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


def dumps(document: dict) -> str:
    """Indented JSON, each tensor's values on one line."""
    text = json.dumps(document, indent=2)
    return _inline_lists(text) + "\n"


def _inline_lists(text: str) -> str:
    lines, out, buffer = text.splitlines(), [], None
    for line in lines:
        stripped = line.strip()
        if buffer is not None:
            if stripped.startswith("]"):
                out.append(buffer[0] + ", ".join(buffer[1:]) + stripped)
                buffer = None
            else:
                buffer.append(stripped.rstrip(","))
        elif stripped.endswith("[") and not stripped.startswith("["):
            buffer = [line]
        else:
            out.append(line)
    return "\n".join(out)


def _same(written, fresh, path: str = "") -> str:
    """Where ``written`` differs from ``fresh`` ("" when it does not)."""
    if isinstance(fresh, dict):
        if not isinstance(written, dict) or set(written) != set(fresh):
            return path or "the top level"
        return next((found for key in fresh if (found := _same(written[key], fresh[key], f"{path}/{key}"))), "")
    if isinstance(fresh, list):
        if not isinstance(written, list) or len(written) != len(fresh):
            return path
        return next((found for a, b in zip(written, fresh) if (found := _same(a, b, path))), "")
    if isinstance(fresh, float) and isinstance(written, (int, float)) and not isinstance(written, bool):
        return "" if abs(written - fresh) <= CHECK_TOLERANCE * max(1.0, abs(fresh)) else path
    return "" if written == fresh else path


def stale_part(solution: Path = stubs.SOLUTION_PATH, examples: Path = EXAMPLES_PATH) -> str:
    """"" when the file holds what the solution gives now; else where it differs."""
    try:
        written = json.loads(examples.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{examples.name} is missing or not JSON"
    return _same(written, build_examples(solution))


def write_examples(solution: Path = stubs.SOLUTION_PATH, examples: Path = EXAMPLES_PATH) -> Path:
    examples.write_text(dumps(build_examples(solution)), encoding="utf-8")
    return examples


def add_arguments(parser) -> None:
    parser.add_argument("--check", action="store_true", help="only report whether the examples are stale (exit 1 if so)")


def run(arguments) -> int:
    if arguments.check:
        where = stale_part()
        if where:
            print(f"{EXAMPLES_PATH.name} is stale ({where}): run `{COMMAND}`.", file=sys.stderr)
            return 1
        print(f"{EXAMPLES_PATH.name} is up to date with the solution.")
        return 0
    print(f"wrote {write_examples().relative_to(stubs.REPO_ROOT)}")
    return 0
