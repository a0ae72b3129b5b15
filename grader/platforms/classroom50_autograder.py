#!/usr/bin/env python3
"""Classroom 50's autograder for one exercise (``python -m grader classroom50``
copies this file to ``autograders/<slug>/autograder.py``, beside the grader it runs).

Classroom 50's runner runs this file once per submission, with its own python, the student's
checkout as the working directory, the assignment's bundle extracted under ``$RUNNER_TEMP``
(outside the checkout), the submission's metadata in the environment, and this process's
stdout and stderr going straight to the Actions log (not captured). It reads ``result.json``
and, when present, ``release-body.md`` from the checkout afterwards; an exit status other than
0 is an infrastructure failure, for which the runner writes an error result itself.
(foundation50/classroom50, cli/gh-teacher/skeleton/dotgithub/scripts/runner.py at
0c499034f24703425496698992fedc41fbc1162f: ``run_entrypoint``, ``finalize_result``;
cli/gh-teacher/embed/autograder.py at 17f28b5476b417fe2c3a8ae99121c051d19a1e24: the contract.)

The checkout is the student's: every file in it, and the workflows of their repository, which
can also save caches this job would restore. So nothing of it runs or is trusted here:

1. a python with the grader's requirements: ``$MHA_GRADER_PYTHON`` when set (the tests, or an
   image the instructor built), else a virtualenv made fresh for this run and removed after it.
   No cache: actions/cache scopes a cache by key, version (the path and the compression) and
   branch, and "the default branch cache is available to other branches" (actions/cache
   README, "Cache scopes", at 27d5ce7f107fe9357f9df03efb73ab90386fccae); a cache is immutable
   once saved (its tips-and-workarounds.md). The key and path here are computable, so a
   workflow the student pushes to their own default branch could save that virtualenv first,
   and every later grading would run it. Verifying a restored virtualenv would need a digest
   of its every file made on the runner's own Python, which no instructor's machine can
   compute; so it is made again, a minute or two per submission.
   Every interpreter started here is isolated from the checkout. ``-m`` adds the working
   directory to the start of sys.path, and a script adds its own folder; ``-I`` adds neither,
   nor the user's site-packages, and ignores every PYTHON* variable (CPython's
   Doc/using/cmdline.rst: the ``-m``, ``<script>`` and ``-I`` entries). So the virtualenv is
   made and filled with ``-I`` from a working directory outside the checkout, and a
   ``venv.py``, ``pip/``, ``logging.py``, ``sitecustomize.py`` or ``encodings/`` the student
   commits is never imported; the grading runs with ``-s -E`` from the bundle, whose folder
   ``-m`` then puts first. This process's own sys.path starts with the bundle (the script's
   folder), never the checkout.
2. closes the bundle (the hidden tests and the solution) to every other user: mode 0700;
3. grades as root through password-less ``sudo`` when it is not root already (GitHub's hosted
   Ubuntu runners allow it; ``MHA_GRADER_SUDO=0`` turns it off): bubblewrap run as root works
   even where AppArmor forbids unprivileged user namespaces, and without bubblewrap the
   plain-process sandbox then drops student code to the user nobody, who cannot read the
   bundle;
4. the grading (``python -m grader.platforms.classroom50``) writes result.json and
   release-body.md into a private folder; this file puts them into the checkout last, after
   every student process is gone, replacing whatever the checkout holds at those names (a
   link, a fifo, a folder), and appends the commit status to ``$GITHUB_OUTPUT``.

The Actions log executes workflow commands, and the runner finds them wherever the student's
text could put them (``ActionsLog`` below says how, from the runner's source): so the log is
told to stop reading commands, with a token drawn here, before anything is printed, and to
resume only once everything the grading printed is out. Standard library only, and the
grader's stdlib-only ``grader.untrusted``: this runs before anything is installed.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from grader.untrusted import printable

BUNDLE = Path(__file__).resolve().parent
PYTHON_VARIABLE = "MHA_GRADER_PYTHON"
SUDO_VARIABLE = "MHA_GRADER_SUDO"
EXERCISE_VARIABLE = "GRADER_EXERCISE"  # grader/seam/registry.py's CHOSEN (this file imports little of the grader)
SETTINGS_FILE = "classroom50.json"  # grader/platforms/classroom50.py's, beside this file in the bundle
PASSED_ON = ("GRADER_SANDBOX", "GRADER_CALL_TIMEOUT")  # the grading's own settings, kept through sudo
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # autograder.py's (not importable here)
# The file names the runner reads (runner.py: RESULT_FILENAME, RELEASE_BODY_FILENAME).
RESULT_FILENAME = "result.json"
RELEASE_BODY_FILENAME = "release-body.md"
# The submission's metadata, as the runner sets it (runner.py's docstring and run_entrypoint).
METADATA = (
    "CLASSROOM", "ASSIGNMENT", "ASSIGNMENT_TYPE", "USERNAME", "OWNER", "SUBMISSION_TAG",
    "COMMIT_URL", "RELEASE_URL", "REVIEW_URL", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_SHA", "GITHUB_ACTOR",
)


class ActionsLog:
    """What this file prints: the Actions log of the student's repository, which runs commands.

    How GitHub's runner reads a step's output (actions/runner at
    258d6c857db3519913f7deb6004b60172f8043ae): each of stdout and stderr is read a line at a
    time (src/Runner.Sdk/ProcessInvoker.cs, ``StreamReader.ReadLine``: a line ends at ``\\n``,
    ``\\r`` or ``\\r\\n``); a line holding ``::`` or ``##[`` goes to the command manager
    (src/Runner.Worker/Handlers/OutputManager.cs, ``OnDataReceived``), which parses it as
    ``::name props::data`` after trimming leading white space, else as ``##[name props]data``
    found anywhere in the line (src/Runner.Common/ActionCommand.cs, ``TryParseV2``,
    ``TryParse``). So neither an indent nor a prefix keeps a student's text from being a command.

    What does: ``::stop-commands::TOKEN``. Once it is read, every line parsed by either rule is
    dropped as a command unless its name is TOKEN, which resumes (src/Runner.Worker/
    ActionCommandManager.cs, ``TryProcessCommand``; the token is masked in the log when longer
    than 6 characters). The token is drawn here with ``secrets`` for each run and lives only in
    this process (never in a child's arguments or environment), so no student process can
    print it. Everything is printed on stdout alone (the runner reads the two streams on two
    threads, so their order is not kept), our own commands only after the resume. Student text
    is also escaped: control characters (a ``\\r`` would end the runner's line) and ``##[``,
    which the log viewer would render as formatting (written ``##[\\``, as the runner itself
    defuses its ``##[start-action`` marker in OutputManager.cs).
    """

    def __init__(self) -> None:
        self._token = secrets.token_hex(32)
        self._commands: list[str] = []

    def __enter__(self) -> ActionsLog:
        # Problem matchers read every line, stop-commands or not (OutputManager.cs), and the
        # grade job's setup-python adds one, owner "python", that turns a `File "...", line N`
        # line followed by a `raise X('...')` line into an error annotation (actions/setup-python,
        # src/setup-python.ts and .github/python.json): removed for the rest of the job (a no-op
        # where it was never added: ExecutionContext.RemoveMatchers).
        print("::remove-matcher owner=python::", flush=True)
        print(f"::stop-commands::{self._token}", flush=True)
        return self

    def __exit__(self, *_) -> None:
        print(f"::{self._token}::", flush=True)
        for command in self._commands:
            print(command, flush=True)

    def say(self, message: str) -> None:
        print(f"autograder: {inert(message)}", flush=True)

    def relay(self, text: str) -> None:
        """The grading's own log, or what a child printed: each line indented, and inert."""
        for line in text.splitlines():
            print(f"  {inert(line)}", flush=True)

    def error(self, message: str) -> None:
        """An error annotation, shown once commands are read again (the runner's error shape follows)."""
        self._commands.append(f"::error::autograder: {' '.join(message.split())}")


def inert(line: str) -> str:
    return printable(line).replace("##[", "##[\\")


def captured(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``command``'s stdout and stderr as one text, for ``ActionsLog.relay``: no child writes to the log."""
    return subprocess.run(
        command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, encoding="utf-8", errors="replace", check=False,
    )


class InstallFailed(Exception):
    pass


def new_folder_for_the_virtualenv() -> Path:
    """Readable by the user nobody (student code may run as nobody, and imports torch from it):
    under $RUNNER_TOOL_CACHE (/opt/hostedtoolcache on GitHub's hosted runners, where
    setup-python keeps its interpreters), else the temporary folder. A new name every run."""
    venv = Path(tempfile.mkdtemp(prefix="mha-grader-venv-", dir=os.environ.get("RUNNER_TOOL_CACHE") or None))
    venv.chmod(0o755)
    return venv


def make_virtualenv(venv: Path, log: ActionsLog) -> None:
    """The grader's requirements in the empty folder ``venv``: every interpreter isolated (-I)
    and working in ``venv``, so nothing of the checkout is on its sys.path."""
    python = venv / "bin" / "python"
    log.say(f"installing the grader's requirements into a new virtualenv, {venv} (torch's CPU build)")
    made = captured([sys.executable, "-I", "-m", "venv", str(venv)], cwd=venv)
    if made.returncode != 0:
        log.relay(made.stdout)
        raise InstallFailed(f"python -m venv exited {made.returncode}")
    # torch_index.py prints pip's arguments for torch's CPU index, or nothing (it says why on stderr).
    index = subprocess.run(
        [str(python), "-I", str(BUNDLE / "grader" / "torch_index.py"), CPU_TORCH_INDEX],
        cwd=venv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
    ).stdout.split()
    installed = captured(
        [str(python), "-I", "-m", "pip", "install", "--disable-pip-version-check", "--quiet", *index,
         "-r", str(BUNDLE / "requirements.txt")],
        cwd=venv,
    )
    log.relay(installed.stdout)
    if installed.returncode != 0:
        raise InstallFailed(f"pip install exited {installed.returncode}")


def as_root(command: list[str], log: ActionsLog) -> list[str]:
    """``command`` through ``sudo -n`` when this process is not root and may use sudo without a password."""
    settings = [f"{name}={os.environ[name]}" for name in PASSED_ON if os.environ.get(name)]
    if os.geteuid() == 0:
        return command
    if os.environ.get(SUDO_VARIABLE) == "0":
        log.say(f"{SUDO_VARIABLE}=0: grading as this user, without sudo")
        return command
    # GitHub's hosted runners give the job's user password-less sudo (Classroom 50's own grade
    # job relies on it: autograde-runner.yaml, "Install apt packages", runs sudo apt-get).
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True, check=False).returncode == 0:
        log.say("grading as root through sudo (bubblewrap can then run, and student code can be dropped to nobody)")
        return ["sudo", "-n", "--", "env", *settings, *command]
    log.say("no password-less sudo here: grading as this user")
    return command


def built_for() -> str:
    """The exercise this bundle grades, as ``python -m grader classroom50`` wrote it in its
    settings (classroom50.json beside this file)."""
    return str(json.loads((BUNDLE / SETTINGS_FILE).read_text(encoding="utf-8"))["exercise"])


def metadata() -> dict[str, str]:
    return {name: os.environ.get(name, "") for name in METADATA}


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``, whatever the checkout holds there: rename(2) replaces a
    file, a link (not followed) or a fifo (never opened); a folder (``release-body.md/``
    committed as one) is moved aside first, under a name no student can guess."""
    if path.is_dir() and not path.is_symlink():
        path.rename(path.with_name(f".{path.name}.{secrets.token_hex(8)}.moved-aside"))
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


def grade_checkout(checkout: Path, log: ActionsLog) -> int:
    missing = [name for name in ("CLASSROOM", "ASSIGNMENT", "SUBMISSION_TAG") if not os.environ.get(name)]
    if missing:
        log.error(f"{', '.join(missing)} not set: Classroom 50's runner runs this file")
        return 1
    venv = None
    try:
        if os.environ.get(PYTHON_VARIABLE):
            python = os.environ[PYTHON_VARIABLE]
            log.say(f"using ${PYTHON_VARIABLE} ({python})")
        else:
            venv = new_folder_for_the_virtualenv()
            try:
                make_virtualenv(venv, log)
            except (OSError, InstallFailed) as error:
                log.error(f"could not install the grader's requirements: {error}")
                return 1
            python = str(venv / "bin" / "python")
        BUNDLE.chmod(0o700)  # the hidden tests and the solution: this user's (and root's) only
        with tempfile.TemporaryDirectory(prefix="mha-classroom50-") as private:
            out = Path(private)
            (out / "metadata.json").write_text(json.dumps(metadata()), encoding="utf-8")
            # The exercise this bundle was built for (its classroom50.json), whatever the runner's
            # environment says: the grading's modules read it when they are imported.
            grading = ["env", f"{EXERCISE_VARIABLE}={built_for()}", python, "-s", "-E", "-m", "grader.platforms.classroom50",
                       "--checkout", str(checkout), "--out", str(out)]
            completed = captured(as_root(grading, log), cwd=BUNDLE)
            written = out / "log.txt"
            log.relay(written.read_text(encoding="utf-8", errors="replace") if written.is_file() else "")
            log.relay(completed.stdout)  # what the grading printed besides its log (a warning, a crash)
            result, body, status = out / RESULT_FILENAME, out / RELEASE_BODY_FILENAME, out / "status.json"
            if completed.returncode != 0 or not (result.is_file() and body.is_file() and status.is_file()):
                log.error(f"the grading failed (exit {completed.returncode}); its log is above")
                return 1
            write_atomically(checkout / RESULT_FILENAME, result.read_bytes())
            write_atomically(checkout / RELEASE_BODY_FILENAME, body.read_bytes())
            outcome = json.loads(status.read_text(encoding="utf-8"))
            append_outputs(outcome["status"], outcome["summary"])
            log.say(outcome["summary"])
        return 0
    finally:
        if venv is not None:
            shutil.rmtree(venv, ignore_errors=True)


def main() -> int:
    with ActionsLog() as log:
        try:
            return grade_checkout(Path.cwd(), log)
        except Exception as error:  # noqa: BLE001 - said in the log, and answered as the runner's error
            log.relay(traceback.format_exc())
            log.error(f"{type(error).__name__} while grading; its traceback is above")
            return 1


if __name__ == "__main__":
    sys.exit(main())
