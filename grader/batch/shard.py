"""One grading shard of the batch: ``python -m grader.batch.shard MANIFEST [pytest options]``.

pytest collects every test item before it runs the first and keeps them all to the end:
one session over a whole class would hold 52 items (about 170 kB) per student, and the
grader's memory would grow with the class. A shard therefore runs one pytest session
per ``SESSION_SIZE`` students of its manifest, one after another in this same process:
torch is imported once, the sandboxed worker is started once and handed to every
session, and memory stays that of one small session.

Exit status: the worst of the sessions' (0 all passed, 1 some test failed); any other
status (the grader could not run) stops the shard at once and is returned.

SIGTERM and SIGHUP end a shard as Ctrl-C does: its session stops, its worker and the
worker's folder are removed. The batch sends SIGINT to stop it; the kernel sends SIGTERM
when the batch dies (grader/sandbox/processes.py, start_grading_shard).
"""

from __future__ import annotations

import fcntl
import gc
import json
import math
import os
import resource
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from grader.sandbox import processes  # no torch: the worker starts before the shard imports it (main)

GRADER_DIR = Path(__file__).resolve().parents[1]  # what pytest collects: the grader
SESSION_SIZE = 25


# A class's queue is shared by its shards: each takes the next students when it is free, fewer
# at a time as the queue empties, so that all end together (guided self-scheduling). Dealt out
# in turn, one shard could hold the notebooks and the diagnosed and finish seconds after the other.
SMALLEST_PART = 2  # a session costs about 0.1 s of its own: parts of one would cost more than they balance


def fixed_parts(entries: list) -> Iterator[tuple[int, list]]:
    """A manifest of this shard's own students: sessions of SESSION_SIZE, in order."""
    for start in range(0, len(entries), SESSION_SIZE):
        yield start, entries[start : start + SESSION_SIZE]


def part_size(remaining: int, shards: int) -> int:
    """How many of the ``remaining`` students a shard takes now: about a (2N)th of them, to end
    together with the other shards, within [SMALLEST_PART, SESSION_SIZE]. A shard alone has no one
    to end with: it takes SESSION_SIZE at a time, as few sessions as its memory allows (a session's
    own cost, collection and its session-scoped fixtures, is paid once per part)."""
    if shards == 1:
        return SESSION_SIZE
    return min(SESSION_SIZE, max(SMALLEST_PART, math.ceil(remaining / (2 * shards))))


def claimed_parts(manifest: Path, queue: dict) -> Iterator[tuple[int, list]]:
    """The class's queue (``{"shards": N, "entries": [...]}``, grader/batch/run.py): the next
    students not taken by a shard, until none is left. Where the queue stands is a number in
    ``MANIFEST.taken``, read and moved under an exclusive lock, so no two shards take the same
    student and none is left out. About a (2N)th of what remains at a time, at most SESSION_SIZE."""
    entries, shards = list(queue["entries"]), max(1, int(queue["shards"]))
    with open(manifest.with_suffix(".taken"), "a+", encoding="utf-8") as position:
        while True:
            fcntl.flock(position, fcntl.LOCK_EX)
            try:
                position.seek(0)
                start = int(position.read() or 0)
                size = part_size(len(entries) - start, shards)
                position.seek(0)
                position.truncate()
                position.write(str(min(start + size, len(entries))))
                position.flush()
            finally:
                fcntl.flock(position, fcntl.LOCK_UN)
            if start >= len(entries):
                return
            yield start, entries[start : start + size]


def start_the_worker_early(options: list[str]) -> processes.WorkerProcess | None:
    """The bubblewrap worker, started before this shard imports torch and pytest: it imports torch
    and warms up on the other core meanwhile, instead of after them (some second of a batch's
    start on two cores). None where the sessions start it themselves: without --isolate, in the
    plain-process sandbox (its warm worker is forked from this process: start_with_a_warm_worker),
    or when it cannot start (the session then does, and says why)."""
    if "--isolate" not in options:
        return None
    requested = options[options.index("--sandbox") + 1] if "--sandbox" in options[:-1] else "auto"
    try:
        if processes.resolve_sandbox(requested)[0] != "bwrap":
            return None
        return processes.WorkerProcess("bwrap", processes.Limits())
    except Exception:  # noqa: BLE001 - the session starts it again and reports what went wrong
        return None


def main(argv: list[str]) -> int:
    manifest, options = Path(argv[0]), argv[1:]
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.default_int_handler)
    early_worker = start_the_worker_early(options)
    import pytest
    import torch  # noqa: F401 - imported before gc.freeze() below, see there

    from grader.sandbox.isolated import SharedWorker

    document = json.loads(manifest.read_text(encoding="utf-8"))
    parts = claimed_parts(manifest, document) if isinstance(document, dict) else fixed_parts(document)
    started = time.monotonic()
    shared = SharedWorker(early_worker)
    # torch alone is some 300,000 objects that live as long as the process: out of the
    # collector's sight, every collection (automatic, and the one after each session)
    # walks only what the sessions create.
    gc.freeze()
    # A session allocates millions of short-lived objects (tensors' wrappers, reports, dicts of
    # plain data), few of them in cycles: at Python's default (a young collection every 700
    # allocations more than frees) the collector ran some 1,200 times a class of 100 and took
    # 4% of the shard's time. Every 10,000 it runs a tenth as often; memory stays bounded by the
    # collection after each session (tests/benchmark_batch.py (e) measures it).
    gc.set_threshold(10_000, *gc.get_threshold()[1:])
    status = pytest.ExitCode.OK
    try:
        for start, entries in parts:
            part = manifest.with_name(f"{manifest.stem}-from-{start}.json")
            part.write_text(json.dumps(entries), encoding="utf-8")
            session_status = pytest.main(
                [str(GRADER_DIR), *options, "--manifest", str(part)], plugins=[shared, SaysWhyASessionEnded()]
            )
            if session_status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
                return int(session_status)
            status = max(status, session_status)
            gc.collect()  # the finished session's items, reports and fixtures are cycles
    finally:
        shared.close()
        # For the batch's log and its benchmark: memory must not grow with the class size.
        # And where its time went: waiting on student code, or the grader's own work.
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        restarts = shared.worker.restarts if shared.worker else 0
        in_student_code = shared.worker.seconds_in_student_code if shared.worker else 0.0
        in_child = shared.worker.seconds_of_grader_work_in_child if shared.worker else 0.0
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(
            f"grading shard peak memory: {peak_mib:.1f} MiB; worker restarts: {restarts}; "
            f"waited on student code {in_student_code:.2f} s of {time.monotonic() - started:.1f} s; "
            f"the grader's own work: {usage.ru_utime + usage.ru_stime:.2f} s of CPU in the shard, "
            f"{in_child:.2f} s in the submissions' processes",
            flush=True,
        )
    return int(status)


class SaysWhyASessionEnded:
    """A session that ends early (the worker could not start: ``pytest.exit`` in
    grader/session/handles.py; an error of the grader's own) says why in this shard's log, which is
    where the batch sends the instructor (grader/batch/run.py). The shards run pytest without its
    terminal plugin, whose reporter would otherwise have printed it: pytest hands the ``Exit`` to
    ``pytest_keyboard_interrupt`` and anything else to ``pytest_internalerror`` (_pytest/main.py,
    ``wrap_session``)."""

    __name__ = "grader-says-why-a-session-ended"

    def pytest_keyboard_interrupt(self, excinfo) -> None:
        import pytest  # imported by then: the shard imports it after starting its worker

        if isinstance(excinfo.value, pytest.exit.Exception):
            print(f"grading session ended: {excinfo.value.msg}", flush=True)

    def pytest_internalerror(self, excrepr) -> None:
        print(f"grading session ended with an error of the grader's own:\n{excrepr}", flush=True)


def start_with_a_warm_worker() -> int:
    """``python -m grader.batch.shard --warm-worker`` (the plain-process sandbox): fork the worker
    first, then read the shard's arguments and environment from standard input
    (grader/sandbox/processes.py, fork_warm_worker)."""
    import torch  # noqa: F401 - in the warm worker before the fork: the shard and its worker share its pages

    processes.fork_warm_worker()
    try:
        handed = json.loads(sys.stdin.buffer.read())
        os.environ.update(handed["environment"])
        tempfile.tempdir = None  # read again, from the environment the batch gave
        return main(list(handed["arguments"]))
    finally:
        processes.discard_warm_workers()


if __name__ == "__main__":
    sys.exit(start_with_a_warm_worker() if sys.argv[1:] == [processes.WARM_WORKER_FLAG] else main(sys.argv[1:]))
