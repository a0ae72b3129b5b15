"""PrairieLearn: ``python -m grader prairielearn OUT_DIR``, and the grading its external grader runs.

PrairieLearn's external grading (https://docs.prairielearn.com/externalGrading/) starts one
Docker container per submission, with the job's files under ``/grade``: ``student/`` (the
submitted files), ``tests/`` (the question's tests folder), ``serverFilesCourse/`` (files
shared between questions, when ``info.json`` names some), ``data/data.json``; it runs the
question's ``entrypoint`` and, when it exits 0, reads ``/grade/results/results.json``
(1 MB at most) with ``gradable``, ``score`` in [0, 1], ``message``, ``output`` and
``tests`` (``name``, ``description``, ``points``, ``max_points``, ``message``, ``output``).

Building (the instructor's machine) writes::

    OUT_DIR/Dockerfile, requirements.txt    the grading image: Python 3.12, CPU torch, bubblewrap
    OUT_DIR/questions/multi_head_attention/
        info.json        "gradingMethod": "External", externalGradingOptions (image, entrypoint, timeout)
        question.html    the lesson, and the stub in an editor (or an upload field, --upload)
        tests/           run_grader (the entrypoint), grader/ (hidden tests included), solutions/,
                         initial_code.py (the stub the editor starts from)

One question, so no ``serverFilesCourse``: the grader rides in the question's tests/.

Grading (inside the container, ``tests/run_grader``) is the Gradescope autograder's
(``grader/platforms/autograder.py``): the results folder closed and ``tests/``, ``data/`` and
``serverFilesCourse/`` locked before student code runs; the student's file chosen in
``student/`` by the same rules; graded with the batch machinery in the sandbox, falling back
to the plain-process sandbox (as user nobody) where bubblewrap cannot run, which is most
Docker containers; results.json written last, atomically. The root is ``/grade``, or
``$PRAIRIELEARN_ROOT``; the Python ``$PYTHON``, else the image's virtualenv.

What students read (results.json; PrairieLearn keeps it with the submission and shows it
in the submission panel): every visible check with its points and its message (expected,
got, hint), and the hidden group as ONE entry with its points only. PrairieLearn has no
per-test visibility, and the score is shown at once, so the hidden group's total is
there; the names of the hidden checks, their data and their messages are not. What only
instructors read: the entrypoint's stdout, which PrairieLearn keeps as the grading job's
log: the sandbox used (and why, when not bubblewrap), the grading seed, every hidden check
with its message, and what the submission printed.

A submission with nothing to grade (no .py, notebook or .zip) is answered ``"gradable":
false`` with a format error saying why: PrairieLearn then neither awards nor takes points
and does not count the attempt. A grader failure is answered the same way, with a message
saying it is the autograder's fault: never a zero the student did not earn. The entrypoint
exits 0 in both cases, because PrairieLearn reads results.json only after an exit status 0
(on another status it marks the job failed, also not gradable, but with its own message).

Sources, in PrairieLearn's repository: docs/externalGrading.md (the /grade layout, info.json's
externalGradingOptions, results.json's fields, the 1 MB limit, ``gradable``); apps/grader-host/
src/index.ts (results.json read only after exit status 0, refused over 1 MB);
apps/prairielearn/src/lib/externalGraderCommon.ts and the processing of grading results (a
failed job, or ``"gradable": false``, leaves the submission ungraded: no points awarded or
lost); docs/elements (pl-file-editor, pl-file-upload, pl-code, pl-external-grader-results);
the question.html docs (the ``<markdown>`` tag, Mustache templating).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import uuid
from pathlib import Path

from grader.handout import notebook, stubs
from grader.seam import registry
from grader.feedback import diagnosis_text
from grader.platforms.autograder import (
    CPU_TORCH_INDEX,
    HIDDEN_GROUP,
    REPO_ROOT,
    VENV,
    add_root_argument,
    choose_submission_file,
    entrypoint,
    failure_details,
    failure_output,
    grade,
    instructor_note,
    protect,
    readable,
    requested_sandbox,
    sentence,
    shipped_files,
    shown_diagnoses,
    student_summary,
)

EXERCISE = registry.exercise()
QUESTION_ID = EXERCISE.name  # the question is the exercise, by its name
# Stable, so that rebuilding the question keeps its identity in the course.
QUESTION_UUID = str(uuid.uuid5(uuid.NAMESPACE_URL, f"mha-grader:prairielearn:{QUESTION_ID}"))
ROOT_VARIABLE = "PRAIRIELEARN_ROOT"
DEFAULT_ROOT = "/grade"
ENTRYPOINT_NAME = "run_grader"
INITIAL_CODE = "initial_code.py"
# A placeholder of the form an image must have to be pushed and pulled: PrairieLearn pulls
# custom images from a public registry, Docker Hub's as ACCOUNT/NAME (docs/dockerImages.md,
# "Supported registries"). The printed next steps say to replace YOU.
DEFAULT_IMAGE = "YOU/mha-grader"
DEFAULT_TIMEOUT = 300  # seconds: torch's start-up, the visible and hidden tests, and the worst
MAX_TIMEOUT = 600  # a submission's 120 s budget in student code; PrairieLearn's ceiling is 600
RESULTS_LIMIT = 1_000_000  # PrairieLearn refuses a results.json over 1 MB
PYTHON_IMAGE = "python:3.12-slim-bookworm"  # Python >= 3.11: the pinned numpy needs it

HIDDEN_DESCRIPTION = "Compares your numbers with the reference on sizes and data drawn at grading time."
HIDDEN_MESSAGE = (
    "Some hidden checks did not pass. Their details are not shown; code that passes every visible "
    "check for the right reasons passes them too."
)
FAILURE_MESSAGE = (
    "The autograder could not grade this submission. This is a fault of the autograder, not of your "
    "code, and this attempt does not count: your instructor can see what went wrong. Submit again "
    "later or contact them."
)

ENTRYPOINT_COMMENT = f"""\
# PrairieLearn runs this for every submission, as the image's user (root). It grades
# ROOT/student and writes ROOT/results/results.json; ROOT is ${ROOT_VARIABLE}, default
# {DEFAULT_ROOT}. The image (the Dockerfile beside the course's questions/) made the virtualenv."""

DOCKERFILE = """\
# The grading image for the {question} question (PrairieLearn external grading).
# PrairieLearn's prairielearn/grader-python has no torch, so the course builds this one:
#   docker build --platform linux/amd64 -t YOU/mha-grader .   then   docker push YOU/mha-grader
# and names it in the question's info.json ("image"; python -m grader prairielearn --image).
FROM {base}
# bubblewrap: the sandbox for student code (PrairieLearn's containers usually refuse it
# the user namespaces it needs; the grader then uses its plain-process sandbox and says so
# in the grading job's log).
RUN apt-get update \\
    && apt-get install -y --no-install-recommends bubblewrap \\
    && rm -rf /var/lib/apt/lists/*
COPY requirements.txt torch_index.py /opt/mha-grader/
ENV PIP_NO_CACHE_DIR=1
# torch's CPU build from PyTorch's CPU-only wheel index (PyPI's Linux wheel is the CUDA build,
# several GB), then the other pinned requirements. torch_index.py adds the index only when it
# answers within 3 s, so a build behind a mirror of PyPI still works; --build-arg
# TORCH_INDEX=URL changes the index, TORCH_INDEX= turns it off.
ARG TORCH_INDEX={torch_index}
RUN python -m venv {venv} \\
    && {venv}/bin/python -m pip install --disable-pip-version-check \\
        $({venv}/bin/python /opt/mha-grader/torch_index.py "$TORCH_INDEX") -r /opt/mha-grader/requirements.txt
"""


# --- building the question (the instructor's machine) ------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", type=Path, help=f"folder to (re)create: Dockerfile and questions/{QUESTION_ID}/")
    parser.add_argument("--image", default=DEFAULT_IMAGE, help=f"the grading image's name in info.json (default: {DEFAULT_IMAGE})")
    parser.add_argument(
        "--timeout", type=_timeout, default=DEFAULT_TIMEOUT, help=f"seconds per grading job, at most {MAX_TIMEOUT} (default: {DEFAULT_TIMEOUT})"
    )
    parser.add_argument(
        "--upload", action="store_true", help="students upload their .py or notebook instead of editing the stub in the browser"
    )


def _timeout(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(f"PrairieLearn's timeout is 1 to {MAX_TIMEOUT} seconds, not {value}")
    return value


def run(arguments: argparse.Namespace) -> int:
    question = write_question(arguments.out_dir, image=arguments.image, timeout=arguments.timeout, upload=arguments.upload)
    print(f"wrote the PrairieLearn question to {question} and the grading image's Dockerfile to {arguments.out_dir}.")
    print(next_steps(arguments.out_dir, question, arguments.image))
    if (note := late_work_note(getattr(arguments, "course_settings", None))) is not None:
        print(note)
    return 0


def late_work_note(course) -> str | None:
    """What becomes of the course's deadline here: the question's grader knows no submission time
    (PrairieLearn gives it the files, the question's data and nothing about when: docs/externalGrading.md),
    so its score is the tests' alone, and lateness is PrairieLearn's own: an assessment's
    ``allowAccess`` rules give a ``credit`` per period, and "when the available credit is less
    than 100%, the percentage score is calculated as min(credit, points / maxPoints * 100)"
    (docs/accessControl/index.md, "Credit"): a cap, which PrairieLearn shows the student itself,
    not the course file's per-day percent of the points."""
    if course is None or course.deadline is None:
        return None
    return (
        f"late work: PrairieLearn does not run {course.path.name}'s late policy: the grader's score is the tests' alone. "
        "Give late credit in the assessment's allowAccess rules (\"credit\": a cap on the percentage score per period, "
        "docs/accessControl/index.md in PrairieLearn's repository); PrairieLearn shows students the credit it applied."
    )


def next_steps(out_dir: Path, question: Path, image: str) -> str:
    """What the instructor does next, as PrairieLearn's docs/dockerImages.md ("Custom variations
    of maintained images", steps 5 to 8) says: build for linux/amd64 (its production hosts),
    push, name the image in the question, sync the image from the course's Sync page."""
    if image == DEFAULT_IMAGE:
        steps = [
            "Next (YOU: your Docker Hub account):",
            f"1. python -m grader prairielearn {out_dir} --image YOU/mha-grader",
            f"   (the question's info.json names its image in externalGradingOptions.image: {image!r} now)",
        ]
    else:
        steps = ["Next:", f"1. the question's info.json names the image: externalGradingOptions.image is {image!r}"]
    return "\n".join([
        *steps,
        f"2. docker build --platform linux/amd64 -t {image} {out_dir}",
        f"3. docker push {image}",
        f"4. copy {question} into your course's questions/ and sync the course;",
        f"   then, on the course's Sync page, under \"Docker images\", sync {image}",
    ])


def write_question(out_dir: Path, *, image: str = DEFAULT_IMAGE, timeout: int = DEFAULT_TIMEOUT, upload: bool = False) -> Path:
    """Write (replacing) OUT_DIR/Dockerfile, requirements.txt and questions/multi_head_attention/."""
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    question = out_dir / "questions" / QUESTION_ID
    tests = question / "tests"
    tests.mkdir(parents=True)
    for path in shipped_files():
        relative = path.relative_to(REPO_ROOT)
        target = out_dir / relative if relative.parts == ("requirements.txt",) else tests / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    (out_dir / "Dockerfile").write_text(dockerfile(), encoding="utf-8")
    shutil.copyfile(REPO_ROOT / "grader" / "torch_index.py", out_dir / "torch_index.py")  # the build's probe
    (question / "info.json").write_text(json.dumps(info_json(image, timeout), indent=2) + "\n", encoding="utf-8")
    (question / "question.html").write_text(question_html(upload), encoding="utf-8")
    (tests / INITIAL_CODE).write_text(stubs.make_stub(stubs.SOLUTION_PATH.read_text(encoding="utf-8")), encoding="utf-8")
    script = tests / ENTRYPOINT_NAME
    script.write_text(
        entrypoint(
            ENTRYPOINT_COMMENT, root_variable=ROOT_VARIABLE, default_root=DEFAULT_ROOT, code_folder="tests",
            module="grader.platforms.prairielearn",
        ),
        encoding="utf-8",
    )
    script.chmod(0o755)  # PrairieLearn makes the entrypoint executable too, before it runs it
    return question


def info_json(image: str = DEFAULT_IMAGE, timeout: int = DEFAULT_TIMEOUT) -> dict:
    return {
        "uuid": QUESTION_UUID,
        "title": EXERCISE.title,
        # A question's topic is one of the course's (infoCourse.json's "topics"; PrairieLearn's
        # docs/course/index.md, "Topics"): the exercise's chapter, its declaration's topic.
        "topic": EXERCISE.topic or EXERCISE.title,
        "tags": ["autograded", "pytorch"],
        "type": "v3",
        "singleVariant": True,  # the grader draws its own data; the question has no variants
        "gradingMethod": "External",
        "externalGradingOptions": {
            "enabled": True,
            "image": image,
            "entrypoint": f"{DEFAULT_ROOT}/tests/{ENTRYPOINT_NAME}",
            "timeout": timeout,
        },
    }


def dockerfile() -> str:
    return DOCKERFILE.format(base=PYTHON_IMAGE, venv=VENV, torch_index=CPU_TORCH_INDEX, question=QUESTION_ID)


def lesson_markdown() -> str:
    """The lesson shown above the editor: the solution's module docstring (its conventions)."""
    title, _, body = notebook.module_docstring(stubs.SOLUTION_PATH.read_text(encoding="utf-8")).partition("\n")
    text = f"## {title.rstrip('.')}\n\n{notebook.rst_to_markdown(body.strip())}\n"
    if "{{" in text or "<" in text:  # question.html is a Mustache template with HTML in it
        raise ValueError("the lesson holds '{{' or '<', which question.html would not show as written")
    return text


TASK = f"""\
## Your task

Write every function of `{EXERCISE.student_file}` that still raises `NotImplementedError`: the
`# TODO` above it says what to do, its docstring states the conventions. Each submission runs the
grader: every visible check says what was expected, what came back and the likely mistake. A
hidden group compares your numbers with the reference on data drawn at grading time; you see its
points, not its checks.
"""


def question_html(upload: bool = False) -> str:
    if upload:
        answer = (
            f"<p>Upload your <code>{EXERCISE.student_file}</code> (or your notebook). The file you start from:</p>\n"
            f'<pl-code language="python" source-file-name="tests/{INITIAL_CODE}"></pl-code>\n'
            '<pl-file-upload optional-file-patterns="*.py,*.ipynb"></pl-file-upload>'
        )
    else:
        answer = (
            f'<pl-file-editor file-name="{EXERCISE.student_file}" ace-mode="ace/mode/python" '
            f'source-file-name="tests/{INITIAL_CODE}"></pl-file-editor>'
        )
    return (
        "<pl-question-panel>\n<markdown>\n"
        f"{lesson_markdown()}\n{TASK}</markdown>\n{answer}\n</pl-question-panel>\n\n"
        "<pl-submission-panel>\n<pl-external-grader-results></pl-external-grader-results>\n"
        "<pl-file-preview></pl-file-preview>\n</pl-submission-panel>\n"
    )


# --- results.json in PrairieLearn's format ---------------------------------------------------


def prairielearn_results(document: dict, found: str) -> dict:
    """PrairieLearn's results.json for one graded submission (a batch result ``document``)."""
    from grader.scoring import GROUP_TITLES, GROUPS

    tests = []
    # The hidden checks' details stay with the instructors, and so does a diagnosis only they revealed.
    diagnoses = shown_diagnoses(document, hidden_details=False)
    explained = diagnosis_text.explained_checks(diagnoses)
    hidden = [test for test in document["tests"] if test["group"] == HIDDEN_GROUP]
    for test in sorted(document["tests"], key=lambda t: GROUPS.index(t["group"])):  # stable: keeps grading order
        if test["group"] == HIDDEN_GROUP:
            continue
        passed = test["outcome"] == "passed"
        tests.append({
            "name": f"{GROUP_TITLES[test['group']]}: {readable(test['name'])}",
            "description": f"Group {GROUP_TITLES[test['group']]}, {_points(test['max_points'])}.",
            "points": test["points"],
            "max_points": test["max_points"],
            "message": "passed" if passed else f"failed ({test['outcome']})",
            "output": "" if passed else failure_output(test, test["name"] in explained),
            **({} if passed or not test.get("attention") else {"images": [picture_image(test["attention"])]}),
        })
    if hidden:
        earned, maximum = sum(t["points"] for t in hidden), sum(t["max_points"] for t in hidden)
        tests.append({
            "name": GROUP_TITLES[HIDDEN_GROUP],
            "description": HIDDEN_DESCRIPTION,
            "points": earned,
            "max_points": maximum,
            "message": "passed" if earned == maximum else HIDDEN_MESSAGE,
            "output": "",
        })
    earned, maximum = sum(t["points"] for t in tests), sum(t["max_points"] for t in tests)
    return {
        "gradable": True,
        "score": earned / maximum if maximum else 0.0,
        "message": f"{sentence(found)} Score {earned}/{maximum}.",
        "output": student_summary(document, found, hidden_details=False, diagnoses=diagnoses),
        "tests": tests,
    }


def picture_image(picture: dict) -> dict:
    """A failed weights check's matrices (the student's beside the reference's) as one of a
    test's ``images``: ``{"label", "url": "data:image/png;base64,..."}``, the form PrairieLearn's
    external grading results take per test or at the top level, within the results file's 1 MB
    (PrairieLearn/PrairieLearn, docs/externalGrading.md, "Grading results")."""
    from grader.class_view import attention_picture

    return {"label": attention_picture.label(picture), "url": attention_picture.data_url(picture)}


def _points(number: int) -> str:
    return f"{number} point{'s' if number != 1 else ''}"


def nothing_to_grade(found: str) -> dict:
    """results.json for a submission without a file to grade: not gradable, and why."""
    return {"gradable": False, "format_errors": [sentence(found)], "message": sentence(found), "output": "", "tests": []}


def failure_results() -> dict:
    """results.json when the grader itself could not grade: not gradable, the autograder's fault."""
    return {"gradable": False, "message": FAILURE_MESSAGE, "output": "", "tests": []}


def results_text(report: dict) -> str:
    """results.json's text, under PrairieLearn's 1 MB whatever the submission's messages."""
    from grader import results

    texts = [(test, key) for test in report.get("tests", []) for key in ("output", "message")]
    return results.fit_json(report, RESULTS_LIMIT, [*texts, (report, "output"), (report, "message")])


# --- grading one submission (inside PrairieLearn's container) ----------------------------------


def autograde(root: Path, sandbox: str = "auto") -> int:
    """Grade ``root/student`` into ``root/results/results.json``; always 0 once that file is written."""
    from grader import results

    root = Path(root)
    results_path = root / "results" / "results.json"
    locked = tuple(root / name for name in ("tests", "data", "serverFilesCourse", "shared"))
    left_open = protect(root / "results", locked)
    log: list[str] = []
    try:
        chosen, found = choose_submission_file(root / "student")
        if chosen is None:
            report = nothing_to_grade(found)
            log.append(f"not gradable: {found}")
        else:
            document = grade(chosen, sandbox)
            report = prairielearn_results(document, found)
            log += [
                instructor_note(
                    document, sandbox_requested=sandbox, found=found, running_as_root=os.geteuid() == 0,
                    private="the tests folder (solution, hidden tests)", runner=ENTRYPOINT_NAME, left_open=left_open,
                ),
                "",
                _hidden_checks(document),
            ]
    except Exception as error:  # noqa: BLE001 - whatever went wrong, PrairieLearn must get a results.json saying so
        report = failure_results()
        log += [f"GRADER FAILURE: {type(error).__name__}: {error}", failure_details(error)]
    # Written last, atomically, after every student process is gone: it replaces whatever
    # a submission may have managed to put there.
    results.write_atomically(results_path, results_text(report))
    _print_for_instructors(report, results_path, log)
    return 0


def _hidden_checks(document: dict) -> str:
    hidden = [test for test in document["tests"] if test["group"] == HIDDEN_GROUP]
    lines = [f"Hidden checks (not shown to students): {sum(t['points'] for t in hidden)}/{sum(t['max_points'] for t in hidden)}"]
    for test in hidden:
        lines.append(f"  {test['outcome']:>7}  {readable(test['name'])}  ({test['points']}/{test['max_points']})")
        if test["outcome"] != "passed" and test["message"]:
            lines += [f"           {line}" for line in test["message"][:2000].splitlines()]
    return "\n".join(lines)


def _print_for_instructors(report: dict, results_path: Path, log: list[str]) -> None:
    """The entrypoint's stdout: PrairieLearn keeps it as the grading job's log, for course staff."""
    if report.get("gradable", True):
        points = sum(t["points"] for t in report["tests"]), sum(t["max_points"] for t in report["tests"])
        print(f"score {report['score']:.4f} ({points[0]}/{points[1]}), written to {results_path}")
    else:
        print(f"not gradable, written to {results_path}")
    print("\n".join(log))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.platforms.prairielearn", description="Grade one PrairieLearn submission.")
    add_root_argument(parser, ROOT_VARIABLE, DEFAULT_ROOT, "the grading job's folder")
    arguments = parser.parse_args(argv)
    return autograde(arguments.root, requested_sandbox())


if __name__ == "__main__":
    sys.exit(main())
