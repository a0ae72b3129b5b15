"""A batch stopped by a signal, or killed outright, leaves nothing grading and nothing behind.

SIGTERM, SIGINT and SIGHUP stop the batch within seconds, keeping every result graded and
saying what is left undone (tests/test_batch.py: the next run grades only that); a batch killed with SIGKILL takes its
shards with it (their parent-death signal), and the next run removes the staging folder it
left; a shard killed with SIGKILL leaves its worker's folder and pids cgroup, which the
batch removes. Each batch runs with a temporary folder of its own, to see what it leaves.

Waits are for events (a result file appearing, a process ending: a pidfd turning
readable), each with a generous cap that only a failing run reaches. The class is one that
cannot be finished soon after its first result (grading.interruptible_class: half of it sleeps
at import, past a long call limit), so a signal sent on that event finds the batch mid-way
whatever the machine's load.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grading import BATCH_EVENT_CAP_SECONDS as CAP_SECONDS
from grading import INTERRUPTIBLE_CLASS_SIZE as CLASS_SIZE
from grading import QUICK_CALL_LIMIT, REPO_ROOT, SLOW_CALL_LIMIT, as_a_terminals_job, interruptible_class, wait_for_results

# A stopped batch ends within this many seconds on a quiet machine (issue: "within 10 seconds"):
# the shards' grace, then their end. On a loaded machine every process gets a share of the cores,
# so the bound grows with the load per core, as the fast tier's own guard does (tests/tiers.py).
STOP_SECONDS = 10


def stop_bound() -> float:
    return STOP_SECONDS * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


@pytest.fixture
def private_tmp():
    """A temporary folder for the batch (world-traversable, as the machine's is)."""
    folder = Path(tempfile.mkdtemp(prefix="interrupted-batch-"))
    folder.chmod(0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def start_batch(submissions: Path, out: Path, private_tmp: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out), "--quiet", *extra],
        cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True, env={**os.environ, "TMPDIR": str(private_tmp)}, text=True,
        preexec_fn=as_a_terminals_job,  # the batch stops its shards with SIGINT
    )


def children_of(pid: int, command_part: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and command_part in command:
            found.append(int(entry.name))
    return found


def wait_until_gone(pids: list[int]) -> list[int]:
    """Wait for each process to end (its pidfd becomes readable); return those still running."""
    still_running = []
    for pid in pids:
        try:
            descriptor = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            readable, _, _ = select.select([descriptor], [], [], CAP_SECONDS)
            if not readable:
                still_running.append(pid)
        finally:
            os.close(descriptor)
    return still_running


def cgroups_of(pids: list[int]) -> list[Path]:
    return [group for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/pids")) if root.is_dir()
            for pid in pids for group in root.glob(f"mha-worker-{pid}[.-]*")]


def lock_is_free(out: Path) -> bool:
    """Whether another batch could take OUT's lock now (grader/batch/run.py, lock_out)."""
    with open(out / ".batch.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["SIGTERM", "SIGINT", "SIGHUP"])
@pytest.mark.slow
def test_a_stop_signal_ends_the_batch_within_seconds_keeping_what_it_graded_and_saying_what_is_not_done(
    tmp_path, private_tmp, sent
):
    submissions = interruptible_class(tmp_path / "class")
    out = tmp_path / "out"
    batch = start_batch(submissions, out, private_tmp, "--jobs", "2", *SLOW_CALL_LIMIT)
    wait_for_results(out, 1, batch)
    shards = children_of(batch.pid, "grader.batch.shard")
    assert shards, "the shards run"
    os.kill(batch.pid, sent)  # the batch alone, as `kill PID`, a closed terminal or Ctrl-C (its group) would
    signalled = time.monotonic()
    assert batch.wait(timeout=CAP_SECONDS) == 130, batch.stderr.read()[-2000:]
    seconds = time.monotonic() - signalled
    print(f"{sent.name}: the batch ended {seconds:.1f} s after the signal")
    # The shards get a few seconds' grace, then are killed; nothing else runs: no class comparison, no report.
    assert seconds < stop_bound(), f"the batch took {seconds:.1f} s to stop (load {os.getloadavg()[0]:.1f})"
    said = batch.stderr.read()
    kept = len(list((out / "results").glob("*.json")))
    assert 0 < kept < CLASS_SIZE
    assert f"stopped by {sent.name} while grading: {kept} of {CLASS_SIZE} graded in this run, kept in {out / 'results'}" in said
    assert (f"Not done: grading the other {CLASS_SIZE - kept}, the gradebook (no class files written yet), the comparison of "
            "submissions and the report. Run the same command again to continue from there") in said
    assert not (out / "report.html").exists() and not (out / "gradebook.csv").exists()
    assert "comparison" not in (out / "batch.log").read_text().split("stopped by")[0]  # not begun
    assert lock_is_free(out), "a rerun would be refused"
    assert wait_until_gone(shards) == [], "no shard grades on, unseen"
    assert sorted(path.name for path in private_tmp.iterdir()) == [], "staging and worker folders removed"
    assert cgroups_of(shards) == []


@pytest.mark.slow
def test_a_killed_batch_takes_its_shards_with_it_and_the_next_run_removes_what_it_left(tmp_path, private_tmp):
    submissions = interruptible_class(tmp_path / "class")
    out = tmp_path / "out"
    batch = start_batch(submissions, out, private_tmp, "--jobs", "2", *SLOW_CALL_LIMIT)
    wait_for_results(out, 1, batch)
    shards = children_of(batch.pid, "grader.batch.shard")
    assert shards
    os.kill(batch.pid, signal.SIGKILL)
    batch.wait()
    assert wait_until_gone(shards) == [], "the shards end with the batch"
    kept = len(list((out / "results").glob("*.json")))
    assert kept < CLASS_SIZE, "the shards stopped grading when the batch died"
    left = sorted(path.name for path in private_tmp.iterdir())
    assert any(name.startswith("mha-staging-") for name in left), "a SIGKILL cannot be cleaned up after at once"
    rerun = start_batch(submissions, out, private_tmp, *QUICK_CALL_LIMIT)
    rerun.wait(timeout=CAP_SECONDS * 3)
    assert rerun.returncode == 0, rerun.stderr.read()[-2000:]
    assert sorted(path.name for path in private_tmp.iterdir()) == [], "the next run removed the leftovers"
    assert cgroups_of(shards) == []
    assert f"{CLASS_SIZE - kept} to grade, {kept} already graded" in (out / "batch.log").read_text()


@pytest.mark.slow
def test_a_killed_shard_leaves_no_worker_folder_nor_cgroup(tmp_path, private_tmp):
    submissions = interruptible_class(tmp_path / "class")
    out = tmp_path / "out"
    batch = start_batch(submissions, out, private_tmp, "--jobs", "1", *SLOW_CALL_LIMIT)
    wait_for_results(out, 1, batch)
    shards = children_of(batch.pid, "grader.batch.shard")
    assert len(shards) == 1
    os.kill(shards[0], signal.SIGKILL)
    assert batch.wait(timeout=CAP_SECONDS) == 2, "students left ungraded: an error of the grader"
    assert sorted(path.name for path in private_tmp.iterdir()) == []
    assert cgroups_of(shards) == []


def test_leftovers_are_judged_only_in_their_own_pid_namespace(tmp_path, monkeypatch):
    # A grader in a container sees itself as pid 1 and may share the machine's temporary
    # folder (a test's container, a bind-mounted /tmp): here pid 1 is init, with another start
    # time. Its staging folder must survive another batch's clean-up, while a folder of this
    # namespace whose owner is gone is removed.
    from grader.sandbox import processes

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    namespace = os.stat("/proc/self/ns/pid").st_ino
    start_of_pid_1 = processes._start_time(1)
    elsewhere = tmp_path / f"mha-staging-1.{start_of_pid_1 + 1}.{namespace + 1}-abcd1234"
    gone_here = tmp_path / f"mha-staging-1.{start_of_pid_1 + 1}.{namespace}-abcd1234"
    ours = processes.owned_temporary_folder("mha-staging-")
    for folder in (elsewhere, gone_here):
        folder.mkdir()
    monkeypatch.setattr(processes, "CGROUP_ROOTS", ())  # the machine's own leftovers are not this test's
    removed = processes.remove_leftovers()
    assert elsewhere.is_dir() and ours.is_dir()
    assert not gone_here.exists() and removed == [str(gone_here)]
    assert ours.name.startswith(f"mha-staging-{os.getpid()}.") and f".{namespace}-" in ours.name


# --- a stop after grading: the comparison or the report cut short ------------------------------


@pytest.fixture(scope="module")
def graded_pair(tmp_path_factory):
    """A class of two whose code is the same (one pair to compare), graded once."""
    folder = tmp_path_factory.mktemp("pair")
    submissions = folder / "class"
    submissions.mkdir()
    solution = (REPO_ROOT / "solutions" / "multi_head_attention.py").read_text()
    for name in ("ann", "ben"):
        (submissions / f"{name}.py").write_text(solution)
    out = folder / "out"
    graded = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out), "--quiet", "--no-report"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=CAP_SECONDS, stdin=subprocess.DEVNULL,
    )
    assert graded.returncode == 0, graded.stderr[-2000:]
    return submissions, out


def run_again(submissions: Path, out: Path) -> int:
    """The same command again, in this process (nothing is left to grade: no shard starts)."""
    import argparse

    from grader.batch import run

    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    return run.run(parser.parse_args([str(submissions), "--out", str(out), "--quiet"]))


def signal_myself(*_arguments, **_keywords):
    """Where a stage of the batch begins: SIGTERM to this very process, as `kill PID` sends it."""
    os.kill(os.getpid(), signal.SIGTERM)
    while True:  # the handler raises at the next instruction
        time.sleep(0.01)


def stopped_at(module, function: str, graded_pair, tmp_path: Path, monkeypatch) -> Path:
    """A copy of the graded class's OUT, run again and stopped by SIGTERM where ``function`` of
    ``module`` begins; the run must end as a stopped one (130)."""
    submissions, graded = graded_pair
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    with monkeypatch.context() as patched:
        patched.setattr(module, function, signal_myself)
        assert run_again(submissions, out) == 130
    return out


def test_a_stop_during_the_comparison_writes_the_gradebook_without_it_and_skips_the_report(graded_pair, tmp_path, monkeypatch):
    from grader.class_view import class_results, similarity

    out = stopped_at(similarity, "class_similarity", graded_pair, tmp_path, monkeypatch)
    document = class_results.read_class_results(out / "results.json")
    assert sorted(document["submissions"]) == ["ann", "ben"] and document["similar_submissions"] == {}
    assert (out / "gradebook.csv").read_text().count("\n") == 3 and not (out / "report.html").exists()
    log = (out / "batch.log").read_text()
    assert ("stopped by SIGTERM after grading: every student is graded and the gradebook written; not done: the "
            "comparison of submissions (cut short; results.json holds none) and the report. Run the same command again") in log
    assert lock_is_free(out)
    assert run_again(graded_pair[0], out) == 0  # the next run finishes them
    assert class_results.read_class_results(out / "results.json")["similar_submissions"]["pairs_found"] == 1
    assert (out / "report.html").is_file()


def test_a_stop_during_the_report_keeps_the_gradebook_and_the_comparison(graded_pair, tmp_path, monkeypatch):
    from grader.class_view import class_results, report

    out = stopped_at(report, "write_report", graded_pair, tmp_path, monkeypatch)
    assert class_results.read_class_results(out / "results.json")["similar_submissions"]["pairs_found"] == 1
    assert not (out / "report.html").exists()
    assert f"not done: the report (python -m grader report {out} writes it)" in (out / "batch.log").read_text()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the batch's handlers are gone with it


# --- the class files change as one set ------------------------------------------------------------


def marked_as_the_last_run(out: Path) -> dict[str, bytes]:
    """The last run's class files, each marked so that a file of this run cannot pass for it."""
    (out / "gradebook.csv").write_text((out / "gradebook.csv").read_text() + "the last run's\n")
    (out / "results.json").write_text(json.dumps(json.loads((out / "results.json").read_text()), indent=1))  # the same, spelled apart
    return {name: (out / name).read_bytes() for name in ("gradebook.csv", "results.json")}


def test_a_stop_between_the_gradebook_and_the_results_keeps_the_last_runs_set_whole_and_says_so(graded_pair, tmp_path, monkeypatch):
    # Once: SIGTERM after gradebook.csv and before results.json left the gradebook new beside the old results.json.
    from grader import results

    submissions, graded = graded_pair
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    last = marked_as_the_last_run(out)
    with monkeypatch.context() as patched:
        patched.setattr(results, "write_class_results", signal_myself)
        assert run_again(submissions, out) == 130
    assert {name: (out / name).read_bytes() for name in last} == last
    assert not (out / ".class-files").exists(), "the staged set is removed"
    log = (out / "batch.log").read_text()
    assert "stopped by SIGTERM while writing the gradebook" in log
    assert "gradebook.csv, results.json and the feedback pages are all still the last finished run's, unchanged together" in log
    assert run_again(submissions, out) == 0 and "the last run's" not in (out / "gradebook.csv").read_text()


def test_a_stop_while_the_set_moves_into_place_takes_effect_once_it_is_in_place(graded_pair, tmp_path, monkeypatch):
    from grader.class_view import class_files

    submissions, graded = graded_pair
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    last = marked_as_the_last_run(out)
    moving = class_files._apply

    def stopped_while_moving(folder, target):
        os.kill(os.getpid(), signal.SIGTERM)  # held: it takes effect when the set is in place
        moving(folder, target)

    with monkeypatch.context() as patched:
        patched.setattr(class_files, "_apply", stopped_while_moving)
        assert run_again(submissions, out) == 130
    assert all((out / name).read_bytes() != before for name, before in last.items()), "this run's set, whole"
    assert (out / "report.html").is_file()
    assert "the class files are this run's, replaced together before the stop took effect" in (out / "batch.log").read_text()


def test_a_set_a_killed_run_left_half_moved_is_completed_before_anything_reads_out(tmp_path):
    from grader.class_view import class_files

    out = tmp_path / "out"
    (out / "feedback").mkdir(parents=True)
    for name, text in (("gradebook.csv", "old\n"), ("results.json", "old\n"), ("report.html", "old\n"), ("feedback/a.html", "old\n")):
        (out / name).write_text(text)
    files = class_files.ClassFiles(out)
    for name in ("gradebook.csv", "results.json"):
        files.write(name, "new\n")
    files.remove("report.html")
    files.remove("feedback/a.html")
    # SIGKILL right after the manifest and the first rename: the set is committed, half in place.
    (files.folder / class_files.MANIFEST).write_text(json.dumps({"write": files.written, "remove": sorted(files.removed)}))
    os.replace(files.folder / "gradebook.csv", out / "gradebook.csv")
    os.rename(files.folder, out / class_files.STAGING / "999999999")  # the killed process's own folder
    assert (out / "results.json").read_text() == "old\n"  # a mix, until the next reader of OUT
    said = class_files.finish_interrupted(out)
    assert said and "completed the replacement" in said[0]
    assert [(out / name).read_text() for name in ("gradebook.csv", "results.json")] == ["new\n", "new\n"]
    assert not (out / "report.html").exists() and not (out / "feedback" / "a.html").exists()
    assert not (out / class_files.STAGING).exists()
    # A set its writer never committed is removed, and OUT keeps the one in place.
    files = class_files.ClassFiles(out)
    files.write("gradebook.csv", "newer\n")
    os.rename(files.folder, out / class_files.STAGING / "999999999")
    assert "removed the class files a stopped run" in class_files.finish_interrupted(out)[0]
    assert (out / "gradebook.csv").read_text() == "new\n"
