"""The results files: with ``--results-dir DIR``, each submission's result
(DIR/results/<submission>.json and DIR/feedback/<submission>.md) as soon as its last check is
done, so that a batch loses no finished student to a crash; with ``--results-json PATH``, every
submission's at the session's end. grader/results.py is the one writer of both.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grader import results, untrusted
from grader.reading import loading
from grader.session.handles import finish, handles_key
from grader.session.sandbox import sandbox_key
from grader.session.scoreboard import scoreboard_key
from grader.session.targets import targets_key


def pytest_configure(config: pytest.Config) -> None:
    results_dir = config.getoption("results_dir")
    if results_dir:
        config.stash[scoreboard_key].on_submission_done = lambda result: _persist(config, Path(results_dir), result)


def _persist(config: pytest.Config, folder: Path, result) -> None:
    # The submission's last test is done: end its code now, so that what it printed is
    # complete and recorded with this result (the fixture's own teardown comes later, when
    # the next submission's first test starts, after this file is written).
    handle = config.stash[handles_key].get(result.submission)
    if handle is not None:
        finish(config, handle)
    target = config.stash[targets_key].get(result.submission)
    try:
        results.write_submission_result(
            folder,
            result,
            grading_seed=config.getoption("grading_seed"),
            sandbox=config.stash[sandbox_key],
            scaffolding=results.scaffolding_level(),
            source=_source_to_hash(target),
            content_hash=target.content_hash if target else "",
        )
    except OSError as error:
        # One student's result that cannot be written must not stop the others' grading:
        # say so (a batch shard's log), and the batch reports this student as not graded.
        print(f"grader: the result of {untrusted.printable(result.submission)} could not be written: {error}", file=sys.stderr)


def _source_to_hash(target) -> Path | None:
    """The file whose hash the result records, when the batch's intake has not hashed it.
    An entry refused at intake has no path (its manifest's "" would read as the current folder:
    a search of the whole folder the grader runs from, and another file's hash)."""
    if target is None or target.content_hash or not target.path.parts:
        return None
    try:
        return loading.locate_source(target.path)
    except loading.SubmissionNotFound:
        return None


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("results_json")
    if path:
        results.write_results_json(
            Path(path),
            session.config.stash[scoreboard_key].results,
            session.config.getoption("grading_seed"),
            sandbox=session.config.stash[sandbox_key],
            scaffolding=results.scaffolding_level(),
        )
