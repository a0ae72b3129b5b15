"""Writes grading results to disk. The only module that does.

Files are written atomically (a temporary file beside the target, then a rename), so a
reader never sees half a file and an interrupted run never leaves a corrupt one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from grader import __version__
from grader.feedback.markdown import render_markdown
from grader.seam import registry
from grader.untrusted import file_stem


def result_file(folder: Path, submission: str) -> Path:
    """Where one submission's result goes: ``folder/results/<stem>.json``, the stem derived
    from the id with a bounded length (grader/untrusted.py); the file records the id itself."""
    return results_folder(folder) / f"{file_stem(submission)}.json"


def results_folder(folder: Path) -> Path:
    """Where every submission's result goes (``result_file``)."""
    return Path(folder) / "results"


def feedback_file(folder: Path, submission: str) -> Path:
    return Path(folder) / "feedback" / f"{file_stem(submission)}.md"

# The scaffolding level of the exercise this grader ships with, recorded beside it by
# `python -m grader stubs --level` and by the release (grader/handout/stubs.py); none: standard.
SCAFFOLDING_FILE = Path(__file__).resolve().parent / "scaffolding.txt"


def scaffolding_level() -> str:
    try:
        return SCAFFOLDING_FILE.read_text(encoding="utf-8").strip() or "standard"
    except OSError:
        return "standard"


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # The temporary name is bounded whatever the target's: a name near the file system's
    # limit (255 bytes) must not fail only because of the prefix and suffix added here.
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:60]}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_results_json(
    path: Path, results: dict, grading_seed: int, sandbox: tuple[str, str], scaffolding: str = "standard"
) -> None:
    """--results-json of one pytest session: its SubmissionResults, as a class file."""
    documents = {name: result.to_dict() for name, result in results.items()}
    write_class_results(path, documents, grading_seed, sandbox, scaffolding=scaffolding)


def hash_of(source: Path | None) -> str:
    return hashlib.sha256(source.read_bytes()).hexdigest() if source and source.is_file() else ""


def write_submission_result(
    folder: Path, result, grading_seed: int, sandbox: tuple[str, str], source: Path | None, content_hash: str = "",
    scaffolding: str = "standard",
) -> None:
    """One submission's result and feedback, written the moment it is graded."""
    document = result.to_dict() | {
        "exercise": registry.exercise().name,  # a result of one exercise is never taken for another's
        "grader_version": __version__,
        "scaffolding": scaffolding,
        "grading_seed": grading_seed,
        "sandbox": sandbox[0],
        "sandbox_note": sandbox[1],
        "content_hash": content_hash or hash_of(source),
    }
    write_atomically(feedback_file(folder, result.submission), render_markdown(result))
    # The JSON last: its presence is what marks the submission as graded.
    # Compact, like the class file: json's C encoder runs only without indent, and a failing
    # result holds every failed weights check's matrices (python -m json.tool shows it indented).
    write_atomically(result_file(folder, result.submission), json.dumps(document, separators=(",", ":")) + "\n")


def write_class_results(
    path: Path, documents: dict, grading_seed: int, sandbox: tuple[str, str], run: dict | None = None,
    scaffolding: str = "standard",
) -> None:
    """The whole class in one file: every test of every submission (``run``: what the batch
    adds, such as the assignment, the date and the entries left without a result;
    ``scaffolding``: the level of the exercise the students were given, grader/handout/stubs.py)."""
    document = {
        "exercise": registry.exercise().name,
        "grader_version": __version__,
        "scaffolding": scaffolding,
        "grading_seed": grading_seed,
        "sandbox": sandbox[0],
        "sandbox_note": sandbox[1],
        **(run or {}),
        "submissions": dict(sorted(documents.items())),
    }
    # Compact: the file is read whole by programs (report, export) for every student; a person
    # reads one student's OUT/results/<id>.json, or this one through `python -m json.tool`.
    write_atomically(Path(path), json.dumps(document, separators=(",", ":")) + "\n")


def fit_json(document: dict, limit: int, texts: list[tuple[dict, str]], dumps=None) -> str:
    """``document`` as JSON of at most ``limit`` bytes (UTF-8), cutting the longest of ``texts``
    (``(dictionary, key)`` pairs inside it: messages, outputs) until it fits.

    Platforms cap their results files (PrairieLearn at 1 MB, a GitHub Actions environment
    variable at 128 KiB) and student code controls some of that text (exception messages).
    """
    dumps = dumps or (lambda value: json.dumps(value, indent=2) + "\n")
    text = dumps(document)
    cap = max((len(holder[key]) for holder, key in texts), default=0)
    while len(text.encode("utf-8")) > limit and cap > 0:
        cap //= 2
        for holder, key in texts:
            if len(holder[key]) > cap:
                holder[key] = holder[key][:cap] + " [... cut to fit the results file]"
        text = dumps(document)
    if len(text.encode("utf-8")) > limit:
        raise ValueError(f"the results do not fit in {limit} bytes even with every message cut")
    return text


def append_step_output(path: Path, name: str, value: str) -> None:
    """One ``name=value`` line appended to a GitHub Actions step-output file ($GITHUB_OUTPUT)."""
    if "\n" in value or "\n" in name:
        raise ValueError("a one-line step output cannot hold a line break")
    with Path(path).open("a", encoding="utf-8") as stream:
        stream.write(f"{name}={value}\n")
