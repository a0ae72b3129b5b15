"""Gradescope: ``python -m grader gradescope OUT.zip``, and the grading that zip runs there.

Building (the instructor's machine) writes a zip for a Gradescope programming assignment:

    setup.sh          run once when Gradescope builds the image: bubblewrap, a virtualenv,
                      ``pip install -r requirements.txt``
    run_autograder    run for every submission: ``python -m grader.handout.gradescope``
    grader/           the whole grader, hidden tests included
    solutions/        the reference the hidden tests compare with
    requirements.txt  the pinned versions

Grading (inside Gradescope's container, ``python -m grader.handout.gradescope``) takes the root
from ``GRADESCOPE_ROOT`` (default ``/autograder``), picks the student's file in
``ROOT/submission``, grades it with the batch machinery (``grader.batch``: the sandboxed
worker, the hidden tests, a fresh grading seed) and writes ``ROOT/results/results.json``
in Gradescope's schema. Gradescope reads only that file, and student code could write it
too, so: the results folder is made writable by its owner only before any student code
runs, a stale results.json is removed, and the real one is written last, atomically,
after the sandbox is gone. The source folder (solutions, hidden tests) is made readable
by its owner only, which matters when bubblewrap cannot run and student code runs as
the unprivileged user "nobody" in the plain-process sandbox.

What students see: every test with its message (expected, got, hint), the hidden
(``reference``) group with the visibility chosen at build time, and a summary without
the total. What only instructors see: one test entry with visibility "hidden" naming the
sandbox actually used (and why, when it is not bubblewrap), the grading seed, and what the
submission printed; the same in ``extra_data`` and on run_autograder's stdout
(``stdout_visibility`` "hidden").
"""

from __future__ import annotations

import argparse
import html
import json
import os
import stat
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# What the zip carries besides setup.sh and run_autograder. Never tests/ or exercises/.
SHIPPED = ("grader", "solutions", "requirements.txt")
NEVER_SHIPPED = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints", ".DS_Store"}

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")  # Gradescope's values
DEFAULT_HIDDEN_VISIBILITY = "after_published"
HIDDEN_GROUP = "reference"
SANDBOXES = ("auto", "bwrap", "process")
ROOT_VARIABLE = "GRADESCOPE_ROOT"
SANDBOX_VARIABLE = "GRADER_SANDBOX"
DEFAULT_ROOT = "/autograder"
VENV = "/opt/mha-grader-venv"  # made by setup.sh; outside the source folder, which gets locked
STUDENT_ID = "submission"  # the batch's name for the one student graded here
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed: the same repository gives the same zip

SETUP_SH = f"""\
#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source, when it builds the image.
# It needs Python >= 3.11 (the pinned numpy needs it): choose a base image whose python3
# is recent enough (Ubuntu 24.04 has 3.12).
set -euo pipefail
cd "$(dirname "${{BASH_SOURCE[0]}}")"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {{
    echo "python3 is $(python3 --version 2>&1); the grader needs 3.11 or newer: choose another base image" >&2
    exit 1
}}
export DEBIAN_FRONTEND=noninteractive
apt-get update
# bubblewrap: the sandbox for student code. python3-venv: Ubuntu's python3 ships without it.
apt-get install -y bubblewrap python3-venv
# A virtualenv, because Ubuntu 24.04 refuses system-wide pip installs (PEP 668). It lives
# outside /autograder/source, which run_autograder makes unreadable to student code.
python3 -m venv {VENV}
# torch's CPU build from the PyTorch CPU wheel index (no GPU here; PyPI's Linux wheel is the
# CUDA build, several GB): TORCH_INDEX changes the index (a mirror) or, empty, turns it off.
# grader/torch_index.py adds it only when it answers within 3 s, so an offline build still works.
TORCH_INDEX="${{TORCH_INDEX-https://download.pytorch.org/whl/cpu}}"
{VENV}/bin/python -m pip install --disable-pip-version-check \\
    $({VENV}/bin/python grader/torch_index.py "$TORCH_INDEX") -r requirements.txt
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission (as root). It grades ROOT/submission and
# writes ROOT/results/results.json; ROOT is $GRADESCOPE_ROOT, default /autograder.
# Python: $PYTHON when set, else the virtualenv setup.sh made ({venv}), else python3 on PATH.
# GRADER_SANDBOX=auto|bwrap|process chooses the sandbox for student code (default auto:
# bubblewrap when it can run, else the plain-process sandbox, as user nobody when root).
set -u
ROOT="${{GRADESCOPE_ROOT:-{root}}}"
if [ -z "${{PYTHON:-}}" ]; then
    if [ -x {venv}/bin/python ]; then PYTHON={venv}/bin/python; else PYTHON=python3; fi
fi
cd "$ROOT/source" || exit 1
export GRADESCOPE_ROOT="$ROOT"
exec "$PYTHON" -m grader.handout.gradescope --hidden-visibility {hidden_visibility}
"""

WHEN_SHOWN = {
    "hidden": "not shown to students",
    "after_due_date": "shown after the due date",
    "after_published": "shown when your instructor publishes the grades",
    "visible": "shown now",
}


# --- building the zip (the instructor's machine) -------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="the zip to write, e.g. autograder.zip")
    parser.add_argument(
        "--hidden-visibility",
        choices=VISIBILITIES,
        default=DEFAULT_HIDDEN_VISIBILITY,
        help="when students see the hidden tests' results (default: after_published)",
    )


def run(arguments: argparse.Namespace) -> int:
    path = build_zip(arguments.out, arguments.hidden_visibility)
    with zipfile.ZipFile(path) as archive:
        count = len(archive.namelist())
    print(f"wrote {path} ({count} files; hidden tests {arguments.hidden_visibility}).")
    print("Upload it as the autograder of a Gradescope programming assignment (base image with python3 >= 3.11).")
    return 0


def build_zip(out: Path, hidden_visibility: str = DEFAULT_HIDDEN_VISIBILITY) -> Path:
    """Write the autograder zip to ``out`` (replacing it) and return its path."""
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"hidden_visibility must be one of {VISIBILITIES}, not {hidden_visibility!r}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    run_autograder = RUN_AUTOGRADER.format(venv=VENV, root=DEFAULT_ROOT, hidden_visibility=hidden_visibility)
    descriptor, temporary = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(descriptor)
    try:
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            _add(archive, "setup.sh", SETUP_SH.encode("utf-8"), 0o755)
            _add(archive, "run_autograder", run_autograder.encode("utf-8"), 0o755)
            for path in _shipped_files():
                _add(archive, path.relative_to(REPO_ROOT).as_posix(), path.read_bytes(), 0o644)
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return out


def _shipped_files() -> list[Path]:
    files = []
    for name in SHIPPED:
        top = REPO_ROOT / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*"))
        for path in candidates:
            relative = path.relative_to(REPO_ROOT).parts
            if path.is_file() and not path.is_symlink() and not NEVER_SHIPPED & set(relative) and path.suffix != ".pyc":
                files.append(path)
    return files


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    info.create_system = 3  # Unix, so that unzip applies the mode below
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


# --- choosing the student's file (inside Gradescope) ----------------------------------------


def choose_submission_file(folder: Path) -> tuple[Path | None, str]:
    """The file to grade in Gradescope's submission folder, and a sentence saying what was found.

    multi_head_attention.py (the shallowest), else the only notebook, else the only .py,
    else the only .zip. With both multi_head_attention.py and multi_head_attention.ipynb, the
    one that holds the work (grader.loading.choose_work's rule: fewer NotImplementedError left). Symbolic links are never followed or chosen (one could point at
    the reference solution), nor hidden files and OS junk (``__MACOSX``).
    """
    from grader.batch.intake import JUNK_NAMES
    from grader.loading import MODULE_FILE_NAME, NOTEBOOK_FILE_NAME, functions_left
    from grader.notebooks import notebook_code

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
    named = [path for path in files if path.name == MODULE_FILE_NAME]
    if named:
        chosen = min(named, key=lambda path: (len(path.parts), relative[path]))
        notebooks = [path for path in files if path.name == NOTEBOOK_FILE_NAME]
        if notebooks:
            notebook = min(notebooks, key=lambda path: (len(path.parts), relative[path]))
            try:
                left = functions_left(notebook_code(notebook.read_text(encoding="utf-8-sig")))
                if left < functions_left(chosen.read_text(encoding="utf-8", errors="replace")):
                    return notebook, f"graded {relative[notebook]} (it holds more of the work than {relative[chosen]})"
            except Exception:  # noqa: BLE001 - an unreadable notebook holds no work to grade
                pass
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
    """One entry named ``submission`` for the batch: a link to the chosen file, or an empty folder.

    The batch's intake reads the entry (bounded, checked); an empty folder becomes an
    intake problem, so a submission with nothing to grade still gets every test, failed.
    """
    submissions.mkdir()
    if chosen is None:
        (submissions / STUDENT_ID).mkdir()
    else:
        (submissions / (STUDENT_ID + chosen.suffix.lower())).symlink_to(chosen.resolve())


# --- results.json in Gradescope's schema -----------------------------------------------------


def gradescope_results(
    document: dict,
    *,
    hidden_visibility: str = DEFAULT_HIDDEN_VISIBILITY,
    sandbox_requested: str = "auto",
    found: str = "",
    running_as_root: bool | None = None,
) -> dict:
    """Gradescope's results.json for one graded submission (a batch result ``document``)."""
    from grader.scoring import GROUP_TITLES, GROUPS

    if running_as_root is None:
        running_as_root = os.geteuid() == 0
    tests = []
    counters = dict.fromkeys(GROUPS, 0)
    for test in sorted(document["tests"], key=lambda t: GROUPS.index(t["group"])):  # stable: keeps grading order
        group = test["group"]
        counters[group] += 1
        passed = test["outcome"] == "passed"
        tests.append({
            "name": f"{GROUP_TITLES[group]}: {_readable(test['name'])}",
            "number": f"{GROUPS.index(group) + 1}.{counters[group]}",
            "score": float(test["points"]),
            "max_score": float(test["max_points"]),
            "status": "passed" if passed else "failed",
            "output": "" if passed else (test["message"] or f"this check did not pass ({test['outcome']})"),
            "visibility": hidden_visibility if group == HIDDEN_GROUP else "visible",
        })
    sandbox, sandbox_note = document.get("sandbox", ""), document.get("sandbox_note", "")
    note = _instructor_note(document, sandbox_requested, found, running_as_root)
    tests.insert(0, {
        "name": "Instructors only: sandbox, grading seed and what the submission printed",
        "number": "0.1",
        "score": 0.0,
        "max_score": 0.0,
        # "failed" flags, in the instructor's view, a submission graded without bubblewrap.
        "status": "passed" if sandbox == "bwrap" else "failed",
        "output": note,
        "visibility": "hidden",
    })
    return {
        "score": float(sum(test["score"] for test in tests)),
        "output": html.escape(_student_summary(document, hidden_visibility, found)),
        "output_format": "simple_format",  # escaped above: the student's text is never rendered as HTML
        "stdout_visibility": "hidden",
        "extra_data": {
            "grader_version": document.get("grader_version", ""),
            "grading_seed": document.get("grading_seed"),
            "sandbox": sandbox,
            "sandbox_note": sandbox_note,
            "sandbox_requested": sandbox_requested,
            "content_hash": document.get("content_hash", ""),
        },
        "tests": tests,
    }


def failure_results(reason: str, details: str = "") -> dict:
    """results.json when the grader itself could not grade: 0 points, and a message for everyone."""
    return {
        "score": 0.0,
        "output": (
            "The autograder could not grade this submission. This is a fault of the autograder, not "
            "of your code: your instructor can see what went wrong. Resubmit later or contact them."
        ),
        "output_format": "simple_format",
        "stdout_visibility": "hidden",
        "extra_data": {"grader_failure": reason},
        "tests": [
            {
                "name": "The autograder ran",
                "number": "0.1",
                "score": 0.0,
                "max_score": 0.0,
                "status": "failed",
                "output": "The autograder failed before it could grade your submission.",
                "visibility": "visible",
            },
            {
                "name": "Instructors only: why the autograder failed",
                "number": "0.2",
                "score": 0.0,
                "max_score": 0.0,
                "status": "failed",
                "output": f"{reason}\n\n{details}".strip(),
                "visibility": "hidden",
            },
        ],
    }


def _readable(test_name: str) -> str:
    """``test_x[submission-b1-s4]`` -> ``test_x[b1-s4]``: the batch's submission id says nothing here."""
    return test_name.replace(f"[{STUDENT_ID}-", "[").replace(f"[{STUDENT_ID}]", "")


def _student_summary(document: dict, hidden_visibility: str, found: str) -> str:
    from grader.scoring import GROUP_TITLES

    sentence = found[:1].upper() + found[1:]
    lines = [sentence if sentence.endswith(".") else sentence + ".", ""]
    if document.get("import_error"):
        lines += ["Your file could not be imported, so no test could run:", document["import_error"], ""]
    lines.append("Points per group:")
    for group, points in document.get("groups", {}).items():
        if group == HIDDEN_GROUP and hidden_visibility != "visible":
            lines.append(f"  {GROUP_TITLES[group]}: {points['max']} points, {WHEN_SHOWN[hidden_visibility]}")
        else:
            lines.append(f"  {GROUP_TITLES[group]}: {points['earned']}/{points['max']}")
    shown = [t for t in document.get("tests", []) if t["group"] != HIDDEN_GROUP or hidden_visibility == "visible"]
    if any(test["outcome"] != "passed" for test in shown):  # a hidden failure is not hinted at
        lines += ["", "Each failed check below says what was expected, what came back, and the likely mistake."]
    return "\n".join(lines).strip() + "\n"


def _instructor_note(document: dict, sandbox_requested: str, found: str, running_as_root: bool) -> str:
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
        if running_as_root:
            user = (
                "as the unprivileged user nobody (uid 65534). The source folder (solutions, hidden tests) "
                "was made unreadable to it and the results folder unwritable; it saw the rest of the file "
                "system as nobody does"
            )
        else:
            user = (
                "as the grader's own user: run_autograder was not root, so there was no privilege drop and "
                "it could read the source folder and write the results folder (results.json is still written "
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


# --- grading one submission (inside Gradescope) ----------------------------------------------


class GraderFailure(Exception):
    """The grader could not grade: the message is for the instructor."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


def autograde(root: Path, hidden_visibility: str = DEFAULT_HIDDEN_VISIBILITY, sandbox: str = "auto") -> int:
    """Grade ``root/submission`` into ``root/results/results.json``. 0 when graded, 1 when the grader failed."""
    from grader import results

    started = time.monotonic()
    root = Path(root)
    results_path = root / "results" / "results.json"
    _protect(root)
    try:
        if sandbox not in SANDBOXES:
            raise GraderFailure(f"{SANDBOX_VARIABLE}={sandbox!r} is not one of {', '.join(SANDBOXES)}.")
        chosen, found = choose_submission_file(root / "submission")
        document = _grade(chosen, sandbox)
        report = gradescope_results(document, hidden_visibility=hidden_visibility, sandbox_requested=sandbox, found=found)
        status = 0
    except Exception as error:  # noqa: BLE001 - whatever went wrong, Gradescope must get a results.json saying so
        details = getattr(error, "details", "") or _traceback_text(error)
        report = failure_results(f"{type(error).__name__}: {error}", details)
        status = 1
    # A failure found before any grading takes well under a millisecond: still report a
    # positive time, as a run that happened.
    report["execution_time"] = max(round(time.monotonic() - started, 3), 0.001)
    # Written last, atomically, after every student process is gone: it replaces whatever
    # a submission may have managed to put there.
    results.write_atomically(results_path, json.dumps(report, indent=2) + "\n")
    _print_for_instructors(report, results_path)
    return status


def _protect(root: Path) -> None:
    """Before any student code runs: results writable by their owner only, sources readable by it only."""
    results_folder = root / "results"
    results_folder.mkdir(parents=True, exist_ok=True)
    stale = results_folder / "results.json"
    if stale.is_symlink() or stale.is_file():
        stale.unlink()
    for path, mode in ((results_folder, 0o755), (root / "source", 0o700), (root / "submission_metadata.json", 0o600)):
        try:
            if path.exists() and path.stat().st_uid == os.geteuid():
                path.chmod(mode)
        except OSError:
            pass  # not ours to change: nothing more this process can do about it


def _grade(chosen: Path | None, sandbox: str) -> dict:
    from grader.batch import run as batch

    with tempfile.TemporaryDirectory(prefix="mha-gradescope-") as work:  # 0o700: invisible to nobody
        submissions, out = Path(work) / "submissions", Path(work) / "out"
        _stage(chosen, submissions)
        parser = argparse.ArgumentParser()
        batch.add_arguments(parser)
        status = batch.run(parser.parse_args(
            [str(submissions), "--out", str(out), "--jobs", "1", "--sandbox", sandbox, "--quiet", "--force"]
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


def _traceback_text(error: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(error))[-4000:]


def _print_for_instructors(report: dict, results_path: Path) -> None:
    """run_autograder's stdout: shown to instructors only (stdout_visibility "hidden")."""
    maximum = sum(test["max_score"] for test in report["tests"])
    print(f"score {report['score']:g}/{maximum:g} in {report['execution_time']:.1f} s, written to {results_path}")
    for test in report["tests"]:
        if test["visibility"] == "hidden" and test["max_score"] == 0:
            print(test["output"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.handout.gradescope", description="Grade one Gradescope submission.")
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(os.environ.get(ROOT_VARIABLE) or DEFAULT_ROOT),
        help=f"Gradescope's folder (default: ${ROOT_VARIABLE}, else {DEFAULT_ROOT})",
    )
    parser.add_argument("--hidden-visibility", choices=VISIBILITIES, default=DEFAULT_HIDDEN_VISIBILITY)
    arguments = parser.parse_args(argv)
    return autograde(arguments.root, arguments.hidden_visibility, os.environ.get(SANDBOX_VARIABLE) or "auto")


if __name__ == "__main__":
    sys.exit(main())
