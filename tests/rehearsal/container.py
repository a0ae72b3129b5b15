#!/usr/bin/python3
"""Run one command in a root file system the way a platform's Docker container would run it.

    /usr/bin/python3 tests/rehearsal/container.py --root BASE [--layer DIR ...] [--upper DIR]
        [--cpus 0.5] [--memory 768M] [--pids 1024] [--no-network] [--bind HOST:INSIDE ...]
        [--env NAME=VALUE ...] [--workdir DIR] -- COMMAND...

The root file system is an overlay, as an image's layers are: BASE at the bottom, each
``--layer`` above it (read-only), and a writable layer on top: ``--upper DIR`` keeps what
the command wrote (a build step: the next image layer), otherwise it is thrown away with the
container (a grading job: every submission starts from the same image).

Docker is not available on these machines, so this reproduces what a container of the
platforms' defaults is made of, with the kernel's own pieces (root only):

* cgroups v1 (the cpu, memory and pids controllers): CPU quota per 100 ms period, a memory
  limit with no swap, a process limit. The cgroup is removed afterwards, and everything
  left in it killed.
* new mount, pid, ipc and uts namespaces, and a new network namespace with only loopback
  when ``--no-network`` (Docker's ``NetworkDisabled``); /proc, /sys (read-only) and /dev
  mounted inside ROOT, which becomes the root (chroot).
* Docker's default capability set (moby/moby, oci/caps/defaults.go: DefaultCapabilities):
  everything else is dropped from the bounding set, CAP_SYS_ADMIN included.
* Docker's default seccomp profile, read from ``docker-default-seccomp.json`` beside this
  file: a copy of moby/profiles seccomp/default.json at commit
  cd3bed8061c7b7378b61fc6827c7885779417a75 (Apache-2.0), interpreted here for x86-64 and the
  capabilities above: every system call not listed fails with EPERM; without CAP_SYS_ADMIN,
  unshare, setns, mount and clone with namespace flags fail (so bubblewrap cannot start),
  clone3 fails with ENOSYS (glibc then falls back to clone), and the Landlock calls are
  allowed.

What it does not reproduce: AppArmor's docker-default profile (this kernel has no AppArmor),
overlayfs layers, Docker's disk quota, the exact /dev of a container (the host's /dev is
bound read-only instead).

Needs Debian's python3-seccomp, which is why this runs with the system's /usr/bin/python3 and
imports nothing but the standard library and seccomp. Exits with COMMAND's status, 137 when
the memory limit killed it.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

PROFILE = Path(__file__).with_name("docker-default-seccomp.json")
CGROUPS = Path("/sys/fs/cgroup")
CPU_PERIOD_US = 100_000  # Docker's default CpuPeriod, and PrairieLearn's (apps/grader-host/src/lib/config.ts)

# moby/moby oci/caps/defaults.go, DefaultCapabilities (capability numbers from linux/capability.h).
DOCKER_CAPABILITIES = {
    "CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_FOWNER": 3, "CAP_FSETID": 4, "CAP_KILL": 5,
    "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8, "CAP_NET_BIND_SERVICE": 10,
    "CAP_NET_RAW": 13, "CAP_SYS_CHROOT": 18, "CAP_MKNOD": 27, "CAP_AUDIT_WRITE": 29, "CAP_SETFCAP": 31,
}
CAP_LAST = 40  # CAP_CHECKPOINT_RESTORE, the last one Linux 6.x defines

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x4000000, 0x8000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
PR_CAPBSET_DROP = 24

libc = ctypes.CDLL(None, use_errno=True)


def checked(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def mount(source: str, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    checked(libc.mount(source.encode(), target.encode(), kind.encode() if kind else None, flags,
                       data.encode() if data else None), f"mount {target}")


# --- cgroups v1 ------------------------------------------------------------------------------


class Cgroup:
    """One cgroup per run in each of the cpu, memory and pids hierarchies."""

    def __init__(self, cpus: float | None, memory: int | None, pids: int | None) -> None:
        name = f"platform-rehearsal-{uuid.uuid4().hex[:12]}"
        self.folders = {controller: CGROUPS / controller / name for controller in ("cpu", "cpuacct", "memory", "pids")}
        for folder in self.folders.values():
            folder.mkdir()
        if cpus:
            (self.folders["cpu"] / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (self.folders["cpu"] / "cpu.cfs_quota_us").write_text(str(int(cpus * CPU_PERIOD_US)))
        if memory:
            (self.folders["memory"] / "memory.limit_in_bytes").write_text(str(memory))
            swap = self.folders["memory"] / "memory.memsw.limit_in_bytes"
            if swap.exists():  # MemorySwap = Memory: no swap (only where swap accounting is on)
                swap.write_text(str(memory))
        if pids:
            (self.folders["pids"] / "pids.max").write_text(str(pids))

    def join(self, pid: int) -> None:
        for folder in self.folders.values():
            (folder / "cgroup.procs").write_text(str(pid))

    def out_of_memory_kills(self) -> int:
        for line in (self.folders["memory"] / "memory.oom_control").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def cpu_seconds(self) -> float:
        return int((self.folders["cpuacct"] / "cpuacct.usage").read_text()) / 1e9

    def times_throttled(self) -> int:
        stat = dict(line.split() for line in (self.folders["cpu"] / "cpu.stat").read_text().splitlines())
        return int(stat.get("nr_throttled", 0))

    def peak_memory(self) -> int:
        return int((self.folders["memory"] / "memory.max_usage_in_bytes").read_text())

    def kill_all(self) -> None:
        for _ in range(50):
            pids = [int(p) for p in (self.folders["pids"] / "cgroup.procs").read_text().split()]
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)

    def remove(self) -> None:
        self.kill_all()
        for folder in self.folders.values():
            try:
                folder.rmdir()
            except OSError:
                pass


# --- seccomp: Docker's default profile -------------------------------------------------------


def docker_seccomp_filter(capabilities: set[str]):
    """The filter, built before the chroot (the module and the profile live outside the root)."""
    import seccomp  # Debian's python3-seccomp

    profile = json.loads(PROFILE.read_text())
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    kernel = tuple(int(part) for part in platform.release().split("-")[0].split(".")[:2])
    operators = {
        "SCMP_CMP_EQ": seccomp.EQ, "SCMP_CMP_NE": seccomp.NE, "SCMP_CMP_LT": seccomp.LT, "SCMP_CMP_LE": seccomp.LE,
        "SCMP_CMP_GT": seccomp.GT, "SCMP_CMP_GE": seccomp.GE, "SCMP_CMP_MASKED_EQ": seccomp.MASKED_EQ,
    }

    def applies(entry: dict) -> bool:
        includes, excludes = entry.get("includes") or {}, entry.get("excludes") or {}
        if includes.get("arches") and arch not in includes["arches"]:
            return False
        if includes.get("caps") and not set(includes["caps"]) <= capabilities:
            return False
        if includes.get("minKernel"):
            if kernel < tuple(int(part) for part in includes["minKernel"].split(".")[:2]):
                return False
        if excludes.get("arches") and arch in excludes["arches"]:
            return False
        if excludes.get("caps") and set(excludes["caps"]) & capabilities:
            return False
        return True

    default_errno = profile.get("defaultErrnoRet", 1)
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO", profile["defaultAction"]
    syscall_filter = seccomp.SyscallFilter(defaction=seccomp.ERRNO(default_errno))
    # As runc does: no_new_privs is not set (root may still gain privileges by exec).
    syscall_filter.set_attr(seccomp.Attr.CTL_NNP, 0)
    for entry in profile["syscalls"]:
        if not applies(entry):
            continue
        action = {
            "SCMP_ACT_ALLOW": seccomp.ALLOW,
            "SCMP_ACT_ERRNO": seccomp.ERRNO(entry.get("errnoRet", default_errno)),
        }[entry["action"]]
        arguments = [
            seccomp.Arg(a["index"], operators[a["op"]], a["value"], *((a.get("valueTwo", 0),) if a["op"] == "SCMP_CMP_MASKED_EQ" else ()))
            for a in entry.get("args") or ()
        ]
        for name in entry["names"]:
            try:
                syscall_filter.add_rule(action, name, *arguments)
            except (RuntimeError, ValueError, OSError):
                pass  # a name this architecture does not have (e.g. 32-bit calls)
    return syscall_filter


# --- the container ---------------------------------------------------------------------------


def overlay(layers: list[Path], upper: Path, scratch: Path) -> Path:
    """Mount ``layers`` (bottom first) under the writable ``upper``; return the merged root."""
    work, merged = scratch / "overlay-work", scratch / "root"
    work.mkdir()
    merged.mkdir()
    lower = ":".join(str(layer) for layer in reversed(layers))  # overlayfs lists the top first
    mount("overlay", str(merged), "overlay", 0, f"lowerdir={lower},upperdir={upper},workdir={work}")
    return merged


def enter(root: Path, network: bool, binds: list[str]) -> None:
    """Mounts and chroot, in the child (pid 1 of its pid namespace, in the new mount namespace)."""
    mount("proc", str(root / "proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount("sysfs", str(root / "sys"), "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount("/dev", str(root / "dev"), None, MS_BIND | MS_REC)
    (root / "dev" / "shm").mkdir(exist_ok=True)
    mount("shm", str(root / "dev" / "shm"), "tmpfs", MS_NOSUID | MS_NODEV, "size=65536k")  # Docker's 64 MB /dev/shm
    for bind in binds:  # as `docker run -v SOURCE:INSIDE[:ro]`
        source, inside, *options = bind.split(":")
        target = root / inside.lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        mount(source, str(target), None, MS_BIND | MS_REC)
        if options == ["ro"]:
            mount(source, str(target), None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    if not network:
        os.system("ip link set lo up")  # Docker's network "none" keeps loopback
    os.chroot(root)
    os.chdir("/")
    for capability in range(CAP_LAST + 1):
        if capability not in DOCKER_CAPABILITIES.values():
            libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)  # EINVAL past the kernel's last: harmless


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True, help="the bottom layer (a base system)")
    parser.add_argument("--layer", type=Path, action="append", default=[], help="a read-only layer above it")
    parser.add_argument("--upper", type=Path, help="the writable layer, kept (default: a temporary one)")
    parser.add_argument("--no-overlay", action="store_true",
                        help="run in ROOT itself, its writes kept (a test's own root: ROOT may be /)")
    parser.add_argument("--cpus", type=float)
    parser.add_argument("--memory", type=parse_size)
    parser.add_argument("--pids", type=int)
    parser.add_argument("--no-network", action="store_true")
    parser.add_argument("--bind", action="append", default=[], help="HOST:INSIDE[:ro]")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE")
    parser.add_argument("--workdir", default="/")
    parser.add_argument("--timeout", type=float, help="kill the container after this many seconds")
    parser.add_argument("--report", type=Path, help="write the peak memory and OOM kills here (JSON)")
    parser.add_argument("command", nargs="+")
    arguments = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("run as root: cgroups, namespaces and chroot need it")

    if arguments.no_overlay and (arguments.layer or arguments.upper):
        parser.error("--no-overlay runs in ROOT itself: no --layer or --upper")
    scratch = None if arguments.no_overlay else Path(tempfile.mkdtemp(prefix="container-", dir=arguments.root.parent))
    upper = arguments.upper or (scratch / "upper" if scratch else None)
    if upper:
        upper.mkdir(parents=True, exist_ok=True)
    cgroup = Cgroup(arguments.cpus, arguments.memory, arguments.pids)
    try:
        # This process stays in the machine's namespaces and outside the cgroup: the container
        # is its child, so every mount dies with the container's mount namespace, and nothing
        # below ever deletes through one.
        container = os.fork()
        if container == 0:
            os._exit(run_container(arguments, cgroup, upper, scratch))
        code = wait(container, arguments.timeout, cgroup)
        if arguments.report:
            arguments.report.write_text(json.dumps({
                "peak_memory_bytes": cgroup.peak_memory(), "oom_kills": cgroup.out_of_memory_kills(), "status": code,
                "cpu_seconds": cgroup.cpu_seconds(), "times_throttled": cgroup.times_throttled(),
            }))
        return code
    finally:
        cgroup.remove()
        if scratch:
            remove_scratch(scratch)


def run_container(arguments: argparse.Namespace, cgroup: Cgroup, upper: Path | None, scratch: Path | None) -> int:
    """In the forked child: join the cgroup, new namespaces, then pid 1 of them runs the command."""
    try:
        cgroup.join(os.getpid())  # everything the command starts inherits it
        flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | (CLONE_NEWNET if arguments.no_network else 0)
        checked(libc.unshare(flags), "unshare")
        syscall_filter = docker_seccomp_filter(set(DOCKER_CAPABILITIES))
        init = os.fork()  # the first child in the new pid namespace is its pid 1
        if init == 0:
            mount("none", "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here reaches the machine
            root = arguments.root if arguments.no_overlay else overlay([arguments.root, *arguments.layer], upper, scratch)
            enter(root, not arguments.no_network, arguments.bind)
            os.chdir(arguments.workdir)
            syscall_filter.load()
            environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}
            environment |= dict(item.split("=", 1) for item in arguments.env)
            os.execvpe(arguments.command[0], arguments.command, environment)
        _, status = os.waitpid(init, 0)
        return exit_code(status)
    except BaseException as error:  # noqa: BLE001 - a forked child never returns into the caller's code
        print(f"container: {error}", file=sys.stderr)
        return 127


def exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell says


def wait(container: int, timeout: float | None, cgroup: Cgroup) -> int:
    """The container's exit status; past ``timeout`` seconds everything in it is killed (137)."""
    deadline = time.monotonic() + timeout if timeout else None
    while True:
        pid, status = os.waitpid(container, os.WNOHANG)
        if pid:
            return exit_code(status)
        if deadline and time.monotonic() > deadline:  # the platform's own job timeout
            print(f"container: killed after its timeout of {timeout:g} s", file=sys.stderr)
            cgroup.kill_all()
            return exit_code(os.waitpid(container, 0)[1])
        time.sleep(0.2)


def remove_scratch(scratch: Path) -> None:
    """Delete the container's scratch folder, unless anything is still mounted under it."""
    mounted = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    if any(point == str(scratch) or point.startswith(f"{scratch}/") for point in mounted):
        print(f"container: {scratch} still has mounts; left in place", file=sys.stderr)
        return
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
