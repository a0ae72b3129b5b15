"""grader/sandbox/landlock.py on its own: what a confined process can and cannot reach.

Each check runs in a fresh Python process (confinement cannot be undone), which prints
one line per attempt: "<what>: allowed" or "<what>: denied <error>".
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader.sandbox import landlock, libraries, processes
from grading import REPO_ROOT

needs_landlock = pytest.mark.skipif(landlock.abi_version() < 4, reason="Landlock with network rules (ABI 4+) is not available here")

CONFINED = textwrap.dedent(
    """
    import os, socket, sys
    from grader.sandbox import landlock, processes
    from pathlib import Path

    own, port, secret = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    abi = landlock.restrict(processes.landlock_readable(Path("/nonexistent")), [str(own), "/dev/null"])
    print(f"abi: {abi}")
    attempts = {
        "read the solution": lambda: open(secret).read(),
        "list the repository": lambda: os.listdir(Path(secret).parent.parent),
        "read /proc": lambda: os.listdir("/proc"),
        "write /tmp": lambda: open(f"/tmp/landlock-test-{os.getpid()}", "w").close(),
        "write its own folder": lambda: (own / "note.txt").write_text("mine"),
        "write /dev/null": lambda: open("/dev/null", "w").write("x"),
        "import a module not yet loaded": lambda: __import__("wave"),
        "connect over TCP": lambda: socket.create_connection(("127.0.0.1", port), timeout=2).close(),
        "signal its parent": lambda: os.kill(os.getppid(), 0),
    }
    for what, attempt in attempts.items():
        try:
            attempt()
            print(f"{what}: allowed")
        except OSError as error:
            print(f"{what}: denied {type(error).__name__}")
    """
)


def run_confined(tmp_path: Path) -> dict[str, str]:
    listener = socket.create_server(("127.0.0.1", 0))
    with listener:
        finished = subprocess.run(
            [sys.executable, "-c", CONFINED, str(tmp_path), str(listener.getsockname()[1]),
             str(REPO_ROOT / "solutions" / "multi_head_attention.py")],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
        )
    assert finished.returncode == 0, finished.stderr
    return dict(line.split(": ", 1) for line in finished.stdout.splitlines())


@needs_landlock
def test_a_confined_process_reaches_python_and_its_own_folder_only(tmp_path):
    outcome = run_confined(tmp_path)
    assert int(outcome["abi"]) == landlock.abi_version()
    for allowed in ("write its own folder", "write /dev/null", "import a module not yet loaded"):
        assert outcome[allowed] == "allowed", (allowed, outcome)
    denied_everywhere = ("read the solution", "list the repository", "read /proc", "write /tmp", "connect over TCP")
    scoped = ("signal its parent",) if landlock.abi_version() >= 6 else ()  # signal scoping came with ABI 6
    for denied in (*denied_everywhere, *scoped):
        assert outcome[denied].startswith("denied"), (denied, outcome)
    assert (tmp_path / "note.txt").read_text() == "mine"


def test_nothing_readable_holds_the_repository():
    readable = processes.landlock_readable(Path("/tmp/worker-modules"))
    assert "/tmp/worker-modules" in readable and sys.prefix in readable
    assert all(not REPO_ROOT.resolve().is_relative_to(path) for path in readable), readable


def test_the_process_sandbox_says_when_landlock_is_missing(monkeypatch):
    monkeypatch.setattr(libraries, "children_import_alike", lambda: True)
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    assert "Landlock is not available" in processes.resolve_sandbox("process")[1]
    monkeypatch.setattr(landlock, "abi_version", lambda: 7)
    assert processes.resolve_sandbox("process") == ("process", "")  # asked for, and walled: nothing to say


def test_the_process_sandbox_says_when_its_children_cannot_read_the_interpreter(monkeypatch):
    # Started as root with Python under /root, say: a child as nobody imports only what the worker imported.
    monkeypatch.setattr(landlock, "abi_version", lambda: 7)
    monkeypatch.setattr(libraries, "children_import_alike", lambda: False)
    sandbox, note = processes.resolve_sandbox("process")
    assert sandbox == "process" and "cannot read this Python's files" in note and "matplotlib" in note, note
