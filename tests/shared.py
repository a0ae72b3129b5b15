"""What the suite builds once per run and shares across its files and its xdist workers.

Some things cost tens of seconds and several test files need the same one: the grading of the
whole catalogue (tests/catalogue.py), the behaviour scan of a grader's files. Each is built by the
first test that asks for it, under a file lock that every worker of the run shares, and written
to the run's own temporary folder as JSON; every later caller, in any worker, reads it back. This
is pytest-xdist's recipe for session fixtures that run once ("Making session-scoped fixtures
execute only once", pytest-xdist's how-to): the workers' base temporary folders share one parent,
new for each run, so two runs at once share nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import traceback
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pytest
from filelock import FileLock

import catalogue
from grading import GradingRun, grade_in_parts


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this run's own, the same for all its xdist workers."""
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's base folder is <the run's folder>/popen-gwN; without it, the
    # base folder is the run's (its parent holds earlier runs').
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    folder.mkdir(exist_ok=True)
    return folder


def once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]):
    """``build(folder)``'s value (JSON), built by the first caller of the run, read by the others.

    ``folder`` is an empty folder of the run's, kept for the whole run: what the value names
    there (files, environments) stays for every caller. A build that raised fails every caller
    with its traceback, without building again."""
    root = run_folder(tmp_path_factory)
    value_path, error_path = root / f"{name}.json", root / f"{name}.error"
    with FileLock(str(root / f"{name}.lock")):
        if not value_path.is_file() and not error_path.is_file():
            folder = root / name
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                value = build(folder)
            except BaseException:
                error_path.write_text(traceback.format_exc())
                raise
            value_path.write_text(json.dumps(value))
    if error_path.is_file():
        pytest.fail(f"building the run's shared {name} failed (in this worker or another):\n{error_path.read_text()}")
    return json.loads(value_path.read_text())


def content_key(root: Path) -> str:
    """A digest of every file under ``root``: its path and its bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


# --- the catalogue, graded once -----------------------------------------------------------------

CATALOGUE_ENTRIES = (
    *catalogue.MUTANTS, *catalogue.VARIANTS,
    *(catalogue.paired(*pair) for pair in (*catalogue.PAIRS, *catalogue.UNKNOWN_PAIRS, *catalogue.LAYOUT_PAIRS)),
)


class CatalogueRun(GradingRun):
    """The whole catalogue graded in one grader run, on one seed drawn for the run, as a
    course's is: ``paths`` are its files (named by entry), ``seed`` the grading seed."""

    paths: list[Path]
    seed: int


def catalogue_run(tmp_path_factory: pytest.TempPathFactory) -> CatalogueRun:
    def build(folder: Path) -> dict:
        seed = random.SystemRandom().randrange(10**6)
        paths = [catalogue.write_implementation(entry, folder / "entries") for entry in CATALOGUE_ENTRIES]
        # A safety net, not a timed test: some 150 submissions, failing ones diagnosed, in two
        # sessions at once (a machine's second core would otherwise wait).
        run = grade_in_parts(paths, folder, "--grading-seed", str(seed), timeout=1800)
        return {"run": asdict(run), "paths": [str(path) for path in paths], "seed": seed}

    shared = once(tmp_path_factory, "catalogue-run", build)
    run = CatalogueRun(**shared["run"])
    run.paths, run.seed = [Path(path) for path in shared["paths"]], shared["seed"]
    return run


# --- the behaviour scan, once per content -----------------------------------------------------------


def callable_solutions(tmp_path_factory: pytest.TempPathFactory, root: Path) -> list[str]:
    """grader.handout.behaviour_scan.callable_solutions(root), run once per run for each content of
    ``root/grader`` (what the scan imports and calls): the release and the wheel ship the same
    grader files, and the scan costs some 15 to 25 seconds."""
    from grader.handout import behaviour_scan

    key = content_key(Path(root) / "grader")
    return once(tmp_path_factory, f"behaviour-scan-{key[:16]}", lambda _folder: behaviour_scan.callable_solutions(root))
