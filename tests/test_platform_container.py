"""PrairieLearn's entrypoint inside a container made as PrairieLearn's grader host makes them.

The other platform tests take bubblewrap away by leaving it off PATH. Here it is on PATH and
the kernel refuses it, as inside a Docker container: ``tests/rehearsal/container.py`` (the
rehearsal's container: Docker's default capabilities and seccomp profile, new namespaces,
no network, PrairieLearn's 0.9 CPU, 2 GiB and 1,024 processes) runs the entrypoint with this
machine's root file system, and the grader must notice the refusal, grade in the
plain-process sandbox, and say why. ``make rehearse`` does the same on a fresh root with the
image built from the Dockerfile's own steps.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grading import REPO_ROOT
from grader.platforms import prairielearn
from grader.sandbox import landlock

CONTAINER = REPO_ROOT / "tests" / "rehearsal" / "container.py"
SYSTEM_PYTHON = "/usr/bin/python3"


def can_make_containers() -> str:
    """Why this machine cannot run the rehearsal's container ("" when it can)."""
    if os.geteuid() != 0:
        return "needs root (cgroups, namespaces)"
    if not all(Path("/sys/fs/cgroup", c, "cgroup.procs").exists() for c in ("cpu", "cpuacct", "memory", "pids")):
        return "needs cgroup v1's cpu, cpuacct, memory and pids controllers"
    if subprocess.run([SYSTEM_PYTHON, "-c", "import seccomp"], capture_output=True).returncode != 0:
        return "needs Debian's python3-seccomp"
    if shutil.which("bwrap") is None:
        return "needs bubblewrap installed, to see it refused"
    return ""


pytestmark = [pytest.mark.platform, pytest.mark.skipif(bool(can_make_containers()), reason=can_make_containers() or "ok")]


def test_inside_a_docker_like_container_bubblewrap_is_refused_and_the_fallback_grades_and_says_why(tmp_path, request):
    course = prairielearn.write_question(tmp_path / "course")
    job = tmp_path / "grade"
    shutil.copytree(course / "tests", job / "tests")
    (job / "student").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "solutions" / "multi_head_attention.py", job / "student" / "multi_head_attention.py")
    # A temporary folder of the container's own, as a container's /tmp is (traversable, as /tmp
    # is, for the sandbox's unprivileged user).
    temporary = Path(tempfile.mkdtemp(prefix="container-tmp-"))
    temporary.chmod(0o711)
    request.addfinalizer(lambda: shutil.rmtree(temporary, ignore_errors=True))
    environment = {
        "PRAIRIELEARN_ROOT": str(job), "PYTHON": sys.executable, "TMPDIR": str(temporary),
        "GRADER_CALL_TIMEOUT": "30",  # a loaded machine, 0.9 CPU: no call of the solution may time out
    }
    completed = subprocess.run(
        [SYSTEM_PYTHON, str(CONTAINER), "--root", "/", "--no-overlay", "--cpus", "0.9", "--memory", "2G",
         "--pids", "1024", "--no-network", "--report", str(tmp_path / "container.json"),
         *(item for name, value in environment.items() for item in ("--env", f"{name}={value}")),
         "--", str(job / "tests" / "run_grader")],
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    log = completed.stdout + completed.stderr
    assert completed.returncode == 0, log[-4000:]
    results = json.loads((job / "results" / "results.json").read_text())
    assert results["gradable"] is True and results["score"] == 1.0, log[-4000:]
    # The kernel's refusal, in the grading job's log for course staff, not a guess.
    assert "Sandbox: process (NOT bubblewrap): falling back to the plain-process sandbox: bubblewrap refused: bwrap: " in log
    assert ("Landlock (ABI" in log) == (landlock.abi_version() >= 1)
    report = json.loads((tmp_path / "container.json").read_text())
    assert report["oom_kills"] == 0 and report["peak_memory_bytes"] < 2 * 2**30


def test_the_container_refuses_new_namespaces_and_keeps_dockers_capabilities(tmp_path):
    # What the test above stands on: the container is as strict as Docker's defaults.
    script = (
        "grep CapBnd /proc/self/status; "
        "unshare --user true && echo UNSHARE-ALLOWED; "
        "bwrap --ro-bind / / true && echo BWRAP-ALLOWED; "
        "echo done"
    )
    completed = subprocess.run(
        [SYSTEM_PYTHON, str(CONTAINER), "--root", "/", "--no-overlay", "--no-network", "--", "/bin/sh", "-c", script],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0 and "done" in completed.stdout, completed.stdout + completed.stderr
    assert "CapBnd:\t00000000a80425fb" in completed.stdout  # Docker's default set, CAP_SYS_ADMIN not in it
    assert "UNSHARE-ALLOWED" not in completed.stdout and "BWRAP-ALLOWED" not in completed.stdout
