"""Run the grader on submissions the way a user does, and read back its results.

Each call starts one ``pytest grader`` process for any number of submissions, so the
catalogue of mutants costs one torch start-up, not one per mutant.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


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


def grade(submissions: list[Path], tmp_path: Path, *extra: str, timeout: float = 600, preexec_fn=None) -> GradingRun:
    results_path = tmp_path / "results.json"
    command = [sys.executable, "-m", "pytest", "grader", "-p", "no:cacheprovider", "-q", "--results-json", str(results_path)]
    for submission in submissions:
        command += ["--submission", str(submission)]
    completed = subprocess.run(
        [*command, *extra], cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        preexec_fn=preexec_fn,
    )
    output = completed.stdout + completed.stderr
    assert results_path.exists(), f"the grader wrote no results (exit {completed.returncode}):\n{output[-3000:]}"
    document = json.loads(results_path.read_text())
    return GradingRun(completed.returncode, output, document["submissions"])


# How long a test waits for an event of a batch it started (a result file appearing): a cap that
# only a failing run reaches, whatever the load.
BATCH_EVENT_CAP_SECONDS = 180

# A class that a test stops mid-way: its first students are quick, the rest import slowly (their
# top level sleeps past the call limit the batch is given), so once a result has appeared the
# batch is certain to be mid-way for a long while: a test signals it after that event, and needs
# no luck with the load. (Its rerun gives a short call limit: the slow ones then cost a second.)
INTERRUPTIBLE_CLASS_SIZE = 12
SLOW_TO_IMPORT_FROM = 6  # student06 on
SLOW_CALL_LIMIT = ("--call-timeout", "60")  # six slow students, two shards: three minutes at least
QUICK_CALL_LIMIT = ("--call-timeout", "1")


def interruptible_class(folder: Path) -> Path:
    import catalogue

    folder.mkdir()
    solution = (REPO_ROOT / "solutions" / "multi_head_attention.py").read_text()
    for index in range(INTERRUPTIBLE_CLASS_SIZE):
        if index < SLOW_TO_IMPORT_FROM:
            source = catalogue.implementation_source(catalogue.MUTANTS[index])
        else:
            source = solution + "\n\nimport time\n\ntime.sleep(3600)  # a top level that never ends on its own\n"
        (folder / f"student{index:02}.py").write_text(source)
    return folder


def wait_for_results(out: Path, count: int, batch: subprocess.Popen) -> None:
    """Wait until ``count`` result files are in ``out/results`` (a batch writes each whole, then
    renames it there); fail if the batch ends first, or at the cap."""
    deadline = time.monotonic() + BATCH_EVENT_CAP_SECONDS
    while len(list((out / "results").glob("*.json"))) < count:
        if batch.poll() is not None:
            said = batch.stderr.read()[-2000:] if batch.stderr else ""
            raise AssertionError(f"the batch ended (exit {batch.returncode}) before {count} results: {said}")
        assert time.monotonic() < deadline, f"fewer than {count} results after {BATCH_EVENT_CAP_SECONDS} s"
        time.sleep(0.05)
