"""What one submission may write in total (grader/sandbox/processes.py, Limits.disk_bytes).

The per-file limit (16 MB) and the address-space limit do not bound files: a submission
writing 16 MB files one after another could fill the machine's memory through bubblewrap's
/tmp and /dev/shm (tmpfs), or its disk through the plain-process sandbox's folder. Under
bwrap both are tmpfs of a fixed size; in the plain-process sandbox the worker ends a child
that writes past its budget.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile

import pytest

from grader.sandbox import folders, processes
from grading import REPO_ROOT, grade

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
LIMITS = processes.Limits()
CHUNK = 16 * 1024**2 - 1  # just under the per-file limit
ATTEMPTED_FILES = 24  # 384 MB per folder: far past the budget, had nothing stopped it

# Appended to the solution: writes 16 MB files into each folder until the writes fail, and
# prints how much each folder took. It catches the failure, so it imports and scores 100.
FILL = f'''
import os as _os


def _fill(folder):
    written = 0
    for index in range({ATTEMPTED_FILES}):
        try:
            with open(_os.path.join(folder, f"fill-{{index}}.bin"), "wb") as handle:
                handle.write(b"x" * {CHUNK})
            written += {CHUNK}
        except OSError:
            break
    print(f"filled {{folder}}: {{written}} bytes", flush=True)


for _folder in FOLDERS:
    _fill(_folder)
'''


def filled(output: str) -> dict[str, int]:
    return {folder: int(count) for folder, count in re.findall(r"filled (\S+): (\d+) bytes", output)}


needs_bwrap = pytest.mark.skipif(not processes.bwrap_available(), reason="bubblewrap cannot run here")


@needs_bwrap
def test_under_bwrap_tmp_and_dev_shm_hold_no_more_than_the_budget(tmp_path):
    path = tmp_path / "fills_tmpfs.py"
    path.write_text(SOLUTION.read_text() + '\nFOLDERS = ("/tmp", "/dev/shm")\n' + FILL)
    run = grade([path], tmp_path, "--isolate", "--sandbox", "bwrap")
    output = run.results["fills_tmpfs"]["output"]
    amounts = filled(output)
    assert set(amounts) == {"/tmp", "/dev/shm"}, output[-2000:]
    assert amounts["/tmp"] + amounts["/dev/shm"] <= LIMITS.disk_bytes, amounts
    assert amounts["/tmp"] > 0 and amounts["/dev/shm"] > 0
    assert run.score("fills_tmpfs") == 100  # a full disk is an error the code may catch, not a crash


@pytest.mark.slow
def test_in_the_process_sandbox_a_child_writing_past_its_budget_is_ended(tmp_path):
    path = tmp_path / "fills_disk.py"
    path.write_text(SOLUTION.read_text() + '\nFOLDERS = (".",)\n' + FILL)
    run = grade([path], tmp_path, "--isolate", "--sandbox", "process")
    result = run.results["fills_disk"]
    assert f"wrote more than {LIMITS.disk_bytes // 2**20} MB of files" in result["import_error"], result["import_error"]
    assert result["score"] == 0
    # Ended while writing: it never got to write all it tried to.
    assert filled(result["output"]).get(".", 0) < ATTEMPTED_FILES * CHUNK


@pytest.mark.slow
def test_a_file_in_a_declared_encoding_reaches_the_worker_as_python_reads_it(tmp_path):
    """``pytest grader --submission latin.py --isolate``: the worker's copy keeps the file's
    coding line and its encoding (it was once read as UTF-8 with replacement characters)."""
    path = tmp_path / "latin.py"
    check = '\nassert "\u00e9t\u00e9" == "\\u00e9t\\u00e9", "decoded wrongly"\n'
    path.write_bytes(("# -*- coding: latin-1 -*-\n" + SOLUTION.read_text() + check).encode("latin-1"))
    run = grade([path], tmp_path, "--isolate", "--sandbox", "process")
    assert run.score("latin") == 100, run.results["latin"]["import_error"]


# --- what cannot be named: trees past PATH_MAX, and the walks that measure and remove them ---

ATTACKS = REPO_ROOT / "tests" / "attacks"


def with_attack(folder, name: str):
    path = folder / f"{name}.py"
    path.write_text(SOLUTION.read_text() + "\n\n" + (ATTACKS / f"{name}.py").read_text())
    return path


@pytest.mark.slow
def test_in_the_process_sandbox_a_writer_below_path_max_is_ended_and_the_next_student_is_not(tmp_path):
    # An honest student first (the worker's start is not what this test is about), one after.
    first, honest = tmp_path / "first.py", tmp_path / "honest.py"
    for path in (first, honest):
        path.write_text(SOLUTION.read_text())
    run = grade([first, with_attack(tmp_path, "deep_writer"), honest], tmp_path, "--isolate", "--sandbox", "process")
    result = run.results["deep_writer"]
    assert f"wrote more than {LIMITS.disk_bytes // 2**20} MB of files" in result["import_error"], result["import_error"]
    assert result["score"] == 0
    written = [int(count) for count in re.findall(r"deep writer: (\d+) bytes", result["output"])]
    assert max(written, default=0) < 20 * (16 * 1024**2 - 1), "ended while writing, not after"
    assert run.score("honest") == 100, run.results["honest"]["import_error"]


def nest(root, levels: int, name: str = "d") -> int:
    """``levels`` nested folders under ``root`` (by descriptors: past PATH_MAX too); the
    deepest one's descriptor, for the caller to fill and close."""
    level = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        os.mkdir(name, dir_fd=level)
        below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=level)
        os.close(level)
        level = below
    return level


def write_file(folder: int, name: str, size: int, *, sparse: bool = False) -> None:
    handle = os.open(name, os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=folder)
    try:
        if sparse:
            os.ftruncate(handle, size)  # holes: no block allocated
        else:
            os.write(handle, b"x" * size)
    finally:
        os.close(handle)


MIB = 2**20


def test_the_budget_counts_files_no_path_can_name(tmp_path):
    deepest = nest(tmp_path, 25, "n" * 200)
    write_file(deepest, "data", 3 * MIB)
    os.close(deepest)
    assert folders.first_excess(tmp_path, 2 * MIB, 1000).startswith("it wrote more than 2 MB of files")
    assert folders.first_excess(tmp_path, 4 * MIB, 1000) == ""


def test_the_budget_counts_what_the_disk_holds_not_what_files_claim(tmp_path):
    top = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    write_file(top, "sparse", 1024 * MIB, sparse=True)  # claims 1 GiB, holds nothing
    write_file(top, "real", 3 * MIB)
    for index in range(10):  # ten names of one file: its blocks are on the disk once
        os.link("real", f"link-{index}", src_dir_fd=top, dst_dir_fd=top)
    os.close(top)
    assert folders.first_excess(tmp_path, 4 * MIB, 1000) == ""
    assert folders.first_excess(tmp_path, 2 * MIB, 1000).startswith("it wrote more than 2 MB of files")


def test_the_budget_walk_opens_no_fifo_and_follows_no_link(tmp_path):
    os.mkfifo(tmp_path / "fifo")  # opened, it would block the worker until a writer came
    (tmp_path / "loop").symlink_to(".")
    (tmp_path / "root").symlink_to("/")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "up").symlink_to("..")
    assert folders.first_excess(tmp_path, MIB, 100) == ""


def test_the_budget_walk_stops_at_the_entry_limit_however_large_the_folder(tmp_path):
    for index in range(3000):
        (tmp_path / f"f{index}").touch()
    assert folders.first_excess(tmp_path, 100 * MIB, 2000).startswith("it created more than 2000 files and folders")


def test_a_tree_deeper_than_the_descriptors_the_worker_may_open_counts_as_over_budget(tmp_path):
    os.close(nest(tmp_path, 300))
    measured = subprocess.run(
        [sys.executable, "-c", (
            "import resource, sys\n"
            "from grader.sandbox import folders\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (100, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
            "print(folders.first_excess(sys.argv[1], 1 << 30, 10_000))\n"
        ), str(tmp_path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )
    assert measured.returncode == 0, measured.stderr
    assert "its folders are nested deeper than the grader can measure" in measured.stdout


def test_a_tree_deeper_than_the_interpreter_may_recurse_is_removed(tmp_path):
    # shutil.rmtree on Python 3.11 recurses once per level: RecursionError past about 1,000.
    (tmp_path / "tree").mkdir()
    deepest = nest(tmp_path / "tree", 1500)
    write_file(deepest, "bottom", 10)
    os.close(deepest)
    folders.remove(tmp_path / "tree")
    assert list(tmp_path.iterdir()) == []


def test_a_tree_past_path_max_with_its_permissions_taken_away_is_removed(tmp_path):
    top = tmp_path / "tree"
    top.mkdir()
    deepest = nest(top, 25, "n" * 200)
    write_file(deepest, "data", 10)
    os.fchmod(deepest, 0o000)  # what a student running as the grader's own user may do
    os.close(deepest)
    (top / "closed").mkdir(mode=0o000)
    folders.remove(top)
    assert list(tmp_path.iterdir()) == []


def test_emptying_a_folder_keeps_what_it_is_told_to_and_removes_hidden_entries(tmp_path):
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "inside").touch()
    (tmp_path / ".hidden").touch()
    (tmp_path / ".hidden-folder").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "kept")
    folders.empty(tmp_path, keep=("kept",))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kept"]
    assert (tmp_path / "kept" / "inside").exists(), "a link is removed, never followed"


def test_a_leftover_deeper_than_the_interpreter_may_recurse_is_removed_at_start_up(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    namespace = os.stat("/proc/self/ns/pid").st_ino
    gone = tmp_path / f"mha-worker-1.{processes._start_time(1) + 1}.{namespace}-abcd1234"  # pid 1 started earlier
    gone.mkdir()
    os.close(nest(gone, 1500))
    monkeypatch.setattr(processes, "CGROUP_ROOTS", ())  # the machine's own leftovers are not this test's
    removed = processes.remove_leftovers()
    assert removed == [str(gone)] and removed.kept == []
    assert list(tmp_path.iterdir()) == []


def test_a_leftover_that_cannot_be_removed_is_reported_and_nothing_raises(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    namespace = os.stat("/proc/self/ns/pid").st_ino
    stuck = tmp_path / f"mha-staging-1.{processes._start_time(1) + 1}.{namespace}-abcd1234"
    stuck.mkdir()

    def refuse(folder):
        raise RecursionError("as shutil.rmtree raised on a deep tree")

    monkeypatch.setattr(folders, "remove", refuse)
    monkeypatch.setattr(processes, "CGROUP_ROOTS", ())  # the machine's own leftovers are not this test's
    removed = processes.remove_leftovers()
    assert removed == [] and removed.kept == [f"{stuck}: RecursionError"]


def test_a_wipe_that_fails_is_reported_never_raised(tmp_path, monkeypatch):
    from grader.sandbox import worker

    scratch = tmp_path / "scratch"
    scratch.mkdir()

    def refuse(folder, keep=()):
        raise RecursionError("as shutil.rmtree raised on a deep tree")

    monkeypatch.setattr(folders, "empty", refuse)
    assert worker.wipe_writable_folders(scratch, private_tmp=False) == f"{scratch}: RecursionError"


def test_a_worker_that_could_not_clean_up_is_replaced_and_its_student_keeps_the_result(caplog):
    from types import SimpleNamespace

    from grader.sandbox import isolated, wire

    grader_end, worker_end = socket.socketpair()
    ended = []
    worker = isolated.Worker.__new__(isolated.Worker)  # no process started: only its bookkeeping
    worker.sandbox, worker.restarts = "process", 0
    worker._process = SimpleNamespace(control=grader_end, kill=lambda: ended.append(True))
    wire.send(worker_end, {"event": "exited", "status": 0, "left_behind": "scratch: Permission denied"})
    event = worker.end_child(kill=False)
    assert event["status"] == 0 and event["left_behind"]  # how the child ended: its result stands
    assert ended == [True] and worker._process is None  # the next student gets a fresh worker
    assert "could not clean up after a submission (scratch: Permission denied)" in caplog.text
    worker_end.close()
    grader_end.close()


FORKS_AT_IMPORT = '\nimport subprocess as _subprocess\n_subprocess.run(["true"], check=True)\nprint("forked at import")\n'
OTHER_RUNS_PROCESSES = 80  # more than Limits.processes: what another run's fork bomb holds as "nobody"


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="only root can hold processes as the user the children become")
@pytest.mark.parametrize("sandbox", ["process", *(["bwrap"] if processes.bwrap_available() else [])])
def test_another_runs_processes_as_nobody_leave_this_runs_students_their_forks(tmp_path, sandbox):
    """Two runs on one machine: the other's fork bomb holds many processes of the user the children
    become. Where a pids cgroup caps each worker, this run's student still forks and scores 100:
    RLIMIT_NPROC, which counts that user's processes on the whole machine, would leave it none."""
    group = processes.ProcessCountGroup.create(1)
    if group is None:
        pytest.skip("no pids cgroup here: RLIMIT_NPROC is the only cap, shared by the user's processes")
    group.remove()
    held = [subprocess.Popen(["sleep", "600"], user=65534, group=65534, stdin=subprocess.DEVNULL) for _ in range(OTHER_RUNS_PROCESSES)]
    try:
        path = tmp_path / "forks.py"
        path.write_text(SOLUTION.read_text() + FORKS_AT_IMPORT)
        run = grade([path], tmp_path, "--isolate", "--sandbox", sandbox)
        result = run.results["forks"]
        assert "forked at import" in result["output"] and result["score"] == 100, (result.get("import_error"), result["output"][-1000:])
    finally:
        for process in held:
            process.kill()
            process.wait()
