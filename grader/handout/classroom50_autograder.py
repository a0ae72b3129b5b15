#!/usr/bin/env python3
"""Classroom 50's autograder for the multi-head attention exercise (``python -m grader classroom50``
copies this file to ``autograders/<slug>/autograder.py``, beside the grader it runs).

Classroom 50's runner runs this file once per submission, with its own python, the student's
checkout as the working directory, the assignment's bundle extracted under ``$RUNNER_TEMP``
(outside the checkout), and the submission's metadata in the environment. It reads
``result.json`` and, when present, ``release-body.md`` from the checkout afterwards; an exit
status other than 0 is an infrastructure failure, for which the runner writes an error result
itself. (foundation50/classroom50, cli/gh-teacher/skeleton/dotgithub/scripts/runner.py at
0c499034f24703425496698992fedc41fbc1162f: ``run_entrypoint``, ``finalize_result``;
cli/gh-teacher/embed/autograder.py at 17f28b5476b417fe2c3a8ae99121c051d19a1e24: the contract.)

What this file does, in order:

1. finds a python with the grader's requirements: ``$MHA_GRADER_PYTHON`` when set (the tests,
   or a container image that has them), else a virtualenv it makes once and reuses while it
   exists (``$MHA_GRADER_VENV``, by default under ``$RUNNER_TOOL_CACHE``: keep it between runs
   with actions/cache, docs/platforms/classroom50.md), torch from PyTorch's CPU index;
2. closes the bundle (the hidden tests and the solution) to every other user: mode 0700;
3. grades as root through password-less ``sudo`` when it is not root already (GitHub's hosted
   Ubuntu runners allow it; ``MHA_GRADER_SUDO=0`` turns it off): bubblewrap run as root works
   even where AppArmor forbids unprivileged user namespaces, and without bubblewrap the
   plain-process sandbox then drops student code to the user nobody, who cannot read the
   bundle;
4. the grading (``python -m grader.handout.classroom50``) writes result.json and
   release-body.md into a private folder; this file copies them into the checkout last,
   after every student process is gone, replacing whatever is there (a symbolic link
   included), and appends the commit status to ``$GITHUB_OUTPUT``.

Standard library only: it runs before anything is installed. What it prints lands in the
Actions log of the student's repository, which the student can read: nothing of the hidden
tests is printed, and every line that comes from the grading is indented by two spaces, so
that no text of the student's can start a workflow command (those are read at column 0:
runner.py's ``render_log_report``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BUNDLE = Path(__file__).resolve().parent
PYTHON_VARIABLE = "MHA_GRADER_PYTHON"
VENV_VARIABLE = "MHA_GRADER_VENV"
SUDO_VARIABLE = "MHA_GRADER_SUDO"
PASSED_ON = ("GRADER_SANDBOX", "GRADER_CALL_TIMEOUT")  # the grading's own settings, kept through sudo
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # autograder.py's (not importable here)
# Under $RUNNER_TOOL_CACHE (/opt/hostedtoolcache on GitHub's hosted runners, where setup-python
# keeps its interpreters): readable by the user nobody, whom student code may run as.
CACHE_FOLDER = "mha-grader"
# The file names the runner reads (runner.py: RESULT_FILENAME, RELEASE_BODY_FILENAME).
RESULT_FILENAME = "result.json"
RELEASE_BODY_FILENAME = "release-body.md"
# The submission's metadata, as the runner sets it (runner.py's docstring and run_entrypoint).
METADATA = (
    "CLASSROOM", "ASSIGNMENT", "ASSIGNMENT_TYPE", "USERNAME", "OWNER", "SUBMISSION_TAG",
    "COMMIT_URL", "RELEASE_URL", "REVIEW_URL", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_SHA", "GITHUB_ACTOR",
)


def say(message: str) -> None:
    print(f"autograder: {message}", flush=True)


def infrastructure_failure(message: str) -> int:
    """Exit status 1: the runner then publishes its own error result (status error, 0/0)."""
    print(f"::error::autograder: {message}", flush=True)
    return 1


def venv_name(requirements: bytes, version: tuple[int, ...] = tuple(sys.version_info[:2])) -> str:
    """One virtualenv per set of pins and Python version: a changed pin makes a new one (and
    the README's actions/cache key, made by the same function, changes with it)."""
    return f"venv-{hashlib.sha256(requirements).hexdigest()[:16]}-py{version[0]}.{version[1]}"


def venv_folder() -> Path:
    if os.environ.get(VENV_VARIABLE):
        return Path(os.environ[VENV_VARIABLE])
    base = os.environ.get("RUNNER_TOOL_CACHE") or str(Path.home() / ".cache")
    return Path(base) / CACHE_FOLDER / venv_name((BUNDLE / "requirements.txt").read_bytes())


def grading_python() -> str:
    given = os.environ.get(PYTHON_VARIABLE)
    if given:
        say(f"using ${PYTHON_VARIABLE} ({given})")
        return given
    venv = venv_folder()
    python, installed = venv / "bin" / "python", venv / ".installed"
    # A restored cache whose interpreter has moved (a new patch release of Python) has a broken
    # link here: python.exists() is then False and the virtualenv is made again.
    if installed.is_file() and python.exists():
        say(f"reusing the virtualenv {venv}")
        return str(python)
    say(f"installing the grader's requirements into {venv} (torch's CPU build)")
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    index = subprocess.run(
        [str(python), str(BUNDLE / "grader" / "torch_index.py"), CPU_TORCH_INDEX], capture_output=True, text=True, check=False
    ).stdout.split()
    subprocess.run(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet", *index,
         "-r", str(BUNDLE / "requirements.txt")],
        check=True,
    )
    installed.write_text("installed\n", encoding="utf-8")
    return str(python)


def as_root(command: list[str]) -> list[str]:
    """``command`` through ``sudo -n`` when this process is not root and may use sudo without a password."""
    settings = [f"{name}={os.environ[name]}" for name in PASSED_ON if os.environ.get(name)]
    if os.geteuid() == 0:
        return command
    if os.environ.get(SUDO_VARIABLE) == "0":
        say(f"{SUDO_VARIABLE}=0: grading as this user, without sudo")
        return command
    # GitHub's hosted runners give the job's user password-less sudo (Classroom 50's own grade
    # job relies on it: autograde-runner.yaml, "Install apt packages", runs sudo apt-get).
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True, check=False).returncode == 0:
        say("grading as root through sudo (bubblewrap can then run, and student code can be dropped to nobody)")
        return ["sudo", "-n", "--", "env", *settings, *command]
    say("no password-less sudo here: grading as this user")
    return command


def metadata() -> dict[str, str]:
    return {name: os.environ.get(name, "") for name in METADATA}


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` (a file, or a link planted in the checkout) with ``data``."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def append_outputs(status: str, summary: str) -> None:
    """status= and summary= for the runner's commit status ($GITHUB_OUTPUT is one key=value a line)."""
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"status={status}\nsummary={' '.join(summary.split())}\n")


def main() -> int:
    checkout = Path.cwd()
    missing = [name for name in ("CLASSROOM", "ASSIGNMENT", "SUBMISSION_TAG") if not os.environ.get(name)]
    if missing:
        return infrastructure_failure(f"{', '.join(missing)} not set: Classroom 50's runner runs this file")
    try:
        python = grading_python()
    except (OSError, subprocess.CalledProcessError) as error:
        return infrastructure_failure(f"could not install the grader's requirements: {error}")
    BUNDLE.chmod(0o700)  # the hidden tests and the solution: this user's (and root's) only
    with tempfile.TemporaryDirectory(prefix="mha-classroom50-") as private:
        out = Path(private)
        (out / "metadata.json").write_text(json.dumps(metadata()), encoding="utf-8")
        command = as_root([python, "-m", "grader.handout.classroom50", "--checkout", str(checkout), "--out", str(out)])
        completed = subprocess.run(command, cwd=BUNDLE, stdin=subprocess.DEVNULL, check=False)
        log = out / "log.txt"
        if log.is_file():
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                print(f"  {line}")
        result, body, status = out / RESULT_FILENAME, out / RELEASE_BODY_FILENAME, out / "status.json"
        if completed.returncode != 0 or not (result.is_file() and body.is_file() and status.is_file()):
            return infrastructure_failure(f"the grading failed (exit {completed.returncode}); its log is above")
        write_atomically(checkout / RESULT_FILENAME, result.read_bytes())
        write_atomically(checkout / RELEASE_BODY_FILENAME, body.read_bytes())
        outcome = json.loads(status.read_text(encoding="utf-8"))
        append_outputs(outcome["status"], outcome["summary"])
        say(outcome["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
