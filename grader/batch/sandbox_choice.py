"""``python -m grader sandbox``: which sandbox a batch will run student code in here, and why.

The batch decides at start-up (``processes.resolve_sandbox``, the one rule): bubblewrap when it
can create its sandbox on this machine, else the plain-process sandbox, said in ``batch.log``
and the report. This command asks the same question before any grading, so an instructor
setting up a machine learns it then, with what to do: bubblewrap is a system package, which
the grader's environment (``make .venv``, pip) cannot install. Its name is ``bubblewrap`` in
Debian and Ubuntu (packages.debian.org/bubblewrap, packages.ubuntu.com/noble/bubblewrap; the
Gradescope set-up installs it by that name, grader/platforms/gradescope.py), Fedora and openSUSE.

Exit status: 0 when a batch with this ``--sandbox`` would run (``auto`` falling back included:
said, not refused); 2 when it would refuse to (``--sandbox bwrap`` where bubblewrap cannot run).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess

from grader.sandbox import landlock, processes

INSTALL = "sudo apt-get install bubblewrap (Debian, Ubuntu; Fedora: sudo dnf install bubblewrap)"
WHAT_BWRAP_GIVES = (
    "no network, its own pid namespace, a private /tmp, the instructor's files and other students' invisible, "
    "user nobody without capabilities"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sandbox", choices=("auto", "bwrap", "process"), default="auto",
        help="the batch's --sandbox to ask about (default auto, the batch's own default)",
    )


def run(arguments: argparse.Namespace) -> int:
    try:
        sandbox, note = processes.resolve_sandbox(arguments.sandbox)
    except RuntimeError as error:  # --sandbox bwrap where it cannot run: the batch refuses too
        print(f"a batch with --sandbox bwrap would refuse to start: {error}")
        print(_advice(processes.bwrap_refusal()))
        return 2
    if sandbox == "bwrap":
        print(f"sandbox: bwrap (bubblewrap {_bwrap_version()}): it can create its sandbox here, checked just now")
        print(f"  student code runs with {WHAT_BWRAP_GIVES}")
        return 0
    why = note or "--sandbox process was asked for"
    print("sandbox: process (the plain-process sandbox), not bubblewrap")
    print(f"  why: {why}")
    abi = landlock.abi_version()
    if abi >= 1:
        print(f"  Landlock ABI {abi}: student code reads only Python and the system's libraries, and opens no TCP connection where the ABI has it (4 or later)")
    if arguments.sandbox == "auto":
        print(_advice(processes.bwrap_refusal()))
    return 0


def _advice(refusal: str) -> str:
    """What to do so that a batch here uses bubblewrap."""
    if shutil.which("bwrap") is None:
        return f"to sandbox with bubblewrap, install it: {INSTALL}; then run this again"
    return (
        f"bubblewrap is installed but cannot create its sandbox here ({refusal}): where the kernel forbids "
        "unprivileged user namespaces (Ubuntu 24.04's AppArmor does), run the batch as root; inside a container, "
        "run it on the host"
    )


def _bwrap_version() -> str:
    try:
        said = subprocess.run(["bwrap", "--version"], capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return "installed"
    return said[-1] if said else "installed"
