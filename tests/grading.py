"""Run the grader on submissions the way a user does, and read back its results.

Each call runs one ``pytest grader`` session for any number of submissions, so the catalogue
of mutants costs one torch start-up, not one per mutant. The session is a process of its own,
as ``python -m pytest grader`` from the repository's root would be: forked from a process of
this test process's that has imported torch, numpy and pytest once (``GradingServer``), so that
a grading does not pay the 1.5 to 2 s of CPU that importing torch costs each new interpreter.
``MHA_TESTS_FRESH_INTERPRETERS=1`` starts a fresh interpreter for each instead, as does a
call with ``preexec_fn``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# Honest code must not time out on a machine many others load: a test may take two minutes
# (pytest-timeout's option, which a batch's shards read from PYTEST_ADDOPTS; the grader's own
# default is 10 s, grader/timeouts.py).
LOAD_PROOF_ENVIRONMENT = {"PYTEST_ADDOPTS": "--timeout=120"}


def command_in(folder: Path, *arguments: str) -> subprocess.CompletedProcess:
    """``python -m grader ...`` from the course's folder, as an instructor runs it there."""
    environment = os.environ | {"PYTHONPATH": str(REPO_ROOT)} | LOAD_PROOF_ENVIRONMENT
    return subprocess.run(
        [sys.executable, "-m", "grader", *arguments], cwd=folder, env=environment,
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )


@dataclass
class GradingRun:
    returncode: int
    output: str
    results: dict  # submission name -> that submission's result (see grader.scoring)

    def score(self, name: str) -> int:
        return self.results[name]["score"]

    def failed_tests(self, name: str) -> list[dict]:
        return [test for test in self.results[name]["tests"] if test["outcome"] != "passed"]

    def diagnosed(self, name: str) -> set[str]:
        """The mistake ids the diagnosis gave ("unknown" included)."""
        return {entry["mistake"] for entry in self.results[name].get("diagnoses", [])}

    def lost_groups(self, name: str) -> set[str]:
        return {g for g, points in self.results[name]["groups"].items() if points["earned"] < points["max"]}


def grade(submissions: list[Path], tmp_path: Path, *extra: str, timeout: float = 600, preexec_fn=None, cwd: Path = REPO_ROOT) -> GradingRun:
    """``pytest grader`` on ``submissions`` in ``cwd`` (the repository, or a student release)."""
    results_path = tmp_path / "results.json"
    arguments = ["grader", "-p", "no:cacheprovider", "-q", "--results-json", str(results_path)]
    for submission in submissions:
        arguments += ["--submission", str(submission)]
    arguments += extra
    if preexec_fn is not None or os.environ.get("MHA_TESTS_FRESH_INTERPRETERS") == "1":
        completed = subprocess.run(
            [sys.executable, "-m", "pytest", *arguments], cwd=cwd, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL, preexec_fn=preexec_fn,
        )
        returncode, output = completed.returncode, completed.stdout + completed.stderr
    else:
        returncode, stdout, stderr = GradingServer.get().pytest(arguments, timeout=timeout, cwd=cwd)
        output = stdout + stderr
    assert results_path.exists(), f"the grader wrote no results (exit {returncode}):\n{output[-3000:]}"
    document = json.loads(results_path.read_text())
    return GradingRun(returncode, output, document["submissions"])


def grade_in_parts(submissions: list[Path], tmp_path: Path, *extra: str, parts: int = 2, timeout: float = 600) -> GradingRun:
    """``grade`` on ``parts`` slices of ``submissions`` at once, each a session of its own, and
    their results as one run's: for a sweep of the whole catalogue, which one session grades on
    one core while a machine has more. A submission's result does not depend on the others
    graded beside it: the grading seed draws each check's data alone (a failure is rerun with
    ``--grading-seed`` on that file only), and each submission starts from the same state of the
    generators its own code draws from (grader/submission.py ``InProcessBackend.open``)."""
    slices = [submissions[part::parts] for part in range(parts)]
    folders = [tmp_path / f"part-{part}" for part in range(parts)]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=parts) as pool:  # each waits on its own forked session
        runs = list(pool.map(lambda job: grade(job[0], job[1], *extra, timeout=timeout), zip(slices, folders)))
    return GradingRun(
        max(run.returncode for run in runs), "\n".join(run.output for run in runs),
        {name: result for run in runs for name, result in run.results.items()},
    )


def what_a_reader_sees(result: dict) -> dict:
    """A result without its timings: what every page, gradebook and diagnosis is made of."""
    return {key: value for key, value in result.items() if key != "time_budget"} | {
        "tests": [{key: value for key, value in test.items() if key != "duration"} for test in result["tests"]]
    }


# The server: imports what every grading imports first, then for each request forks a supervisor,
# which forks the grading (``python -m pytest ARGUMENTS`` from the request's folder, with its
# environment, its output in two files) and answers with its pid, then its exit status. It
# stops, removing its folder, when its standard input closes: when the test process that started
# it ends, however.
_SERVER = r"""
import json, os, select, shutil, signal, socket, sys

import numpy  # noqa: F401
import pytest
import torch  # noqa: F401  (imported here, once: never used before a fork)


def serve(listener):
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the supervisors: the kernel reaps them
    while True:
        readable, _, _ = select.select([listener, 0], [], [])
        if 0 in readable:  # end of file: the test process is gone; so is this server's folder
            shutil.rmtree(os.path.dirname(sys.argv[1]), ignore_errors=True)
            os._exit(0)
        connection, _ = listener.accept()
        if os.fork():
            connection.close()
            continue
        listener.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the grading waits for its own children
        request = json.loads(connection.makefile("r").readline())
        pid = os.fork()
        if pid == 0:
            connection.close()
            return request
        connection.sendall(f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        os._exit(0)


listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sys.argv[1])
listener.listen(64)
print("ready", flush=True)
request = serve(listener)
os.chdir(request["cwd"])
os.environ.clear()
os.environ.update(request["env"])
sys.path[0] = request["cwd"]  # as `python -m` puts its working folder first
for descriptor, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY), (2, request["stderr"], os.O_WRONLY)):
    opened = os.open(path, flags)
    os.dup2(opened, descriptor)
    os.close(opened)
sys.argv = ["pytest", *request["arguments"]]
sys.exit(pytest.console_main())
"""


class GradingServer:
    """One per test process, started on first use (tests/grading.py's docstring)."""

    _started: GradingServer | None = None
    _lock = threading.Lock()

    @classmethod
    def get(cls) -> GradingServer:
        with cls._lock:
            if cls._started is None or cls._started.process.poll() is not None:
                cls._started = cls()
            return cls._started

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="mha-grading-server-"))
        self.socket_path = self.folder / "socket"
        with open(self.folder / "server.log", "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _SERVER, str(self.socket_path)], cwd=REPO_ROOT, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, text=True,
            )
        if self.process.stdout.readline().strip() != "ready":
            self.process.kill()
            raise RuntimeError(f"the grading server did not start: {(self.folder / 'server.log').read_text()[-3000:]}")

    def pytest(self, arguments: list[str], timeout: float, cwd: Path = REPO_ROOT) -> tuple[int, str, str]:
        """``python -m pytest *arguments`` from ``cwd`` (the repository's root, or a student
        release): (exit code, stdout, stderr)."""
        scratch = Path(tempfile.mkdtemp(dir=self.folder))
        try:
            outputs = {name: scratch / name for name in ("stdout", "stderr")}
            for path in outputs.values():
                path.touch()
            request = {"arguments": arguments, "cwd": str(cwd), "env": dict(os.environ),
                       **{name: str(path) for name, path in outputs.items()}}
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.connect(str(self.socket_path))
                connection.sendall((json.dumps(request) + "\n").encode())
                answers = connection.makefile("r")
                pid = int(answers.readline())
                connection.settimeout(timeout)
                try:
                    status = answers.readline()
                except TimeoutError:
                    os.kill(pid, signal.SIGKILL)
                    raise subprocess.TimeoutExpired(["pytest", *arguments], timeout) from None
            said = {name: path.read_text(errors="replace") for name, path in outputs.items()}
            return int(status), said["stdout"], said["stderr"]
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


# How long a test waits for an event of a batch it started (a result file appearing): a cap that
# only a failing run reaches, whatever the load.
BATCH_EVENT_CAP_SECONDS = 180

# A class that a test stops mid-way: its first students are quick, the rest import slowly (their
# top level sleeps past the call limit the batch is given), so once a result has appeared the
# batch is certain to be mid-way for a long while: a test signals it after that event, and needs
# no luck with the load. (Its rerun gives a short call limit: the slow ones then cost a second.)
INTERRUPTIBLE_CLASS_SIZE = 12
SLOW_TO_IMPORT_FROM = 6  # student06 on
SLOW_CALL_LIMIT = ("--call-timeout", "60")  # six slow students, two shards: three minutes at least
QUICK_CALL_LIMIT = ("--call-timeout", "1")


def as_a_terminals_job() -> None:
    """``preexec_fn`` for a batch a test stops as a user would: SIGINT as a terminal's foreground
    job has it. A suite started in the background (``make test &``, a CI runner's shell) hands its
    processes SIGINT ignored, and a Python started so never raises KeyboardInterrupt: Ctrl-C, and
    the batch's own SIGINT to its shards, would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interruptible_class(folder: Path) -> Path:
    import catalogue

    folder.mkdir()
    solution = (REPO_ROOT / "solutions" / "multi_head_attention.py").read_text()
    for index in range(INTERRUPTIBLE_CLASS_SIZE):
        if index < SLOW_TO_IMPORT_FROM:
            source = catalogue.implementation_source(catalogue.MUTANTS[index])
        else:
            source = solution + "\n\nimport time\n\ntime.sleep(3600)  # a top level that never ends on its own\n"
        (folder / f"student{index:02}.py").write_text(source)
    return folder


def wait_for_results(out: Path, count: int, batch: subprocess.Popen) -> None:
    """Wait until ``count`` result files are in ``out/results`` (a batch writes each whole, then
    renames it there); fail if the batch ends first, or at the cap."""
    deadline = time.monotonic() + BATCH_EVENT_CAP_SECONDS
    while len(list((out / "results").glob("*.json"))) < count:
        if batch.poll() is not None:
            said = batch.stderr.read()[-2000:] if batch.stderr else ""
            raise AssertionError(f"the batch ended (exit {batch.returncode}) before {count} results: {said}")
        assert time.monotonic() < deadline, f"fewer than {count} results after {BATCH_EVENT_CAP_SECONDS} s"
        time.sleep(0.05)
