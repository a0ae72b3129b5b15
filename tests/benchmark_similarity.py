"""What the similar-submissions step costs: ``python tests/benchmark_similarity.py [--students 300]``.

A script, not a test: it prints figures and exits 0. The class is the catalogue's (the
reference's valid rewrites and known mistakes, each a small edit of one file), each student a
distinct file: the worst case for the comparison, since nearly every pair shares most of its
code and is compared in full. Beside it, the same number of students from the hand-out alone
(the stub with a line of their own), where the hand-out is set aside and little is compared.
The ratio says what the step adds to a batch, against the batch's own per-second figure from
tests/benchmark_batch.py on the same machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

import catalogue  # noqa: E402
from grader.class_view import code_comparison, similarity  # noqa: E402


def _timed(codes: dict[str, str], repeats: int) -> tuple[float, int]:
    seconds, pairs = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        pairs = len(code_comparison.similar_pairs(codes, similarity.THRESHOLD))
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    solution = catalogue.SOLUTION_PATH.read_text(encoding="utf-8")
    implementations = [*catalogue.VARIANTS, *catalogue.MUTANTS]
    near_copies = {
        f"student{i:04d}": catalogue.implementation_source(implementations[i % len(implementations)], solution) + f"\n# {i}\n"
        for i in range(arguments.students)
    }
    stub = code_comparison.STUB_PATH.read_text(encoding="utf-8")
    stubs = {f"student{i:04d}": stub + f"\nextra_{i} = {i}\n" for i in range(arguments.students)}
    code_comparison.similar_pairs({}, similarity.THRESHOLD)  # the hand-out's fingerprints, computed once per process
    for title, codes in (("catalogue class (near copies)", near_copies), ("hand-out with a line each", stubs)):
        seconds, pairs = _timed(codes, arguments.repeats)
        print(f"{title}: {arguments.students} students, {pairs} pairs listed, {seconds:.2f} s (median of {arguments.repeats}), "
              f"{1000 * seconds / arguments.students:.1f} ms a student")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
