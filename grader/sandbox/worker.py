"""The worker: where student code runs when grading for real.

    python -m grader.sandbox.worker CONTROL_FD LIMITS_JSON

Started by ``grader.processes`` inside the sandbox. It imports torch once (the slow part)
and then, for each submission, forks a child that imports the student's file and answers
the grader's calls (forked ahead, after the last child's end: ``Spare``). The child inherits the warm interpreter for free and dies after its
submission, taking with it whatever the student's code changed (monkeypatches, threads,
global state). This process never runs student code itself.

Control socket (from the grader):  b"S" + two fds (the child's channel, its output pipe),
then a wire message {"source", "filename"};  b"K" kill the current child;  b"Q" quit.
Events (to the grader), as wire messages: {"event": "ready"}, {"event": "exited", ...}.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import re
import resource
import select
import signal
import socket
import sys
import tempfile
import time
import traceback
from pathlib import Path

from grader.sandbox import folders, libraries, wire

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
UNPRIVILEGED_UID = 65534  # "nobody"


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    limits = json.loads(sys.argv[2])
    warm_up()
    serve_the_grader(control, limits)


def wait_to_be_started(control: socket.socket) -> None:
    """The warm worker (grader/sandbox/processes.py, ``fork_warm_worker``): forked from a fresh
    interpreter that has imported torch and nothing of the instructor's, it waits here until the
    grader hands it what an exec'd worker gets on its command line and in its environment (its
    folder, its limits, its process-count group), then serves as that worker does."""
    start = wire.receive(control, bounds=wire.FROM_GRADER)
    folder = Path(str(start["folder"]))
    if start.get("cgroup_procs"):  # as the exec'd worker joins it before it runs (preexec_fn)
        Path(str(start["cgroup_procs"])).write_text(str(os.getpid()))
    log = os.open(folder / "worker.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(folder)
    os.environ.clear()
    os.environ.update({str(name): str(value) for name, value in start["environment"].items()})
    tempfile.tempdir = None  # read again from TMPDIR: the worker's scratch goes in its own folder
    # The repository the interpreter was started in (``-m`` put it first on the path) is nobody's
    # business here: the worker's own modules are all imported already, as for an exec'd worker.
    sys.path[:] = [entry for entry in sys.path if entry and not _is_folder(entry, REPOSITORY)]
    serve_the_grader(control, json.loads(str(start["limits"])))


REPOSITORY = Path(__file__).resolve().parents[2]


def _is_folder(entry: str, folder: Path) -> bool:
    try:
        return Path(entry).resolve() == folder
    except (OSError, ValueError):
        return False


# The chosen exercise's operations module (serve_the_grader reads it, before the first fork).
OPERATIONS = None
YOUNG_COLLECTION_THRESHOLD = 10_000  # the collector's first threshold in the worker and its children


def serve_the_grader(control: socket.socket, limits: dict) -> None:
    # Nothing a child leaves in a writable folder may shadow a module a later child imports.
    sys.path[:] = [entry for entry in sys.path if entry not in ("", ".", os.getcwd(), tempfile.gettempdir())]
    os.chdir("/")
    scratch = Path(tempfile.mkdtemp(prefix="mha-scratch-"))
    scratch.chmod(0o711)  # a child dropped to "nobody" may enter its own folder, not list others
    limits["scratch"] = str(scratch)
    limits["open_files"] = make_room_for_the_measuring_walk(int(limits.get("disk_files") or 0))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the grader gone (even killed): so are we
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # children (same uid) cannot ptrace or read our memory
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of a child become ours to kill
    # Everything imported so far is permanent: keep the garbage collector out of it, so a
    # child does not copy every page of the interpreter's heap by merely scanning it.
    # The exercise's operations, for the exercise the grader chose (GRADER_EXERCISE, in the
    # environment it gave this worker): read now, before any child runs student code, so that
    # the child's cleared environment, or anything a student's code does, cannot change it.
    global OPERATIONS
    from grader.seam import registry

    OPERATIONS = registry.operations()
    gc.freeze()
    # As in a grading shard (grader/batch/shard.py): a child's calls allocate many short-lived
    # objects (a request's tensors, the modules built, the replies), few of them in cycles, and a
    # young collection every 700 allocations took some 4% of a child's CPU (a replay of a class's
    # requests: 50.8 ms a student, 48.7 ms at 10,000). A child lives for one submission: what
    # waits for a later collection is at most that submission's.
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])
    spare = Spare(control, limits)
    wire.send(control, {"event": "ready", "pid": os.getpid()})
    try:
        while True:
            command, fds, _, _ = socket.recv_fds(control, 1, 3)
            if command in (b"", b"Q"):
                return
            if command == b"S" and len(fds) == 3:
                spawn = wire.receive(control, bounds=wire.FROM_GRADER)
                run_child_to_completion(control, fds, spawn, limits, spare)
                # Between two children, off every student's clock: what this one's file used that
                # costs a child more than its grading (matplotlib, an optimiser), made ready here
                # once for the later ones (grader/sandbox/libraries.py).
                libraries.warm_for_later_children(str(spawn.get("source") or ""))
                # Forked now, with the last child's leftovers gone: the next submission's child is
                # ready while the grader writes this one's result (a fork of a process that holds
                # torch copies its page tables: some 10 ms, off the next submission's way).
                spare = Spare(control, limits)
            else:
                for fd in fds:
                    os.close(fd)
    finally:
        spare.discard()


class Spare:
    """A child forked ahead of its submission, waiting for it: ``take`` hands it the submission's
    descriptors and source, and it becomes that submission's child (``become_child``), as a child
    forked then would. Only one child or spare lives at a time: a spare is forked after the last
    child's leftovers are killed and its folders wiped, so neither can touch the other."""

    def __init__(self, control: socket.socket, limits: dict) -> None:
        handing, waiting = socket.socketpair()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                control.close()
                handing.close()
                ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                _, fds, _, _ = socket.recv_fds(waiting, 1, 3)
                if len(fds) == 3:  # nothing (the worker ending): nothing to do
                    spawn = wire.receive(waiting, bounds=wire.FROM_GRADER)
                    waiting.close()
                    become_child(*fds, spawn, limits)
            except BaseException:
                traceback.print_exc()  # lands in the captured output, for the instructor
            finally:
                os._exit(70)
        waiting.close()
        self.handing: socket.socket | None = handing

    def take(self, fds: list[int], spawn: dict) -> int | None:
        """The spare's pid, now the submission's child; None if it is gone (then fork another)."""
        handing, self.handing = self.handing, None
        if handing is None:
            return None
        try:
            with handing:
                socket.send_fds(handing, [b"S"], fds)
                wire.send(handing, spawn)
        except (OSError, wire.ChannelClosed):
            self.discard()
            return None
        return self.pid

    def discard(self) -> None:
        """End a spare nobody took (the worker quitting, or the spare found gone)."""
        if self.handing is not None:
            self.handing.close()
            self.handing = None
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)


def make_room_for_the_measuring_walk(max_entries: int) -> int:
    """Raise this process's limit of open files so that the disk budget's walk, which holds
    one descriptor per level, can descend as deep as ``max_entries`` folders; return the
    limit as it was, which each child gets back (it needs no more than before)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max_entries + 256  # and what the worker itself has open
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
        except (ValueError, OSError):
            pass  # too deep a tree is then ended as one the grader cannot measure
    return soft


def warm_up() -> None:
    """Import torch and run each kind of operation once, before any fork.

    Every child inherits the result: no child pays for torch's start-up or its lazy
    imports (autograd pulls in sympy on first use), and a child dropped to an
    unprivileged user never needs to read the interpreter's files again.
    """
    # Modules student code commonly imports. In the plain-process sandbox started as root
    # a child runs as "nobody", who may not be able to read the interpreter's files (under
    # /root, say): what is imported here, before the fork, is all it can count on.
    for name in (
        "abc", "array", "bisect", "collections", "contextlib", "copy", "dataclasses", "decimal",
        "encodings.idna", "enum", "fractions", "functools", "heapq", "itertools", "json", "math",
        "numbers", "operator", "pprint", "random", "re", "statistics", "string", "textwrap",
        "time", "typing", "warnings",
    ):
        importlib.import_module(name)
    import math

    import numpy  # noqa: F401
    import torch
    import torch.nn.functional as F

    # One thread: the tensors are tiny, --jobs runs workers side by side, and a thread
    # pool started before fork() can deadlock the child that inherits it.
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)

    from grader.seam import registry

    registry.operations()  # the exercise's calls on student objects, imported before the fork
    from grader.feedback import errors
    from grader.reading import loading

    layer = torch.nn.Linear(4, 4)
    inputs = torch.randn(1, 3, 4, requires_grad=True)
    scores = torch.einsum("bqd,bkd->bqk", layer(inputs), inputs) / math.sqrt(4)
    allowed = torch.tril(torch.ones(3, 3, dtype=torch.bool))
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    output = F.scaled_dot_product_attention(inputs, inputs, inputs, attn_mask=allowed) + weights @ inputs
    torch.autograd.grad((output * 2).sum(), [inputs, *layer.parameters()], allow_unused=True)
    wire.encode({"warm": [output.detach().double(), torch.finfo(torch.float32).min]})


def run_child_to_completion(control: socket.socket, fds: list[int], spawn: dict, limits: dict, spare: Spare | None = None) -> None:
    channel_fd, output_fd, clock_fd = fds
    pid = spare.take(fds, spawn) if spare is not None else None
    if pid is None:
        pid = os.fork()
    if pid == 0:
        try:
            control.close()
            become_child(channel_fd, output_fd, clock_fd, spawn, limits)
        except BaseException:
            traceback.print_exc()  # lands in the captured output, for the instructor
        finally:
            os._exit(70)
    os.close(channel_fd)
    os.close(output_fd)
    os.close(clock_fd)
    started = time.monotonic()
    # Wake up the moment the child exits (a pidfd becomes readable) or the grader speaks.
    child_exited = os.pidfd_open(pid)
    status = None
    # Under bwrap the child writes only to tmpfs of a fixed size; here, to a folder on the
    # machine's disk, so the worker keeps to the budget itself, looking every 50 ms (or
    # less often, when a look takes long: DiskBudget).
    budget = None if limits.get("pid_namespace") else DiskBudget(Path(limits["scratch"]), limits)
    over_budget = ""
    try:
        while status is None:
            readable, _, _ = select.select([control, child_exited], [], [], 1.0 if budget is None else 0.05)
            if control in readable:
                command = control.recv(1)
                if command in (b"K", b"", b"Q"):
                    _kill_group(pid)
            if budget is not None and not over_budget and (over_budget := budget.exceeded()):
                _kill_group(pid)
            finished, raw_status = os.waitpid(pid, os.WNOHANG)
            if finished:
                status = raw_status
    finally:
        os.close(child_exited)
    kill_leftovers(limits.get("pid_namespace", False))
    left_behind = wipe_writable_folders(Path(limits["scratch"]), limits.get("pid_namespace", False))
    event = {"event": "exited", "seconds": time.monotonic() - started}
    if over_budget:
        event["disk"] = over_budget
    if left_behind:
        print(f"worker: could not remove all the child left: {left_behind}", file=sys.stderr, flush=True)
        event["left_behind"] = left_behind
    if os.WIFSIGNALED(status):
        event["signal"] = os.WTERMSIG(status)
    else:
        event["status"] = os.WEXITSTATUS(status)
    wire.send(control, event)


class DiskBudget:
    """What a child has written to its folder, against ``disk_bytes`` and ``disk_files``.

    Measured by grader/sandbox/folders.py with directory descriptors: a file no path can
    name (folders nested past PATH_MAX) is counted all the same."""

    # A look at a folder of thousands of files takes a while (a stat per entry): the next one
    # waits four times as long, so that measuring never takes more than a fifth of the
    # worker's time. An honest student's folder (a file or two) costs about 0.1 ms a look.
    PAUSE_PER_SECOND_SPENT = 4.0

    def __init__(self, folder: Path, limits: dict) -> None:
        self.folder = folder
        self.max_bytes = int(limits.get("disk_bytes") or 0)
        self.max_files = int(limits.get("disk_files") or 0)
        self._next_look = 0.0

    def exceeded(self) -> str:
        """"" while within the budget (or not yet time to look again), else what was exceeded
        (for the grader's message)."""
        began = time.monotonic()
        if not self.max_bytes or began < self._next_look:
            return ""
        try:
            return folders.first_excess(self.folder, self.max_bytes, self.max_files or sys.maxsize)
        except OSError:  # the folder itself unreadable for a moment: measured at the next look
            return ""
        finally:
            ended = time.monotonic()
            self._next_look = ended + self.PAUSE_PER_SECOND_SPENT * (ended - began)


def _kill_group(pid: int) -> None:
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except ProcessLookupError:
            pass


def kill_leftovers(own_pid_namespace: bool) -> None:
    """Kill whatever the child left running: daemons, double forks, stray groups.

    As a subreaper we inherit every orphan, so killing our children until none remain
    reaches all of them. In a pid namespace of our own, everything but its init and us
    is a leftover too.
    """
    for _ in range(50):
        victims = [pid for pid in _visible_pids() if pid != os.getpid() and pid != 1]
        if not own_pid_namespace:
            victims = [pid for pid in victims if _parent_of(pid) == os.getpid()]
        if not victims:
            break
        for pid in victims:
            _kill_group(pid)
        time.sleep(0.01)
        _reap_all()
    _reap_all()


def wipe_writable_folders(scratch: Path, private_tmp: bool) -> str:
    """Remove what the child wrote, so the next student finds nothing of it; "" or why
    something stayed (never an exception: one student's leftovers must not end the worker).

    In the bwrap sandbox /tmp and /dev/shm are private to the worker and wiped whole; in
    the plain-process sandbox they are the machine's, and only our scratch folder is ours.
    """
    wiped = [(scratch, ())]
    if private_tmp:
        wiped = [(Path(tempfile.gettempdir()), (scratch.name,)), (Path("/dev/shm"), ()), *wiped]
    mounts = _mount_points() if private_tmp else set()
    problems = []
    while wiped:
        folder, keep = wiped.pop(0)
        # The sandbox binds the interpreter read-only where it lives, and it may live under
        # /tmp (a virtualenv linked into a temporary clone): its mount point, and the folders
        # bwrap made to hold it, stay. Without this the wipe walked the whole virtualenv after
        # every student, failed on it, and the grader replaced the worker (torch imported
        # again) each time: a batch took twice as long.
        holding = {mount.relative_to(folder).parts[0] for mount in mounts if folder in mount.parents}
        wiped += [(folder / name, ()) for name in sorted(holding) if folder / name not in mounts]
        try:
            folders.empty(folder, {*keep, *holding})
        except FileNotFoundError:
            pass  # no /dev/shm here
        except Exception as error:  # noqa: BLE001 - reported to the grader, which starts a fresh worker
            problems.append(f"{folder}: {folders.describe_failure(error)}")
    return "; ".join(problems)


def _mount_points() -> set[Path]:
    """Where something is mounted in this process's mount namespace (proc(5), mountinfo: the
    fifth field, with space, tab, newline and backslash written as octal escapes)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return set()
    unescape = lambda text: re.sub(r"\\([0-7]{3})", lambda match: chr(int(match[1], 8)), text)  # noqa: E731
    return {Path(unescape(line.split()[4])) for line in lines if len(line.split()) > 4}


def _visible_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _parent_of(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _reap_all() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def become_child(channel_fd: int, output_fd: int, clock_fd: int, spawn: dict, limits: dict) -> None:
    """Set the child up for one submission, then serve the grader's calls until killed."""
    os.setsid()  # its own process group, so the whole group can be killed at once
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # dies with the worker
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(output_fd)
    # Line-buffered, so what was printed before a crash or a kill is not lost.
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    apply_limits(limits)
    # In the file's own encoding, so that its coding line holds; encoded now, while the codec's
    # module can still be read (a child dropped to nobody may not read the interpreter's files).
    try:
        source_bytes = str(spawn["source"]).encode(str(spawn.get("encoding") or "utf-8"), errors="replace")
    except LookupError:
        source_bytes = str(spawn["source"]).encode("utf-8", errors="replace")
    workdir = Path(tempfile.mkdtemp(prefix="submission-", dir=limits["scratch"]))
    if os.getuid() == 0:  # the plain-process sandbox started as root: drop to nobody
        os.chown(workdir, UNPRIVILEGED_UID, UNPRIVILEGED_UID)
        os.setgroups([])
        os.setgid(UNPRIVILEGED_UID)
        os.setuid(UNPRIVILEGED_UID)
    os.chdir(workdir)
    os.environ.clear()
    os.environ.update({"HOME": str(workdir), "TMPDIR": str(workdir), "PATH": "/usr/bin:/bin"})
    tempfile.tempdir = str(workdir)  # the module caches the worker's folder: not the child's
    source = workdir / Path(str(spawn["filename"])).name
    source.write_bytes(source_bytes)
    if limits.get("landlock_readable"):
        confine(limits["landlock_readable"], workdir)
    channel = socket.socket(fileno=channel_fd)
    cells = spawn.get("cells")
    clock = ClockToGrader(socket.socket(fileno=clock_fd))
    serve(channel, source, [(int(first), int(last)) for first, last in cells] if isinstance(cells, list) else None, clock)


def confine(readable: list[str], workdir: Path) -> None:
    """The plain-process sandbox's walls (grader/sandbox/landlock.py): read only Python and the
    system's libraries, write only the child's own folder, no TCP, no signals out."""
    from grader.sandbox import landlock

    try:
        landlock.restrict(readable, [str(workdir), "/dev/null"])
    except OSError as error:  # the grader found Landlock working: say so where instructors look
        print(f"grader: Landlock could not confine this submission ({error})", file=sys.stderr)


def apply_limits(limits: dict) -> None:
    settings = {
        resource.RLIMIT_CPU: limits.get("cpu_seconds"),
        resource.RLIMIT_FSIZE: limits.get("file_bytes"),
        resource.RLIMIT_NPROC: limits.get("processes"),
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_NOFILE: limits.get("open_files"),  # the worker's own, as it was before it made room
    }
    if limits.get("memory_bytes"):
        # Address space already mapped by torch does not count against the student.
        settings[resource.RLIMIT_AS] = _address_space_in_use() + int(limits["memory_bytes"])
    for limit, value in settings.items():
        if value is not None:
            try:
                resource.setrlimit(limit, (int(value), int(value)))
            except (ValueError, OSError):
                pass  # a limit the platform refuses; the others still hold


def _address_space_in_use() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def serve(channel: socket.socket, source: Path, cells: list[tuple[int, int]] | None = None,
          clock: ClockToGrader | None = None) -> None:
    """Import the submission (a notebook's ``cells`` one by one, as a kernel runs them), then
    answer the grader's calls."""
    # Imported here, after the limits: these modules touch student objects.
    from grader import student_clock
    from grader.seam import registry
    from grader.reading import loading
    from grader.feedback.errors import ErrorDescription, describe_exception

    operations = OPERATIONS if OPERATIONS is not None else registry.operations()
    # The generators start where a desk's submission starts them (grader/submission.py
    # ``InProcessBackend.open``), not where the worker's fork left them (torch seeds itself at
    # random in each process): code that draws without a seed reads the same numbers every run.
    operations.reset_generators()
    student_clock.use(clock)
    failures: list[tuple[int, BaseException]] = []
    try:
        with student_clock.running("import"):
            if cells is not None:
                # Here every exception of a cell is the student's (KeyboardInterrupt too: no one
                # can press Ctrl-C in the sandbox), so each ends its cell, not the notebook.
                loading.CELL_ERRORS = (BaseException,)
                module, failures = loading.import_cells(source, cells)
            else:
                module = loading.import_source(source)
    except BaseException as error:  # SystemExit and KeyboardInterrupt at import are the student's too
        described = describe_exception(error, source)
        wire.send(channel, {"import_error": ErrorDescription("import", described.type_name, described.message, described.location).to_dict()})
        return
    wire.send(channel, {"imported": True, "cell_failures": [
        {"first_line": line, "error": describe_exception(error, source).to_dict()} for line, error in failures
    ]})
    while True:
        try:
            request = wire.receive(channel, bounds=wire.FROM_GRADER)
        except wire.ChannelClosed:
            return  # the grader is done with this submission
        function = getattr(operations, str(request["operation"]))
        try:
            reply = {"result": function(module, **request["arguments"])}
        except BaseException as error:
            reply = {"error": describe_exception(error, source).to_dict()}
        try:
            payload = wire.encode(reply)
        except BaseException as error:
            payload = wire.encode({"error": {
                "kind": "contract",
                "type_name": type(error).__name__,
                "message": f"{request['operation']} returned something that is not plain data "
                "(expected torch.Tensor values, numbers and strings)",
            }})
        channel.sendall(payload)


class ClockToGrader:
    """The student's clock in the child (grader/student_clock.py): tells the grader, on a channel of
    its own, when the student's code starts (and which function) and when it stops, so that the
    grader counts only the student's stretches against the
    student's limits (grader/sandbox/isolated.py). A tick costs a send; the grader reads them when
    it needs them, so no tick wakes it."""

    def __init__(self, channel: socket.socket) -> None:
        self.channel = channel

    def entered(self, function: str) -> None:
        self.channel.sendall(wire.clock_frame(function, time.monotonic()))

    def left(self) -> None:
        self.channel.sendall(wire.clock_frame("", time.monotonic()))


if __name__ == "__main__":
    main()
