"""Where the student's code runs: in this process (a student's desk: ``pdb`` and ``print`` work),
or with ``--isolate`` in the sandbox's worker (grader/sandbox/), the sandbox ``--sandbox`` asks
for or the one this machine allows, the fallback said. A batch shard's sessions share one worker
(``SharedWorker``, registered by the shard), which the shard closes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.submission import InProcessBackend

worker_key = pytest.StashKey[object]()
sandbox_key = pytest.StashKey[tuple]()  # (sandbox in use, why it differs from the one asked for)


@pytest.hookimpl(tryfirst=True)  # before the other plugins' configure, which read the sandbox
def pytest_configure(config: pytest.Config) -> None:
    config.stash[worker_key] = None
    config.stash[sandbox_key] = ("in-process", "")
    if config.getoption("isolate"):
        isolated, processes = _sandbox()
        config.stash[sandbox_key] = processes.resolve_sandbox(config.getoption("sandbox"))
        shared = config.pluginmanager.get_plugin(isolated.SHARED_WORKER_PLUGIN)  # a batch shard's
        worker = shared.get(config.stash[sandbox_key][0]) if shared else isolated.Worker(config.stash[sandbox_key][0])
        config.stash[worker_key] = worker


def _sandbox():
    """The sandbox's modules (grader/sandbox/), imported only for --isolate: the student
    release grades in-process and ships without them."""
    try:
        from grader.sandbox import isolated, processes
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith("grader.sandbox"):
            raise
        raise pytest.UsageError(
            "--isolate is an instructor feature: this copy of the grader has no sandbox (grader/sandbox/). "
            "Grade your work with `pytest grader`."
        ) from None
    return isolated, processes


def backend(config: pytest.Config, source: Path, cells: list | None) -> tuple[object, tuple]:
    """The backend that runs one submission's code, and the errors that say the grader itself
    cannot run it (its worker did not start)."""
    worker = config.stash[worker_key]
    if worker is None:
        return InProcessBackend(source, cells), ()
    isolated = _sandbox()[0]
    budgets = {
        keyword: seconds for keyword, option in (("budget_seconds", "submission_budget"), ("diagnosis_seconds", "diagnosis_budget"))
        if (seconds := config.getoption(option)) is not None
    }
    return (
        isolated.IsolatedBackend(source, worker, call_timeout=config.getoption("call_timeout"), cells=cells, **budgets),
        isolated.WorkerUnavailable,
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    worker = config.stash.get(worker_key, None)
    if worker is not None and config.pluginmanager.get_plugin(_sandbox()[0].SHARED_WORKER_PLUGIN) is None:
        worker.close()  # a shard's worker serves its next session too; the shard closes it
