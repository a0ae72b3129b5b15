"""What the tests of the platforms' autograders share (Gradescope, PrairieLearn).

Each test lays out a root the way its platform does, writes the student's files into it
and runs the platform's script (run_autograder, PrairieLearn's entrypoint) with this
virtualenv's python, then reads the results file back. The submissions are the solution,
the stubs, a known mistake from the catalogue, and a forger: the solution with an appended
attack that writes forged results wherever it can and tries to read the solution and the
hidden tests, printing "BREACH ..." on every success. Its head's forward is otherwise a
stub, so its honest score is the HONEST_TWIN's.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

import catalogue
from grader.seam import registry
from grading import REPO_ROOT

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
STUB = REPO_ROOT / "exercises" / "multi_head_attention.py"
MUTANT = next(m for m in catalogue.MUTANTS if m.name == "softmax_over_queries")
RUN_TIMEOUT = 180

# The course's second exercise, graded on every platform beside the first: its hand-out for a
# platform is built with ``--exercise``, and its reference and stub graded in the same fixture
# (the same environment, side by side) as the first exercise's runs.
SECOND = registry.exercise(registry.course_order()[1])
SECOND_SOLUTION = REPO_ROOT / "solutions" / SECOND.solution
SECOND_STUB = REPO_ROOT / "exercises" / SECOND.student_file


@functools.cache
def second_exercise_totals() -> dict[str, int]:
    """Each group's points in the second exercise, as its own checks mark them (read by a
    process that grades it: this one's grader.scoring belongs to the first)."""
    completed = subprocess.run(
        [sys.executable, "-c", "import json; from grader import scoring; print(json.dumps(scoring.group_totals()))"],
        cwd=REPO_ROOT, env=os.environ | {registry.CHOSEN: SECOND.name}, capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)
MARKER = "forger-" + secrets.token_hex(6)

# Appended to the solution. At import and in every AttentionHead.forward it writes @FORGED@
# (the platform's results claiming full marks) into every results folder it can think of:
# the roots in @ROOTS@ (the one it was told about, @ROOT@, as a student reading the
# platform's documentation knows its default), and beside every absolute path on any
# visible process's command line (the platform's script gives the root away). It also
# tries to read each of @SECRETS@ under the root.
FORGER = r'''

# ---- appended by a test: forge the platform's results ----
import json as _json
import os as _os
from pathlib import Path as _Path

_ROOTS = @ROOTS@
_SHARED = {"/", "/dev", "/tmp", "/var/tmp", "/dev/shm"}  # private in bwrap, or not results folders
_FORGED = @FORGED@
_SECRETS = @SECRETS@


def _folders():
    folders = {root / "results" for root in _ROOTS}
    try:
        entries = list(_Path("/proc").iterdir())
    except OSError:  # /proc out of reach (Landlock in the plain-process sandbox)
        entries = []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for argument in arguments:
            text = argument.decode(errors="replace")
            if text.startswith("/") and not text.startswith(("/proc", "/usr", "/bin", "/lib")):
                path = _Path(text)
                folders |= {path, path.parent, path / "results", path.parent / "results"}
    return {folder for folder in folders if str(folder) not in _SHARED}


def _forge():
    for folder in _folders():
        target = folder / "results.json"
        try:
            target.write_text(_FORGED)
        except OSError:
            continue
        print(f"BREACH results: wrote {target}")
    for secret in _SECRETS:
        try:
            (_Path("@ROOT@") / secret).read_text()
            print(f"BREACH secrets: read {secret}")
        except OSError:
            pass


def _forging_forward(self, inputs, allowed_mask):
    _forge()
    raise NotImplementedError("AttentionHead.forward is not written yet")


AttentionHead.forward = _forging_forward
print("@MARKER@ printed at import: Score 100/100")
_forge()
'''

# The same breakage without the attack: what the forger deserves.
HONEST_TWIN = (
    "\n\ndef _not_written(self, inputs, allowed_mask):\n"
    '    raise NotImplementedError("AttentionHead.forward is not written yet")\n\n\n'
    "AttentionHead.forward = _not_written\n"
)


def forger_source(roots: str, forged: dict, secret_files: tuple[str, ...]) -> str:
    """The forger for one platform, its @ROOT@ left for ``write_submission`` to fill in.

    ``roots`` is a Python expression (a list of ``_Path``), ``forged`` the results to forge
    (``@MARKER@`` in its text marks it), ``secret_files`` paths under the root to try reading.
    """
    attack = (
        FORGER.replace("@ROOTS@", roots)
        .replace("@FORGED@", repr(json.dumps(forged)))
        .replace("@SECRETS@", repr(tuple(secret_files)))
    )
    return SOLUTION.read_text() + attack.replace("@MARKER@", MARKER)


def notebook_of(source: str, *more_cells: str) -> str:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# Multi-head self-attention"),
        nbformat.v4.new_code_cell("%load_ext autoreload"),
        nbformat.v4.new_code_cell(source),
        *(nbformat.v4.new_code_cell(cell) for cell in more_cells),
    ]
    return nbformat.writes(notebook)


# A statement too deeply nested for Python's parser: Python 3.11 raises MemoryError on it, not
# SyntaxError (grader/reading/parser_limits.py), and a platform must still grade what it can.
TOO_DEEP = "_too_deep = " + "-" * 100_000 + "1\n"


def assert_the_forger_failed(printed: str, default_results: Path, name: str) -> None:
    """No "BREACH" line in what the forger printed, and no forged results at the platform's default root."""
    assert "What the submission printed" in printed, name
    breaches = [line for line in printed.splitlines() if line.startswith("BREACH")]
    assert not breaches, f"{name}: {breaches}"
    assert not (default_results.exists() and MARKER in default_results.read_text(errors="replace"))


def write_submission(folder: Path, files: dict[str, str], root: Path) -> None:
    """The student's files, world-readable, with @ROOT@ replaced by the root."""
    folder.mkdir(mode=0o755)
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("@ROOT@", str(root)))
        path.chmod(0o644)


def open_results_folder(root: Path) -> None:
    """A careless harness: a world-writable results folder the script must close before student code runs."""
    results = root / "results"
    results.mkdir()
    results.chmod(0o777)


@dataclass
class Run:
    root: Path
    returncode: int
    output: str  # the script's stdout and stderr (what the platform shows instructors)
    seconds: float
    results: dict | None


def run_script(
    script: Path, root: Path, root_variable: str, path_without_bwrap: Path | None = None, **variables: str
) -> Run:
    """Run a platform's script from ``root`` with this virtualenv's python first on PATH (or a
    PATH without bwrap), ``root_variable`` set to the root, and read ROOT/results/results.json."""
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "GRADER_SANDBOX", "PYTHONPATH")}
    # These runs grade side by side with the rest of the suite on a loaded machine: a call
    # into the solution must never reach its time limit there (no run here tests time limits).
    environment["GRADER_CALL_TIMEOUT"] = "30"
    venv_bin = str(Path(sys.executable).parent)
    if path_without_bwrap:
        environment["PATH"] = f"{path_without_bwrap}:{venv_bin}"
    else:
        environment["PATH"] = f"{venv_bin}:{environment['PATH']}"
    environment.update({root_variable: str(root)}, **variables)
    started = time.monotonic()
    completed = subprocess.run(
        [str(script)], cwd=root, env=environment, capture_output=True, text=True,
        timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL,
    )
    results_path = root / "results" / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else None
    return Run(root, completed.returncode, completed.stdout + completed.stderr, time.monotonic() - started, results)


def bash_only_path(folder: Path) -> Path:
    """A PATH entry with bash and nothing else: bwrap is not found, so 'auto' must fall back."""
    folder.mkdir()
    (folder / "bash").symlink_to(shutil.which("bash"))
    return folder
