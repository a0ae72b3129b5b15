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

import wheels
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
def test_make_installs_offline_when_the_index_cannot_be_reached_and_compiles_what_it_installed(tmp_path, silent_server):
    """The students' Makefile end to end, with a small requirements file standing in for
    the exercise's: one wheel from a file, so that pip needs no index. What it installs is
    byte-compiled at set-up (pip is told not to, compileall does it on every core): the
    sandbox's user cannot write __pycache__ there and would compile torch at every start."""
    shutil.copy(REPO_ROOT / "student.mk", tmp_path / "Makefile")
    (tmp_path / "grader").mkdir()
    shutil.copy(PROBE, tmp_path / "grader" / PROBE.name)
    wheel = wheels.pure_python_wheel(tmp_path, "mha_setup_probe", {"mha_setup_probe/__init__.py": b"ANSWER = 42\n"})
    (tmp_path / "requirements.txt").write_text(f"{wheel}\n")
    finished = subprocess.run(
        ["make", ".venv", f"PYTHON={sys.executable}", f"TORCH_INDEX={silent_server}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "TORCH_INDEX_TIMEOUT": "1"},
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert (tmp_path / ".venv" / ".installed").is_file()
    assert "did not answer within 1 s" in finished.stderr
    assert "--extra-index-url" not in finished.stdout.split("torch_index.py")[-1]
    compiled = list((tmp_path / ".venv").glob("lib/python*/site-packages/mha_setup_probe/__pycache__/__init__.*.pyc"))
    assert compiled, "the installed package has no byte-compiled file"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_instructors_make_venv_lets_its_python_run_the_grader_from_a_course_files_folder(tmp_path):
    """`course init` says to run the commands from the course file's folder: there, the
    environment's Python finds the grader (once `No module named grader`), and the set-up
    said which sandbox a batch will use. The instructor's Makefile end to end, in a copy of
    the repository with a requirements file that installs nothing."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("Makefile", "student.mk"):
        shutil.copy(REPO_ROOT / name, clone / name)
    shutil.copytree(REPO_ROOT / "grader", clone / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    (clone / "requirements.txt").write_text("# nothing to install: the set-up itself is under test\n")
    finished = subprocess.run(
        ["make", ".venv", f"PYTHON={sys.executable}", "TORCH_INDEX="], cwd=clone, capture_output=True, text=True, timeout=300,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "\nsandbox: " in finished.stdout  # the set-up names the sandbox a batch will use
    course, python = tmp_path / "course", clone / ".venv" / "bin" / "python"
    course.mkdir()

    def grader(*arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(python), "-m", "grader", *arguments], cwd=course, capture_output=True, text=True, timeout=120,
            env={key: value for key, value in os.environ.items() if key != "PYTHONPATH"},
        )

    init = grader("course", "init")
    assert init.returncode == 0, init.stderr
    assert f"run the commands from its folder with {python} -m grader" in init.stdout
    checked = grader("course", "check")
    assert checked.returncode == 0 and "[assignment] points = 100" in checked.stdout, checked.stderr
    sandbox = grader("sandbox")
    assert sandbox.returncode == 0 and sandbox.stdout.startswith("sandbox: "), sandbox.stdout + sandbox.stderr


def test_the_sandbox_command_names_the_package_where_bubblewrap_is_missing_and_refuses_as_the_batch_would(tmp_path):
    empty_path = {**os.environ, "PATH": str(tmp_path)}  # no bwrap on it
    command = [sys.executable, "-m", "grader", "sandbox"]
    fallback = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, env=empty_path)
    assert fallback.returncode == 0, fallback.stderr
    assert fallback.stdout.startswith("sandbox: process (the plain-process sandbox), not bubblewrap\n")
    assert "bubblewrap (bwrap) is not installed" in fallback.stdout and "sudo apt-get install bubblewrap" in fallback.stdout
    refused = subprocess.run([*command, "--sandbox", "bwrap"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, env=empty_path)
    assert refused.returncode == 2 and "a batch with --sandbox bwrap would refuse to start" in refused.stdout


def test_gradescope_setup_uses_the_same_probe():
    from grader.platforms import gradescope

    assert 'grader/torch_index.py "$TORCH_INDEX"' in gradescope.SETUP_SH
    assert "TORCH_INDEX-https://download.pytorch.org/whl/cpu" in gradescope.SETUP_SH
    makefile = (REPO_ROOT / "student.mk").read_text()
    assert "TORCH_INDEX ?= https://download.pytorch.org/whl/cpu" in makefile
    assert 'grader/torch_index.py "$(TORCH_INDEX)"' in makefile
