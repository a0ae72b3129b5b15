"""A batch stopped by a signal, or killed outright, leaves nothing grading and nothing behind.

SIGTERM and SIGHUP stop the batch as Ctrl-C does; a batch killed with SIGKILL takes its
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

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grading import BATCH_EVENT_CAP_SECONDS as CAP_SECONDS
from grading import INTERRUPTIBLE_CLASS_SIZE as CLASS_SIZE
from grading import QUICK_CALL_LIMIT, REPO_ROOT, SLOW_CALL_LIMIT, as_a_terminals_job, interruptible_class, wait_for_results



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


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
@pytest.mark.slow
def test_sigterm_and_sighup_stop_the_batch_as_ctrl_c_does(tmp_path, private_tmp, sent):
    submissions = interruptible_class(tmp_path / "class")
    out = tmp_path / "out"
    batch = start_batch(submissions, out, private_tmp, "--jobs", "2", *SLOW_CALL_LIMIT)
    wait_for_results(out, 1, batch)
    shards = children_of(batch.pid, "grader.batch.shard")
    assert shards, "the shards run"
    os.kill(batch.pid, sent)  # the batch alone, as `kill PID` or a closed terminal would
    assert batch.wait(timeout=CAP_SECONDS) == 130, batch.stderr.read()[-2000:]
    assert "interrupted" in batch.stderr.read()
    assert wait_until_gone(shards) == [], "no shard grades on, unseen"
    assert sorted(path.name for path in private_tmp.iterdir()) == [], "staging and worker folders removed"
    assert cgroups_of(shards) == []
    assert len(list((out / "results").glob("*.json"))) < CLASS_SIZE


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
    removed = processes.remove_leftovers()
    assert elsewhere.is_dir() and ours.is_dir()
    assert not gone_here.exists() and removed == [str(gone_here)]
    assert ours.name.startswith(f"mha-staging-{os.getpid()}.") and f".{namespace}-" in ours.name
