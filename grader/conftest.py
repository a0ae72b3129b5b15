"""pytest wiring for the grader: options, the ``submission`` fixture, scoring.

``pytest grader`` grades exercises/; ``pytest grader --submission PATH`` grades a .py
file of any name, a Jupyter notebook (its code cells, as the batch reads them) or a folder
holding multi_head_attention.py or multi_head_attention.ipynb (with both, the one that holds
the work: see ``grader.reading.loading.choose_work``). ``--submission`` may be
repeated: the tests then run once per submission, each against a fresh handle.
"""

from __future__ import annotations

import atexit
import gc
import json
import secrets
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.reading import shadowing

# Before torch is imported: a torch.py beside the grader would be imported in its place.
shadowing.stop_if_shadowed(Path(__file__).resolve().parent)

import torch  # noqa: E402

from grader.exercise import checks  # noqa: E402
from grader import results, settings, timeouts, untrusted  # noqa: E402
from grader.feedback import diagnosis_text, root_causes
from grader.reading import loading, notebooks
from grader.scoreboard import Scoreboard, group_of
from grader.scoring import ATTENTION_PROPERTY, GROUPS
from grader.submission import ErrorDescription, InProcessBackend, StudentCodeError, Submission

GRADER_DIR = Path(__file__).resolve().parent
REPO_ROOT = GRADER_DIR.parent
DEFAULT_SUBMISSION = REPO_ROOT / "exercises"

scoreboard_key = pytest.StashKey[Scoreboard]()
targets_key = pytest.StashKey[dict]()
worker_key = pytest.StashKey[object]()
sandbox_key = pytest.StashKey[tuple]()  # (sandbox in use, why it differs from the one asked for)
notebooks_key = pytest.StashKey[Path]()  # where --submission notebooks become .py files
handles_key = pytest.StashKey[dict]()  # submission name -> its open Submission handle
causes_key = pytest.StashKey[root_causes.RootCauses]()
folded_key = pytest.StashKey[list]()  # failure reports a root cause explains, shortened in the terminal


@dataclass(frozen=True)
class Target:
    name: str
    path: Path
    problem: str = ""  # why the entry could not even be read (set by the batch's intake)
    content_hash: str = ""  # the batch's hash of the entry, recorded with its result
    graded_file: str = ""  # which file of the submission is graded, recorded with its result
    cells: tuple = ()  # a notebook's cells in the graded file (grader.reading.notebooks.CellSpan)
    given: Path | None = None  # what the user named, when ``path`` is a staged copy (a notebook's code)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    # pytest reads `--submission PATH` before this option exists, takes PATH for a test
    # path and would import a conftest.py found beside it: student code in the grader's
    # process, able to rewrite outcomes. From here on, pytest considers conftest files
    # inside grader/ only (its confcutdir check, narrowed; pytest is pinned).
    considered = pluginmanager._is_in_confcutdir
    pluginmanager._is_in_confcutdir = lambda path: considered(path) and Path(path).is_relative_to(GRADER_DIR)
    group = parser.getgroup("grader", "multi-head attention grader")
    group.addoption(
        "--submission",
        action="append",
        default=[],
        metavar="PATH",
        help="a .py file, a notebook or a folder holding multi_head_attention.py (repeatable); default: exercises/",
    )
    group.addoption("--results-json", metavar="PATH", help="also write every test's outcome to this JSON file")
    group.addoption(
        "--manifest",
        metavar="FILE",
        help='JSON list of {"name", "path", "problem"}: the submissions to grade, named (used by the batch)',
    )
    group.addoption(
        "--isolate",
        action="store_true",
        help="run the submission in the sandboxed worker instead of in this process",
    )
    group.addoption(
        "--sandbox",
        choices=("auto", "bwrap", "process"),
        default="auto",
        help="with --isolate: bwrap (bubblewrap), process (plain child process) or auto (bwrap when it works)",
    )
    group.addoption("--call-timeout", type=settings.SECONDS, default=5.0, help="with --isolate: seconds allowed per call")
    group.addoption(
        "--submission-budget", type=settings.SECONDS, default=None,
        help="with --isolate: wall-clock seconds for one submission, import to last call (default 120)",
    )
    group.addoption(
        "--diagnosis-budget", type=settings.SECONDS, default=None,
        help="with --isolate: wall-clock seconds for one submission's diagnosis, within its budget (default 10)",
    )
    group.addoption(
        "--ask-every-time", action="store_true",
        help="run the student's code for every call, even for a request it answered before (checks that reusing answers changes nothing)",
    )
    group.addoption(
        "--results-dir",
        metavar="DIR",
        help="write DIR/results/<submission>.json and DIR/feedback/<submission>.md as each submission is graded",
    )
    group.addoption(
        "--grading-seed",
        type=int,
        default=None,
        help="seed for the data the hidden tests draw (default: a fresh random seed)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "points(n): the points a test is worth")
    _one_report_per_failure(config)
    # Tiny tensors: one thread is fastest, and a pool of busy-waiting threads here would
    # steal the cores the worker needs.
    torch.set_num_threads(1)
    _skip_gc_sweep_at_exit(config)
    _root_the_session_at_the_grader(config)
    if config.getoption("grading_seed") is None:
        config.option.grading_seed = secrets.randbelow(2**31)
    scoreboard = Scoreboard()
    config.stash[scoreboard_key] = scoreboard
    config.pluginmanager.register(scoreboard, "grader-scoreboard")
    config.pluginmanager.register(timeouts, "grader-timeouts")
    config.stash[targets_key] = _targets(config.getoption("submission") or [str(DEFAULT_SUBMISSION)], config)
    _refuse_a_submissions_own_ini(config)
    if config.getoption("manifest"):
        entries = json.loads(Path(config.getoption("manifest")).read_text(encoding="utf-8"))
        config.stash[targets_key] = {
            e["name"]: Target(
                e["name"], Path(e["path"]), e.get("problem", ""), e.get("content_hash", ""), e.get("graded_file", ""),
                cells=tuple(notebooks.CellSpan(**{**cell, "line_offsets": tuple(cell["line_offsets"])}) for cell in e.get("cells", [])),
            )
            for e in entries
        }
    config.stash[worker_key] = None
    config.stash[handles_key] = {}
    config.stash[causes_key] = root_causes.RootCauses(config.getoption("grading_seed"))
    config.stash[folded_key] = []
    config.stash[sandbox_key] = ("in-process", "")
    if config.getoption("isolate"):
        isolated, processes = _sandbox()
        config.stash[sandbox_key] = processes.resolve_sandbox(config.getoption("sandbox"))
        shared = config.pluginmanager.get_plugin(isolated.SHARED_WORKER_PLUGIN)  # a batch shard's
        worker = shared.get(config.stash[sandbox_key][0]) if shared else isolated.Worker(config.stash[sandbox_key][0])
        config.stash[worker_key] = worker
    for target in config.stash[targets_key].values():
        scoreboard.submission_result(target.name).graded_file = target.graded_file
    results_dir = config.getoption("results_dir")
    if results_dir:
        scoreboard.on_submission_done = lambda result: _persist(config, Path(results_dir), result)


def _one_report_per_failure(config: pytest.Config) -> None:
    """Each failure shows its name and its message once; pytest's short summary would list
    every failing test a second time. Left alone when the user asked for a summary (-r)."""
    if getattr(config.option, "reportchars", None) != "fE":  # pytest's default (absent without its terminal)
        return
    config.option.reportchars = "N"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.reportchars = reporter.reportchars.replace("f", "").replace("E", "")


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


def _persist(config: pytest.Config, folder: Path, result) -> None:
    # The submission's last test is done: end its code now, so that what it printed is
    # complete and recorded with this result (the fixture's own teardown comes later, when
    # the next submission's first test starts, after this file is written).
    handle = config.stash[handles_key].get(result.submission)
    if handle is not None:
        _finish(config, handle)
    target = config.stash[targets_key].get(result.submission)
    try:
        results.write_submission_result(
            folder,
            result,
            grading_seed=config.getoption("grading_seed"),
            sandbox=config.stash[sandbox_key],
            scaffolding=results.scaffolding_level(),
            source=_source_or_none(target.path) if target else None,
            content_hash=target.content_hash if target else "",
        )
    except OSError as error:
        # One student's result that cannot be written must not stop the others' grading:
        # say so (a batch shard's log), and the batch reports this student as not graded.
        print(f"grader: the result of {untrusted.printable(result.submission)} could not be written: {error}", file=sys.stderr)


def _source_or_none(path: Path) -> Path | None:
    try:
        return loading.locate_source(path)
    except loading.SubmissionNotFound:
        return None


def pytest_unconfigure(config: pytest.Config) -> None:
    staged_notebooks = config.stash.get(notebooks_key, None)
    if staged_notebooks is not None:
        shutil.rmtree(staged_notebooks, ignore_errors=True)
    worker = config.stash.get(worker_key, None)
    if worker is not None and config.pluginmanager.get_plugin(_sandbox()[0].SHARED_WORKER_PLUGIN) is None:
        worker.close()  # a shard's worker serves its next session too; the shard closes it


def _refuse_a_submissions_own_ini(config: pytest.Config) -> None:
    """pytest may take its configuration (addopts, seeds, ...) from a pytest.ini inside the
    folder of a submission given as `--submission PATH`; never grade under it."""
    ini = config.inipath
    if ini is None:
        return
    for target in config.stash[targets_key].values():
        folder = (target.path if target.path.is_dir() else target.path.parent).resolve()
        if ini.resolve().is_relative_to(folder) and not REPO_ROOT.is_relative_to(folder):
            raise pytest.UsageError(
                f"refusing to grade with {ini}, a configuration file from the submission's own folder; "
                "write --submission=PATH (with '=') or move the submission out of the way"
            )


def _root_the_session_at_the_grader(config: pytest.Config) -> None:
    """pytest reads ``--submission PATH`` before the option exists and takes PATH for a test
    path (see pytest_addoption), so it roots the session at the common ancestor of grader/
    and the submission: ``/`` for a file in /tmp, which the header then shows as
    ``rootdir: /``. With no configuration file found (the repository has none), the root is
    the folder that holds the grader, as when no submission is named. ``_rootpath`` is
    pytest's own attribute behind ``config.rootpath`` (pytest is pinned)."""
    if config.inipath is None and REPO_ROOT.is_relative_to(config.rootpath) and config.rootpath != REPO_ROOT:
        config._rootpath = REPO_ROOT


def _skip_gc_sweep_at_exit(config: pytest.Config) -> None:
    """Garbage collection at exit walks every object torch created: pytest's
    unraisable-exception plugin runs gc.collect() five times, and the interpreter's own
    shutdown once more, together over half a second of every grading run. Nothing here
    relies on finalizers: skip pytest's sweeps (as pytest's own pytester does), and let
    the interpreter's last collection find nothing to walk (gc.freeze moves every object
    out of the collector's sight; the process is ending, garbage left uncollected costs
    nothing)."""
    # At exit, not now: a process that goes on after this session (pytest run again
    # in-process) must keep collecting its garbage.
    atexit.register(gc.freeze)
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:  # another pytest version: keep its behaviour
        return
    config.stash[gc_collect_iterations_key] = 0


def _targets(paths: list[str], config: pytest.Config | None = None) -> dict[str, Target]:
    targets: dict[str, Target] = {}
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        name = path.stem if path.suffix else path.name
        unique, counter = name, 2
        while unique in targets:
            unique, counter = f"{name}-{counter}", counter + 1
        graded = path
        if path.is_dir():
            try:
                graded = loading.choose_work(path)
            except loading.SubmissionNotFound:
                pass  # the submission fixture reports it
        shown = graded.relative_to(path).as_posix() if graded != path else path.name
        targets[unique] = Target(unique, path, graded_file=shown)
        if graded.suffix.lower() == ".ipynb" and graded.is_file() and config is not None:
            targets[unique] = _notebook_target(config, Target(unique, graded, graded_file=shown, given=path))
    return targets


def _notebook_target(config: pytest.Config, target: Target) -> Target:
    """A notebook is graded as the batch grades it: its code cells joined into one file, its
    setup and check cells, magics and shell lines left out (grader/reading/notebooks.py). Messages
    then name its cells (number and first line), not lines of that file."""
    if notebooks_key not in config.stash:
        config.stash[notebooks_key] = Path(tempfile.mkdtemp(prefix="grader-notebooks-"))
    try:
        code, cells = notebooks.notebook_code_with_spans(target.path.read_text(encoding="utf-8-sig"))
    except Exception as error:  # noqa: BLE001 - a broken notebook is the student's 0 with a reason, not a crash
        problem = f"{target.path.name} is not a readable notebook ({type(error).__name__}: {error})."
        return Target(target.name, target.path, problem, graded_file=target.graded_file, given=target.given)
    if not code.strip():
        return Target(target.name, target.path, f"{target.path.name} holds no code.", graded_file=target.graded_file, given=target.given)
    staged = config.stash[notebooks_key] / target.name / loading.MODULE_FILE_NAME
    staged.parent.mkdir(parents=True, exist_ok=True)
    staged.write_text(code, encoding="utf-8")
    return Target(target.name, staged, graded_file=target.graded_file, cells=tuple(cells), given=target.given)



def pytest_report_header(config: pytest.Config) -> list[str]:
    targets = config.stash[targets_key]
    # What the user named (a notebook, or its folder), never the staged copy of a notebook's code.
    shown = ", ".join(str(t.given or t.path) for t in list(targets.values())[:3]) + (" ..." if len(targets) > 3 else "")
    sandbox, fallback = config.stash[sandbox_key]
    lines = [f"grading: {shown}", f"grading seed: {config.getoption('grading_seed')}", f"student code runs: {sandbox}"]
    if len(targets) == 1 and (target := next(iter(targets.values()))).graded_file.endswith(".ipynb"):
        lines.append(f"graded file: {target.graded_file} (the notebook holds the work; see `choose_work` in grader/reading/loading.py)")
    return lines + ([f"note: {fallback}"] if fallback else [])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "submission" in metafunc.fixturenames:
        names = list(metafunc.config.stash[targets_key])
        metafunc.parametrize("submission", names, indirect=True, scope="session", ids=names)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # One submission at a time, its groups in the lesson's order (hidden tests last).
    submissions = list(config.stash[targets_key])
    position = {item: index for index, item in enumerate(items)}

    def order(item: pytest.Item) -> tuple:
        submission = item.callspec.params.get("submission") if hasattr(item, "callspec") else None
        rank = submissions.index(submission) if submission in submissions else -1
        return rank, GROUPS.index(group_of(item)), position[item]

    items.sort(key=order)
    timeouts.apply_default_timeout(config, items)
    for item in items:
        item._traceback_filter = _message_only_failures_skip_the_traceback(item._traceback_filter)


def _message_only_failures_skip_the_traceback(traceback_filter):
    """An item's traceback filter that leaves out the work for a failure shown as its message
    alone (``pytest.fail(..., pytrace=False)``: every StudentCodeError, every comparison of the
    checks). pytest then prints only the exception's text, taken from the traceback's last entry
    whatever the filter keeps (_pytest/_code/code.py, ``repr_traceback`` with style "value"), yet
    it still cut and filtered the whole traceback first (``Function._traceback_filter``, a path
    and a source lookup per frame): 1.6 ms a failure under cProfile, 0.85 s of a 40-student shard."""
    def keep_what_is_shown(excinfo):
        if isinstance(excinfo.value, pytest.fail.Exception) and not excinfo.value.pytrace:
            return excinfo.traceback[-1:]
        return traceback_filter(excinfo)
    return keep_what_is_shown


@pytest.fixture(scope="session")
def submission(request: pytest.FixtureRequest):
    """The submission under test, behind the plain-data interface of grader.submission."""
    target: Target = request.config.stash[targets_key][request.param]
    if target.problem:
        _not_gradable(request.config, target.name, ErrorDescription("import", "Unreadable", target.problem))
    try:
        source = loading.locate_source(target.path)
    except loading.SubmissionNotFound as error:
        _not_gradable(request.config, target.name, ErrorDescription("import", "SubmissionNotFound", str(error)))
    worker = request.config.stash[worker_key]
    # A notebook runs cell by cell, as a kernel runs it (grader.reading.loading.run_cells).
    cells = notebooks.cells_to_run(list(target.cells)) if target.cells else None
    if worker is None:
        backend, worker_unavailable = InProcessBackend(source, cells), ()
    else:
        isolated = _sandbox()[0]
        budgets = {
            keyword: seconds for keyword, option in (("budget_seconds", "submission_budget"), ("diagnosis_seconds", "diagnosis_budget"))
            if (seconds := request.config.getoption(option)) is not None
        }
        backend = isolated.IsolatedBackend(source, worker, call_timeout=request.config.getoption("call_timeout"), cells=cells, **budgets)
        worker_unavailable = isolated.WorkerUnavailable
    handle = Submission(target.name, source, backend, reuse_answers=not request.config.getoption("ask_every_time"))
    request.config.stash[handles_key][target.name] = handle
    request.addfinalizer(lambda: _finish(request.config, handle))
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


def _in_notebook_terms(target: Target, handle, error: ErrorDescription, message: str) -> str:
    """A message about a notebook, in its cells' terms: its lines named as cells, and a name
    the notebook does not define because the cell that defines it raised said to be so (not
    "renamed or deleted")."""
    if error.type_name == "NotDefined" and isinstance(handle, Submission):
        failed = {line for line, _ in getattr(handle.backend, "cell_failures", [])}
        try:
            code = target.path.read_text(encoding="utf-8")
        except OSError:
            code = ""
        message = notebooks.why_not_defined(error.function, code, list(target.cells), failed) or message
    return notebooks.in_cell_terms(message, list(target.cells))


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


def _finish(config: pytest.Config, handle: Submission) -> None:
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
        }


def _not_gradable(config: pytest.Config, name: str, error: ErrorDescription) -> None:
    """Show the reason once, in the summary; each test then fails with one short line."""
    target = config.stash[targets_key].get(name)
    reason = error.for_student()
    if target is not None and target.cells:
        reason = notebooks.in_cell_terms(reason, list(target.cells))
    config.stash[scoreboard_key].record_import_error(name, reason)
    pytest.fail(f"not graded: {name} could not be imported (the reason is shown once, below the tests)", pytrace=False)


@pytest.fixture(scope="session")
def grading_seed(request: pytest.FixtureRequest) -> int:
    return request.config.getoption("grading_seed")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Record which calls into the submission this check makes (a root cause explains the
    checks that made the calls it spoils)."""
    handle = item.funcargs.get("submission")
    if isinstance(handle, Submission):
        handle.operations_called.clear()
        handle.current_check = check_label(item, handle.name)  # the evidence, should an answer it reuses have changed
    return (yield)


def check_label(item: pytest.Item, submission: str) -> str:
    """The check's name without the submission's id (the student's text): ``test_x[b1-s4-d8-h2]``."""
    name = getattr(item, "originalname", item.name)
    given = item.callspec.id if hasattr(item, "callspec") else ""
    if given.startswith(f"{submission}-"):  # the submission's id first (pytest_generate_tests), then the check's own
        return f"{name}[{given.removeprefix(f'{submission}-')}]"
    return name


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Show a student's exception as one readable paragraph, not a grader traceback; a failure
    a root cause explains, as its first line under that cause (grader/feedback/root_causes.py)."""
    report = yield
    if call.excinfo is not None and isinstance(call.excinfo.value, checks.AttentionMismatch):
        # The matrices, as plain data, travel with the report to the test's result (and
        # across pytest-xdist's workers): grader/feedback/attention_comparison.py.
        report.user_properties.append((ATTENTION_PROPERTY, call.excinfo.value.picture))
    if call.excinfo is not None and isinstance(call.excinfo.value, StudentCodeError):
        report.longrepr = student_error_message(call.excinfo.value)
        submission = item.callspec.params.get("submission") if hasattr(item, "callspec") else None
        target = item.config.stash[targets_key].get(submission)
        if target is not None and target.cells:
            report.longrepr = _in_notebook_terms(target, item.funcargs.get("submission"), call.excinfo.value.error, report.longrepr)
    handle = item.funcargs.get("submission") if hasattr(item, "funcargs") else None
    if call.when in ("call", "teardown") and isinstance(handle, Submission) and handle.changed_answer is not None:
        # Its answers change from call to call: said once, with the question asked twice.
        item.config.stash[causes_key].answers_changed(item.config.stash[scoreboard_key].submission_result(handle.name), handle)
    if report.failed and call.when == "call" and call.excinfo is not None and isinstance(handle, Submission):
        result = item.config.stash[scoreboard_key].submission_result(handle.name)
        explained = item.config.stash[causes_key].account(
            result, handle, item.name, call.excinfo.value, set(handle.operations_called)
        )
        if explained:  # the results keep the whole message; the terminal shows its first line
            item.config.stash[folded_key].append(report)
        elif first := item.config.stash[causes_key].repeated_error(handle.name, item.name, call.excinfo.value):
            # The same error at the same line as an earlier check: said in full once, there.
            described = call.excinfo.value.error
            where = described.location.split(" in ", 1)[0].split(": ", 1)[0]  # "file.py:57"
            said = described.message.splitlines()[0] if described.message else ""
            said = said if len(said) <= 100 else said[:97] + "..."
            report.longrepr = f"your code raised {described.type_name}: {said} again at {where}, as in {first} (its whole message is there)"
            target = item.config.stash[targets_key].get(handle.name)
            if target is not None and target.cells:
                report.longrepr = notebooks.in_cell_terms(report.longrepr, list(target.cells))
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """The diagnosis (root causes, and the known mistakes where grader/hidden/ runs) before
    pytest's own FAILURES section (tryfirst among wrappers)."""
    # Folded only if a cause still explains it: the diagnosis takes from a layout slip the checks
    # a mistake elsewhere would fail with the layout fixed (grader/hidden/plugin.py).
    still = {name for r in terminalreporter.config.stash[scoreboard_key].results.values() for name in diagnosis_text.explained_checks(r.diagnoses)}
    for report in terminalreporter.config.stash[folded_key]:
        if report.nodeid.rsplit("::", 1)[-1] in still and not report.longreprtext.endswith(root_causes.EXPLAINED):
            report.longrepr = diagnosis_text.compact_message(report.longreprtext) + root_causes.EXPLAINED
    for result in terminalreporter.config.stash[scoreboard_key].results.values():
        if result.notebook:
            terminalreporter.section(f"how the notebook ran: {untrusted.printable(result.submission)}", sep="=")
            for line in result.notebook:
                terminalreporter.write_line(untrusted.printable(line))
        if result.diagnoses:
            terminalreporter.section(f"diagnosis: {untrusted.printable(result.submission)}", sep="=")
            for line in diagnosis_text.text_lines(result.diagnoses):
                terminalreporter.write_line(untrusted.printable(line))
    return (yield)


def student_error_message(error: StudentCodeError) -> str:
    described = error.error
    if described.kind == "not_written":
        function = described.function
        if function and function not in described.message:  # a stub of its own words (nbgrader's)
            return f"{function} is not written yet: this test needs it (it still raises NotImplementedError)."
        return f"{described.message}: this test needs it (it still raises NotImplementedError)."
    if described.kind in ("contract", "timeout", "crashed"):
        return described.message
    return (
        f"your code raised {described.type_name}: {described.message}"
        + (f"\n  at {described.location}" if described.location else "")
    )


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
