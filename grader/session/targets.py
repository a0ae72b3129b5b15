"""Which files a session grades, and the grader's options.

``pytest grader`` grades exercises/; ``pytest grader --submission PATH`` grades a .py
file of any name, a Jupyter notebook (its code cells, as the batch reads them) or a folder
holding multi_head_attention.py or multi_head_attention.ipynb (with both, the one that holds
the work: see ``grader.reading.loading.choose_work``). ``--submission`` may be
repeated: the tests then run once per submission, each against a fresh handle. The batch
names its entries in a ``--manifest`` instead.
"""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader import settings, timeouts
from grader.reading import loading, notebooks
from grader.scoring import EXERCISE, GROUPS
from grader.session import choice
from grader.session.scoreboard import group_of

GRADER_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = GRADER_DIR.parent
DEFAULT_SUBMISSION = choice.DEFAULT_SUBMISSION  # exercises/: the choice reads it before this module is imported

targets_key = pytest.StashKey[dict]()
notebooks_key = pytest.StashKey[Path]()  # where --submission notebooks become .py files


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
    group = parser.getgroup("grader", "the grader")  # made by grader/session/choice.py, registered first
    group.addoption(
        "--submission",
        action="append",
        default=[],
        metavar="PATH",
        help=f"a .py file, a notebook or a folder holding {loading.MODULE_FILE_NAME} (repeatable); default: exercises/",
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


@pytest.hookimpl(tryfirst=True)  # before the other plugins' configure, which read the targets and the seed
def pytest_configure(config: pytest.Config) -> None:
    _root_the_session_at_the_grader(config)
    if config.getoption("grading_seed") is None:
        config.option.grading_seed = secrets.randbelow(2**31)
    manifest = config.getoption("manifest")
    # The batch's entries, or what the user named: never both read (a shard's every session would read exercises/ too).
    config.stash[targets_key] = (
        _manifest_targets(Path(manifest)) if manifest else _targets(config.getoption("submission") or [str(DEFAULT_SUBMISSION)], config)
    )
    _refuse_a_submissions_own_ini(config)


def _manifest_targets(manifest: Path) -> dict[str, Target]:
    """The batch's entries, as its intake staged and named them (grader/batch/shard.py writes the file)."""
    return {
        e["name"]: Target(
            e["name"], Path(e["path"]), e.get("problem", ""), e.get("content_hash", ""), e.get("graded_file", ""),
            cells=tuple(notebooks.CellSpan(**{**cell, "line_offsets": tuple(cell["line_offsets"])}) for cell in e.get("cells", [])),
        )
        for e in json.loads(manifest.read_text(encoding="utf-8"))
    }


def pytest_unconfigure(config: pytest.Config) -> None:
    staged_notebooks = config.stash.get(notebooks_key, None)
    if staged_notebooks is not None:
        shutil.rmtree(staged_notebooks, ignore_errors=True)


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


def in_its_terms(config: pytest.Config, name: str, message: str) -> str:
    """A message about the submission ``name``, in its cells' terms when it is a notebook."""
    target = config.stash[targets_key].get(name)
    return notebooks.in_cell_terms(message, list(target.cells)) if target is not None and target.cells else message


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A session grades one exercise (grader/scoring.py's ``EXERCISE``, the one this process was
    chosen to grade): the checks of every other exercise's package are not collected."""
    exercises = GRADER_DIR / "exercises"
    if collection_path.parent == exercises and collection_path.is_dir() and collection_path.name != EXERCISE.name:
        return True
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "submission" in metafunc.fixturenames:
        names = list(metafunc.config.stash[targets_key])
        metafunc.parametrize("submission", names, indirect=True, scope="session", ids=names)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # One submission at a time, its groups in the lesson's order (hidden tests last), each
    # group's checks in the order collected (pytest's own reordering is skipped: overheads.py).
    rank = {name: index for index, name in enumerate(config.stash[targets_key])}
    position = {item: index for index, item in enumerate(items)}

    def order(item: pytest.Item) -> tuple:
        submission = item.callspec.params.get("submission") if hasattr(item, "callspec") else None
        return rank.get(submission, -1), GROUPS.index(group_of(item)), position[item]

    items.sort(key=order)
    timeouts.apply_default_timeout(config, items)
