"""The ``submission`` fixture: one open handle per submission (grader/submission.py), behind
which its code runs where the sandbox plugin says; closed after the submission's last check,
with what its code printed recorded on its result. A submission that cannot be read or
imported is not graded: its reason is said once, in the summary, and each test fails with one line.
"""

from __future__ import annotations

import pytest

from grader.feedback.errors import ErrorDescription
from grader.reading import loading, notebooks
from grader.seam import registry
from grader.session import sandbox
from grader.session.scoreboard import scoreboard_key
from grader.session.targets import Target, in_its_terms, targets_key
from grader.submission import Submission

handles_key = pytest.StashKey[dict]()  # submission name -> its open Submission handle


def pytest_configure(config: pytest.Config) -> None:
    config.stash[handles_key] = {}
    for target in config.stash[targets_key].values():
        config.stash[scoreboard_key].submission_result(target.name).graded_file = target.graded_file


@pytest.fixture(scope="session")
def submission(request: pytest.FixtureRequest):
    """The submission under test, behind the plain-data interface of grader.submission."""
    target: Target = request.config.stash[targets_key][request.param]
    if target.problem:
        _not_gradable(request.config, target.name, ErrorDescription("import", "Unreadable", target.problem))
    try:
        source, not_found = loading.locate_source(target.path), ""
    except loading.SubmissionNotFound as error:
        source, not_found = None, str(error)
    if not_found:  # outside the except: a failure raised inside it would print the first error chained to it
        _not_gradable(request.config, target.name, ErrorDescription("import", "SubmissionNotFound", not_found))
    # A notebook runs cell by cell, as a kernel runs it (grader.reading.loading.run_cells).
    cells = notebooks.cells_to_run(list(target.cells)) if target.cells else None
    backend, worker_unavailable = sandbox.backend(request.config, source, cells)
    handle = registry.handle()(target.name, source, backend, reuse_answers=not request.config.getoption("ask_every_time"))
    request.config.stash[handles_key][target.name] = handle
    request.addfinalizer(lambda: finish(request.config, handle))
    try:
        handle.open()
    except worker_unavailable as error:
        # The grader cannot run: stop, rather than record a zero the student did not earn.
        pytest.exit(f"the grader could not start its worker: {error}", returncode=3)
    if target.cells:
        request.config.stash[scoreboard_key].submission_result(target.name).notebook = _how_the_notebook_ran(target, backend)
    if handle.import_error is not None:
        _not_gradable(request.config, target.name, handle.import_error)
    return handle


@pytest.fixture(scope="session")
def grading_seed(request: pytest.FixtureRequest) -> int:
    return request.config.getoption("grading_seed")


def _how_the_notebook_ran(target: Target, backend) -> list[str]:
    """One line per cell skipped (a cell magic that is not Python), per cell that raised, and
    per function or class defined in several cells (which one was graded)."""
    spans = list(target.cells)
    try:
        code = target.path.read_text(encoding="utf-8")
    except OSError:
        code = ""
    failed = [
        notebooks.failed_cell(spans, line, error.type_name, error.message, error.location)
        for line, error in getattr(backend, "cell_failures", [])
    ]
    return [*notebooks.skipped_cells(spans), *failed, *notebooks.redefinitions(code, spans)]


def finish(config: pytest.Config, handle: Submission) -> None:
    """End the submission's code and record what it printed (once; later calls do nothing)."""
    if config.stash[handles_key].pop(handle.name, None) is None:
        return
    handle.close()
    result = config.stash[scoreboard_key].submission_result(handle.name)
    result.output = handle.backend.captured_output()
    if hasattr(handle.backend, "ran_out"):  # the isolated backend keeps the time budgets
        result.time_budget = {
            "submission_seconds": handle.backend.budget_seconds,
            "diagnosis_seconds": handle.backend.diagnosis_seconds,
            "ran_out": dict(handle.backend.ran_out),
            # What the student's code spent of them, and the grader's own work in its process, which
            # no budget counts (grader/student_clock.py).
            "student_seconds": round(handle.backend.spent_seconds, 3),
            "grader_seconds_in_child": round(handle.backend.grader_seconds, 3),
        }
        if handle.state_unread:
            result.time_budget["state_check"] = STATE_UNREAD


STATE_UNREAD = (
    "what the code keeps was more than the state check reads (grader/reading/state_kept.py's budget): "
    "every question was asked afresh, which grades the same"
)


def _not_gradable(config: pytest.Config, name: str, error: ErrorDescription) -> None:
    """Show the reason once, in the summary; each test then fails with one short line."""
    config.stash[scoreboard_key].record_import_error(name, in_its_terms(config, name, error.for_student()))
    pytest.fail(f"not graded: {name} could not be imported (the reason is shown once, below the tests)", pytrace=False)
