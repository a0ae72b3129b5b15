"""The leak scan by behaviour: does any function a hand-out ships compute the reference's numbers?

The text scan (``release.leaked_solution_lines``) finds solution lines; a solution rewritten
(the grader's own premises spelled the forward pass out as functions) passes it. So this scan
asks what the shipped code *does*: in a separate interpreter (``python -I``, the hand-out's
folder first on its path, nothing of this repository importable), it imports every module of
the hand-out's ``grader`` package, finds every function (module level, and those held in its
constants, such as a table of slips), and calls each with arguments built from a reference
head and a reference module (their parameters, inputs, masks, sizes). A function whose result
holds a tensor equal to the reference's output or attention weights is a callable solution.

The fixed examples of the visible reference check are data, not code: a function that reads
them back returns their numbers, not the numbers of the parameters it is given, and the scan
uses parameters of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from grader.exercises.multi_head_attention import data
from grader.reading import loading
from grader.handout import stubs

PROBE = Path(__file__).with_name("behaviour_probe.py")
# Sizes at which no two of the numbers a function may take are equal (data.confusions_hidden_by).
SCAN_CONFIG = data.Config(batch=2, seq=5, model_dim=18, num_heads=3)
SCAN_SEED = 20_260_501  # not a seed of any shipped check


def reference_case(solution: Path = stubs.SOLUTION_PATH) -> dict:
    """Arguments a function could be given, and the reference's numbers on them."""
    reference = loading.import_source(solution, "behaviour_scan_solution")
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


def callable_solutions(root: Path, timeout: float = 600) -> list[str]:
    """Every function under ``root/grader`` that returns the reference's output or weights
    from arguments built from a reference module: "module.function(arguments) -> what"."""
    return probe(root, timeout)["found"]


def probe(root: Path, timeout: float = 600, seconds_per_function: float | None = None) -> dict:
    """The probe's report on ``root``: "called" (how many calls), "found" (callable_solutions),
    "unfinished" (each function its time limit stopped: "module.function: stopped by the time
    limit after N of its calls")."""
    with tempfile.TemporaryDirectory() as scratch:
        case = Path(scratch) / "case.pt"
        torch.save(reference_case(), case)
        completed = subprocess.run(
            [sys.executable, "-I", str(PROBE), str(Path(root).resolve()), str(case),
             *([] if seconds_per_function is None else [str(seconds_per_function)])],
            cwd=scratch, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )
    if completed.returncode != 0:
        raise RuntimeError(f"the behaviour probe failed (exit {completed.returncode}):\n{completed.stderr[-3000:]}")
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    if not report["called"]:
        raise RuntimeError(f"the behaviour probe called no function under {root}: {report}")
    return report
