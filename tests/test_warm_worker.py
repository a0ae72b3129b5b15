"""The plain-process sandbox's warm worker (grader/sandbox/processes.py, fork_warm_worker): a
shard forks its worker right after importing torch, before it learns its work, so a platform's
run of one submission imports torch once and not twice. What the student's code can see of its
own process and of the worker must be what an exec'd worker shows: torch and the worker's
modules, a clean environment, nothing of the shard's work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.class_view import class_results
from grader.sandbox import processes, worker
from grading import REPO_ROOT

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
SECRET = "batch-environment-secret-6f1c"

# Printed at import: what the child's process and its parent (the worker) show of themselves.
CURIOUS = '''

import os as _os, sys as _sys

def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().replace(b"\\0", b" ").decode("utf-8", "replace")
    except OSError as error:
        return f"unreadable ({type(error).__name__})"

print("SEEN environ:", dict(_os.environ))
print("SEEN own initial environment:", _read("/proc/self/environ"))
print("SEEN worker's command line:", _read(f"/proc/{_os.getppid()}/cmdline"))
print("SEEN worker's environment:", _read(f"/proc/{_os.getppid()}/environ"))
print("SEEN argv:", _sys.argv)
print("SEEN modules:", sorted(name for name in _sys.modules if name.startswith(("grader", "solutions", "_pytest", "pytest"))))
import gc as _gc
print("SEEN collector's thresholds:", list(_gc.get_threshold()))
'''


def graded_in_the_process_sandbox(tmp_path: Path) -> tuple[Path, str]:
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "curious.py").write_text(SOLUTION.read_text() + CURIOUS)
    out = tmp_path / "out"
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out), "--quiet", "--jobs", "1",
         "--sandbox", "process", "--no-report"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
        env={**os.environ, "MHA_TEST_SECRET": SECRET},
    )
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-3000:]
    return out, class_results.read_class_results(out / "results.json")["submissions"]["curious"]["output"]


def test_the_worker_is_forked_warm_and_shows_the_student_nothing_of_the_shards_work(tmp_path):
    out, printed = graded_in_the_process_sandbox(tmp_path)
    seen = {line.split(":", 1)[0]: line.split(":", 1)[1] for line in printed.splitlines() if line.startswith("SEEN ")}
    assert set(seen) == {"SEEN environ", "SEEN own initial environment", "SEEN worker's command line",
                         "SEEN worker's environment", "SEEN argv", "SEEN modules", "SEEN collector's thresholds"}, printed
    # The child collects young objects every 10,000 allocations, not Python's 700 (grader/sandbox/worker.py).
    assert json.loads(seen["SEEN collector's thresholds"])[0] == worker.YOUNG_COLLECTION_THRESHOLD == 10_000, printed
    # The worker is the shard's fork, made before the shard read its arguments: it names nothing.
    argv = json.loads(seen["SEEN argv"].strip().replace("'", '"'))
    assert argv[0].endswith("shard.py") and argv[1:] == [processes.WARM_WORKER_FLAG], printed
    # Nothing of the batch's environment, the shard's arguments or the grader's tests.
    assert SECRET not in printed
    assert "MHA_TEST_SECRET" not in printed
    assert str(out) not in printed and "queue.json" not in printed and "--results-dir" not in printed
    modules = json.loads(seen["SEEN modules"].strip().replace("'", '"'))
    assert not [name for name in modules if name.startswith(("grader.hidden", "solutions", "grader.conftest", "grader.session")) or ".hidden" in name], modules
    assert "grader.exercises.multi_head_attention.operations" in modules  # what the worker imports to serve the grader
    # The shard still had the batch's whole environment: it graded, and wrote where it was told.
    assert (out / "results" / "curious.json").is_file()
    assert "worker restarts: 0" in (out / "logs" / "shard-0.log").read_text()


def test_a_warm_worker_no_one_adopts_is_ended_with_its_shard():
    # A shard that forked its worker and then graded nothing: the worker must not outlive it.
    script = (
        "import os, sys; from grader.sandbox import processes; processes.fork_warm_worker(); "
        "pid = processes._WARM_WORKERS[0].pid; processes.discard_warm_workers(); print(pid); "
        "print(os.path.exists(f'/proc/{pid}'))"
    )
    finished = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    pid, still_there = finished.stdout.split()
    assert still_there == "False"
    assert not Path(f"/proc/{pid}").exists()


@pytest.mark.slow
def test_a_warm_worker_that_died_waiting_gives_way_to_an_exec_d_one():
    # Killed before the shard's first worker adopts it (out of memory, say): the shard must
    # still get a worker, started the usual way, and grade with it.
    script = (
        "import os, signal; from grader.sandbox import isolated, processes; processes.fork_warm_worker(); "
        "warm = processes._WARM_WORKERS[0]; os.kill(warm.pid, signal.SIGKILL); warm.wait(); "
        "worker = isolated.Worker('process'); worker.wait_until_ready(); "
        "print(type(worker._process.process).__name__, worker.restarts, warm.pid != worker._process.process.pid); "
        "worker.close()"
    )
    finished = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert finished.stdout.split() == ["Popen", "0", "True"], finished.stdout + finished.stderr[-2000:]


@pytest.mark.slow  # three gradings
def test_code_that_draws_without_a_seed_reads_the_same_in_the_sandbox_every_time_and_scores_as_at_the_desk(tmp_path):
    """The sandbox's child starts from the generators' own state, as a desk's submission does
    (grader/submission.py ``InProcessBackend.open``): a module that adds unseeded noise reads the
    same numbers in its messages run after run, not whatever the worker's fork inherited."""
    import catalogue
    import shared
    from grading import grade, what_a_reader_sees

    noisy = next(entry for entry in shared.CATALOGUE_ENTRIES if entry.name == "noise_added_to_the_scores")
    path = catalogue.write_implementation(noisy, tmp_path / "entries")
    seen = []
    for run, extra in enumerate((("--isolate",), ("--isolate",), ())):
        graded = grade([path], tmp_path / f"run-{run}", "--grading-seed", "77", *extra)
        seen.append(what_a_reader_sees(graded.results[noisy.name]))
    assert seen[0]["score"] < seen[0]["max_score"], seen[0]  # the noise is caught
    assert seen[0] == seen[1], "the sandbox's messages differ from one run to the next"
    # At the desk the grader's own draws (the reference's construction) share the generator with
    # the student's code, so the numbers differ there; the score and every outcome do not.
    outcomes = [(seen_here["score"], [(test["name"], test["outcome"]) for test in seen_here["tests"]]) for seen_here in seen]
    assert outcomes[0] == outcomes[2], "the sandbox grades unseeded noise otherwise than the desk"
