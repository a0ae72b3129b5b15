"""What the platforms' autograders share: one submission graded in the platform's container.

Gradescope (``gradescope.py``) and PrairieLearn (``prairielearn.py``) both start one
container per submission and read one results file that the submission's own code could
also try to write. Each grades the same way, with the pieces below:

* ``protect`` before any student code runs: the results folder writable by its owner only
  (a stale results file removed), the folders holding the solution and the hidden tests
  readable by their owner only. That matters when bubblewrap cannot run (inside most
  containers) and student code runs as the unprivileged user "nobody" in the plain-process
  sandbox.
* ``choose_submission_file`` picks the student's file in the folder the platform filled.
* ``grade`` grades it with the batch machinery (``grader.batch``: the sandboxed worker,
  the hidden tests, a fresh grading seed), in a private temporary folder, and returns the
  batch's result document; ``GraderFailure`` when the batch could not grade.
* ``instructor_note`` says which sandbox ran and why, the grading seed and what the
  submission printed; ``student_summary`` the points per group a student reads.
* The platform writes its results file last, atomically, after every student process is
  gone (``grader.results.write_atomically``).

``shipped_files`` lists what goes into a platform's copy of the grader (hidden tests and the
solution included), ``ENTRYPOINT`` is the script a platform runs for every submission, and
``pinned`` the version requirements.txt pins of a package.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import tempfile
from pathlib import Path

from grader import settings
from grader.seam import registry
from grader.scoring import HIDDEN_GROUP
from grader.feedback import diagnosis_text

REPO_ROOT = Path(__file__).resolve().parents[2]
SANDBOXES = ("auto", "bwrap", "process")
SANDBOX_VARIABLE = "GRADER_SANDBOX"
# Seconds one call into student code may take (the batch's --call-timeout, 5 s by default):
# a platform whose machines are slow or shared may need more.
CALL_TIMEOUT_VARIABLE = "GRADER_CALL_TIMEOUT"
VENV = "/opt/mha-grader-venv"  # outside the folders that get locked before student code runs
STUDENT_ID = "submission"  # the batch's name for the one student graded here
# PyTorch's own index of CPU-only wheels (https://pytorch.org/get-started/locally/, "CPU"):
# PyPI's Linux wheels of some versions pull the CUDA libraries, gigabytes a grading image
# or a GitHub Actions run does not need.
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
# What a platform's copy of the grader carries. Never tests/ or exercises/.
SHIPPED = ("grader", "solutions", "requirements.txt")
NEVER_SHIPPED = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints", ".DS_Store"}

# Run by the platform for every submission (as root): grades ROOT's submission folder and
# writes ROOT/results/results.json.
ENTRYPOINT = """\
#!/usr/bin/env bash
{comment}
# Python: $PYTHON when set, else the virtualenv {venv}, else python3 on PATH.
# GRADER_SANDBOX=auto|bwrap|process chooses the sandbox for student code (default auto:
# bubblewrap when it can run, else the plain-process sandbox, as user nobody when root).
# GRADER_CALL_TIMEOUT=SECONDS allows one call into student code more time (default 5).
set -u
ROOT="${{{root_variable}:-{default_root}}}"
if [ -z "${{PYTHON:-}}" ]; then
    if [ -x {venv}/bin/python ]; then PYTHON={venv}/bin/python; else PYTHON=python3; fi
fi
cd "$ROOT/{code_folder}" || exit 1
export {root_variable}="$ROOT"
# The exercise this bundle was built for (python -m grader ... --exercise): whatever the
# platform's environment says, this script grades that one.
export {exercise_variable}={exercise}
exec "$PYTHON" -m {module}{arguments}
"""


class GraderFailure(Exception):
    """The grader could not grade: the message is for the instructor."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


# --- choosing the student's file --------------------------------------------------------------


def choose_submission_file(folder: Path) -> tuple[Path | None, str]:
    """The file to grade in a platform's submission folder, and a sentence saying what was found.

    The file that holds the most of the work is graded, whatever its name: the exercise's
    functions written, read from each .py and notebook's syntax tree, never run
    (grader.reading.work_held.most_work, the rule of the batch's intake too), so a one-line
    multi_head_attention.py does not hide a complete notebook. When no file writes any of
    them: multi_head_attention.py (the shallowest), else the only notebook, else the only
    .py, else the only .zip. Symbolic links are never followed or chosen (one could point at
    the reference solution), nor hidden files and OS junk (``__MACOSX``).
    """
    from grader.reading import work_held
    from grader.batch.intake import JUNK_NAMES, MAX_UNPACKED_BYTES
    from grader.reading.loading import MODULE_FILE_NAME

    def junk(name: str) -> bool:
        return name.startswith(".") or name.casefold() in JUNK_NAMES

    folder = Path(folder)
    files: list[Path] = []
    for root, dirs, names in os.walk(folder):  # does not follow symlinked folders
        dirs[:] = sorted(name for name in dirs if not junk(name))
        for name in sorted(names):
            path = Path(root, name)
            if not junk(name) and not path.is_symlink() and path.is_file():
                files.append(path)
    relative = {path: path.relative_to(folder).as_posix() for path in files}
    # The named file first, then the shallowest, then by path: the order ties are broken in.
    code = sorted(
        (path for path in files if path.suffix.lower() in (".py", ".ipynb")),
        key=lambda path: (path.stem != MODULE_FILE_NAME.removesuffix(".py"), len(path.parts), relative[path]),
    )
    works = {path: work_held.work_in_file(path, MAX_UNPACKED_BYTES) for path in code}
    holding = [path for path in code if works[path].written]
    if holding:
        chosen = holding[work_held.most_work([(path.name, works[path]) for path in holding])]
        others = [path for path in code if path != chosen]
        if not others:
            unnamed = f" (no file is named {MODULE_FILE_NAME})" if chosen.name != MODULE_FILE_NAME else ""
            return chosen, f"graded {relative[chosen]}{unnamed}"
        passed_over = "; ".join(f"{relative[path]} {works[path].describe()}" for path in others[:5])
        return chosen, f"graded {relative[chosen]} (it holds more of the work: it {works[chosen].describe()}; {passed_over})"
    named = [path for path in files if path.name == MODULE_FILE_NAME]
    if named:
        chosen = min(named, key=lambda path: (len(path.parts), relative[path]))
        return chosen, f"graded {relative[chosen]}"
    for suffix in (".ipynb", ".py", ".zip"):
        of_kind = [path for path in files if path.suffix.lower() == suffix]
        if len(of_kind) == 1:
            return of_kind[0], f"graded {relative[of_kind[0]]} (no file is named {MODULE_FILE_NAME})"
        if of_kind:
            shown = ", ".join(relative[path] for path in of_kind[:5]) + (", ..." if len(of_kind) > 5 else "")
            return None, (
                f"nothing was graded: your submission holds several {suffix} files ({shown}) and no "
                f"{MODULE_FILE_NAME}, so which one to grade is unclear. Name your file {MODULE_FILE_NAME}."
            )
    if files:
        shown = ", ".join(relative[path] for path in files[:5]) + (", ..." if len(files) > 5 else "")
        return None, f"nothing was graded: your submission ({shown}) holds no {MODULE_FILE_NAME}, notebook or .zip."
    return None, f"nothing was graded: your submission is empty. Submit {MODULE_FILE_NAME}."


def _stage(chosen: Path | None, submissions: Path) -> None:
    """One entry named ``submission`` for the batch: a copy of the chosen file, or an empty folder.

    A copy, not a link: the batch's intake never follows links. It reads the entry (bounded,
    checked), so the copy stops one byte past the largest entry intake accepts (a bigger one
    is refused as too large all the same). An empty folder becomes an intake problem, so a
    submission with nothing to grade still gets every test, failed.
    """
    from grader.batch import intake

    submissions.mkdir()
    if chosen is None:
        (submissions / STUDENT_ID).mkdir()
        return
    with open(chosen, "rb") as source:  # a regular file, not a link (choose_submission_file)
        data = source.read(intake.MAX_UNPACKED_BYTES + 1)
    (submissions / (STUDENT_ID + chosen.suffix.lower())).write_bytes(data)


# --- grading ----------------------------------------------------------------------------------


def protect(results_folder: Path, private: tuple[Path, ...] = ()) -> list[Path]:
    """Before any student code runs: results writable by their owner only (no stale results.json),
    the ``private`` paths (solution, hidden tests, platform metadata) readable by their owner only.

    Returns the paths that exist but could not be closed (not this user's): the instructors'
    note names them, rather than claiming they were locked.
    """
    results_folder.mkdir(parents=True, exist_ok=True)
    stale = results_folder / "results.json"
    if stale.is_symlink() or stale.is_file():
        stale.unlink()
    left_open = []
    for path, mode in ((results_folder, 0o755), *((path, 0o700 if path.is_dir() else 0o600) for path in private)):
        try:
            if not path.exists():
                continue
            if path.stat().st_uid != os.geteuid():
                raise PermissionError(path)
            path.chmod(mode)
        except OSError:
            left_open.append(path)  # not ours to change: nothing more this process can do about it
    return left_open


def add_root_argument(parser: argparse.ArgumentParser, variable: str, default: str, what: str) -> None:
    """``--root``: the platform's folder, by default ``$variable`` when set, else ``default``."""
    parser.add_argument(
        "--root", type=Path, default=Path(os.environ.get(variable) or default),
        help=f"{what} (default: ${variable}, else {default})",
    )


def requested_sandbox() -> str:
    return os.environ.get(SANDBOX_VARIABLE) or "auto"


def check_sandbox(sandbox: str) -> None:
    if sandbox not in SANDBOXES:
        raise GraderFailure(f"{SANDBOX_VARIABLE}={sandbox!r} is not one of {', '.join(SANDBOXES)}.")


def call_timeout_options() -> list[str]:
    """The batch's --call-timeout from GRADER_CALL_TIMEOUT, checked here: a bad value (0, -1,
    inf, nan, abc) is the autograder's fault, answered as such, never a 0 for the student."""
    text = os.environ.get(CALL_TIMEOUT_VARIABLE)
    if not text:
        return []
    try:
        return ["--call-timeout", repr(settings.positive_seconds(text))]
    except ValueError as error:
        # The details replace a traceback in the instructor's log: the sentence says it all.
        advice = f"Set {CALL_TIMEOUT_VARIABLE} to the seconds one call may take (the default is 5), or remove it."
        raise GraderFailure(f"{CALL_TIMEOUT_VARIABLE}={text!r} is not usable: {error}.", advice) from None


def grade(chosen: Path | None, sandbox: str) -> dict:
    """The batch's result document for the one file ``chosen`` (every test failed when None)."""
    from grader.batch import run as batch

    check_sandbox(sandbox)
    call_timeout = call_timeout_options()
    with tempfile.TemporaryDirectory(prefix="mha-autograder-") as work:  # 0o700: invisible to nobody
        submissions, out = Path(work) / "submissions", Path(work) / "out"
        _stage(chosen, submissions)
        parser = argparse.ArgumentParser()
        batch.add_arguments(parser)
        status = batch.run(parser.parse_args(
            [str(submissions), "--out", str(out), "--jobs", "1", "--sandbox", sandbox, "--quiet", "--force", "--no-report", *call_timeout]
        ))
        try:
            document = json.loads((out / "results" / f"{STUDENT_ID}.json").read_text(encoding="utf-8"))
            # The batch resolves "auto" itself and hands its sessions the result, so only
            # the class file records why it fell back to the process sandbox.
            whole_class = json.loads((out / "results.json").read_text(encoding="utf-8"))
            return document | {key: whole_class[key] for key in ("sandbox", "sandbox_note") if whole_class.get(key)}
        except (OSError, ValueError):
            logs = [out / "batch.log", *sorted((out / "logs").glob("*.log"))]
            tails = "\n\n".join(f"--- {p.name} (end) ---\n{_tail(p)}" for p in logs if p.is_file())
            raise GraderFailure(f"the batch grader (exit {status}) wrote no result for the submission", tails) from None


def _tail(path: Path, characters: int = 4000) -> str:
    return path.read_text(encoding="utf-8", errors="replace")[-characters:]


def failure_details(error: BaseException) -> str:
    """What an instructor needs to see about a grader failure: its details, else its traceback."""
    import traceback

    return getattr(error, "details", "") or "".join(traceback.format_exception(error))[-4000:]


# --- what people read -------------------------------------------------------------------------


def readable(test_name: str) -> str:
    """``test_x[submission-b1-s4]`` -> ``test_x[b1-s4]``: the batch's submission id says nothing here."""
    return test_name.replace(f"[{STUDENT_ID}-", "[").replace(f"[{STUDENT_ID}]", "")


def sentence(text: str) -> str:
    """``graded x.py`` -> ``Graded x.py.``"""
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def shown_diagnoses(document: dict, *, hidden_details: bool) -> list[dict]:
    """The diagnosis as far as the student may see it: without ``hidden_details`` (the hidden
    checks not shown yet), a diagnosis only the hidden checks revealed is left out, and so
    are their names."""
    if hidden_details:
        return document.get("diagnoses", [])
    shown = {t["name"] for t in document.get("tests", []) if t["group"] != HIDDEN_GROUP}
    entries = []
    for entry in document.get("diagnoses", []):
        explains = [name for name in entry.get("explains", []) if name in shown]
        if explains or entry.get("first_failing_check") in shown:
            entries.append(dict(entry, explains=explains) | (
                {"unreplayable": [name for name in entry["unreplayable"] if name in shown]} if "unreplayable" in entry else {}
            ))
    return entries


def failure_output(test: dict, explained: bool) -> str:
    """What a student reads under a failed check: its whole message, or, when the diagnosis
    explains it, its first line (the diagnosis at the top says what to change)."""
    message = test["message"] or f"this check did not pass ({test['outcome']})"
    if explained:
        return f"{diagnosis_text.compact_message(message)}\n(explained by the diagnosis at the top of this page)"
    return message


def student_summary(
    document: dict, found: str, *, hidden_note: str | None = None, hidden_details: bool = True, diagnoses: list[dict] = ()
) -> str:
    """Points per group, for a student, after the diagnosis (``diagnoses``, as far as shown).
    ``hidden_note`` replaces the hidden group's earned points ("shown after the due date");
    without ``hidden_details`` a failed hidden check is not hinted at."""
    from grader.scoring import GROUP_TITLES

    lines = [sentence(found), ""]
    if diagnoses:
        lines += ["What went wrong:", *diagnosis_text.text_lines(diagnoses), ""]
    if document.get("import_error"):
        lines += ["Your file could not be imported, so no test could run:", document["import_error"], ""]
    if document.get("notebook"):  # how a notebook's cells ran (grader/session/handles.py, _how_the_notebook_ran)
        lines += ["How your notebook ran:", *document["notebook"], ""]
    lines.append("Points per group:")
    for group, points in document.get("groups", {}).items():
        if group == HIDDEN_GROUP and hidden_note is not None:
            lines.append(f"  {GROUP_TITLES[group]}: {points['max']} points, {hidden_note}")
        else:
            lines.append(f"  {GROUP_TITLES[group]}: {points['earned']}/{points['max']}")
    shown = [t for t in document.get("tests", []) if t["group"] != HIDDEN_GROUP or hidden_details]
    if any(test["outcome"] != "passed" for test in shown):
        lines += ["", "Each failed check below says what was expected, what came back, and the likely mistake."]
    return "\n".join(lines).strip() + "\n"


def instructor_note(
    document: dict,
    *,
    sandbox_requested: str,
    found: str,
    running_as_root: bool,
    private: str,
    runner: str,
    left_open: list[Path] | tuple[Path, ...] = (),
) -> str:
    """For instructors only: the sandbox that ran (and why, when not bubblewrap), the grading seed,
    what the submission printed. ``private`` names what was locked away from student code
    ("the source folder (solutions, hidden tests)"), ``runner`` the platform's script,
    ``left_open`` what ``protect`` could not close."""
    from grader.sandbox import landlock

    sandbox, why = document.get("sandbox", "unknown"), document.get("sandbox_note", "")
    if sandbox == "bwrap":
        lines = [
            "Sandbox: bwrap (bubblewrap). Student code ran with no network, its own pid namespace, "
            "a private /tmp and the autograder's files invisible, as user nobody."
        ]
    else:
        if sandbox_requested == "process":
            reason = f"{SANDBOX_VARIABLE}=process was set, so bubblewrap was not tried"
        else:
            reason = why or "bubblewrap could not run here"
        if running_as_root and not left_open:
            user = (
                f"as the unprivileged user nobody (uid 65534). {private[:1].upper() + private[1:]} was made "
                "unreadable to it and the results folder unwritable; it saw the rest of the file "
                "system as nobody does"
            )
        elif running_as_root:
            user = "as the unprivileged user nobody (uid 65534); it saw the file system as nobody does"
        else:
            user = (
                f"as the grader's own user: {runner} was not root, so there was no privilege drop and "
                f"it could read {private} and write the results folder (the results are still written "
                "last, after it was stopped)"
            )
        if landlock.abi_version() >= 1:
            walls = (
                f"Landlock (ABI {landlock.abi_version()}) confined it further: it could read only Python and "
                "the system's libraries, write only its own folder, and open no TCP connection."
            )
        else:
            walls = "Landlock was not available in this container, so nothing else confined it."
        lines = [
            f"Sandbox: {sandbox} (NOT bubblewrap): {reason}.",
            f"Student code ran as a plain child process with the grader's limits, {user}.",
            walls,
        ]
        if left_open:
            shown = ", ".join(str(path) for path in left_open)
            lines.append(
                f"NOT closed to it: {shown} (not this user's files): it could read or write them "
                "as their permissions allow, unless Landlock stopped it."
            )
    seed = document.get("grading_seed")
    lines += [
        f"Grader version {document.get('grader_version', '?')}, grading seed {seed} "
        f"(replay with: python -m grader batch FOLDER --out OUT --grading-seed {seed}).",
        f"Submission: {found}; sha256 of the graded source {document.get('content_hash', '') or '(none)'}.",
        f"Score {document.get('score')}/{document.get('max_score')}.",
    ]
    if document.get("import_error"):
        lines += ["", "Import error:", document["import_error"]]
    printed = document.get("output", "")
    lines += ["", "What the submission printed (stdout and stderr):", printed if printed.strip() else "(nothing)"]
    return "\n".join(lines)


# --- a platform's copy of the grader, and installing it --------------------------------------


def shipped_files(names: tuple[str, ...] = SHIPPED) -> list[Path]:
    """The repository's files under ``names`` (folders or files), without caches or symlinks."""
    files = []
    for name in names:
        top = REPO_ROOT / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*"))
        for path in candidates:
            relative = path.relative_to(REPO_ROOT).parts
            if path.is_file() and not path.is_symlink() and not NEVER_SHIPPED & set(relative) and path.suffix != ".pyc":
                files.append(path)
    return files


def entrypoint(
    comment: str, *, root_variable: str, default_root: str, code_folder: str, module: str, arguments: str = ""
) -> str:
    """The bash script a platform runs for every submission (``ENTRYPOINT``)."""
    return ENTRYPOINT.format(
        comment=comment.rstrip("\n"), venv=VENV, root_variable=root_variable, default_root=default_root,
        code_folder=code_folder, module=module, arguments=f" {arguments}" if arguments else "",
        exercise_variable=registry.CHOSEN, exercise=shlex.quote(registry.exercise().name),
    )


def pinned(package: str, requirements: Path = REPO_ROOT / "requirements.txt") -> str:
    """The requirement line pinning ``package`` in requirements.txt (``torch==2.13.0``)."""
    for line in requirements.read_text(encoding="utf-8").splitlines():
        name = line.split("#")[0].strip()
        if name.split("==")[0].strip().lower() == package.lower() and "==" in name:
            return name
    raise ValueError(f"{requirements.name} pins no version of {package}")
