"""Similar submissions: pairs of students whose code is the same once the hand-out is set aside.

A flag for a person to look at, never a score: the batch keeps the code each student was
graded on (``OUT/graded/<stem>.py``), lists the pairs in ``results.json``
(``similar_submissions``), and the class report shows each pair's shared lines side by side.
How files are compared: ``grader/class_view/code_comparison.py`` (copydetect). It is imported only
when a class is compared: copydetect imports matplotlib.pyplot, which the batch's
coordinator would otherwise pay for at start-up.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from grader import results, untrusted


def read_graded_codes(folder: Path, student_ids) -> dict[str, str]:
    """The code each student was graded on, as the batch kept it (``OUT/graded/<stem>.py``)."""
    codes = {}
    for sid in student_ids:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            codes[sid] = (Path(folder) / f"{untrusted.file_stem(sid)}.py").read_text(encoding="utf-8")
    return codes


THRESHOLD = 0.9  # a pair is listed when both files have at least this share of their own fingerprints in the other
GRADED_CODE_FOLDER = "graded"  # OUT/graded/<stem>.py: the code each student was graded on
PAIRS_KEPT = 200  # in results.json; the report shows the first of them


def keep_graded_code(out: Path, student_id: str, source_path: Path | None) -> None:
    """Keep the code a student is graded on (the staged file: a notebook's code cells, a
    zip's or folder's chosen file) in ``OUT/graded/``, for the comparison after the batch and
    for the instructor who wants to read what was graded. An entry that cannot be read
    keeps nothing (and drops what an earlier version of it kept)."""
    target = Path(out) / GRADED_CODE_FOLDER / f"{untrusted.file_stem(student_id)}.py"
    if source_path is None:
        target.unlink(missing_ok=True)
        return
    results.write_atomically(target, Path(source_path).read_text(encoding="utf-8"))


def class_similarity(out: Path, student_ids) -> dict:
    """The record results.json keeps under ``similar_submissions``: the rule and the pairs."""
    codes = read_graded_codes(Path(out) / GRADED_CODE_FOLDER, student_ids)
    pairs = []
    # One file makes no pair. A platform grades one submission a run (Gradescope,
    # PrairieLearn): there copydetect, and the matplotlib.pyplot it imports, would cost about
    # a second of CPU for nothing.
    if len(codes) >= 2:
        from grader.class_view import code_comparison

        pairs = code_comparison.similar_pairs(codes, THRESHOLD)
    return {
        "threshold": THRESHOLD,
        "compared": len(codes),
        "pairs_found": len(pairs),
        "pairs": [pair.as_record() for pair in pairs[:PAIRS_KEPT]],
        "method": "copydetect winnowing (k=25, window 6) with the hand-out's fingerprints removed; names, strings, comments and whitespace set aside",
    }


def fingerprint_ahead(out: Path, student_ids) -> None:
    """Take the fingerprints of these students' graded code now, for ``class_similarity`` to find
    done (grader/class_view/code_comparison.py remembers them): the batch calls this while its
    shards grade, on a thread of the coordinator's that has nothing else to do."""
    codes = read_graded_codes(Path(out) / GRADED_CODE_FOLDER, student_ids)
    if len(codes) >= 2:  # as class_similarity: one file makes no pair
        from grader.class_view import code_comparison

        code_comparison.fingerprint_ahead(codes.values())


PAIRS_SHOWN = 20  # pairs the report opens side by side


def shown_pairs(out: Path, document: dict) -> list[dict]:
    """The report's pairs (the most similar first), each with the lines the two files share
    side by side, worked out again from ``OUT/graded/`` (results.json keeps only the figures)."""
    record = document.get("similar_submissions") or {}
    pairs = [pair for pair in record.get("pairs") or [] if isinstance(pair, dict)][:PAIRS_SHOWN]
    if not pairs:
        return []
    try:
        from grader.class_view import code_comparison
    except ImportError:  # copydetect missing (pip install -r requirements-instructor.txt): the figures alone
        return pairs
    codes = read_graded_codes(Path(out) / GRADED_CODE_FOLDER, {p.get("first") for p in pairs} | {p.get("second") for p in pairs})
    shown = []
    for pair in pairs:
        first, second = codes.get(pair.get("first")), codes.get(pair.get("second"))
        lines = code_comparison.shared_lines(first, second) if first is not None and second is not None else ((), ())
        shown.append(pair | {"lines": [list(side) for side in lines]})
    return shown
