"""Gradescope: ``python -m grader gradescope OUT.zip``, and the grading that zip runs there.

Building (the instructor's machine) writes a zip for a Gradescope programming assignment:

    setup.sh          run once when Gradescope builds the image: bubblewrap, a virtualenv,
                      ``pip install -r requirements.txt``
    run_autograder    run for every submission: ``python -m grader.platforms.gradescope``
    grader/           the whole grader, hidden tests included
    solutions/        the reference the hidden tests compare with
    requirements.txt  the pinned versions

Grading (inside Gradescope's container, ``python -m grader.platforms.gradescope``) takes the root
from ``GRADESCOPE_ROOT`` (default ``/autograder``), picks the student's file in
``ROOT/submission``, grades it with the batch machinery (``grader.batch``: the sandboxed
worker, the hidden tests, a fresh grading seed) and writes ``ROOT/results/results.json``
in Gradescope's schema. Gradescope reads only that file, and student code could write it
too, so: the results folder is made writable by its owner only before any student code
runs, a stale results.json is removed, and the real one is written last, atomically,
after the sandbox is gone. The source folder (solutions, hidden tests) is made readable
by its owner only, which matters when bubblewrap cannot run and student code runs as
the unprivileged user "nobody" in the plain-process sandbox. These steps are shared with
the PrairieLearn autograder (``grader/platforms/autograder.py``).

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

from grader.feedback import diagnosis_text
from grader.platforms import gradescope_late
from grader.platforms.autograder import (
    HIDDEN_GROUP,
    VENV,
    add_root_argument,
    choose_submission_file,  # noqa: F401 - part of this module's interface (tests, instructors)
    entrypoint,
    failure_details,
    failure_output,
    instructor_note,
    protect,
    readable,
    requested_sandbox,
    shipped_files,
    shown_diagnoses,
    student_summary,
)
from grader.platforms.autograder import grade as grade_file

REPO_ROOT = Path(__file__).resolve().parents[2]

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")  # Gradescope's values
DEFAULT_HIDDEN_VISIBILITY = "after_published"
ROOT_VARIABLE = "GRADESCOPE_ROOT"
DEFAULT_ROOT = "/autograder"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed: the same repository gives the same zip

SETUP_SH = f"""\
#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source, when it builds the image: its
# build runs `apt-get update && bash /autograder/source/setup.sh` (gradescope/autograder_samples,
# manual_docker/Dockerfile). The grader needs Python 3.11 or newer (the pinned numpy does).
# Gradescope's default base image is Ubuntu 22.04 (docs/base_images.md), whose python3 is
# 3.10: then Python 3.11 comes from Ubuntu's own archive (22.04's universe has python3.11 and
# python3.11-venv), and the grader's virtualenv is made with it. Ubuntu 24.04's python3 (3.12)
# is used as it is.
set -euo pipefail
cd "$(dirname "${{BASH_SOURCE[0]}}")"
export DEBIAN_FRONTEND=noninteractive
VENV="${{GRADER_VENV:-{VENV}}}"  # outside /autograder/source, which run_autograder makes unreadable to student code
supported() {{ "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; }}
PYTHON=""
for candidate in python3 python3.13 python3.12 python3.11; do
    if command -v "$candidate" >/dev/null 2>&1 && supported "$candidate"; then
        PYTHON="$(command -v "$candidate")"
        break
    fi
done
apt-get update
# bubblewrap: the sandbox for student code. The venv package: Ubuntu's Pythons ship without it.
if [ -n "$PYTHON" ]; then
    apt-get install -y bubblewrap "$(basename "$PYTHON")-venv"
else
    found="$(command -v python3 >/dev/null 2>&1 && python3 --version 2>&1 || echo 'not installed')"
    echo "setup.sh: python3 is $found; the grader needs 3.11 or newer: installing python3.11 from the distribution's archive"
    apt-get install -y bubblewrap python3.11 python3.11-venv || {{
        echo "setup.sh: could not install python3.11 from this image's archive: choose Gradescope's Ubuntu 22.04 (default) or 24.04 base image" >&2
        exit 1
    }}
    PYTHON="$(command -v python3.11)"
fi
# A virtualenv, because Ubuntu 24.04 refuses system-wide pip installs (PEP 668).
"$PYTHON" -m venv "$VENV"
echo "setup.sh: the grader runs on $("$VENV/bin/python" --version) ($PYTHON), in $VENV"
# torch's CPU build from the PyTorch CPU wheel index (no GPU here; PyPI's Linux wheel is the
# CUDA build, several GB): TORCH_INDEX changes the index (a mirror) or, empty, turns it off.
# grader/torch_index.py adds it only when it answers within 3 s, so an offline build still works.
TORCH_INDEX="${{TORCH_INDEX-https://download.pytorch.org/whl/cpu}}"
"$VENV/bin/python" -m pip install --disable-pip-version-check \\
    $("$VENV/bin/python" grader/torch_index.py "$TORCH_INDEX") -r requirements.txt
"""

RUN_AUTOGRADER_COMMENT = f"""\
# Gradescope runs this for every submission (as root). It grades ROOT/submission and
# writes ROOT/results/results.json; ROOT is ${ROOT_VARIABLE}, default {DEFAULT_ROOT}.
# setup.sh made the virtualenv."""

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
    try:
        late_policy = gradescope_late.policy_document(getattr(arguments, "course_settings", None))
    except ValueError as error:  # an extension's name the course's roster does not resolve (course_inputs.Refused)
        for line in str(error).splitlines():
            print(f"error: {line}", file=sys.stderr)
        print("nothing written: fix the course's files (python -m grader course check)", file=sys.stderr)
        return 2
    path = build_zip(arguments.out, arguments.hidden_visibility, late_policy)
    with zipfile.ZipFile(path) as archive:
        count = len(archive.namelist())
    print(f"wrote {path} ({count} files; hidden tests {arguments.hidden_visibility}).")
    if late_policy is not None:
        print(f"late work: the course's deadline ({late_policy['deadline']}), policy and extensions go with it")
    print("Upload it as the autograder of a Gradescope programming assignment (the default Ubuntu 22.04 base image, or 24.04).")
    return 0


def build_zip(out: Path, hidden_visibility: str = DEFAULT_HIDDEN_VISIBILITY, late_policy: dict | None = None) -> Path:
    """Write the autograder zip to ``out`` (replacing it) and return its path."""
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"hidden_visibility must be one of {VISIBILITIES}, not {hidden_visibility!r}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    run_autograder = entrypoint(
        RUN_AUTOGRADER_COMMENT, root_variable=ROOT_VARIABLE, default_root=DEFAULT_ROOT, code_folder="source",
        module="grader.platforms.gradescope", arguments=f"--hidden-visibility {hidden_visibility}",
    )
    descriptor, temporary = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(descriptor)
    try:
        # mkstemp's file is 0600; the zip gets the mode any new file gets (0644 under the usual
        # umask 022), so a TA can upload it from a shared machine as from the instructor's own.
        os.chmod(temporary, 0o666 & ~_umask())
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            _add(archive, "setup.sh", SETUP_SH.encode("utf-8"), 0o755)
            _add(archive, "run_autograder", run_autograder.encode("utf-8"), 0o755)
            for path in shipped_files():
                _add(archive, path.relative_to(REPO_ROOT).as_posix(), path.read_bytes(), 0o644)
            if late_policy is not None:  # the course's deadline and policy (grader/platforms/gradescope_late.py)
                _add(archive, gradescope_late.POLICY_FILE, json.dumps(late_policy, indent=1).encode("utf-8"), 0o644)
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return out


def _umask() -> int:
    """The process's umask (os.umask can only be read by setting it: set back at once)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    info.create_system = 3  # Unix, so that unzip applies the mode below
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


# --- results.json in Gradescope's schema -----------------------------------------------------


def gradescope_results(
    document: dict,
    *,
    hidden_visibility: str = DEFAULT_HIDDEN_VISIBILITY,
    sandbox_requested: str = "auto",
    found: str = "",
    running_as_root: bool | None = None,
    left_open: list[Path] | tuple[Path, ...] = (),
) -> dict:
    """Gradescope's results.json for one graded submission (a batch result ``document``)."""
    from grader.scoring import GROUP_TITLES, GROUPS

    if running_as_root is None:
        running_as_root = os.geteuid() == 0
    diagnoses = shown_diagnoses(document, hidden_details=hidden_visibility == "visible")
    explained = diagnosis_text.explained_checks(diagnoses)
    tests = []
    counters = dict.fromkeys(GROUPS, 0)
    for test in sorted(document["tests"], key=lambda t: GROUPS.index(t["group"])):  # stable: keeps grading order
        group = test["group"]
        counters[group] += 1
        passed = test["outcome"] == "passed"
        entry = {
            "name": f"{GROUP_TITLES[group]}: {readable(test['name'])}",
            "number": f"{GROUPS.index(group) + 1}.{counters[group]}",
            "score": float(test["points"]),
            "max_score": float(test["max_points"]),
            "status": "passed" if passed else "failed",
            "output": "" if passed else failure_output(test, test["name"] in explained),
            "visibility": hidden_visibility if group == HIDDEN_GROUP else "visible",
        }
        # A hidden check's matrices only where its details are shown at once (as its message is).
        if not passed and test.get("attention") and (group != HIDDEN_GROUP or hidden_visibility == "visible"):
            entry |= with_picture(entry["output"], test["attention"])
        tests.append(entry)
    sandbox, sandbox_note = document.get("sandbox", ""), document.get("sandbox_note", "")
    note = instructor_note(
        document, sandbox_requested=sandbox_requested, found=found, running_as_root=running_as_root,
        private="the source folder (solutions, hidden tests)", runner="run_autograder", left_open=left_open,
    )
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
        "output": html.escape(student_summary(
            document, found,
            hidden_note=None if hidden_visibility == "visible" else WHEN_SHOWN[hidden_visibility],
            hidden_details=hidden_visibility == "visible",  # a hidden failure is not hinted at
            diagnoses=diagnoses,
        )),
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


def with_picture(message: str, picture: dict) -> dict:
    """A test's output as HTML: its message as text, then the student's attention matrix beside
    the reference's as an inline PNG. Gradescope renders a test's output as HTML when its
    "output_format" is "html" (sanitised: basic elements only; gradescope/autograder_samples,
    docs/specs.md, "Output String Formatting"), and an image embedded as a base64 data URL shows
    there (https://github.com/gradescope/autograder_samples/discussions/108): no file, no request."""
    from grader.class_view import attention_picture

    label = html.escape(attention_picture.label(picture))
    return {
        "output": f"<pre>{html.escape(message)}</pre>\n<p><img src=\"{attention_picture.data_url(picture)}\" alt=\"{label}\"></p>"
                  f"\n<p>{label}</p>",
        "output_format": "html",
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


# --- grading one submission (inside Gradescope) ----------------------------------------------


def autograde(root: Path, hidden_visibility: str = DEFAULT_HIDDEN_VISIBILITY, sandbox: str = "auto") -> int:
    """Grade ``root/submission`` into ``root/results/results.json``. 0 when graded, 1 when the grader failed."""
    from grader import results

    started = time.monotonic()
    root = Path(root)
    results_path = root / "results" / "results.json"
    left_open = protect(root / "results", (root / "source", root / "submission_metadata.json"))
    try:
        chosen, found = choose_submission_file(root / "submission")
        document = grade_file(chosen, sandbox)
        report = gradescope_results(
            document, hidden_visibility=hidden_visibility, sandbox_requested=sandbox, found=found, left_open=left_open
        )
        report = gradescope_late.apply(
            report, root / "source", root / "submission_metadata.json", totals_shown=hidden_visibility == "visible"
        )
        status = 0
    except Exception as error:  # noqa: BLE001 - whatever went wrong, Gradescope must get a results.json saying so
        report = failure_results(f"{type(error).__name__}: {error}", failure_details(error))
        status = 1
    # A failure found before any grading takes well under a millisecond: still report a
    # positive time, as a run that happened.
    report["execution_time"] = max(round(time.monotonic() - started, 3), 0.001)
    # Written last, atomically, after every student process is gone: it replaces whatever
    # a submission may have managed to put there.
    results.write_atomically(results_path, json.dumps(report, indent=2) + "\n")
    _print_for_instructors(report, results_path)
    return status


def _print_for_instructors(report: dict, results_path: Path) -> None:
    """run_autograder's stdout: shown to instructors only (stdout_visibility "hidden")."""
    maximum = sum(test["max_score"] for test in report["tests"])
    print(f"score {report['score']:g}/{maximum:g} in {report['execution_time']:.1f} s, written to {results_path}")
    for test in report["tests"]:
        if test["visibility"] == "hidden" and test["max_score"] == 0:
            print(test["output"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.platforms.gradescope", description="Grade one Gradescope submission.")
    add_root_argument(parser, ROOT_VARIABLE, DEFAULT_ROOT, "Gradescope's folder")
    parser.add_argument("--hidden-visibility", choices=VISIBILITIES, default=DEFAULT_HIDDEN_VISIBILITY)
    arguments = parser.parse_args(argv)
    return autograde(arguments.root, arguments.hidden_visibility, requested_sandbox())


if __name__ == "__main__":
    sys.exit(main())
