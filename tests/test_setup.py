"""Set-up on a student's machine: torch's CPU build on Linux, without slowing an offline one.

``grader/torch_index.py`` decides whether pip gets the PyTorch CPU wheel index: only when it
answers within a few seconds. These tests use local servers, never the internet: one that
accepts a connection and never answers (an index behind a black hole), one that refuses, and
one that serves an index page.
"""

from __future__ import annotations

import http.server
import os
import platform
import shutil
import socket
import subprocess
import sys
import threading

import pytest

from grading import REPO_ROOT

PROBE = REPO_ROOT / "grader" / "torch_index.py"
linux_only = pytest.mark.skipif(platform.system() != "Linux", reason="the CPU index is used on Linux only")


def probe(url: str, timeout: str = "1", **environment: str) -> subprocess.CompletedProcess:
    """Runs the probe; a probe that hangs fails the test through subprocess's own timeout."""
    return subprocess.run(
        [sys.executable, str(PROBE), url], capture_output=True, text=True, timeout=60,
        env={**os.environ, "TORCH_INDEX_TIMEOUT": timeout, **environment},
    )


@pytest.fixture
def silent_server():
    """Accepts connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/whl/cpu"


@pytest.fixture
def index_server():
    """Serves /whl/cpu/torch/ as a package index does."""

    class Index(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):
            self.send_response(200 if self.path == "/whl/cpu/torch/" else 404)
            self.end_headers()

        def log_message(self, *arguments):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
    server.shutdown()


@linux_only
def test_an_index_that_never_answers_adds_nothing_and_costs_only_the_timeout(silent_server):
    finished = probe(silent_server)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == ""
    assert "did not answer within 1 s" in finished.stderr  # the probe's own timeout fired, so it gave up


@linux_only
def test_a_refused_connection_adds_nothing():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # closed again before the probe: nothing listens there
    finished = probe(f"http://127.0.0.1:{port}/whl/cpu")
    assert finished.returncode == 0 and finished.stdout.strip() == ""


@linux_only
def test_an_index_that_answers_is_added_with_the_indexes_pip_already_has(index_server):
    finished = probe(index_server, PIP_EXTRA_INDEX_URL="file:///opt/a-mirror/simple")
    assert finished.returncode == 0, finished.stderr
    arguments = finished.stdout.split()
    assert arguments[:2] == ["--extra-index-url", index_server], arguments
    # A command-line --extra-index-url replaces pip's configured ones: they are passed on too.
    assert ["--extra-index-url", "file:///opt/a-mirror/simple"] == arguments[2:4], arguments


def test_an_empty_index_turns_it_off():
    finished = probe("")
    assert finished.returncode == 0 and finished.stdout.strip() == ""
    assert "TORCH_INDEX is empty" in finished.stderr


@linux_only
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.slow
def test_make_installs_offline_when_the_index_cannot_be_reached(tmp_path, silent_server):
    """The students' Makefile end to end, with a small requirements file standing in for
    the exercise's (pip installs from this machine's usual indexes, as the real one would)."""
    shutil.copy(REPO_ROOT / "student.mk", tmp_path / "Makefile")
    (tmp_path / "grader").mkdir()
    shutil.copy(PROBE, tmp_path / "grader" / PROBE.name)
    (tmp_path / "requirements.txt").write_text("# nothing to install: the set-up itself is under test\n")
    finished = subprocess.run(
        ["make", ".venv", f"PYTHON={sys.executable}", f"TORCH_INDEX={silent_server}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "TORCH_INDEX_TIMEOUT": "1"},
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert (tmp_path / ".venv" / ".installed").is_file()
    assert "did not answer within 1 s" in finished.stderr
    assert "--extra-index-url" not in finished.stdout.split("torch_index.py")[-1]


def test_gradescope_setup_uses_the_same_probe():
    from grader.handout import gradescope

    assert 'grader/torch_index.py "$TORCH_INDEX"' in gradescope.SETUP_SH
    assert "TORCH_INDEX-https://download.pytorch.org/whl/cpu" in gradescope.SETUP_SH
    makefile = (REPO_ROOT / "student.mk").read_text()
    assert "TORCH_INDEX ?= https://download.pytorch.org/whl/cpu" in makefile
    assert 'grader/torch_index.py "$(TORCH_INDEX)"' in makefile
