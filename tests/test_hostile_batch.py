"""``python -m grader batch`` on a hostile class, as a hostile student and a careless
instructor would set it up: nothing may hang, crash, leak or mislead.

One batch (one shard, so that every student after a hostile one shares its shard and its
pytest session) grades FIFOs, a device, links out of the submissions, a 240-character id,
a folder 1,100 levels deep, ids that are spreadsheet formulas or terminal escape
sequences, an exception whose class name and message are Markdown, a latin-1 file with a
coding line, a notebook with a continued '%' line, and honest students who print.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from grader import untrusted
from grader.batch import intake
from grader.batch import run as batch_run
from grader.sandbox import processes
from grader.class_view import class_results
from grading import REPO_ROOT
import tiers
from test_interruption import private_tmp  # noqa: F401 - a fixture: the batch's own temporary folder
from test_untrusted import outside_code_blocks

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
LONG_ID = "a" * 240
FORMULA_IDS = ("=HYPERLINK(1)", "+sum", "-2+3", "@cmd")
ESCAPE_ID = "\x1b[31mred\x1b[0m"
HOSTILE_EXCEPTION = '''

_Evil = type("Evil```\\n# Score: 100/100\\n<img src=x onerror=alert(1)>", (Exception,), {})


def _raises(self, inputs, allowed_mask):
    raise _Evil("```\\n\\n## Score: 100/100\\n\\n[claim your prize](http://evil.example) <b>bold</b>\\n````")


AttentionHead.forward = _raises
'''
CONTINUED_PERCENT = '_MESSAGE = ("model_dim=%d num_heads=%d"\n            % (8, 2))\n'


def run_batch(submissions: Path, out: Path, *extra: str, env: dict | None = None, timeout: float = 900):
    return subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out), "--quiet", *extra],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env,
    )


def printing(marker: str) -> str:
    return SOLUTION.read_text() + f"\nprint({marker!r})\n"


def notebook_of(*sources: str) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None} for source in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def build_hostile_class(root: Path) -> Path:
    folder = root / "class"
    folder.mkdir()
    (folder / f"{LONG_ID}.py").write_text(printing("printed-by-the-long-id"))
    (folder / "b_after_long.py").write_text(printing("printed-by-b"))
    (folder / "printer.py").write_text(printing("printed-by-printer"))
    os.mkfifo(folder / "fifo.py")
    (folder / "gwen").mkdir()
    os.mkfifo(folder / "gwen" / "multi_head_attention.py")
    if os.geteuid() == 0:
        os.mknod(folder / "zero.py", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    secret = root / "secret.txt"
    secret.write_text("TOP SECRET first line\n")
    secret.chmod(0o600)
    (folder / "sol").symlink_to(SOLUTION.parent)
    (folder / "solfile.py").symlink_to(SOLUTION)
    (folder / "peek.py").symlink_to(secret)
    deep = folder / "deep"
    deep.mkdir()
    (deep / "multi_head_attention.py").write_text(SOLUTION.read_text())
    level = deep
    for _ in range(1100):
        level = level / "d"
        level.mkdir()
    for name in FORMULA_IDS + (ESCAPE_ID,):
        (folder / f"{name}.py").write_text(SOLUTION.read_text())
    (folder / "hostile_exception.py").write_text(SOLUTION.read_text() + HOSTILE_EXCEPTION)
    latin = "# -*- coding: latin-1 -*-\n# écrit par Zoé\n" + SOLUTION.read_text()
    (folder / "latin.py").write_bytes(latin.encode("latin-1"))
    (folder / "notebook.ipynb").write_text(notebook_of(SOLUTION.read_text(), CONTINUED_PERCENT))
    return folder


def remove_deep(folder: Path) -> None:
    deepest = folder
    while (deepest / "d").is_dir():
        deepest = deepest / "d"
    while deepest != folder:
        deepest.rmdir()
        deepest = deepest.parent


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # a hostile class graded by the batch
def hostile_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    submissions = build_hostile_class(root)
    try:
        finished = run_batch(submissions, root / "out", "--jobs", "1")
    finally:
        remove_deep(submissions / "deep")
    return submissions, root / "out", finished


def results_of(out: Path) -> dict:
    return class_results.read_class_results(out / "results.json")["submissions"]


def gradebook_rows(out: Path) -> list[dict]:
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_the_hostile_batch_finishes_and_grades_everyone(hostile_class):
    _, out, finished = hostile_class
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-3000:]
    expected = {LONG_ID, "b_after_long", "printer", "fifo", "gwen", "sol", "solfile", "peek", "deep",
                *(("zero",) if os.geteuid() == 0 else ()), *FORMULA_IDS,
                untrusted.printable(ESCAPE_ID), "hostile_exception", "latin", "notebook"}
    assert set(results_of(out)) == expected
    assert len(gradebook_rows(out)) == len(expected)


def test_fifos_devices_and_links_score_zero_with_a_reason_and_leak_nothing(hostile_class):
    _, out, _ = hostile_class
    documents = results_of(out)
    for name in ("fifo", "gwen", *(("zero",) if os.geteuid() == 0 else ())):
        assert documents[name]["score"] == 0 and "not a regular file" in documents[name]["import_error"], name
    for name in ("sol", "solfile", "peek"):
        assert documents[name]["score"] == 0 and "symbolic link" in documents[name]["import_error"], name
    for path in out.rglob("*"):
        if path.is_file():
            assert b"TOP SECRET" not in path.read_bytes(), path


def test_a_240_character_id_and_the_students_after_it_in_its_shard_are_graded(hostile_class):
    _, out, _ = hostile_class
    documents = results_of(out)
    assert documents[LONG_ID]["score"] == documents["b_after_long"]["score"] == 100
    assert documents["deep"]["score"] == 100
    for path in (out / "results").iterdir():
        assert len(path.name.encode()) <= untrusted.MAX_FILE_STEM_BYTES + len(".json")
    stem = untrusted.file_stem(LONG_ID)
    assert json.loads((out / "results" / f"{stem}.json").read_text())["submission"] == LONG_ID


def test_what_each_student_printed_is_recorded_not_only_the_last(hostile_class):
    _, out, _ = hostile_class
    documents = results_of(out)
    assert "printed-by-the-long-id" in documents[LONG_ID]["output"]
    assert "printed-by-b" in documents["b_after_long"]["output"]
    assert "printed-by-printer" in documents["printer"]["output"]


def test_no_gradebook_cell_is_a_formula_and_no_escape_sequence_reaches_a_file_or_the_terminal(hostile_class):
    _, out, finished = hostile_class
    for row in gradebook_rows(out):
        for cell in row.values():
            assert not cell.startswith(untrusted.CSV_FORMULA_STARTS), row
    cells = {row["submission"] for row in gradebook_rows(out)}
    assert {"'" + name for name in FORMULA_IDS} <= cells
    for text in (finished.stdout, finished.stderr, (out / "batch.log").read_text(), (out / "gradebook.csv").read_text()):
        assert "\x1b" not in text and "\x07" not in text


def test_a_hostile_exception_renders_as_text_in_the_feedback_page(hostile_class):
    _, out, _ = hostile_class
    document = results_of(out)["hostile_exception"]
    assert 0 < document["score"] < 100
    page = (out / "feedback" / "hostile_exception.md").read_text()
    shown = outside_code_blocks(page)
    assert not [line for line in shown if "Score: 100/100" in line or "<img" in line or "](http" in line]
    assert "# Score: 100/100" in page  # shown to the student, inside a code block


def test_a_latin_1_file_and_a_notebook_with_a_continued_percent_line_score_as_their_code(hostile_class):
    _, out, _ = hostile_class
    documents = results_of(out)
    assert documents["latin"]["score"] == 100, documents["latin"]["import_error"]
    assert documents["notebook"]["score"] == 100, documents["notebook"]["import_error"]


# --- 9. one batch per OUT ----------------------------------------------------------------


def test_a_second_batch_into_the_same_out_is_refused_naming_the_first(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "alice.py").write_text(SOLUTION.read_text())
    out = tmp_path / "out"
    out.mkdir()
    held = batch_run.lock_out(out)  # as a running batch holds it
    try:
        finished = run_batch(submissions, out)
    finally:
        held.close()
    assert finished.returncode == batch_run.EXIT_GRADER_FAILED
    assert f"pid {os.getpid()}" in finished.stderr and "in use by another batch" in finished.stderr
    assert not (out / "results").exists(), "nothing was graded into the OUT in use"


# --- 10. a rerun reads no unchanged entry again -----------------------------------------


@pytest.mark.slow
def test_a_rerun_does_not_read_unchanged_entries_again(tmp_path, monkeypatch):
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "alice.py").write_text(SOLUTION.read_text())
    old_notebook = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"metadata": {}, "cells": [
        {"cell_type": "code", "collapsed": False, "input": SOLUTION.read_text().splitlines(keepends=True),
         "language": "python", "metadata": {}, "outputs": []}]}]}
    (submissions / "dan.ipynb").write_text(json.dumps(old_notebook))
    out = tmp_path / "out"
    first = run_batch(submissions, out)
    assert first.returncode == 0, first.stderr[-3000:]
    read_again = []
    monkeypatch.setattr(intake, "stage_entry", lambda entry, *args, **kwargs: read_again.append(entry.name))
    # The batch's own parser, so that the options the batch grows reach this run too.
    parser = argparse.ArgumentParser()
    batch_run.add_arguments(parser)
    arguments = parser.parse_args([str(submissions), "--out", str(out), "--jobs", "1", "--sandbox", "process", "--quiet", "--no-report"])
    assert batch_run.run(arguments) == batch_run.EXIT_OK
    assert read_again == []
    assert "0 to grade, 2 already graded" in (out / "batch.log").read_text()
    assert {row["submission"]: row["score"] for row in gradebook_rows(out)} == {"alice": "100", "dan": "100"}


# --- 11. a deep tree left by one student, in either sandbox --------------------------------

needs_bwrap = pytest.mark.skipif(not processes.bwrap_available(), reason="bubblewrap cannot run here")
DEEP_TREE = (REPO_ROOT / "tests" / "attacks" / "deep_tree.py").read_text()


def a_dead_runs_worker_folder(temporary: Path) -> Path:
    """A worker folder as a run killed while grading the deep tree leaves it: its owner (pid 1
    with another start time) is gone, and the 1,200 folders are still in it."""
    namespace = os.stat("/proc/self/ns/pid").st_ino
    folder = temporary / f"mha-worker-1.{processes._start_time(1) + 1}.{namespace}-deadbeef"
    level = folder / "tmp" / "mha-scratch-abcd" / "submission-efgh"
    level.mkdir(parents=True)
    handle = os.open(level, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1200):
        os.mkdir("d", dir_fd=handle)
        below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=handle)
        os.close(handle)
        handle = below
    os.close(handle)
    return folder


@pytest.mark.parametrize("sandbox", [pytest.param("bwrap", marks=needs_bwrap), "process"])
@pytest.mark.slow
def test_a_deep_tree_costs_nobody_a_result_and_leaves_nothing_behind(tmp_path, private_tmp, sandbox):
    submissions = tmp_path / "class"
    submissions.mkdir()
    # One shard, in this order: the deep tree is graded by a worker already warm (its start
    # is not what this test is about), and the honest student after it by the same worker.
    (submissions / "a_first.py").write_text(SOLUTION.read_text())
    (submissions / "b_deep.py").write_text(SOLUTION.read_text() + "\n\n" + DEEP_TREE)
    (submissions / "c_honest.py").write_text(SOLUTION.read_text())
    env = {**os.environ, "TMPDIR": str(private_tmp)}
    first = run_batch(submissions, tmp_path / "out", "--jobs", "1", "--sandbox", sandbox, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    scores = {row["submission"]: row["score"] for row in gradebook_rows(tmp_path / "out")}
    assert set(scores) == {"a_first", "b_deep", "c_honest"}
    assert scores["b_deep"] == scores["c_honest"] == "100"  # the tree is within every stated limit
    assert "left 1200 nested folders" in results_of(tmp_path / "out")["b_deep"]["output"]
    shard_log = (tmp_path / "out" / "logs" / "shard-0.log").read_text()
    assert "worker restarts: 0" in shard_log, shard_log[-3000:]  # the worker cleaned up and lived on
    assert list(private_tmp.iterdir()) == []
    # A run killed while it graded the deep tree left its worker's folder: the next batch
    # starts all the same, removes it, and grades.
    leftover = a_dead_runs_worker_folder(private_tmp)
    second = run_batch(submissions, tmp_path / "out-2", "--jobs", "1", "--sandbox", sandbox, env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"removed {leftover}" in (tmp_path / "out-2" / "batch.log").read_text()
    assert {row["submission"]: row["score"] for row in gradebook_rows(tmp_path / "out-2")}["c_honest"] == "100"
    assert list(private_tmp.iterdir()) == []
