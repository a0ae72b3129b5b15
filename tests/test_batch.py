"""Batch grading: the gradebook, resumable runs, and the same scores on both backends."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import re
import signal
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

import catalogue
from grader.class_view import class_results, similarity
from grader.batch import run, shard
from grader.sandbox import processes
from grader.seam import registry
from grading import BATCH_EVENT_CAP_SECONDS, INTERRUPTIBLE_CLASS_SIZE, QUICK_CALL_LIMIT, REPO_ROOT, SLOW_CALL_LIMIT
from grading import as_a_terminals_job, grade, interruptible_class, wait_for_results

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
STUB = REPO_ROOT / "exercises" / "multi_head_attention.py"
needs_bwrap = pytest.mark.skipif(not processes.bwrap_available(), reason="bubblewrap cannot run here")


def run_batch(submissions: Path, out: Path, *extra: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out), "--quiet", *extra],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )


def small_class(folder: Path) -> Path:
    """Six students: correct as .py and as a zipped folder, stubs, a bug, broken, unreadable."""
    folder.mkdir()
    (folder / "alice.py").write_text(SOLUTION.read_text())
    (folder / "bob.py").write_text(STUB.read_text())
    mutant = next(m for m in catalogue.MUTANTS if m.name == "softmax_over_queries")
    (folder / "carol.py").write_text(catalogue.implementation_source(mutant))
    (folder / "dave.py").write_text("def head_dimension(:\n")
    (folder / "erin.py").write_bytes(b"\x00\x01\x02 not text")
    with zipfile.ZipFile(folder / "frank.zip", "w") as archive:
        archive.writestr("frank/src/multi_head_attention.py", SOLUTION.read_text())
        archive.writestr("frank/conftest.py", "raise SystemExit('never imported')\n")
    return folder


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("batch")
    submissions = small_class(root / "class")
    finished = run_batch(submissions, root / "out", "--jobs", "2")
    return submissions, root / "out", finished


def gradebook(out: Path) -> list[dict]:
    with open(out / "gradebook.csv", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_the_batch_exits_zero_whatever_the_students_scored(graded_class):
    _, _, finished = graded_class
    assert finished.returncode == 0, finished.stdout + finished.stderr


def test_the_gradebook_has_one_sorted_row_per_student_and_a_column_per_group(graded_class):
    _, out, _ = graded_class
    header = (out / "gradebook.csv").read_text().splitlines()[0]
    assert header.startswith("submission,score,max_score,raw_score,late_penalty,override,status,shapes,probabilities,causal_masking")
    rows = gradebook(out)
    assert [row["submission"] for row in rows] == ["alice", "bob", "carol", "dave", "erin", "frank"]
    scores = {row["submission"]: int(row["score"]) for row in rows}
    assert scores["alice"] == scores["frank"] == 100
    assert scores["bob"] == scores["dave"] == scores["erin"] == 0
    assert 0 < scores["carol"] < 100
    assert header.endswith(",diagnoses,late,override_reason,comment,exercise")
    assert {row["exercise"] for row in rows} == {registry.exercise().name}  # each row says which exercise it grades
    assert {row["submission"]: row["diagnoses"] for row in rows}["carol"] == "softmax_over_queries"
    assert {row["submission"]: row["diagnoses"] for row in rows}["alice"] == ""
    assert {row["submission"]: row["status"] for row in rows} == {  # every 0 says why
        "alice": "graded", "bob": "not written", "carol": "graded", "dave": "syntax error", "erin": "refused at intake",
        "frank": "graded",
    }


def test_results_json_records_every_test_with_the_seed_and_version(graded_class):
    _, out, _ = graded_class
    document = class_results.read_class_results(out / "results.json")
    assert isinstance(document["grading_seed"], int) and document["grader_version"]
    carol = document["submissions"]["carol"]
    assert len(carol["tests"]) > 40
    assert all({"name", "outcome", "points", "max_points", "message", "duration"} <= set(t) for t in carol["tests"])
    assert "unreadable" not in document["submissions"]["alice"]["import_error"].lower()
    assert "binary" in document["submissions"]["erin"]["import_error"]


def test_each_student_gets_a_feedback_page_with_the_failed_checks(graded_class):
    _, out, _ = graded_class
    carol = (out / "feedback" / "carol.md").read_text()
    # carol's one mistake is diagnosed: its explanation first, then her failing checks in a line each.
    assert "Score:" in carol and carol.index("## What went wrong") < carol.index("## Failing checks")
    assert "normalises over the query axis" in carol and "(explained above)" in carol
    assert "Every check passed." in (out / "feedback" / "alice.md").read_text()
    assert "could not be imported" in (out / "feedback" / "dave.md").read_text()
    assert "Not written yet: `head_dimension` (" in (out / "feedback" / "bob.md").read_text()
    assert "Not written yet" not in carol


def test_the_run_is_logged_and_no_temporary_file_is_left(graded_class):
    _, out, _ = graded_class
    log = (out / "batch.log").read_text()
    assert "6 to grade" in log and "graded 6 submissions" in log
    # Each shard says how long it waited on student code (the batch benchmark reads it).
    shard_logs = sorted((out / "logs").glob("shard-*.log"))
    assert len(shard_logs) == 2
    for shard_log in shard_logs:
        waited = re.search(r"waited on student code ([0-9.]+) s of ([0-9.]+) s", shard_log.read_text())
        assert waited, shard_log.read_text()[-2000:]
        assert 0 < float(waited[1]) <= float(waited[2])
    leftovers = [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    assert not leftovers


@pytest.mark.slow
def test_a_rerun_skips_what_is_graded_and_force_regrades(graded_class, tmp_path):
    # On copies: the graded class is shared by the tests after this one, which read it as graded.
    submissions, out = tmp_path / "class", tmp_path / "out"
    shutil.copytree(graded_class[0], submissions)
    shutil.copytree(graded_class[1], out)
    before = (out / "results" / "alice.json").read_text()
    assert run_batch(submissions, out).returncode == 0
    assert "0 to grade, 6 already graded" in (out / "batch.log").read_text()
    (submissions / "alice.py").write_text(STUB.read_text())  # alice resubmits: she is graded again
    assert run_batch(submissions, out).returncode == 0
    assert "1 to grade, 5 already graded" in (out / "batch.log").read_text()
    assert {row["submission"]: row["score"] for row in gradebook(out)}["alice"] == "0"
    assert run_batch(submissions, out, "--force").returncode == 0
    assert "6 to grade, 0 already graded" in (out / "batch.log").read_text()
    assert before  # the first result existed before the rerun


def test_a_rerun_with_nothing_to_grade_writes_the_same_gradebook_and_results(graded_class, tmp_path):
    # Entries read from the record of the run that graded them keep what intake said then:
    # erin's unreadable file stays "refused at intake", not an "import error" of nothing.
    submissions, out, _ = graded_class
    again = tmp_path / "out"
    shutil.copytree(out, again)
    assert run_batch(submissions, again, "--no-report").returncode == 0
    assert "0 to grade, 6 already graded" in (again / "batch.log").read_text()
    assert (again / "gradebook.csv").read_text() == (out / "gradebook.csv").read_text()
    first, second = (class_results.read_class_results(folder / "results.json") for folder in (out, again))
    assert first.pop("graded_at") and second.pop("graded_at") and first == second


ENDS_EARLY = """
import pytest


@pytest.fixture(scope="session")
def worker():
    pytest.exit("the grader could not start its worker: it said WHY", returncode=3)


def test_one(worker):
    pass
"""
BREAKS = """
def pytest_collection_modifyitems(items):
    raise RuntimeError("a bug of the grader's own")
"""


@pytest.mark.parametrize("test_file", [ENDS_EARLY, BREAKS], ids=["exit", "internal error"])
def test_a_shards_session_that_ends_early_says_why_in_the_shards_log(tmp_path, test_file):
    # The shards run pytest without its terminal plugin: without the shard's own plugin, the
    # reason went nowhere and the batch's log pointed at a shard log that did not have it.
    (tmp_path / ("test_ends.py" if test_file is ENDS_EARLY else "conftest.py")).write_text(test_file)
    if test_file is BREAKS:
        (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    script = ("import sys, pytest; from grader.batch import shard; sys.exit(pytest.main([sys.argv[1], '-p', 'no:terminal', "
              "'-p', 'no:cacheprovider'], plugins=[shard.SaysWhyASessionEnded()]))")
    finished = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)
    assert finished.returncode == 3, finished.stdout + finished.stderr
    said = {ENDS_EARLY: "grading session ended: the grader could not start its worker: it said WHY",
            BREAKS: "grading session ended with an error of the grader's own:"}[test_file]
    assert said in finished.stdout, finished.stdout + finished.stderr
    if test_file is BREAKS:
        assert "RuntimeError: a bug of the grader's own" in finished.stdout


def test_a_missing_submissions_folder_is_an_error_of_the_grader(tmp_path):
    finished = run_batch(tmp_path / "nowhere", tmp_path / "out")
    assert finished.returncode != 0
    assert "not a folder" in finished.stderr


@pytest.mark.slow
def test_an_interrupted_batch_keeps_what_it_graded_and_a_rerun_finishes(tmp_path):
    # A class that cannot be finished soon after its first results (grading.interruptible_class).
    submissions = interruptible_class(tmp_path / "class")
    out = tmp_path / "out"
    # A temporary folder of its own (world-traversable, as the machine's is), to see what
    # the interrupted batch leaves in it.
    own_tmp = Path(tempfile.mkdtemp(prefix="interrupted-batch-"))
    own_tmp.chmod(0o711)
    batch = subprocess.Popen(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out), "--quiet", "--jobs", "1",
         *SLOW_CALL_LIMIT],
        cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, env={**os.environ, "TMPDIR": str(own_tmp)}, preexec_fn=as_a_terminals_job,
    )
    wait_for_results(out, 2, batch)  # an event, not a clock: two students graded
    os.killpg(batch.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
    batch.wait(timeout=BATCH_EVENT_CAP_SECONDS)
    left = sorted(path.name for path in own_tmp.iterdir())
    shutil.rmtree(own_tmp, ignore_errors=True)
    assert left == [], "the shards end their sessions and remove their workers' folders"
    kept = sorted((out / "results").glob("*.json"))
    assert 2 <= len(kept) < INTERRUPTIBLE_CLASS_SIZE, "interrupted mid-way"
    for path in kept:
        json.loads(path.read_text())  # every kept file is whole
    finished = run_batch(submissions, out, *QUICK_CALL_LIMIT)
    assert finished.returncode == 0, finished.stderr
    assert f"{INTERRUPTIBLE_CLASS_SIZE - len(kept)} to grade, {len(kept)} already graded" in (out / "batch.log").read_text()
    assert len(gradebook(out)) == INTERRUPTIBLE_CLASS_SIZE


@needs_bwrap
@pytest.mark.slow
def test_isolated_and_in_process_grading_give_the_same_scores(tmp_path):
    chosen = [*catalogue.MUTANTS[:12:2], *catalogue.VARIANTS[:3]]
    paths = [catalogue.write_implementation(impl, tmp_path) for impl in chosen]
    seed = ("--grading-seed", "12345")
    in_process = grade(paths, tmp_path / "a", *seed)
    isolated = grade(paths, tmp_path / "b", *seed, "--isolate")
    for impl in chosen:
        a = {t["name"]: t["outcome"] for t in in_process.results[impl.name]["tests"]}
        b = {t["name"]: t["outcome"] for t in isolated.results[impl.name]["tests"]}
        assert a == b, f"{impl.name}: in-process and isolated outcomes differ"


def test_the_batchs_shards_without_pytests_unused_plugins_grade_as_the_desk_does(graded_class, tmp_path):
    """The shards block pytest's plugins grading does not use (run.SHARD_UNUSED_PLUGINS); the desk
    (``pytest grader``) keeps them all: the same checks, with the same outcomes, for each file both grade."""
    submissions, out, _ = graded_class
    assert "no:skipping" in run.SHARD_UNUSED_PLUGINS and "no:unittest" in run.SHARD_UNUSED_PLUGINS
    seed = (out / "grading-seed.txt").read_text().strip()
    desk = grade([submissions / "alice.py", submissions / "carol.py"], tmp_path, "--grading-seed", seed, "--isolate")
    for student in ("alice", "carol"):
        batch = json.loads((out / "results" / f"{student}.json").read_text())["tests"]
        outcomes = lambda tests: sorted((test["name"].split("[", 1)[0], test["outcome"]) for test in tests)  # noqa: E731
        assert outcomes(batch) == outcomes(desk.results[student]["tests"]), student
        assert len(batch) > 40 and any(test["outcome"] == "failed" for test in batch) is (student == "carol")


@pytest.mark.parametrize("sandbox", [pytest.param("bwrap", marks=needs_bwrap), "process"])
@pytest.mark.slow
def test_honest_code_using_the_standard_library_scores_full_marks_in_either_sandbox(tmp_path, sandbox):
    """In the process sandbox a child runs as nobody, who may not read the interpreter's
    own files: the worker imports the usual modules before it forks."""
    source = SOLUTION.read_text().replace("import math\n", "import math\nimport random, statistics, fractions\n", 1)
    path = tmp_path / "uses_stdlib.py"
    path.write_text(source)
    run = grade([path], tmp_path, "--isolate", "--sandbox", sandbox)
    assert run.score("uses_stdlib") == 100, run.failed_tests("uses_stdlib")[:3]


SHARD_WITH_SMALL_SESSIONS = """
import sys
from grader.batch import shard
from grader.sandbox import processes
shard.SESSION_SIZE = 2
started = []
start_worker_process = processes.WorkerProcess.__init__
def counting_start(self, *arguments, **options):
    started.append(self)
    start_worker_process(self, *arguments, **options)
processes.WorkerProcess.__init__ = counting_start
status = shard.main(sys.argv[1:])
print(f"worker processes started: {len(started)}")
sys.exit(status)
"""


@pytest.mark.slow
def test_a_shard_grades_in_several_sessions_with_one_worker(tmp_path):
    """Five students in sessions of two: three pytest sessions in one process, sharing one
    worker that outlives each session, and every student's result written and honest."""
    mutant = next(m for m in catalogue.MUTANTS if m.name == "softmax_over_queries")
    sources = {"a": SOLUTION.read_text(), "b": STUB.read_text(), "c": catalogue.implementation_source(mutant),
               "d": "def head_dimension(:\n", "e": SOLUTION.read_text()}
    manifest = []
    for name, source in sources.items():
        (tmp_path / f"{name}.py").write_text(source)
        manifest.append({"name": name, "path": str(tmp_path / f"{name}.py"), "problem": "", "content_hash": name})
    (tmp_path / "shard.json").write_text(json.dumps(manifest))
    out = tmp_path / "out"
    finished = subprocess.run(
        [sys.executable, "-c", SHARD_WITH_SMALL_SESSIONS, str(tmp_path / "shard.json"), "-p", "pytest_timeout", "-p", "no:cacheprovider",
         "--isolate", "--sandbox", "process", "--results-dir", str(out), "--grading-seed", "7"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert finished.returncode == 1, finished.stdout[-3000:] + finished.stderr[-3000:]  # some tests failed
    assert "worker processes started: 1" in finished.stdout
    scores = {name: json.loads((out / "results" / f"{name}.json").read_text())["score"] for name in sources}
    assert scores["a"] == scores["e"] == 100
    assert scores["b"] == scores["d"] == 0
    assert 0 < scores["c"] < 100


def test_a_shard_whose_session_cannot_run_stops_and_says_so(tmp_path):
    """A session that ends in a usage error (or any status but passed/failed) stops the
    shard at once, with that status, before grading anybody: the batch reports the
    students as not graded instead of recording zeros."""
    manifest = [{"name": f"s{index}", "path": str(SOLUTION), "problem": "", "content_hash": ""} for index in range(30)]
    (tmp_path / "shard.json").write_text(json.dumps(manifest))
    finished = subprocess.run(
        [sys.executable, "-m", "grader.batch.shard", str(tmp_path / "shard.json"), "-p", "pytest_timeout",
         "--no-such-option", "--results-dir", str(tmp_path / "out")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert finished.returncode == pytest.ExitCode.USAGE_ERROR, finished.stdout + finished.stderr
    assert finished.stderr.count("unrecognized arguments: --no-such-option") == 1  # not tried again for s25..s29
    assert not (tmp_path / "out" / "results").exists()


@pytest.mark.slow
def test_canvas_download_zip_is_graded_as_it_comes_one_student_once_on_the_file_that_holds_the_work(tmp_path):
    # Canvas's "Download Submissions" gives one member per uploaded file (NAME_USERID_FILEID_file,
    # lib/content_zipper.rb): her helpers module beside her finished exercise, another student's
    # own zip, and what a Mac adds when the download is zipped again.
    helpers = "smithjane_12345_100_attention_helpers.py"
    finished = "smithjane_12345_101_multi_head_attention.py"
    handin = "doejohn_LATE_222_333_handin.zip"
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("handin/multi_head_attention.py", SOLUTION.read_text())
        archive.writestr("__MACOSX/handin/._multi_head_attention.py", b"\x00\x05\x16\x07")
    download = tmp_path / "HW3 submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr(helpers, "def scaled(scores, head_dim):\n    return scores / head_dim ** 0.5\n")
        archive.writestr(finished, SOLUTION.read_text())
        archive.writestr(handin, inner.getvalue())
        archive.writestr(f"__MACOSX/._{finished}", b"\x00\x05\x16\x07")
        archive.writestr("README.txt", "downloaded from Canvas\n")
    completed = run_batch(download, tmp_path / "out", "--jobs", "1")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    rows = gradebook(tmp_path / "out")
    assert [(row["submission"], int(row["score"])) for row in rows] == [(Path(handin).stem, 100), (Path(finished).stem, 100)], rows
    result = json.loads((tmp_path / "out" / "results" / f"{Path(finished).stem}.json").read_text())
    assert result["graded_file"].startswith(
        f"graded {finished} (writes 7 of the exercise's 7 functions): the only one that holds work; not graded: {helpers}"
    )
    log = (tmp_path / "out" / "batch.log").read_text()
    assert f"not graded: {helpers} (defines none of the exercise's 7 functions)" in log
    assert "ignored __MACOSX/: macOS's archive metadata" in log and "ignored README.txt: a README file" in log
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert document["assignment"] == "HW3 submissions"
    assert [item["name"] for item in document["ignored"]] == ["__MACOSX/", "README.txt"]


@needs_bwrap
@pytest.mark.slow
def test_an_interpreter_under_tmp_keeps_one_worker_for_the_whole_shard(tmp_path):
    # bwrap binds the interpreter read-only where it lives; under /tmp (a virtualenv linked
    # into a temporary clone, as CI's and the benchmark's are) that binding sits inside the
    # worker's private /tmp, which is wiped after every student. The wipe once walked the
    # whole virtualenv, failed on it, and the worker was replaced (torch imported again)
    # after every student: a batch took twice as long.
    prefix = Path(sys.prefix)
    if not str(prefix).startswith("/tmp/"):
        holder = Path(tempfile.mkdtemp(prefix="linked-prefix-", dir="/tmp"))
        (holder / "venv").symlink_to(prefix, target_is_directory=True)
        prefix = holder / "venv"
    python = prefix / "bin" / Path(sys.executable).name
    submissions = tmp_path / "class"
    submissions.mkdir()
    for student in ("alice", "bob", "carol"):
        (submissions / f"{student}.py").write_text(SOLUTION.read_text())
    out = tmp_path / "out"
    try:
        finished = subprocess.run(
            [str(python), "-m", "grader", "batch", str(submissions), "--out", str(out), "--quiet", "--jobs", "1",
             "--sandbox", "bwrap", "--no-report"],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
        )
    finally:
        if prefix != Path(sys.prefix):
            shutil.rmtree(prefix.parent)
    assert finished.returncode == 0, finished.stderr
    shard_log = (out / "logs" / "shard-0.log").read_text()
    assert "worker restarts: 0;" in shard_log, shard_log


CLAIMING_SHARD = """
import json, sys, time
from pathlib import Path
from grader.batch import shard
taken = []
for start, entries in shard.claimed_parts(Path(sys.argv[1]), json.loads(Path(sys.argv[1]).read_text())):
    taken.append([start, [entry["name"] for entry in entries]])
    time.sleep(0.01 * len(entries))  # grading them (which shard takes what depends on timing: not asserted)
print(json.dumps(taken))
"""


@pytest.mark.slow
def test_shards_share_one_queue_each_student_taken_once_in_parts_that_shrink(tmp_path):
    queue = tmp_path / "queue.json"
    names = [f"s{index:03d}" for index in range(120)]
    queue.write_text(json.dumps({"shards": 3, "entries": [{"name": name} for name in names]}))
    shards = [
        subprocess.Popen([sys.executable, "-c", CLAIMING_SHARD, str(queue)], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    taken = [json.loads(process.communicate(timeout=120)[0]) for process in shards]
    graded = [name for parts in taken for _, part in parts for name in part]
    assert sorted(graded) == names  # every student once, by one shard
    parts = sorted((start, len(part)) for shard_parts in taken for start, part in shard_parts)
    assert [start for start, _ in parts] == [sum(size for _, size in parts[:index]) for index in range(len(parts))]
    sizes = [size for _, size in parts]
    assert sizes[0] == min(shard.SESSION_SIZE, 20) and sizes[-1] <= shard.SMALLEST_PART  # a sixth of 120, then fewer
    assert sizes == sorted(sizes, reverse=True)


def test_a_shard_alone_takes_its_students_in_sessions_of_the_session_size(tmp_path):
    """One shard has no other to end with: its 60 students in sessions of SESSION_SIZE (each
    session pays its own collection and session fixtures), not in halves that shrink to two."""
    queue = tmp_path / "queue.json"
    names = [f"s{index:03d}" for index in range(60)]
    queue.write_text(json.dumps({"shards": 1, "entries": [{"name": name} for name in names]}))
    parts = [(start, [entry["name"] for entry in entries]) for start, entries in shard.claimed_parts(queue, json.loads(queue.read_text()))]
    assert [name for _, part in parts for name in part] == names
    assert [len(part) for _, part in parts] == [shard.SESSION_SIZE, shard.SESSION_SIZE, 60 - 2 * shard.SESSION_SIZE]
    # With others, about a (2N)th of what remains, within the bounds.
    assert shard.part_size(120, 3) == 20 and shard.part_size(4, 3) == shard.SMALLEST_PART and shard.part_size(1000, 2) == shard.SESSION_SIZE


EARLY_WORKER = """
import sys
from grader.batch import shard
worker = shard.start_the_worker_early(sys.argv[1:])
print("torch imported before the worker started:", "torch" in sys.modules)
if worker is None:
    print("no early worker")
    raise SystemExit(0)
from grader.sandbox.isolated import SharedWorker
shared = SharedWorker(worker)
taken = shared.get("bwrap")
taken.wait_until_ready()
print("adopted:", taken._process is worker, "restarts:", taken.restarts)
shared.close()
"""


@needs_bwrap
def test_a_shard_starts_its_bubblewrap_worker_before_it_imports_torch(tmp_path):
    """The worker imports torch and warms up while the shard imports torch and pytest: the first
    session adopts that worker (no second start); without --isolate, or in the plain-process
    sandbox (its warm worker is forked from the shard), no worker is started early."""
    def run(*options: str) -> str:
        done = subprocess.run([sys.executable, "-c", EARLY_WORKER, *options], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout
    said = run("-p", "pytest_timeout", "--isolate", "--sandbox", "auto", "--results-dir", str(tmp_path))
    assert "torch imported before the worker started: False" in said and "adopted: True restarts: 0" in said, said
    assert "no early worker" in run("--results-dir", str(tmp_path))
    assert "no early worker" in run("--isolate", "--sandbox", "process")


def test_the_coordinator_imports_the_comparison_and_the_report_while_the_shards_grade():
    """What follows the grading is imported on the coordinator's idle thread (its failures are
    silent there, so a module renamed would silently cost the class its time back: named here)."""
    script = (
        "import sys\nfrom grader.batch import run\nrun._import_what_follows_the_grading({report})\n"
        "print(sorted(m for m in ('grader.class_view.code_comparison', 'grader.class_view.report') if m in sys.modules))"
    )
    for report, expected in ((True, ["grader.class_view.code_comparison", "grader.class_view.report"]),
                             (False, ["grader.class_view.code_comparison"])):
        done = subprocess.run([sys.executable, "-c", script.format(report=report)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == repr(expected), done.stdout + done.stderr


FINGERPRINTED_AHEAD = """
import sys
from pathlib import Path
from grader.batch import run
from grader.class_view import code_comparison, similarity
out, ids = Path(sys.argv[1]), sys.argv[2:]
run._import_what_follows_the_grading(False, (out, ids))
ahead = code_comparison._own_fingerprints.cache_info()
record = similarity.class_similarity(out, ids)
after = code_comparison._own_fingerprints.cache_info()
print(ahead.misses, after.misses - ahead.misses, after.hits - ahead.hits, record["compared"], record["pairs_found"])
"""


def test_the_coordinator_fingerprints_the_graded_code_while_the_shards_grade(tmp_path):
    """The comparison after the grading finds every file's fingerprints taken on the idle thread:
    none taken again (a cache miss), one found per file, and the same pairs."""
    graded = tmp_path / "out" / similarity.GRADED_CODE_FOLDER
    graded.mkdir(parents=True)
    solution = (REPO_ROOT / "solutions" / "multi_head_attention.py").read_text(encoding="utf-8")
    ids = ["alice", "bob", "carol"]
    for number, sid in enumerate(ids):
        (graded / f"{sid}.py").write_text(solution + f"\n\ndef extra_{number}(x):\n    return x * {number} + {number}\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", FINGERPRINTED_AHEAD, str(tmp_path / "out"), *ids],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    taken_ahead, taken_after, found, compared, pairs = map(int, done.stdout.split())
    assert (taken_ahead, taken_after, found, compared) == (3, 0, 3, 3), done.stdout
    assert pairs == 3  # the three near-identical files pair with each other, as without the ahead


REPORT_RIGHT_AFTER_THE_IMPORTS_BEGIN = """
import sys
from pathlib import Path
from grader.batch import run
run.start_importing_what_follows(report=True)
print(run._write_report(Path(sys.argv[1]), None))
"""


@pytest.mark.slow
def test_a_class_graded_before_the_imports_end_still_gets_its_report(graded_class, tmp_path):
    """A class graded sooner than copydetect and matplotlib import on the coordinator's other thread
    (a rerun with nothing to grade, a class of two): the report waits for them, never imports
    matplotlib half made ("partially initialized module 'matplotlib.pyplot'", exit 1 after the grades)."""
    _, out, _ = graded_class
    copy = shutil.copytree(out, tmp_path / "out")
    (copy / "report.html").unlink(missing_ok=True)
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", REPORT_RIGHT_AFTER_THE_IMPORTS_BEGIN, str(copy)], cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip().endswith("report.html"), done.stdout + done.stderr
        assert (copy / "report.html").stat().st_size > 10_000


# --- the run's stages, in process: intake -> plan -> grade -> adjust -> write -> report -------
# Each stage takes the one value (run.Batch) the stage before returned. These run them on a copy
# of the graded class's OUT: everything is graded there already, so no shard starts.


def _batch_for(submissions: Path, out: Path, *extra: str):
    import argparse

    from grader.batch import class_intake, run
    from grader.term import course_inputs

    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    options = run.Options.from_arguments(parser.parse_args([str(submissions), "--out", str(out), "--quiet", *extra]))
    inputs = course_inputs.read(None)
    return run.Batch(options, inputs, class_intake.prepare(options.submissions, inputs, options.only))


@pytest.fixture
def regraded(graded_class, tmp_path, request):
    """The intake stage on a copy of the graded class's OUT (``--only alice`` when the test is
    parametrized so); its staging folder removed afterwards."""
    from grader.batch import run

    submissions, out, _ = graded_class
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    run._STOP.__init__()  # what a run() does first; the stages read it
    batch = run.intake_stage(_batch_for(submissions, copy, *getattr(request, "param", ())))
    yield batch
    run._clean_up(batch.staging)


def test_intake_hands_the_plan_each_student_once_on_the_assignments_seed(regraded):
    from grader.batch import run

    assert regraded.seed == int((regraded.options.out / "grading-seed.txt").read_text())
    assert [entry.student_id for entry in regraded.entries] == ["alice", "bob", "carol", "dave", "erin", "frank"]
    assert regraded.staging.is_dir() and regraded.submissions == regraded.options.submissions
    assert run.plan_stage(regraded).to_grade == []  # every result there, for this file and this seed
    forced = dataclasses.replace(regraded, options=dataclasses.replace(regraded.options, force=True))
    assert [entry.student_id for entry in run.plan_stage(forced).to_grade] == [entry.student_id for entry in regraded.entries]


@pytest.mark.parametrize("regraded", [("--only", "alice")], indirect=True)
def test_the_plan_ends_the_run_when_only_would_mix_two_seeds(regraded):
    from grader.batch import run

    result = regraded.options.out / "results" / "bob.json"
    result.write_text(json.dumps(json.loads(result.read_text()) | {"grading_seed": regraded.seed + 1}))
    with pytest.raises(run.Halt) as halted:
        run.plan_stage(regraded)
    assert halted.value.status == run.EXIT_GRADER_FAILED
    assert [entry.student_id for entry in run.plan_stage(dataclasses.replace(regraded, entries=regraded.entries[:1])).to_grade] == ["alice"]


def test_grade_with_nothing_planned_starts_no_shard(regraded, monkeypatch):
    from grader.batch import run

    monkeypatch.setattr(processes, "start_grading_shard", lambda *_, **__: pytest.fail("a shard started"))
    planned = run.plan_stage(regraded)
    graded = run.grade_stage(planned)
    assert graded.status == run.EXIT_OK and graded.entries == planned.entries and graded.to_grade == []


def test_adjust_derives_each_final_score_from_the_results_grading_wrote(regraded, graded_class):
    from grader.batch import run

    graded = run.grade_stage(run.plan_stage(regraded))
    (regraded.options.out / "results" / "carol.json").unlink()  # as if her shard had died before writing it
    adjusted = run.adjust_stage(graded)
    scores = {row["submission"]: int(row["score"]) for row in gradebook(graded_class[1])}
    assert {graded.student_id: graded.document["score"] for graded in adjusted.adjusted} == {
        sid: score for sid, score in scores.items() if sid != "carol"
    }
    assert all(graded.document["raw_score"] == graded.document["score"] for graded in adjusted.adjusted)  # no late work, no override
    assert adjusted.not_graded["carol"]["status"] == "no result" and adjusted.not_applied == []


def test_write_then_report_give_the_files_and_the_summary_the_command_gave(regraded, graded_class, capsys):
    from grader.batch import run

    original = graded_class[1]
    written = run.write_stage(run.adjust_stage(run.grade_stage(run.plan_stage(regraded))))
    out = regraded.options.out
    assert (out / "gradebook.csv").read_text() == (original / "gradebook.csv").read_text()
    ours, theirs = (class_results.read_class_results(folder / "results.json") for folder in (out, original))
    assert ours.pop("graded_at", None) is not None and theirs.pop("graded_at", None) is not None
    assert ours == theirs
    assert sorted(path.name for path in (out / "feedback").iterdir()) == sorted(path.name for path in (original / "feedback").iterdir())
    assert set(written.documents) == {"alice", "bob", "carol", "dave", "erin", "frank"}
    reported = run.report_stage(dataclasses.replace(written, options=dataclasses.replace(written.options, no_report=True)))
    assert reported.status == run.EXIT_OK and reported.report_path is None
    said = capsys.readouterr().out
    assert said.startswith("6 students graded (0 in this run)")


# --- --only: one student once, and who it did not name is not a failure ---------------------------


def test_only_refuses_a_student_named_twice_with_two_files_whatever_names_it_uses(tmp_path):
    # Once: `--only alice=good.py 12=stub.py` graded the last file, and never mentioned the first.
    from grader.batch import class_intake
    from grader.term import course_inputs

    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "smithalice_12_777_multi_head_attention.py").write_text(SOLUTION.read_text())
    (folder / "bob.py").write_text(SOLUTION.read_text())
    good, stub = tmp_path / "good.py", tmp_path / "stub.py"
    good.write_text(SOLUTION.read_text())
    stub.write_text(SOLUTION.read_text())
    for only in ([f"smithalice={good}", f"12={stub}"], ["bob", "BOB"]):
        with pytest.raises(class_intake.Refused) as refused:
            class_intake.prepare(folder, course_inputs.read(None), only)
        (problem,) = refused.value.problems
        assert f"--only {only[1]}: a second time for" in problem and f"(the first is {only[0]}): name each student once" in problem
    assert class_intake.prepare(folder, course_inputs.read(None), ["smithalice", "bob"]).only == [
        "smithalice_12_777_multi_head_attention", "bob"]


@pytest.mark.parametrize("regraded", [("--only", "alice")], indirect=True)
def test_only_calls_a_student_it_did_not_name_not_graded_in_this_run_never_a_failure_of_the_grader(regraded, caplog):
    # Once, --only on a fresh OUT: the others were "without a result (the grader failed)", with an ERROR line.
    import logging

    from grader.batch import run, summary

    planned = run.plan_stage(regraded)
    assert [entry.student_id for entry in planned.to_grade] == ["alice"]
    results = regraded.options.out / "results"
    (results / "bob.json").unlink()  # never graded: OUT was fresh for him
    (results / "alice.json").unlink()  # asked for, and no result: that is the grader's failure
    with caplog.at_level(logging.INFO, logger="grader.batch"):
        adjusted = run.adjust_stage(planned)
    assert {sid: record["status"] for sid, record in adjusted.not_graded.items()} == {"alice": "no result", "bob": "not graded in this run"}
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == [
        "alice has no result and is left out of the gradebook"]
    said = summary.summary(adjusted.not_graded, None, regraded.options.out)
    assert "1 without a result (the grader failed; see" in said and said.count("bob") == 1
    assert "1 not graded in this run (--only named others; a run without --only grades them): bob" in said
