"""The leak scan by behaviour: does any function a hand-out ships compute the reference's numbers?

The text scan (``release.leaked_solution_lines``) finds solution lines; a solution rewritten
(the grader's own premises spelled the forward pass out as functions) passes it. So this scan
asks what the shipped code *does*: in a separate interpreter (``python -I``, the hand-out's
folder first on its path, nothing of this repository importable), it imports every module of
the hand-out's ``grader`` package, finds every function (module level, and those held in its
constants, such as a table of slips), and calls each with arguments built from the exercise's
reference (for the first exercise a reference head and module: their parameters, inputs, masks,
sizes), made by its declaration's ``scan`` (grader/exercises/multi_head_attention/hidden/handouts.py). A function whose result
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

from grader.reading import loading
from grader.handout import stubs
from grader.seam import registry

PROBE = Path(__file__).with_name("behaviour_probe.py")
EXERCISE = registry.exercise()  # the arguments and the reference's numbers are its (its declaration's scan)


def scan():
    """The exercise's case maker (its declaration's ``scan`` module), or None where it declares none."""
    return registry.optional(EXERCISE, EXERCISE.scan)


def reference_case(solution: Path = stubs.SOLUTION_PATH) -> dict:
    """Arguments a function could be given, and the reference's numbers on them (the exercise's
    ``scan_case``, run on its solution)."""
    maker = scan()
    if maker is None:
        raise LookupError(f"exercise {EXERCISE.name!r} declares no behaviour scan (its declaration's scan): "
                          "a hand-out's functions cannot be asked for the reference's numbers; the text scan still runs")
    return maker.scan_case(loading.import_source(solution, "behaviour_scan_solution"))


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
