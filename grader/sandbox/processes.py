"""Starting and stopping processes: the sandboxed worker and the batch's grading shards.

The only module of the grader that starts processes.

Sandbox ``bwrap`` (bubblewrap): the worker sees a read-only view of the system's
libraries, of Python and of the few grader modules it needs (copied to a folder of their
own, so solutions/, grader/hidden/ and the rest of the repository stay invisible), a
private /tmp, no network, its own pid namespace, and runs as "nobody" with no
capabilities. Sandbox ``process``: the same worker as a plain child process, where bwrap
cannot run; it has the same limits, (when started as root) drops to "nobody" per
submission, and where the kernel allows it walls itself in with Landlock
(grader/sandbox/landlock.py): Python and the system's libraries to read, its own folder to write,
no TCP. Without Landlock it sees the file system as "nobody" does, and says so.

What one submission may write in total is bounded too (``Limits.disk_bytes``): under bwrap
its /tmp and /dev/shm are tmpfs of a fixed size; in the plain-process sandbox the worker
measures the child's folder as it runs and ends the child past the budget.

Every temporary folder and cgroup made here (and the batch's staging folder) carries its
owner's pid and start time in its name, so ``remove_leftovers`` can remove those whose
owner is gone (a killed batch or shard), and only those.
"""

from __future__ import annotations

import ctypes
import functools
import json
import logging
import os
import re
import select
import shutil
import signal
import site
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from grader.sandbox import folders, landlock, libraries
from grader.seam import registry

logger = logging.getLogger("grader.sandbox")

GRADER_DIR = Path(__file__).resolve().parents[1]  # the grader package
# What the worker imports, relative to the grader package: the calls on student objects (the
# exercise's operations, found through its declaration) and the sandbox's own modules. Nothing
# else of the repository enters the sandbox.
WORKER_MODULES = (
    "__init__.py", "student_clock.py", "feedback/__init__.py", "feedback/errors.py",
    "reading/__init__.py", "reading/loading.py", "reading/parser_limits.py", "reading/state_kept.py",
    "seam/__init__.py", "seam/contract_errors.py", "seam/declaration.py", "seam/registry.py",
    "sandbox/__init__.py", "sandbox/worker.py", "sandbox/wire.py", "sandbox/landlock.py", "sandbox/folders.py",
    "sandbox/libraries.py",
    *registry.worker_modules(),
)
SANDBOX_GRADER_ROOT = "/opt/mha-worker"


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 2 * 1024**3  # address space a submission may add on top of torch
    cpu_seconds: int = 120  # per submission (the child lives for one submission)
    file_bytes: int = 16 * 1024**2
    # All the files a submission may write: under bwrap, /tmp (3/4 of it) and /dev/shm (1/4)
    # are tmpfs of that size; in the plain-process sandbox, the worker's budget for its folder.
    disk_bytes: int = 128 * 1024**2
    disk_files: int = 10_000  # files and folders, plain-process sandbox (tmpfs has its own cap)
    processes: int | None = 64  # RLIMIT_NPROC: None where a pids cgroup caps the worker instead (ProcessCountGroup)
    pid_namespace: bool = False
    # Plain-process sandbox with Landlock: all a child may read (besides its own folder).
    landlock_readable: tuple[str, ...] = ()


def bwrap_refusal() -> str:
    """Why bubblewrap cannot sandbox here ("" when it can): not installed, or what it said when
    it tried (inside a container: "Creating new namespace failed: Operation not permitted")."""
    found = shutil.which("bwrap")
    if found is None:
        return "bubblewrap (bwrap) is not installed"
    return _bwrap_probe(found)


@functools.cache
def _bwrap_probe(bwrap: str) -> str:
    """What one sandbox made by ``bwrap`` said: asked once per process and program (a batch shard
    resolves the sandbox for each of its sessions; the machine does not change in between)."""
    probe = subprocess.run(
        [bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
        capture_output=True,
        timeout=30,
    )
    if probe.returncode == 0:
        return ""
    said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
    first_sentence = said[-1].split(". ")[0][:200] if said else f"exit status {probe.returncode}"
    return f"bubblewrap refused: {first_sentence}"


def bwrap_available() -> bool:
    """True when bubblewrap is installed and can actually create a sandbox here."""
    return not bwrap_refusal()


def resolve_sandbox(requested: str) -> tuple[str, str]:
    """The sandbox to use and, when it differs from the one asked for or is weaker than
    it should be, why."""
    reason = bwrap_refusal() if requested != "process" else ""
    if requested != "process" and not reason:
        return "bwrap", ""
    if requested == "bwrap":
        raise RuntimeError(f"--sandbox bwrap was requested, but {reason}")
    notes = [f"falling back to the plain-process sandbox: {reason}"] if requested == "auto" else []
    if landlock.abi_version() < 1:
        notes.append(
            "Landlock is not available either (kernel without it, or a container refusing it): "
            "student code can read whatever the user nobody can, and use the network"
        )
    if not libraries.children_import_alike():
        # Said, not mended: a file that imports matplotlib then scores as if it were broken.
        notes.append(
            "student code runs as the user nobody, who cannot read this Python's files (a folder only root may "
            "enter): a submission can import only what the worker imported (torch, numpy, the standard modules "
            "it lists), and one that imports another library (matplotlib, say) fails to import; run the grader "
            "as an ordinary user, with bubblewrap, or with a Python anyone can read"
        )
    return "process", "; ".join(notes)


def landlock_readable(worker_modules: Path) -> tuple[str, ...]:
    """What a child in the plain-process sandbox may read: the system's libraries, Python
    with its packages, the worker's modules. Never a folder that holds the repository
    (a Python installed at /, say), whose solutions/ and grader/hidden/ must stay unread."""
    python = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    python |= {path for path in sysconfig.get_paths().values()}
    system = {"/usr", "/bin", "/lib", "/lib32", "/lib64", "/etc", "/dev/null", "/dev/zero", "/dev/urandom"}
    candidates = {*python, *(os.path.realpath(path) for path in python), *system, str(worker_modules)}
    repository = GRADER_DIR.parent.resolve()
    return tuple(sorted(path for path in candidates if not repository.is_relative_to(path)))


class WorkerProcess:
    """One started worker: its process, its control socket, its private module folder."""

    def __init__(self, sandbox: str, limits: Limits) -> None:
        self.sandbox = sandbox
        self.module_folder = owned_temporary_folder("mha-worker-")
        self.module_folder.chmod(0o755)  # readable by the unprivileged user the children become
        package = self.module_folder / "grader"
        for name in WORKER_MODULES:
            (package / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(GRADER_DIR / name, package / name)
        self.process_group = ProcessCountGroup.create(limits.processes)
        if self.process_group is not None:
            # The cgroup caps this worker's processes alone. RLIMIT_NPROC would count every process
            # of the user the children become ("nobody") on the whole machine: another run's fork
            # bomb beside this one would leave this run's students no fork at all.
            limits = replace(limits, processes=None)
        if sandbox == "bwrap":
            limits = replace(limits, pid_namespace=True)
        else:
            if landlock.abi_version() >= 1:
                limits = replace(limits, landlock_readable=landlock_readable(self.module_folder))
            # The worker's scratch space lives in its own folder, removed with it: nothing
            # a student wrote stays behind in the machine's /tmp after the batch.
            (self.module_folder / "tmp").mkdir(mode=0o711)
            if self._adopt_a_warm_worker(limits):
                return
        self.control, worker_end = socket.socketpair()
        if sandbox == "bwrap":
            command = self._bwrap_command(worker_end.fileno(), limits)
            pythonpath = SANDBOX_GRADER_ROOT
        else:
            command = [sys.executable, "-m", "grader.sandbox.worker", str(worker_end.fileno()), json.dumps(asdict(limits))]
            pythonpath = str(self.module_folder)
        log = open(self.module_folder / "worker.log", "wb")  # noqa: SIM115  closed right after the start
        self.process = subprocess.Popen(
            command,
            pass_fds=[worker_end.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,  # why a start failed, if it does
            cwd=self.module_folder,
            env=self._environment(pythonpath, str(self.module_folder / "tmp") if sandbox != "bwrap" else "/tmp"),
            start_new_session=True,  # its own process group: one killpg ends it and all it started
            preexec_fn=self.process_group.join if self.process_group else None,
        )
        log.close()
        worker_end.close()

    @staticmethod
    def _environment(pythonpath: str, temporary: str) -> dict[str, str]:
        """The worker's whole environment, exec'd or warm: nothing of the grader's."""
        # The exercise chosen (grader/seam/registry.py): the worker imports its operations; the
        # worker's child, which runs the student's code, gets none of this environment.
        return {"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath, "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp", "TMPDIR": temporary,
                registry.CHOSEN: registry.exercise().name}

    def _adopt_a_warm_worker(self, limits: Limits) -> bool:
        """Start the worker this process forked warm (fork_warm_worker), if it did; False when
        there is none, or it died waiting: an exec'd worker then, as without it."""
        if not _WARM_WORKERS:
            return False
        from grader.sandbox import wire  # here: it imports torch, which the batch itself never needs

        warm = _WARM_WORKERS.pop()
        try:
            wire.send(warm.control, {
                "folder": str(self.module_folder), "limits": json.dumps(asdict(limits)),
                "environment": self._environment(str(self.module_folder), str(self.module_folder / "tmp")),
                "cgroup_procs": str(self.process_group.folder / "cgroup.procs") if self.process_group else "",
            })
        except wire.ChannelClosed:
            warm.kill()
            return False
        self.process, self.control = warm, warm.control
        return True

    def _bwrap_command(self, fd: int, limits: Limits) -> list[str]:
        # --as-pid-1: the worker is init of its pid namespace, and the kernel ignores a
        # SIGKILL sent to init from inside, so a child cannot kill the worker it runs under.
        command = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL"]
        command += ["--uid", "65534", "--gid", "65534"]
        # The private /tmp first: Python itself may live under /tmp (a venv in a temporary
        # clone), and its binding, made after, must land on top of the empty tmpfs.
        # Both tmpfs have a fixed size: what a submission writes there is memory, and must not
        # grow past its share (Limits.disk_bytes) however many 16 MB files it writes.
        tmp_bytes = limits.disk_bytes * 3 // 4
        shm_bytes = limits.disk_bytes - tmp_bytes
        command += ["--proc", "/proc", "--dev", "/dev", "--size", str(shm_bytes), "--tmpfs", "/dev/shm"]
        command += ["--size", str(tmp_bytes), "--tmpfs", "/tmp", "--chdir", "/"]
        for path in ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/etc/alternatives"):
            if os.path.exists(path):
                command += ["--ro-bind", path, path]
        for prefix in sorted({sys.base_prefix, sys.prefix, os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}):
            if not prefix.startswith("/usr"):
                command += ["--ro-bind", prefix, prefix]
        command += ["--ro-bind", str(self.module_folder), SANDBOX_GRADER_ROOT]
        command += ["--remount-ro", "/"]  # only /tmp (and /dev/shm) stay writable, and both are private
        command += [sys.executable, "-m", "grader.sandbox.worker", str(fd), json.dumps(asdict(limits))]
        return command

    def kill(self) -> None:
        """SIGKILL the worker's whole process group, then forget it."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.control.close()
        if self.process_group:
            self.process_group.remove()  # nothing of the worker's still runs, nor writes in its folder
        # However deep the tree a student left in it: a folder that stays is said, never
        # raised (the next student must be graded); the next batch's start removes it.
        left_behind = folders.remove_quietly(self.module_folder)
        if left_behind:
            logger.warning("the worker's folder %s could not be removed (%s); the next batch removes it", self.module_folder, left_behind)


# --- the warm worker: one torch import for a shard and its worker -----------------------------
# Importing torch costs some 1.7 CPU seconds; a shard of one submission (a platform's run: Gradescope,
# PrairieLearn) paid it twice, once in the shard and once in the worker it exec'd. In the
# plain-process sandbox a shard started with ``--warm-worker`` (start_grading_shard) forks its
# worker right after importing torch, before it has read anything: its arguments and environment
# come afterwards, on its standard input. So the worker holds what an exec'd one holds (torch,
# the worker's modules, a clean environment, even in /proc/self/environ) and nothing of the
# shard's work (tests/test_warm_worker.py); the first WorkerProcess adopts it. Under bwrap the
# worker must start inside its namespaces, so it is exec'd there as before.
_WARM_WORKERS: list[WarmWorker] = []
WARM_WORKER_FLAG = "--warm-worker"
# The environment a shard starts in when it forks a warm worker: where programs and Python's
# packages are, the locale; never the batch's credentials (CI tokens and the like).
# And the exercise chosen: the warm worker imports its operations before it is started.
START_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "PYTHONHOME", "TMPDIR", "TZ", registry.CHOSEN)


class WarmWorker:
    """A worker forked by this process, waiting for its start (``worker.wait_to_be_started``);
    the part of ``subprocess.Popen`` WorkerProcess uses."""

    def __init__(self, pid: int, control: socket.socket) -> None:
        self.pid, self.control, self.returncode = pid, control, None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                finished, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                finished, status = self.pid, 0
            if finished:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.poll() is None:
            try:
                exited = os.pidfd_open(self.pid)  # readable the moment the worker exits
            except ProcessLookupError:
                exited = None
            if exited is not None:
                try:
                    select.select([exited], [], [], timeout)
                finally:
                    os.close(exited)
            if self.poll() is None:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
        return self.returncode

    def kill(self) -> None:
        # Its group, and itself: just forked, it may not have made its group yet.
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.wait()
        self.control.close()


def fork_warm_worker() -> None:
    """Fork the worker now, before this process learns anything of its work; it waits for the
    first WorkerProcess of the plain-process sandbox to start it."""
    from grader.sandbox import worker

    worker.warm_up()  # torch imported and exercised, for both: the fork shares it
    ours, its = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.setsid()  # its own process group, as start_new_session gives an exec'd worker
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):  # standard input still holds the shard's work: never read here
                os.dup2(devnull, fd)
            os.closerange(3, its.fileno())
            os.closerange(its.fileno() + 1, os.sysconf("SC_OPEN_MAX") if os.sysconf("SC_OPEN_MAX") > 0 else 65536)
            worker.wait_to_be_started(its)
        finally:
            os._exit(70)
    its.close()
    _WARM_WORKERS.append(WarmWorker(pid, ours))


def discard_warm_workers() -> None:
    """End a warm worker no WorkerProcess adopted (a shard that graded nothing in this sandbox)."""
    while _WARM_WORKERS:
        _WARM_WORKERS.pop().kill()


# Where a pids cgroup is made: cgroup v1's pids controller, else the v2 hierarchy.
CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))


class ProcessCountGroup:
    """A pids cgroup capping how many processes the worker and its children may have.

    RLIMIT_NPROC counts processes per user on the host, and a sandbox started by root is
    root on the host, which the kernel exempts: a fork bomb there would meet no limit.
    Where the grader runs as root and the pids controller is mounted (cgroup v1, or v2 with
    the controller enabled), the worker joins a cgroup of its own instead.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def create(cls, limit: int) -> ProcessCountGroup | None:
        if os.geteuid() != 0:
            return None  # an unprivileged user: RLIMIT_NPROC applies and suffices
        for root in CGROUP_ROOTS:
            if not (root / "cgroup.procs").exists():
                continue
            folder = root / f"mha-worker-{owner_tag()}-{os.urandom(4).hex()}"
            try:
                folder.mkdir()
                (folder / "pids.max").write_text(str(limit))
                return cls(folder)
            except OSError:  # no pids controller there, or not ours to use
                try:
                    folder.rmdir()
                except OSError:
                    pass
        return None

    def join(self) -> None:
        """Run in the new process before it executes the worker (preexec_fn)."""
        (self.folder / "cgroup.procs").write_text(str(os.getpid()))

    def remove(self) -> None:
        """Kill whatever is still in the group (nothing escapes a cgroup), then delete it."""
        for _ in range(100):
            try:
                members = [int(pid) for pid in (self.folder / "cgroup.procs").read_text().split()]
            except OSError:
                return
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                self.folder.rmdir()  # succeeds once every process in it has exited
                return
            except OSError:
                time.sleep(0.02)


PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


def start_grading_shard(manifest: Path, pytest_options: list[str], log_path: Path, warm_worker: bool = False) -> subprocess.Popen:
    """A shard of the batch (grader/batch/shard.py: pytest sessions over the students in
    ``manifest``), its output going to ``log_path``. It gets SIGTERM the moment the batch
    ends, however the batch ends (SIGKILL included): the kernel's parent-death signal.
    ``warm_worker`` (the plain-process sandbox): it forks its worker first (fork_warm_worker)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    batch = os.getpid()

    def end_with_the_batch() -> None:  # in the new process, before it runs the shard
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != batch:  # the batch died before the line above: nobody would tell us
            os.kill(os.getpid(), signal.SIGTERM)

    environment = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    arguments = [str(manifest), *pytest_options]
    with open(log_path, "ab") as log:  # the child keeps its own copy of the descriptor
        shard = subprocess.Popen(
            [sys.executable, "-m", "grader.batch.shard", *([WARM_WORKER_FLAG] if warm_worker else arguments)],
            stdin=subprocess.PIPE if warm_worker else subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=GRADER_DIR.parent,
            env={name: environment[name] for name in START_ENVIRONMENT if name in environment} if warm_worker else environment,
            start_new_session=True,  # Ctrl-C reaches the batch, which then stops the shards itself
            preexec_fn=end_with_the_batch,
        )
    if warm_worker:
        # The shard reads this once its worker is forked, after its torch import: written by a
        # thread, so that a large environment (more than a pipe holds) never stalls the batch.
        handed = json.dumps({"arguments": arguments, "environment": environment}).encode("utf-8")
        threading.Thread(target=_hand_over, args=(shard.stdin, handed), daemon=True).start()
    return shard


def _hand_over(pipe, data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except OSError:  # the shard died at its start: its exit status says so
        pass


def stop(started: list[subprocess.Popen], grace_seconds: float = 5.0) -> None:
    """End processes and everything they started (their process groups): first as Ctrl-C
    would, so that a grading shard ends its session and removes its worker's folder, then,
    whatever still runs after ``grace_seconds``, by force."""
    _signal_groups(started, signal.SIGINT)
    deadline = time.monotonic() + grace_seconds
    try:
        for process in started:
            process.wait(timeout=max(deadline - time.monotonic(), 0))
    except (subprocess.TimeoutExpired, KeyboardInterrupt):  # out of time, or Ctrl-C again
        pass
    _signal_groups([process for process in started if process.poll() is None], signal.SIGKILL)
    for process in started:
        process.wait()


def _signal_groups(started: list[subprocess.Popen], sent: signal.Signals) -> None:
    for process in started:
        try:
            os.killpg(process.pid, sent)
        except (ProcessLookupError, PermissionError):
            pass


# --- leftovers of processes that ended without cleaning up -----------------------------

OWNED_NAME = re.compile(r"^mha-(?:staging|worker)-(?P<pid>\d+)\.(?P<start>\d+)(?:\.(?P<namespace>\d+))?-")
OWNED_GROUP = re.compile(r"^mha-worker-(?P<pid>\d+)(?:\.(?P<start>\d+))?(?:\.(?P<namespace>\d+))?-[0-9a-f]{8}$")


def owner_tag(pid: int | None = None) -> str:
    """``<pid>.<start time>.<pid namespace>`` of a process: unlike a pid alone, never the tag of
    a later process, nor of a process in another pid namespace sharing the temporary folder
    (a grader in a container sees itself as pid 1; so does the machine's init)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{_start_time(pid)}.{_pid_namespace()}"


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _owner_gone(owner: re.Match) -> bool:
    """Whether the process a name was tagged with is gone. A tag from another pid namespace
    cannot be judged from here: its owner is taken to be alive, and the folder left alone."""
    if owner["namespace"] and int(owner["namespace"]) != _pid_namespace():
        return False
    if owner["start"]:
        return not _owner_alive(int(owner["pid"]), int(owner["start"]))
    return _start_time(int(owner["pid"])) is None


def _start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])  # field 22, counted after the command name
    except (OSError, IndexError, ValueError):
        return None


def _owner_alive(pid: int, start: int) -> bool:
    return _start_time(pid) == start


def owned_temporary_folder(prefix: str) -> Path:
    """``tempfile.mkdtemp`` (mode 0o700) named ``<prefix><pid>.<start time>-XXXXXXXX``."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{owner_tag()}-"))


class Leftovers(list):
    """The paths removed; ``kept``: "<path>: why it stayed" for each that could not be."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[str] = []


def remove_leftovers() -> Leftovers:
    """Remove the staging and worker folders in the temporary folder, and the pids cgroups,
    whose owning process is gone; say what was removed and what could not be.

    Only ours: names this module gives (with an owner tag), folders (never links) owned by
    this user. A folder or cgroup whose owner still runs (another batch) is left alone.
    Never raises: what a student left in a killed run's folder must not stop the next run.
    """
    leftovers = Leftovers()
    temporary = Path(tempfile.gettempdir())
    try:
        candidates = [path for path in temporary.iterdir() if OWNED_NAME.match(path.name)]
    except OSError:
        candidates = []
    for path in candidates:
        owner = OWNED_NAME.match(path.name)
        try:
            info = path.lstat()
        except OSError:
            continue
        if not (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()):
            continue
        if not _owner_gone(owner):
            continue
        left_behind = folders.remove_quietly(path)
        if left_behind:
            leftovers.kept.append(f"{path}: {left_behind}")
        else:
            leftovers.append(str(path))
    if os.geteuid() == 0:
        for root in CGROUP_ROOTS:
            try:
                groups = [path for path in root.iterdir() if path.name.startswith("mha-worker-")]
            except OSError:
                continue
            for group in groups:
                owner = OWNED_GROUP.match(group.name)
                if owner is not None and _owner_gone(owner):
                    ProcessCountGroup(group).remove()
                    leftovers.append(str(group))
    return leftovers
