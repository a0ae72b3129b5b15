"""Run the grader on submissions the way a user does, and read back its results.

Each call starts one ``pytest grader`` process for any number of submissions, so the
catalogue of mutants costs one torch start-up, not one per mutant.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# Honest code must not time out on a machine many others load: a test may take two minutes
# (pytest-timeout's option, which a batch's shards read from PYTEST_ADDOPTS; the grader's own
# default is 10 s, grader/timeouts.py).
LOAD_PROOF_ENVIRONMENT = {"PYTEST_ADDOPTS": "--timeout=120"}


def command_in(folder: Path, *arguments: str) -> subprocess.CompletedProcess:
    """``python -m grader ...`` from the course's folder, as an instructor runs it there."""
    environment = os.environ | {"PYTHONPATH": str(REPO_ROOT)} | LOAD_PROOF_ENVIRONMENT
    return subprocess.run(
        [sys.executable, "-m", "grader", *arguments], cwd=folder, env=environment,
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )


@dataclass
class GradingRun:
    returncode: int
    output: str
    results: dict  # submission name -> that submission's result (see grader.scoring)

    def score(self, name: str) -> int:
        return self.results[name]["score"]

    def failed_tests(self, name: str) -> list[dict]:
        return [test for test in self.results[name]["tests"] if test["outcome"] != "passed"]

    def diagnosed(self, name: str) -> set[str]:
        """The mistake ids the diagnosis gave ("unknown" included)."""
        return {entry["mistake"] for entry in self.results[name].get("diagnoses", [])}

    def lost_groups(self, name: str) -> set[str]:
        return {g for g, points in self.results[name]["groups"].items() if points["earned"] < points["max"]}


def grade(submissions: list[Path], tmp_path: Path, *extra: str, timeout: float = 600, preexec_fn=None, cwd: Path = REPO_ROOT) -> GradingRun:
    """``pytest grader`` on ``submissions`` in ``cwd`` (the repository, or a student release)."""
    results_path = tmp_path / "results.json"
    command = [sys.executable, "-m", "pytest", "grader", "-p", "no:cacheprovider", "-q", "--results-json", str(results_path)]
    for submission in submissions:
        command += ["--submission", str(submission)]
    completed = subprocess.run(
        [*command, *extra], cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        preexec_fn=preexec_fn,
    )
    output = completed.stdout + completed.stderr
    assert results_path.exists(), f"the grader wrote no results (exit {completed.returncode}):\n{output[-3000:]}"
    document = json.loads(results_path.read_text())
    return GradingRun(completed.returncode, output, document["submissions"])


def what_a_reader_sees(result: dict) -> dict:
    """A result without its timings: what every page, gradebook and diagnosis is made of."""
    return {key: value for key, value in result.items() if key != "time_budget"} | {
        "tests": [{key: value for key, value in test.items() if key != "duration"} for test in result["tests"]]
    }
