"""A submission's wall-clock budget and its diagnosis's (grader/sandbox/isolated.py).

Slow-but-correct code stays under every per-call limit, yet a class of it once cost minutes
per student: the diagnosis ran in the last check's teardown, after that check's timer was
cancelled, with no limit of its own. These tests set tiny budgets (options) against code
that sleeps a known time per call, so each budget is certain to run out: they assert on what
is recorded, never on how long anything took.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grading import REPO_ROOT, grade

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"


def sleeping(seconds: float, breakage: str = "") -> str:
    """The solution (or ``breakage`` of it) with every head's forward sleeping ``seconds``."""
    return SOLUTION.read_text() + breakage + (
        "\n\nimport time as _time\n_forward = AttentionHead.forward\n\n\n"
        "def _slow_forward(self, inputs, allowed_mask):\n"
        f"    _time.sleep({seconds})\n"
        "    return _forward(self, inputs, allowed_mask)\n\n\n"
        "AttentionHead.forward = _slow_forward\n"
    )


IGNORES_MASK = (
    "\n\n_honest = AttentionHead.forward\n\n\n"
    "def _ignores_mask(self, inputs, allowed_mask):\n"
    "    return _honest(self, inputs, torch.ones_like(allowed_mask, dtype=torch.bool))\n\n\n"
    "AttentionHead.forward = _ignores_mask\n"
)


@pytest.mark.slow
def test_past_its_budget_what_remains_of_a_slow_submission_scores_zero_saying_why(tmp_path):
    # Some 50 checks call the head's forward; at 0.5 s a call, 3 s cannot cover them.
    slow = tmp_path / "slow.py"
    slow.write_text(sleeping(0.5))
    run = grade([slow], tmp_path, "--isolate", "--submission-budget", "3")
    result = run.results["slow"]
    assert result["time_budget"]["submission_seconds"] == 3
    assert "the submission's 3 s budget ran out" in result["time_budget"]["ran_out"]["submission"]
    refused = [test for test in run.failed_tests("slow") if "not run: the submission's 3 s budget ran out" in test["message"]]
    assert refused and all(test["points"] == 0 for test in refused)
    assert result["score"] < 100
    # One reason, said once per check: the budget is no endless loop, so no "timed out 2 times".
    assert not [test for test in run.failed_tests("slow") if "already timed out" in test["message"]]


@pytest.mark.slow
def test_a_diagnosis_past_its_own_budget_is_dropped_and_recorded_without_costing_a_point(tmp_path):
    # The mistake is known (the mask is ignored), but each probe of the head sleeps 0.1 s: a
    # diagnosis of at least two probes cannot finish in 0.15 s. (The checks sleep as much: some
    # hundred calls, the test's whole cost.)
    slow = tmp_path / "slow_ignores_mask.py"
    slow.write_text(sleeping(0.1, IGNORES_MASK))
    run = grade([slow], tmp_path, "--isolate", "--diagnosis-budget", "0.15")
    result = run.results["slow_ignores_mask"]
    assert "the diagnosis's 0.15 s budget ran out" in result["time_budget"]["ran_out"]["diagnosis"]
    assert "submission" not in result["time_budget"]["ran_out"]
    assert result["diagnoses"] == []
    # The checks themselves ran in full: the score is that of the same mistake without sleeping.
    assert result["score"] == 57, run.failed_tests("slow_ignores_mask")


def test_a_budget_that_is_not_a_positive_number_is_refused_naming_the_option(tmp_path):
    for value in ("0", "-1", "inf", "nan", "abc"):
        finished = subprocess.run(
            [sys.executable, "-m", "grader", "batch", str(tmp_path), "--out", str(tmp_path / "out"), "--submission-budget", value],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )
        assert finished.returncode == 2, finished.stderr
        assert f"argument --submission-budget: '{value}' is not a number of seconds" in finished.stderr, finished.stderr
        assert "Traceback" not in finished.stderr


def test_a_slow_import_is_said_to_be_slow_not_called_a_loop(tmp_path):
    # Its top level sleeps 3 s, past a 1 s call limit: slow, not endless.
    slow = tmp_path / "slow_import.py"
    slow.write_text(SOLUTION.read_text() + "\n\nimport time as _time\n_time.sleep(3)\n")
    run = grade([slow], tmp_path, "--isolate", "--call-timeout", "1")
    said = run.results["slow_import"]["import_error"]
    assert "timed out after 1 s during import" in said and "top level of the file" in said, said
    assert "loop" not in said


def cpu_quota_refusal() -> str:
    """Why a cgroup v1 CPU quota cannot be set here ("" when it can)."""
    cpu = Path("/sys/fs/cgroup/cpu")
    if not (cpu / "cpu.cfs_quota_us").exists():
        return "no cgroup v1 cpu controller at /sys/fs/cgroup/cpu"
    if not os.access(cpu, os.W_OK):
        return "the cgroup v1 cpu controller is not writable here (not root)"
    return ""


@pytest.mark.skipif(bool(cpu_quota_refusal()), reason=cpu_quota_refusal() or "-")
@pytest.mark.slow
def test_a_notebook_that_trains_for_seconds_scores_the_same_under_half_a_cpu(tmp_path):
    # The notebook trains a toy model for 3 s of CPU at its top level, asks input() and has a
    # raising cell (tests/test_notebook_runs.py). Under a quota of half a CPU (cgroup v1's CFS
    # bandwidth: cpu.cfs_quota_us 50000 per cpu.cfs_period_us 100000, the kernel's
    # Documentation/scheduler/sched-bwc.rst) its 3 s take 6 s or more on the clock, past the 5 s
    # that once limited every import: the grade must not see it.
    from rehearsal.container import Cgroup
    from test_notebook_runs import batch, expect_a_kernels_run, kernel_notebook, write

    path = write(tmp_path / "class", "kernel", kernel_notebook())
    quota = Cgroup(cpus=0.5, memory=None, pids=None)
    try:
        in_the_batch = batch(tmp_path / "class", tmp_path / "out", preexec_fn=lambda: quota.join(os.getpid()))
        at_the_desk = grade([path], tmp_path, preexec_fn=lambda: quota.join(os.getpid())).results
        held = (quota.folders["cpu"] / "cpu.cfs_quota_us").read_text().strip()
        spent = quota.cpu_seconds()
    finally:
        quota.remove()
    # The quota held, and the gradings ran inside it (two trainings of 3 s of CPU). Whether the
    # kernel throttled them depends on the neighbours (a loaded machine gives less than the quota).
    assert held == "50000" and spent > 6, (held, spent)
    expect_a_kernels_run(in_the_batch["kernel"])
    expect_a_kernels_run(at_the_desk["kernel"])


@pytest.mark.slow
def test_at_the_desk_code_that_waits_is_stopped_by_the_clock_and_said_to_wait(tmp_path):
    # The per-test limit counts CPU time (grader/timeouts.py); a forward that sleeps computes
    # nothing, so the wall-clock limit (3 times the CPU limit) stops it, saying it waited.
    waiting = tmp_path / "waits.py"
    waiting.write_text(sleeping(3600))
    run = grade([waiting], tmp_path, "--timeout", "1", "-k", "test_head_returns_head_dim_features")
    said = [test["message"] for test in run.failed_tests("waits") if test["outcome"] == "failed"]
    assert said and "timed out after 3 s on the clock" in said[0] and "It was waiting, not computing" in said[0], said
