"""Speed and memory of batch grading, measured against baselines taken in the same run.

    .venv/bin/python tests/benchmark_batch.py [--size 200] [--sample 5] [--jobs N] [--keep DIR]

A script, not a test: it always exits 0 once it has run (the figures are information for
whoever changes the grader, not a gate), and ends with a summary table. Every figure is
measured in this run on this machine; the targets are stated as ratios so that a slow or a
fast machine moves the baseline and the grader together.

(a) class      --size distinct submissions generated in a temporary folder from the
               solution and tests/catalogue.py: correct (the solution and the VARIANTS),
               buggy (the MUTANTS) and failing (stubs, syntax errors, unreadable files);
               mostly .py, a few folders, notebooks and zips. No endless loops, no attacks.
(b) throughput ``python -m grader batch CLASS --out OUT --quiet --jobs N`` in a subprocess:
               submissions / wall seconds, end to end (start-up, intake and gradebook
               included). Target: at least 10 per second.
(c) naive      a fresh ``python -m pytest grader --submission PATH -q -p no:cacheprovider``
               (in-process backend) for each of --sample submissions of the class: wall
               seconds per submission, divided by the batch's seconds per submission
               (how many times faster the batch is). Information, no target.
(d) start-up   ``pytest grader`` on the solution (fresh process, in-process backend) against
               a fresh ``python -c "import torch"``, run 5 times each, alternately; the ratio
               of the medians. Target: within 1.5x (grading one file costs little more than
               importing torch).
(e) memory     the grading shard's peak memory (``grading shard peak memory`` in the
               shard log) after the first 20 submissions and after all of them, both with
               --jobs 1 and a fresh OUT; the ratio. Target: within 1.2 (memory does not grow
               with the class).
(f) student    from the one-shard run of (e), the seconds the student's code ran in the sandboxed
    code       worker (answering the checks' calls, and its import: the stretches its child
               reports, grader/student_clock.py) per submission, beside what (b)'s target leaves
               per submission (cores / 10 s). Information: no grader change makes the student's
               code cheaper to run.

(g) against   with ``--against REF`` (a git ref, e.g. main), instead of (b)-(f): the batch of (b) on
    REF        the same class from REF's tree (``git archive``, same interpreter) and from this
               tree, alternately, --repeats times each; the ratio of the median wall times.
               Target: within 1.1 (a change keeps the batch's speed). --side-by-side: both trees' batches
               at once, --jobs 1 each, the median of the pairs' ratios (both meet the same load: on a
               shared machine the load moves between two runs). Each run also prints, per
               submission, the grader's own work (CPU in the shards; time beside the student's
               code in its process) and the student's code's own time, where the tree says them.
--heavy        every readable file of the class keeps heavy state beside its module
               (tests/heavy_state.py: a logger, a progress bar, a data set, an object graph,
               arrays, a figure), for (g) on the files the state check once walked for minutes.

It also prints torch's import time (read inside the (d) baseline processes), the Python
version and the core count, and, from the results of (b), where the grading time goes
(per kind of submission and per test) as a lead when a target is missed.

A full run at --size 200 on two cores takes several minutes: (e) grades the class a second
time on one core.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from grader.handout import stubs  # noqa: E402
from tests import catalogue, heavy_state  # noqa: E402

PYTHON = sys.executable
RUN_TIMEOUT = 3 * 3600  # seconds; a hung grader should not hang the benchmark forever

TARGET_THROUGHPUT = 10.0  # submissions per second, at least
TARGET_STARTUP_RATIO = 1.5  # pytest grader on one file / import torch, at most
TARGET_MEMORY_RATIO = 1.2  # peak memory after all / after 20, at most
MEMORY_SMALL = 20
STARTUP_REPEATS = 5

PEAK_LINE = re.compile(r"grading shard peak memory: ([0-9.]+) MiB; worker restarts: (\d+)")
WAITED_LINE = re.compile(r"waited on student code ([0-9.]+) s of ([0-9.]+) s")
OWN_WORK_LINE = re.compile(r"the grader's own work: ([0-9.]+) s of CPU in the shard, ([0-9.]+) s in the submissions' processes")
RATE_LINE = re.compile(r"graded (\d+) submissions in ([0-9.]+) s \(([0-9.]+) per second\)")
TIMED_IMPORT = "import time, sys; t = time.perf_counter(); import torch; sys.stdout.write(repr(time.perf_counter() - t))"


# --- (a) the class -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Student:
    student_id: str
    kind: str  # correct | buggy | failing
    label: str  # which solution, mutant or failure
    path: Path


def _failing_sources(solution: str) -> list[tuple[str, str | bytes]]:
    """Stubs (all, or one function missing), syntax errors and unreadable files."""
    failing: list[tuple[str, str | bytes]] = [("stub_all", stubs.make_stub(solution))]
    lines = solution.splitlines()
    for region in stubs.find_regions(solution):
        kept = list(lines)
        for other in stubs.find_regions(solution):
            if other != region:  # blank the other regions' markers: only `region` becomes a stub
                for number in (other.begin, other.end):
                    kept[number - 1] = kept[number - 1].replace(stubs.BEGIN_SOLUTION, "#").replace(stubs.END_SOLUTION, "#")
        failing.append((f"stub_{region.function.replace('.', '_')}", stubs.make_stub("\n".join(kept) + "\n")))
    for label, old, new in (
        ("syntax_missing_colon", "class AttentionHead(nn.Module):", "class AttentionHead(nn.Module)"),
        ("syntax_unclosed_paren", "return torch.tril(ones)", "return torch.tril(ones"),
        ("syntax_bad_indent", "        return HeadResult(", "      return HeadResult("),
    ):
        failing.append((label, catalogue.apply_edits(solution, [catalogue.Edit(old, new)], name=label)))
    failing.append(("unreadable_utf16", solution.encode("utf-16")))  # NUL bytes: refused at intake
    failing.append(("unreadable_latin1", ("# café\n" + solution).encode("latin-1")))  # not UTF-8
    failing.append(("unreadable_binary", bytes(range(256)) * 4))
    return failing


def _pools(solution: str) -> dict[str, list[tuple[str, str | bytes]]]:
    return {
        "correct": [("solution", solution)] + [(v.name, catalogue.implementation_source(v, solution)) for v in catalogue.VARIANTS],
        "buggy": [(m.name, catalogue.implementation_source(m, solution)) for m in catalogue.MUTANTS],
        "failing": _failing_sources(solution),
    }


def _format_of(index: int, content: str | bytes) -> str:
    """Mostly .py; every 20th a folder, every 20th (offset) a notebook, every 25th a zip."""
    if isinstance(content, bytes):
        return "py"
    if index % 20 == 7:
        return "folder"
    if index % 20 == 13:
        return "ipynb"
    if index % 25 == 19:
        return "zip"
    return "py"


def _write_entry(folder: Path, student_id: str, content: str | bytes, form: str) -> Path:
    if form == "py":
        path = folder / f"{student_id}.py"
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    elif form == "folder":
        path = folder / student_id
        (path / "src").mkdir(parents=True)
        (path / "src" / "multi_head_attention.py").write_text(content, encoding="utf-8")
        (path / "README.txt").write_text("my submission\n", encoding="utf-8")
    elif form == "ipynb":
        path = folder / f"{student_id}.ipynb"
        cells = [
            {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# My attention layer\n"]},
            {"cell_type": "code", "id": "code", "metadata": {}, "execution_count": 1, "outputs": [],
             "source": ("%matplotlib inline\n" + content).splitlines(keepends=True)},
        ]
        notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    elif form == "zip":
        path = folder / f"{student_id}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(zipfile.ZipInfo(f"{student_id}/multi_head_attention.py", (2024, 1, 1, 0, 0, 0)), content)
    else:
        raise ValueError(form)
    return path


def generate_class(dest: Path, size: int, seed: int = 0, heavy: bool = False) -> list[Student]:
    """``size`` distinct submissions in ``dest``: ~45% correct, ~40% buggy, ~15% failing.

    Every file is distinct (a header line names the student), so no two share a content
    hash; ids are ``s0000_<kind>_<label>`` so the batch's sorted order is the index order,
    and the kinds are shuffled over the indices so that any prefix is a fair mix. ``heavy``:
    every readable file keeps heavy state beside its module (tests/heavy_state.py's contexts,
    in turn: a logger, a training loop's progress bar, a data set, an object graph, arrays and a
    deep configuration, a figure).
    """
    dest.mkdir(parents=True, exist_ok=True)
    pools = _pools(catalogue.SOLUTION_PATH.read_text(encoding="utf-8"))
    counts = {"correct": round(size * 0.45), "buggy": round(size * 0.40)}
    counts["failing"] = size - counts["correct"] - counts["buggy"]
    plan = [(kind, pools[kind][n % len(pools[kind])]) for kind, count in counts.items() for n in range(count)]
    random.Random(seed).shuffle(plan)
    students = []
    for index, (kind, (label, content)) in enumerate(plan):
        student_id = f"s{index:04d}_{kind}_{label}"
        header = f"# benchmark student {index:04d}: {kind} ({label})\n"
        if isinstance(content, bytes):
            content = header.encode("ascii") + content if not label.endswith("utf16") else content + f"{index}".encode("utf-16")
        else:
            content = header + content
            if heavy:
                contexts = list(heavy_state.CONTEXTS.values())
                content = heavy_state.with_context(content, contexts[index % len(contexts)])
        path = _write_entry(dest, student_id, content, _format_of(index, content))
        students.append(Student(student_id, kind, label, path))
    return students


# --- running things --------------------------------------------------------------------------------


def timed_run(command: list[str], cwd: Path = REPO_ROOT, **options) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    completed = subprocess.run(
        command, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT, **options
    )
    return time.perf_counter() - started, completed


@dataclass
class BatchRun:
    submissions: int
    jobs: int
    seconds: float  # wall time of the whole `python -m grader batch` process
    returncode: int
    out: Path
    graded_in_log: int | None = None  # from batch.log: the grading phase alone
    grading_seconds: float | None = None
    peaks_mib: list[float] = field(default_factory=list)  # one per shard
    restarts: int = 0
    student_code_seconds: float = 0.0  # the student's code's own time in the sandboxed worker, summed
    shard_seconds: float = 0.0  # the shards' lifetimes, summed
    shard_cpu_seconds: float = 0.0  # the grader's own CPU in the shards (torch's import and pytest's included)
    grader_in_child_seconds: float = 0.0  # the grader's own work beside the student's code, in its process

    @property
    def per_second(self) -> float:
        return self.submissions / self.seconds


GRADING_SEED = 5  # one seed for every run, so two trees' results can be compared


def run_batch(class_dir: Path, out: Path, jobs: int, submissions: int, tree: Path = REPO_ROOT) -> BatchRun:
    """``python -m grader batch`` (of ``tree``) on ``class_dir`` into a fresh ``out``; parse its logs."""
    shutil.rmtree(out, ignore_errors=True)
    command = [
        PYTHON, "-m", "grader", "batch", str(class_dir), "--out", str(out), "--quiet", "--jobs", str(jobs),
        "--grading-seed", str(GRADING_SEED),
    ]
    seconds, completed = timed_run(command, cwd=tree)
    run = BatchRun(submissions, jobs, seconds, completed.returncode, out)
    if completed.returncode != 0:
        print(f"  ! the batch exited with {completed.returncode}:\n{(completed.stdout + completed.stderr)[-2000:]}")
    log = (out / "batch.log").read_text(encoding="utf-8") if (out / "batch.log").exists() else ""
    if match := RATE_LINE.search(log):
        run.graded_in_log, run.grading_seconds = int(match[1]), float(match[2])
    for shard_log in sorted((out / "logs").glob("shard-*.log")):
        text = shard_log.read_text(encoding="utf-8", errors="replace")
        if match := PEAK_LINE.search(text):
            run.peaks_mib.append(float(match[1]))
            run.restarts += int(match[2])
        if match := WAITED_LINE.search(text):
            run.student_code_seconds += float(match[1])
            run.shard_seconds += float(match[2])
        if match := OWN_WORK_LINE.search(text):
            run.shard_cpu_seconds += float(match[1])
            run.grader_in_child_seconds += float(match[2])
    return run


def own_work_said(run: BatchRun) -> str:
    """Per submission: the grader's own CPU and the student's code's time, as the shards measured them."""
    if not run.shard_cpu_seconds:
        return "(its shards do not say the grader's own work)"
    per = 1000 / run.submissions
    return (f"per submission: the grader's own work {run.shard_cpu_seconds * per:.0f} ms of CPU in the shard + "
            f"{run.grader_in_child_seconds * per:.0f} ms beside the student's code, which ran {run.student_code_seconds * per:.0f} ms")


# --- (b) throughput --------------------------------------------------------------------------------


def measure_throughput(class_dir: Path, work: Path, size: int, jobs: int) -> BatchRun:
    print(f"(b) batch: {size} submissions, --jobs {jobs} ...", flush=True)
    run = run_batch(class_dir, work / "out-throughput", jobs, size)
    logged = f"; grading phase {run.grading_seconds:.1f} s" if run.grading_seconds is not None else ""
    print(f"    {run.seconds:.1f} s end to end{logged}: {run.per_second:.2f} submissions per second")
    return run


# --- (c) naive ---------------------------------------------------------------------------------------


def measure_naive(students: list[Student], sample: int) -> list[float]:
    """One fresh ``pytest grader --submission PATH`` per sampled submission (in-process)."""
    gradable = [s for s in students if s.path.suffix == ".py" or s.path.is_dir()]  # what --submission takes
    step = max(1, len(gradable) // max(sample, 1))
    chosen = gradable[::step][:sample]
    print(f"(c) naive: a fresh pytest per submission, {len(chosen)} of them ...", flush=True)
    seconds = []
    for student in chosen:
        command = [PYTHON, "-m", "pytest", "grader", "--submission", str(student.path), "-q", "-p", "no:cacheprovider"]
        elapsed, completed = timed_run(command)
        seconds.append(elapsed)
        print(f"    {elapsed:6.1f} s  {student.student_id} (exit {completed.returncode})")
    return seconds


# --- (d) start-up -------------------------------------------------------------------------------------


def measure_startup(repeats: int) -> tuple[list[float], list[float], list[float]]:
    """Alternate a fresh `pytest grader` on the solution with a fresh `import torch`.

    Returns (pytest wall seconds, import-torch wall seconds, torch import seconds read
    inside the baseline process).
    """
    print(f"(d) start-up: pytest grader on the solution vs import torch, {repeats} times each ...", flush=True)
    grade = [PYTHON, "-m", "pytest", "grader", "--submission", str(catalogue.SOLUTION_PATH), "-q", "-p", "no:cacheprovider"]
    baseline = [PYTHON, "-c", TIMED_IMPORT]
    grading, importing, torch_import = [], [], []
    for _ in range(repeats):
        elapsed, completed = timed_run(grade)
        if completed.returncode != 0:
            print(f"  ! pytest grader on the solution exited with {completed.returncode}")
        grading.append(elapsed)
        elapsed, completed = timed_run(baseline)
        importing.append(elapsed)
        torch_import.append(float(completed.stdout.strip() or "nan"))
    print(f"    pytest grader: {_seconds_list(grading)}")
    print(f"    import torch:  {_seconds_list(importing)}")
    return grading, importing, torch_import


# --- (e) memory -----------------------------------------------------------------------------------------


def measure_memory(class_dir: Path, students: list[Student], work: Path) -> tuple[BatchRun, BatchRun]:
    """Peak memory of a one-shard session after the first 20 submissions and after all."""
    small_dir = work / "class-first-20"
    small_dir.mkdir()
    small = students[:MEMORY_SMALL]
    for student in small:
        copy = shutil.copytree if student.path.is_dir() else shutil.copy2
        copy(student.path, small_dir / student.path.name)
    print(f"(e) memory: --jobs 1 on the first {len(small)} ...", flush=True)
    few = run_batch(small_dir, work / "out-memory-small", 1, len(small))
    print(f"    {few.seconds:.1f} s; peak {_peaks(few)}")
    print(f"(e) memory: --jobs 1 on all {len(students)} ...", flush=True)
    many = run_batch(class_dir, work / "out-memory-all", 1, len(students))
    print(f"    {many.seconds:.1f} s ({many.per_second:.2f} per second on one shard); peak {_peaks(many)}")
    return few, many


# --- where the time goes ------------------------------------------------------------------------------------


def time_breakdown(run: BatchRun, students: list[Student]) -> list[str]:
    """From results/<id>.json of a batch: test time per kind of submission, per test, and overhead."""
    kinds = {s.student_id: s.kind for s in students}
    per_kind: dict[str, list[float]] = defaultdict(list)
    per_test: dict[str, float] = defaultdict(float)
    first_tests: list[float] = []
    for path in sorted((run.out / "results").glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        durations = [test.get("duration", 0.0) for test in document.get("tests", [])]
        per_kind[kinds.get(document["submission"], "?")].append(sum(durations))
        for test in document.get("tests", []):
            per_test[test["name"].split("[")[0]] += test.get("duration", 0.0)
        if durations:
            first_tests.append(durations[0])
    total = sum(sum(values) for values in per_kind.values())
    if not total:
        return ["  (no per-test durations in the results)"]
    lines = [f"  recorded test time: {total:.1f} s over {sum(map(len, per_kind.values()))} submissions"]
    for kind in ("correct", "buggy", "failing"):
        values = per_kind.get(kind, [])
        if values:
            lines.append(
                f"    {kind:<8} {len(values):4d} submissions, mean {statistics.mean(values):.2f} s, "
                f"max {max(values):.2f} s of recorded test time each"
            )
    session_seconds = run.seconds * run.jobs
    lines.append(
        f"  shard time not in any test (start-up: torch import, collection, worker start, teardown): "
        f"{max(session_seconds - total, 0):.1f} s of {session_seconds:.1f} s shard-seconds "
        f"(~{max(session_seconds - total, 0) / run.jobs:.1f} s per shard)"
    )
    lines.append("  slowest tests, summed over the class:")
    for name, seconds in sorted(per_test.items(), key=lambda item: -item[1])[:8]:
        lines.append(f"    {seconds:7.1f} s  {100 * seconds / total:4.1f}%  {name}")
    return lines


def student_code_row(one_shard: BatchRun, cores: int) -> tuple[str, str, str, None, str]:
    """(f) How long one shard waited on the sandboxed worker per submission: the student's
    code answering the checks' calls (and its import). With one shard the grader is idle
    while it waits, so this is the student code's own cost, set against what the throughput
    target leaves per submission: ``cores`` core-seconds per second over the target's rate."""
    per_submission = one_shard.student_code_seconds / one_shard.submissions
    budget = cores / TARGET_THROUGHPUT
    return (
        "(f) student code per submission (--jobs 1)",
        f"{1000 * per_submission:.0f} ms",
        "-",
        None,
        f"{100 * one_shard.student_code_seconds / one_shard.shard_seconds:.0f}% of the shard's {one_shard.shard_seconds:.1f} s; "
        f"the {TARGET_THROUGHPUT:g}/s target leaves {1000 * budget:.0f} ms per submission for all the work",
    )


# --- the report ---------------------------------------------------------------------------------------------


TARGET_AGAINST_RATIO = 0.4  # this tree's batch / TARGET_REF's, at most: issue 29's 2.5x
TARGET_REF = "e253644"  # the tree issue 29 measures against; against any other ref the ratio is information


def measure_against(ref: str, class_dir: Path, work: Path, size: int, jobs: int, repeats: int, side_by_side: bool = False) -> int:
    """(g): REF's batch and this tree's on the same class, alternately; the ratio of the medians.
    ``side_by_side``: both at once, --jobs 1 each, so that both meet the same load (a busy machine's
    load moves from minute to minute); the median of each pair's ratio."""
    tree = work / "against"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", ref], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    seconds: dict[str, list[float]] = {ref: [], "this tree": []}
    shares: dict[str, list[float]] = {ref: [], "this tree": []}
    outputs: dict[str, dict] = {}
    pair_ratios: list[float] = []
    for repeat in range(repeats):
        trees = ((ref, tree), ("this tree", REPO_ROOT))
        if side_by_side:
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                runs = list(pool.map(lambda named: run_batch(
                    class_dir, work / f"out-against-{'ref' if named[1] == tree else 'this'}", 1, size, tree=named[1]), trees))
            pair_ratios.append(runs[1].seconds / runs[0].seconds)
        else:
            runs = [run_batch(class_dir, work / f"out-against-{'ref' if root == tree else 'this'}", jobs, size, tree=root)
                    for _, root in trees]
        for (name, _), run in zip(trees, runs):
            seconds[name].append(run.seconds)
            if run.shard_seconds:
                shares[name].append(run.student_code_seconds / run.shard_seconds)
            outputs[name] = what_readers_see(run.out)
            print(f"(g) {name}, run {repeat + 1}: {run.seconds:.1f} s" + ("" if run.returncode == 0 else f" (exited {run.returncode})")
                  + (f"; shards waited on student code {shares[name][-1]:.0%} of their time" if shares[name] else "")
                  + f"; {own_work_said(run)}", flush=True)
    same = [student for student in outputs["this tree"] if outputs["this tree"][student] == outputs[ref].get(student)]
    print(f"(g) the same results (scores, outcomes, messages, diagnoses, pictures) for {len(same)} of "
          f"{len(outputs['this tree'])} students; differing: {sorted(set(outputs['this tree']) - set(same))[:20]}")
    ratio = statistics.median(pair_ratios) if side_by_side else statistics.median(seconds["this tree"]) / statistics.median(seconds[ref])
    sizes = {name: class_file_kilobytes(work / f"out-against-{short}") for name, short in ((ref, "ref"), ("this tree", "this"))}
    read_seconds = seconds_to_read_a_class_of(CLASS_READ_SIZE, work / "out-against-this" / "results.json", work)
    print_summary([
        (
            f"(g) this tree / {ref}, batch of {size}, " + ("side by side, --jobs 1 each" if side_by_side else f"--jobs {jobs}"),
            f"{ratio:.3f}x",
            f"<= {TARGET_AGAINST_RATIO:g}x" if ref.startswith(TARGET_REF) else "-",
            ratio <= TARGET_AGAINST_RATIO if ref.startswith(TARGET_REF) else None,
            f"time ratio: this tree grades at {1 / ratio:.3f}x {ref}'s speed; "
            + (f"pairs {', '.join(f'{r:.3f}' for r in pair_ratios)}; " if side_by_side else "")
            + f"medians {statistics.median(seconds['this tree']):.1f} s vs {statistics.median(seconds[ref]):.1f} s "
            f"({_seconds_list(seconds['this tree'])} vs {_seconds_list(seconds[ref])})",
        ),
        (
            "(g) class results.json per student", f"{sizes['this tree']:.1f} kB", f"<= {TARGET_CLASS_FILE_KB:g} kB",
            sizes["this tree"] <= TARGET_CLASS_FILE_KB, f"{ref}: {sizes[ref]:.1f} kB",
        ),
        (
            f"(g) reading a class file of {CLASS_READ_SIZE} students", f"{read_seconds:.2f} s", "< 1 s", read_seconds < 1.0,
            "this tree's students copied under other ids; read_class_results, as the report and the export do",
        ),
    ])
    return 0


TARGET_CLASS_FILE_KB = 10.0
CLASS_READ_SIZE = 800


def class_file_kilobytes(out: Path) -> float:
    document = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return (out / "results.json").stat().st_size / max(len(document.get("submissions", {})), 1) / 1000


def seconds_to_read_a_class_of(size: int, class_file: Path, work: Path) -> float:
    """The class file grown to ``size`` students (this batch's, again under other ids), read back
    as the report and the export read it; the fastest of three reads."""
    from grader.class_view import class_results

    document = json.loads(class_file.read_text(encoding="utf-8"))
    students = list(document["submissions"].items())
    document["submissions"] = {f"{sid}-{n}": result for n in range(size // len(students) + 1) for sid, result in students}
    document["submissions"] = dict(list(document["submissions"].items())[:size])
    grown = work / f"results-{size}.json"
    grown.write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        class_results.read_class_results(grown)
        timings.append(time.perf_counter() - started)
    return min(timings)


def what_readers_see(out: Path) -> dict[str, dict]:
    """Each student's result without its timings (and the fields only one tree may write)."""
    seen = {}
    for path in sorted((out / "results").glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        seen[path.stem] = {
            "score": document.get("score"), "diagnoses": document.get("diagnoses"),
            "tests": [{key: test.get(key) for key in ("name", "outcome", "points", "message", "attention")} for test in document.get("tests", [])],
        }
    return seen


def _seconds_list(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values) + f" s (median {statistics.median(values):.2f} s)"


def _peaks(run: BatchRun) -> str:
    return ", ".join(f"{peak:.1f} MiB" for peak in run.peaks_mib) or "not found in the shard log"


def _status(ok: bool | None) -> str:
    return "info" if ok is None else ("PASS" if ok else "MISS")


def print_summary(rows: list[tuple[str, str, str, bool | None, str]]) -> None:
    headers = ("figure", "measured", "target", "status", "note")
    widths = [max(len(str(row[i])) for row in [headers, *[(r[0], r[1], r[2], _status(r[3]), r[4]) for r in rows]]) for i in range(5)]
    print("\n" + "=" * (sum(widths) + 8))
    print("SUMMARY")
    print("  ".join(header.ljust(width) for header, width in zip(headers, widths)))
    print("  ".join("-" * width for width in widths))
    for name, measured, target, ok, note in rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip((name, measured, target, _status(ok), note), widths)))
    print("=" * (sum(widths) + 8))


def _load() -> str:
    """Other processes on the machine skew every figure: the load average says how much."""
    return "load average %.2f %.2f %.2f (1, 5, 15 min)" % os.getloadavg() if hasattr(os, "getloadavg") else "load unknown"


def _cores() -> str:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{usable} usable ({os.cpu_count()} in the machine)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=200, help="submissions in the generated class (default 200)")
    parser.add_argument("--sample", type=int, default=5, help="submissions graded the naive way (default 5)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="--jobs for (b) (default: cores)")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (class, OUTs) instead of a temporary one")
    parser.add_argument("--against", metavar="REF", help="only (g): this tree's batch against git REF's on the same class")
    parser.add_argument("--repeats", type=int, default=3, help="with --against: runs of each tree (default 3)")
    parser.add_argument("--side-by-side", action="store_true", help="with --against: both trees' batches at once, "
                        "--jobs 1 each, so that both meet the same load; the median of the pairs' ratios")
    parser.add_argument("--heavy", action="store_true", help="a class whose files keep heavy state beside the module "
                        "(a logger, a figure, a data set...: tests/heavy_state.py)")
    arguments = parser.parse_args(argv)
    if arguments.size < 1:
        parser.error("--size must be at least 1")

    print(f"python {platform.python_version()} ({PYTHON}); cores: {_cores()}; {platform.platform()}")
    print(f"at the start: {_load()}")
    if arguments.keep:
        shutil.rmtree(arguments.keep, ignore_errors=True)
        arguments.keep.mkdir(parents=True)
    work = arguments.keep or Path(tempfile.mkdtemp(prefix="mha-benchmark-"))
    try:
        class_dir = work / "class"
        students = generate_class(class_dir, arguments.size, heavy=arguments.heavy)
        kinds = {kind: sum(s.kind == kind for s in students) for kind in ("correct", "buggy", "failing")}
        forms = defaultdict(int)
        for s in students:
            forms["folder" if s.path.is_dir() else s.path.suffix] += 1
        print(f"(a) class: {len(students)} submissions in {class_dir}: {kinds}, {dict(forms)}")
        if arguments.against:
            return measure_against(arguments.against, class_dir, work, arguments.size, arguments.jobs, arguments.repeats, arguments.side_by_side)

        throughput = measure_throughput(class_dir, work, arguments.size, arguments.jobs)
        naive = measure_naive(students, arguments.sample)
        grading, importing, torch_import = measure_startup(STARTUP_REPEATS)
        memory = measure_memory(class_dir, students, work) if arguments.size > MEMORY_SMALL else None

        print("\nwhere the batch's time goes (from results/<id>.json of (b)):")
        print("\n".join(time_breakdown(throughput, students)))

        batch_per_submission = throughput.seconds / throughput.submissions
        naive_per_submission = statistics.median(naive) if naive else float("nan")
        startup_ratio = statistics.median(grading) / statistics.median(importing)
        rows: list[tuple[str, str, str, bool | None, str]] = [
            (
                f"(b) batch throughput, --jobs {arguments.jobs}",
                f"{throughput.per_second:.2f} /s",
                f">= {TARGET_THROUGHPUT:g} /s",
                throughput.per_second >= TARGET_THROUGHPUT and throughput.returncode == 0,
                f"{throughput.seconds:.1f} s for {throughput.submissions}"
                + ("" if throughput.per_second >= TARGET_THROUGHPUT else f"; {TARGET_THROUGHPUT / throughput.per_second:.1f}x too slow")
                + ("" if throughput.returncode == 0 else f"; batch exited {throughput.returncode}"),
            ),
            (
                "(c) naive / batch, per submission",
                f"{naive_per_submission / batch_per_submission:.1f}x",
                "-",
                None,
                f"naive median {naive_per_submission:.2f} s vs batch {batch_per_submission:.2f} s per submission",
            ),
            (
                "(d) pytest grader (1 file) / import torch",
                f"{startup_ratio:.2f}x",
                f"<= {TARGET_STARTUP_RATIO:g}x",
                startup_ratio <= TARGET_STARTUP_RATIO,
                f"medians {statistics.median(grading):.2f} s vs {statistics.median(importing):.2f} s"
                + ("" if startup_ratio <= TARGET_STARTUP_RATIO else f"; {startup_ratio / TARGET_STARTUP_RATIO:.2f}x over"),
            ),
        ]
        if memory is not None and memory[0].peaks_mib and memory[1].peaks_mib:
            few, many = max(memory[0].peaks_mib), max(memory[1].peaks_mib)
            ratio = many / few
            rows.append(
                (
                    f"(e) peak memory {memory[1].submissions} / {memory[0].submissions} subs",
                    f"{ratio:.2f}x",
                    f"<= {TARGET_MEMORY_RATIO:g}x",
                    ratio <= TARGET_MEMORY_RATIO,
                    f"{many:.1f} MiB vs {few:.1f} MiB (--jobs 1); worker restarts {memory[1].restarts}"
                    + ("" if ratio <= TARGET_MEMORY_RATIO else f"; {ratio / TARGET_MEMORY_RATIO:.2f}x over"),
                )
            )
        else:
            rows.append(("(e) peak memory", "not measured", f"<= {TARGET_MEMORY_RATIO:g}x", None,
                         f"needs --size > {MEMORY_SMALL} and the peak line in the shard logs"))
        if memory is not None and memory[1].shard_seconds:
            rows.append(student_code_row(memory[1], arguments.jobs))
        rows += [
            ("torch import time", f"{statistics.median(torch_import):.2f} s", "-", None, "median, inside a fresh process"),
            ("python", platform.python_version(), "-", None, platform.python_implementation()),
            ("cores", _cores(), "-", None, ""),
            ("machine load at the end", _load().removeprefix("load average "), "-", None, "other work running skews all figures"),
        ]
        print_summary(rows)
    finally:
        if not arguments.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
