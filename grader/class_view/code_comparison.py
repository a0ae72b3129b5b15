"""The comparison behind ``grader/class_view/similarity.py``: which pairs of files share their code.

The comparison is copydetect's (https://github.com/blingenf/copydetect, MIT): each file is
tokenised with Pygments, whitespace and comments dropped, every variable, attribute,
function and class name replaced by one letter and every string by another, and the
k-grams of what remains winnowed (Schleimer, Wilkerson and Aiken, SIGMOD 2003). The
fingerprints of the hand-out itself (the stub and the exercise notebook's code) are
boilerplate, removed from every file first, so that a class that leaves the stub's
signatures and given code in place is not one large cluster. (Compared on
PyPI: compare50 (GPL-3.0, pins attrs<21 and lib50) does the same with a heavier footprint;
pycode_similar compares ASTs function by function, without boilerplate removal.)

Where this differs from copydetect's own run, and why:
- copydetect hashes k-grams with Python's ``hash``, which is salted per process
  (PYTHONHASHSEED): the winnowed fingerprints, and so the figures, would change from run to
  run. The hash is replaced, for the duration of one fingerprinting, by a polynomial hash of
  the k-gram's characters: the same class gives the same figures every run.
- A pair's figure is the share of each file's own fingerprints (the hand-out's removed) found
  in the other, a set intersection, so that a class of hundreds costs well under a second;
  copydetect's character-level comparison (``compare_files``) gives the shared lines shown.
- A pair is listed when BOTH shares reach the threshold (``similarity.THRESHOLD``, the rule the class's record states,
  passed in: this module is the comparison and imports nothing of the batch's; copydetect's report uses the larger,
  at 0.33): the exercise is short, and independent correct solutions share much of their
  filtered form; a copy shares nearly all of it. ``MIN_FINGERPRINTS`` leaves out files with
  almost nothing of their own (a stub with one line written has nothing worth comparing).
"""

from __future__ import annotations

import contextlib
import functools
import io
import keyword
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from copydetect import detector as copydetect_detector
from copydetect import utils as copydetect_utils
from copydetect.detector import CodeFingerprint

from grader.reading import notebooks
from grader.seam import registry

# copydetect's defaults: noise threshold 25 (k), guarantee threshold 30 (k + window - 1).
K = 25
WINDOW = 6
MIN_FINGERPRINTS = 20  # a file with fewer of its own (beyond the hand-out) is not compared
SHOWN_LINES = 40  # shared lines kept per side
# The hand-out as students receive it: exercises/ holds the stub at the course's scaffolding
# level (grader/handout/stubs.py writes it, and records the level) and the exercise notebook.
EXERCISES = Path(__file__).resolve().parents[2] / "exercises"
STUB_PATH = EXERCISES / registry.exercise().student_file
NOTEBOOK_PATH = EXERCISES / registry.exercise().notebook
_BASE = 1_000_003
_POWERS = np.array([pow(_BASE, K - 1 - j, 2**64) for j in range(K)], dtype=np.uint64)


@dataclass(frozen=True)
class SimilarPair:
    first: str  # student ids, in sorted order
    second: str
    similarity: float  # the smaller of the two shares, 0..1
    shares: tuple[float, float]  # each file's share of its own fingerprints found in the other

    def as_record(self) -> dict:
        return {"first": self.first, "second": self.second, "similarity": round(self.similarity, 3),
                "shares": [round(share, 3) for share in self.shares]}


def _stable_hashed_kgrams(string: str, k: int) -> np.ndarray:
    """copydetect's ``hashed_kgrams`` with a hash that is the same in every process (a
    polynomial hash of the k-gram's code points, modulo 2**64), vectorised."""
    if len(string) < k:
        return np.array([], dtype=np.int64)
    codes = np.frombuffer(string.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
    powers = _POWERS if k == K else np.array([pow(_BASE, k - 1 - j, 2**64) for j in range(k)], dtype=np.uint64)
    return (sliding_window_view(codes, k) * powers).sum(axis=1, dtype=np.uint64).view(np.int64)


# One pass of one regular expression over the file (its loop is C; the standard library's
# tokenize, pure Python in 3.11, is several times slower). Strings first, so that a
# prefix (f"...", rb'...') is not read as a name; an operator of two characters comes out as
# two, which the filtered text joins again.
_TOKEN = re.compile(
    r"""(?P<string>[rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))"""
    r"|(?P<comment>\#[^\n]*)|(?P<name>[^\W\d]\w*)|(?P<number>\d[\w.]*)|(?P<space>\s+)|(?P<other>.)",
    re.DOTALL,
)


def _filter_python(code: str, filename: str = "", language=None) -> tuple[str, np.ndarray]:
    """copydetect's ``filter_code`` for Python, read with one regular expression instead of
    Pygments' lexer (Pygments is most of copydetect's cost): whitespace and comments dropped,
    a name defined by ``def`` becomes F, by ``class`` O, every other name V (keywords and
    numbers kept), every string S. The offsets are copydetect's: for each character of the
    filtered text, how far its original lies ahead of it."""
    out: list[str] = []
    origins: list[int] = []
    previous = ""
    for match in _TOKEN.finditer(code):
        kind, text = match.lastgroup, match.group()
        if kind in ("space", "comment"):
            continue
        if kind == "name" and not keyword.iskeyword(text):
            text = {"def": "F", "class": "O"}.get(previous, "V")
        elif kind == "string":
            text = "S"
        out.append(text)
        origins.extend(range(match.start(), match.start() + len(text)))
        previous = text
    filtered = "".join(out)
    if not filtered:
        return filtered, np.array([])
    positions = np.arange(len(filtered))
    return filtered, np.column_stack([positions, np.array(origins, dtype=np.int64) - positions])


@contextlib.contextmanager
def _copydetect_for_python():
    """copydetect with a stable hash and the regular-expression filter, for one fingerprinting."""
    saved = copydetect_utils.hashed_kgrams, copydetect_detector.filter_code
    copydetect_utils.hashed_kgrams, copydetect_detector.filter_code = _stable_hashed_kgrams, _filter_python
    try:
        yield
    finally:
        copydetect_utils.hashed_kgrams, copydetect_detector.filter_code = saved


def _fingerprint(code: str, boilerplate: frozenset[int] = frozenset()) -> CodeFingerprint:
    """copydetect's fingerprint of ``code``, without the fingerprints in ``boilerplate``.

    The boilerplate is removed here rather than by copydetect's own ``boilerplate`` argument:
    copydetect removes it with ``np.intersect1d(..., assume_unique=True)`` over the winnowed
    hashes, which repeat, so a hand-out line that occurs twice kept one of its fingerprints."""
    # The name only picks Pygments' Python lexer; nothing is read from disk.
    with _copydetect_for_python():
        fingerprint = CodeFingerprint("submission.py", K, WINDOW, fp=io.StringIO(code))
    fingerprint.hashes = {value for value in fingerprint.hashes if int(value) not in boilerplate}
    fingerprint.hash_idx = {value: where for value, where in fingerprint.hash_idx.items() if int(value) not in boilerplate}
    return fingerprint


def hand_out_texts() -> list[str]:
    """What every student was given: the stub, and the notebook's code."""
    texts = []
    with contextlib.suppress(OSError):
        texts.append(STUB_PATH.read_text(encoding="utf-8"))
    with contextlib.suppress(OSError, ValueError):
        texts.append(notebooks.notebook_code(NOTEBOOK_PATH.read_text(encoding="utf-8")))
    return texts


def _boilerplate(hand_out: list[str] | None) -> frozenset[int]:
    """The fingerprints of the hand-out's texts (``hand_out_texts()`` when None)."""
    if hand_out is None:
        return _hand_out_boilerplate()
    return frozenset(int(value) for text in hand_out for value in _fingerprint(text).hashes)


@functools.lru_cache(maxsize=1)
def _hand_out_boilerplate() -> frozenset[int]:
    return _boilerplate(hand_out_texts())


def similar_pairs(codes: dict[str, str], threshold: float, hand_out: list[str] | None = None) -> list[SimilarPair]:
    """The pairs of ``codes`` (student id -> the code graded) of which each holds at least
    ``threshold`` of the other's own fingerprints (the hand-out's removed), most similar first."""
    boilerplate = _boilerplate(hand_out)
    own: dict[str, frozenset[int]] = {}
    for sid, code in sorted(codes.items()):
        hashes = _own_fingerprints(code, boilerplate)
        if len(hashes) >= MIN_FINGERPRINTS:
            own[sid] = hashes
    ids = sorted(own)
    found = []
    for (i, j), common in _common_counts([own[sid] for sid in ids]).items():
        shares = (common / len(own[ids[i]]), common / len(own[ids[j]]))
        if min(shares) >= threshold:
            found.append(SimilarPair(ids[i], ids[j], min(shares), shares))
    return sorted(found, key=lambda pair: (-pair.similarity, pair.first, pair.second))


@functools.lru_cache(maxsize=4096)
def _own_fingerprints(code: str, boilerplate: frozenset[int]) -> frozenset[int]:
    """``code``'s fingerprints without the ``boilerplate``'s, remembered: a batch takes them
    while its shards grade (``fingerprint_ahead``), and the comparison after finds them done."""
    return frozenset(int(value) for value in _fingerprint(code, boilerplate).hashes)


def fingerprint_ahead(codes: Iterable[str]) -> None:
    """Take (and remember) the fingerprints ``similar_pairs`` will need for ``codes`` against the
    hand-out: some 1 ms a file, done while there is nothing else to do rather than after the
    grading, when the class files wait for them. Not on two threads at once: the fingerprinting
    swaps copydetect's functions for its own while it runs (``_copydetect_for_python``)."""
    boilerplate = _boilerplate(None)
    for code in codes:
        _own_fingerprints(code, boilerplate)


def _common_counts(sets: list[frozenset[int]], block: int = 256) -> dict[tuple[int, int], int]:
    """For each pair (i < j) of ``sets`` that shares anything, how many fingerprints it shares.

    All pairs at once, as a product of 0/1 matrices (students x fingerprints) done by BLAS: a
    class of 300 whose files nearly all share most of their code has 45,000 pairs, which one
    set intersection each would take seconds over. Only fingerprints two files hold are
    columns (the others add to no pair), and the rows go in blocks, so memory stays bounded."""
    holders: dict[int, list[int]] = {}
    for row, values in enumerate(sets):
        for value in values:
            holders.setdefault(value, []).append(row)
    shared = [rows for rows in holders.values() if len(rows) > 1]
    if not shared:
        return {}
    matrix = np.zeros((len(sets), len(shared)), dtype=np.float32)
    for column, rows in enumerate(shared):
        matrix[rows, column] = 1.0
    counts: dict[tuple[int, int], int] = {}
    for first_row in range(0, len(sets), block):
        product = matrix[first_row : first_row + block] @ matrix.T
        for i, j in zip(*np.nonzero(product)):
            row = first_row + int(i)
            if row < int(j):
                counts[(row, int(j))] = int(round(float(product[i, j])))
    return counts


def shared_lines(first: str, second: str, hand_out: list[str] | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Each file's lines that hold code found in the other, the hand-out's own text set aside;
    at most ``SHOWN_LINES`` a side. copydetect finds the copied stretches of the filtered text
    (``find_fingerprint_overlap``, ``get_copied_slices``); a line is shown when one of the
    tokens in those stretches starts on it (a comment or a docstring's inner lines never do)."""
    boilerplate = _boilerplate(hand_out)
    given = _hand_out_lines(tuple(hand_out_texts() if hand_out is None else hand_out))
    a, b = _fingerprint(first, boilerplate), _fingerprint(second, boilerplate)
    where_a, where_b = copydetect_utils.find_fingerprint_overlap(a.hashes, b.hashes, a.hash_idx, b.hash_idx)
    return (
        _lines_of(first, a, copydetect_utils.get_copied_slices(where_a, K), given),
        _lines_of(second, b, copydetect_utils.get_copied_slices(where_b, K), given),
    )


@functools.lru_cache(maxsize=4)
def _hand_out_lines(texts: tuple[str, ...]) -> frozenset[str]:
    return frozenset(line.strip() for text in texts for line in text.splitlines())


def _lines_of(code: str, fingerprint: CodeFingerprint, slices, given: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The lines of ``code`` on which a token of the copied stretches (``slices``, in the
    filtered text's coordinates) starts, in order; a line the hand-out holds as it is does
    not count as the students' own."""
    if len(slices) == 0 or len(slices[0]) == 0 or len(fingerprint.offsets) == 0:
        return ()
    lines = code.split("\n")
    line_starts = np.cumsum([0] + [len(line) + 1 for line in lines])
    marked: set[int] = set()
    for start, end in zip(slices[0], slices[1]):
        positions = np.arange(int(start), min(int(end), len(fingerprint.offsets)))
        originals = positions + fingerprint.offsets[positions, 1]
        marked.update((np.searchsorted(line_starts, originals, side="right") - 1).tolist())
    kept = (lines[index] for index in sorted(marked) if 0 <= index < len(lines))
    return tuple(line for line in kept if line.strip() and line.strip() not in given)[:SHOWN_LINES]
