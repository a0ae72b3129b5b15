"""Classroom 50 (grader/platforms/classroom50.py): what the command writes, and its autograder run as the runner runs it.

Each run does what Classroom 50's runner does for one submission (foundation50/classroom50,
cli/gh-teacher/skeleton/dotgithub/scripts/runner.py at 0c499034f24703425496698992fedc41fbc1162f):
the assignment's folder is tarred as publish-pages.yaml tars it (``tar -czf <slug>.tar.gz -C
<classroom>/autograders <slug>``), fetched within the runner's 10 MB and extracted with
``filter="data"`` under RUNNER_TEMP/classroom50-runtime (``extract_tarball``); autograder.py
then runs with this virtualenv's python as ``[python, autograder.py]``, the student's checkout
(the template with the student's file) as its working directory, and the environment
``run_entrypoint`` sets: CLASSROOM, ASSIGNMENT, SUBMISSION_TAG, USERNAME, OWNER,
ASSIGNMENT_TYPE, COMMIT_URL, RELEASE_URL, REVIEW_URL, CLASSROOM50_BUNDLE_DIR, GITHUB_*.
``MHA_GRADER_PYTHON`` names this virtualenv, as ``PYTHON`` does for the Gradescope and
PrairieLearn tests, so nothing is installed. result.json is validated against a copy of
Classroom 50's schema (tests/classroom50/result-v1.schema.json: schemas/result-v1.schema.json at
6e593c79b87c99f94fec2ae0badadba761360516) and the cross-field rules its runner checks in code
(runner.py ``validate_result``). What only GitHub can show (a hosted runner, its sudo, the
Pages fetch, the Release) is not rehearsed here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest

import catalogue
import autograder_harness as harness
from autograder_harness import HONEST_TWIN, MARKER, MUTANT, RUN_TIMEOUT, SECOND, SECOND_SOLUTION, SECOND_STUB, SOLUTION, STUB, TOO_DEEP
from classroom50.actions_runner import REGISTERED, commands_run, lines, parse
from grader.platforms import classroom50
from grader.handout import release
from grader.seam import registry
from grader.exercises.multi_head_attention.hidden import mistakes
from grading import REPO_ROOT
import tiers
import wheels

SCHEMA = json.loads((Path(__file__).parent / "classroom50" / "result-v1.schema.json").read_text())
SLUG = "multi-head-attention"
FIRST_TITLE = registry.exercise(registry.course_order()[0]).title  # what result bodies and summaries are headed by
CLASSROOM = "dl-2026"
OWNER = "alice"
MAX_FETCH_BYTES = 10 * 1024 * 1024  # runner.py's MAX_FETCH_BYTES
MISSING_SCALE = next(m for m in catalogue.MUTANTS if m.name == "missing_scale")
EXERCISE_HIDDEN = Path("grader", "exercises", "multi_head_attention", "hidden")  # the exercise's hidden checks
HIDDEN_TEST_SOURCE = REPO_ROOT / EXERCISE_HIDDEN / "test_reference.py"

# Classroom 50's runtime validator (cli/gh-teacher/internal/assignment/runtime.go at
# 0f5a38fddc1b5dda3277a8b8d88a432d05028da1, mirrored in autograde-runner.yaml's setup step).
RUNTIME_KEYS = {"runs-on", "container", "python", "node", "java", "go", "rust", "apt"}
LANGUAGE_VERSION = re.compile(r"^[A-Za-z0-9._+-]{1,32}$")
APT_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}$")

# Appended to the solution after tests/attacks/forge_results.py: at import and in every forward,
# write a result.json claiming full marks and a release body into the checkout, into every
# visible process's working folder, and into the bundle; read the bundle's solution and hidden
# tests; print a workflow command. Each success prints a "BREACH" line.
CLASSROOM50_FORGER = r'''

# ---- appended by a test: forge Classroom 50's result ----
import os as _os50
from pathlib import Path as _Path50

_CHECKOUT = _Path50("@CHECKOUT@")
_BUNDLE = _Path50("@BUNDLE@")
_FORGED50 = @FORGED@
_HIDDEN50 = ("solutions/multi_head_attention.py", "grader/exercises/multi_head_attention/hidden/test_reference.py", "classroom50.json")


def _forge50():
    own = _Path50.cwd()
    folders = {_CHECKOUT, _BUNDLE}
    try:
        entries = list(_Path50("/proc").iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if entry.name.isdigit():
            try:
                folders.add(_Path50(_os50.readlink(entry / "cwd")))
            except OSError:
                pass
    for folder in folders - {own, _Path50("/"), _Path50("/tmp")}:
        for name, text in (("result.json", _FORGED50), ("release-body.md", "### @MARKER@ 100/100\n")):
            try:
                (folder / name).write_text(text)
            except OSError:
                continue
            print(f"BREACH results: wrote {folder / name}")
    for name in _HIDDEN50:
        try:
            (_BUNDLE / name).read_text()
        except OSError:
            continue
        print(f"BREACH secrets: read {name}")


_forged_forward = AttentionHead.forward


def _forging50_forward(self, inputs, allowed_mask):
    _forge50()
    return _forged_forward(self, inputs, allowed_mask)


AttentionHead.forward = _forging50_forward
print("::error::@MARKER@ a workflow command from student code")
_forge50()
'''


def forged_result() -> str:
    return json.dumps({
        "schema": "classroom50/result/v1", "classroom": CLASSROOM, "assignment": SLUG, "assignment_type": "individual",
        "owner": OWNER, "submission": "submit/forged", "commit": "x", "release": "x", "review": "x",
        "datetime": "2026-01-01T00:00:00Z", "score": 100, "max-score": 100,
        "tests": [{"test-name": MARKER, "passed": True, "score": 100, "max-score": 100}],
    })


def forger(bundle: Path, checkout_placeholder: str = "@CHECKOUT@") -> str:
    attack = (REPO_ROOT / "tests" / "attacks" / "forge_results.py").read_text()
    attack = attack.replace("@REPO_ROOT@", str(bundle)).replace("@MARKER@", MARKER)
    extra = (
        CLASSROOM50_FORGER.replace("@BUNDLE@", str(bundle)).replace("@FORGED@", repr(forged_result()))
        .replace("@MARKER@", MARKER).replace("@CHECKOUT@", checkout_placeholder)
    )
    return SOLUTION.read_text() + "\n\n" + attack + extra


# --- building ----------------------------------------------------------------------------------


def command(out: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", "classroom50", str(out), *arguments],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )


def build(out: Path, *arguments: str) -> Path:
    completed = command(out, *arguments)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return out


def publish_and_fetch(out: Path, runner_temp: Path, slug: str = SLUG) -> tuple[Path, int]:
    """The bundle as the runner gets it: tarred as publish-pages.yaml does, extracted as runner.py does."""
    archive = runner_temp / f"{slug}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(out / "autograders" / slug, arcname=slug)
    runtime = runner_temp / "classroom50-runtime"
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(path=runtime, filter="data")
    return runtime / slug, archive.stat().st_size


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("classroom50") / "out")


# The second exercise's assignment, by the slug the command gives it when told only the exercise.
SECOND_SLUG = SECOND.name.replace("_", "-")


@pytest.fixture(scope="module")
@tiers.slow_tier("platform")  # a second hand-out built: the second exercise's tests stay out of the fast tier
def second_config(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("classroom50-second") / "out", "--exercise", SECOND.name)


@pytest.fixture(scope="module")
def config_with_hidden_checks(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("classroom50-checks") / "out", "--hidden", "checks")


# --- running as the runner runs it ---------------------------------------------------------------


@dataclass
class Run:
    returncode: int
    stdout: str  # the Actions log: what autograder.py printed, each stream as the runner reads it
    stderr: str
    result: dict | None
    body: str | None
    outputs: str  # what it appended to $GITHUB_OUTPUT
    checkout: Path
    files_before: set[str]
    bundle: Path
    tool_cache: Path

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


# Every checkout and runner folder made here, removed when the module's tests are done
# (they live in the machine's /tmp, as a runner's do: the suite must not leave them behind).
_TEMPORARY_FOLDERS: list[Path] = []


@pytest.fixture(autouse=True, scope="module")
def _remove_temporary_folders():
    yield
    while _TEMPORARY_FOLDERS:
        shutil.rmtree(_TEMPORARY_FOLDERS.pop(), ignore_errors=True)


def checkout_of(config: Path, exercise: str | None, file_name: str = "multi_head_attention.py") -> Path:
    """A student's checkout: the template, with ``exercise`` as exercises/``file_name``
    (and without it, nor the notebook, when None)."""
    checkout = Path(tempfile.mkdtemp(prefix="mha-classroom50-checkout-"))
    _TEMPORARY_FOLDERS.append(checkout)
    checkout.chmod(0o755)
    shutil.copytree(config / "template", checkout, dirs_exist_ok=True)
    target = checkout / "exercises" / file_name
    assert target.is_file(), f"the template holds no exercises/{file_name}"
    if exercise is None:
        target.unlink()
        (checkout / "exercises" / Path(file_name).with_suffix(".ipynb")).unlink()
    else:
        target.write_text(exercise.replace("@CHECKOUT@", str(checkout)))
    for path in [checkout, *checkout.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return checkout


def files_of(folder: Path) -> set[str]:
    return {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file() or path.is_symlink()}


def run_autograder(
    config: Path, exercise: str | None, *, prepare=None, drop: tuple[str, ...] = (), slug: str = SLUG,
    file_name: str = "multi_head_attention.py", **variables: str,
) -> Run:
    runner_temp = Path(tempfile.mkdtemp(prefix="mha-classroom50-runner-"))
    _TEMPORARY_FOLDERS.append(runner_temp)
    runner_temp.chmod(0o755)
    # A temporary folder of the run's own, as each job's runner has: the batch removes
    # folders of runs it believes ended, and a run in another pid namespace on this shared
    # machine cannot see that the ones here are alive.
    private_tmp = runner_temp / "tmp"
    private_tmp.mkdir()
    private_tmp.chmod(0o1777)
    tool_cache = runner_temp / "hostedtoolcache"  # $RUNNER_TOOL_CACHE: the hosted runner's /opt/hostedtoolcache
    tool_cache.mkdir(mode=0o755)
    bundle, _ = publish_and_fetch(config, runner_temp, slug)
    checkout = checkout_of(config, exercise.replace("@BUNDLE@", str(bundle)) if exercise else exercise, file_name)
    if prepare:
        prepare(checkout, bundle, tool_cache)
    files_before = files_of(checkout)
    github_output = runner_temp / "github_output"
    github_output.touch()
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "GRADER_SANDBOX", "PYTHONPATH")}
    environment.update({
        "MHA_GRADER_PYTHON": sys.executable,
        # Side by side with the rest of the suite on a loaded machine: no call into the
        # solution may reach its time limit (no run here tests time limits).
        "GRADER_CALL_TIMEOUT": "30",
        "CLASSROOM": CLASSROOM, "ASSIGNMENT": slug, "SUBMISSION_TAG": "submit/2026-12-01T10-00-00Z-abc1234",
        "USERNAME": OWNER, "OWNER": OWNER, "ASSIGNMENT_TYPE": "individual",
        "COMMIT_URL": f"https://github.com/org/{CLASSROOM}-{slug}-{OWNER}/commit/abc1234",
        "RELEASE_URL": f"https://github.com/org/{CLASSROOM}-{slug}-{OWNER}/releases/tag/submit%2F2026",
        "REVIEW_URL": f"https://github.com/org/{CLASSROOM}-{slug}-{OWNER}/compare/000...abc1234",
        "PAGES_BASE_URL": "https://org.github.io/classroom50", "CLASSROOM50_BUNDLE_DIR": str(bundle),
        "GITHUB_REPOSITORY": f"org/{CLASSROOM}-{slug}-{OWNER}", "GITHUB_SHA": "abc1234", "GITHUB_ACTOR": OWNER,
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_OUTPUT": str(github_output), "RUNNER_TEMP": str(runner_temp),
        "RUNNER_TOOL_CACHE": str(tool_cache), "TMPDIR": str(private_tmp),
        # The machine may be offline: torch_index.py's probe of PyTorch's index gives up at once.
        "TORCH_INDEX_TIMEOUT": "0.5",
    })
    environment.update(variables)
    for name in drop:
        environment.pop(name, None)
    completed = subprocess.run(
        [sys.executable, str(bundle / "autograder.py")], cwd=checkout, env=environment, capture_output=True,
        text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL,
    )
    result_path, body_path = checkout / "result.json", checkout / "release-body.md"
    result = json.loads(result_path.read_text()) if result_path.is_file() and not result_path.is_symlink() else None
    body = body_path.read_text() if body_path.is_file() and not body_path.is_symlink() else None
    return Run(
        completed.returncode, completed.stdout, completed.stderr, result, body, github_output.read_text(),
        checkout, files_before, bundle, tool_cache,
    )


def plant_links(checkout: Path, *_) -> None:
    """What a student can commit: result.json as a link to a file outside the checkout, a stale body."""
    (checkout / "outside.txt").write_text("untouched\n")
    (checkout / "result.json").symlink_to(checkout / "outside.txt")
    (checkout / "release-body.md").write_text("### stale 100/100\n")


# --- what a student's repository can hold -------------------------------------------------------
#
# The checkout is the working directory of autograder.py, and the student's to fill. Each case
# below was found to run (or break) the grading before every interpreter was isolated from it:
# `python -m venv` and `python -m pip`, run from the checkout, put it first on sys.path.

# A venv.py that makes the virtualenv it was asked for, then plants a sitecustomize.py in it:
# every interpreter of that virtualenv (the grading, as root) then copies the bundle's solution
# over the exercise before anything is graded.
VENV_FORGERY = r"""
import glob, os, sys
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _here]
import venv as _venv  # the standard library's, now that this folder is off sys.path
_venv.main(sys.argv[1:])
print("BREACH venv: the checkout's venv.py ran")
for _site in glob.glob(os.path.join(sys.argv[-1], "lib", "python*", "site-packages")):
    with open(os.path.join(_site, "sitecustomize.py"), "w") as _file:
        _file.write(
            "import shutil, sys\n"
            "try:\n"
            "    shutil.copyfile(@SOLUTION@, @EXERCISE@)\n"
            "    print('BREACH venv: its sitecustomize.py copied the solution over the exercise', file=sys.stderr)\n"
            "except OSError:\n"
            "    pass\n"
        )
"""
BREACH_PRINTER = 'print("BREACH checkout: {name} of the student\'s repository ran")\n'


def plant_venv_forgery(checkout: Path, bundle: Path, _) -> None:
    (checkout / "venv.py").write_text(
        VENV_FORGERY.replace("@SOLUTION@", repr(str(bundle / "solutions" / "multi_head_attention.py")))
        .replace("@EXERCISE@", repr(str(checkout / "exercises" / "multi_head_attention.py")))
    )


def plant_logging_module(checkout: Path, *_) -> None:
    """A student's own helper module that happens to have a standard library's name."""
    (checkout / "logging.py").write_text('"""My logging helpers."""\n\n\ndef log(message):\n    print(message)\n')


def plant_pip_folder(checkout: Path, *_) -> None:
    (checkout / "pip").mkdir()
    (checkout / "pip" / "__init__.py").write_text("")
    (checkout / "pip" / "__main__.py").write_text(BREACH_PRINTER.format(name="pip/"))


def plant_standard_library_names(checkout: Path, *_) -> None:
    for name in ("sitecustomize.py", "usercustomize.py", "subprocess.py", "shutil.py", "json.py", "tempfile.py", "site.py"):
        (checkout / name).write_text(BREACH_PRINTER.format(name=name))
    (checkout / "encodings").mkdir()
    (checkout / "encodings" / "__init__.py").write_text(BREACH_PRINTER.format(name="encodings/") + "raise SystemExit(1)\n")


def plant_poisoned_cache(checkout: Path, bundle: Path, tool_cache: Path) -> None:
    """A virtualenv where autograder.py once looked for its cached one: $RUNNER_TOOL_CACHE/
    mha-grader/venv-<sha256 of requirements.txt, 16 digits>-py<version>, with its `.installed`
    marker, the actions/cache key of the README's cache step. The key and path are computable
    from the public bundle, so a workflow in the student's repository could save this cache
    first. Its python copies the solution over the exercise, then runs the real one."""
    requirements = (bundle / "requirements.txt").read_bytes()
    name = f"venv-{hashlib.sha256(requirements).hexdigest()[:16]}-py{sys.version_info[0]}.{sys.version_info[1]}"
    venv = tool_cache / "mha-grader" / name
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(
        "#!/bin/sh\n"
        f"cp '{bundle}/solutions/multi_head_attention.py' '{checkout}/exercises/multi_head_attention.py' 2>/dev/null"
        " && echo 'BREACH cache: the cached python copied the solution over the exercise'\n"
        f'exec "{sys.executable}" "$@"\n'
    )
    python.chmod(0o755)
    (venv / ".installed").write_text("installed\n")


def plant_odd_entries(checkout: Path, *_) -> None:
    """Where the runner expects files: release-body.md committed as a folder, result.json a fifo."""
    (checkout / "release-body.md").mkdir()
    (checkout / "release-body.md" / "notes.txt").write_text("my notes\n")
    os.mkfifo(checkout / "result.json")


def site_wheel(folder: Path) -> Path:
    """A wheel holding one .pth that puts this virtualenv's site-packages on the path, the
    stand-in for torch and the rest in a grading virtualenv made offline: pip installs it from
    the file, without an index."""
    import site

    pth = "".join(f"{path}\n" for path in site.getsitepackages()).encode()
    return wheels.pure_python_wheel(folder, "mha_test_site", {"mha_test_site.pth": pth})


@pytest.fixture(scope="module")
def offline_config(tmp_path_factory) -> Path:
    """The command's output, but the bundle's requirements.txt installs site_wheel(): a grading
    run then makes its virtualenv as on the runner, offline. That virtualenv reaches torch
    through a .pth, which neither bubblewrap's mounts nor Landlock's rules let a student's child
    read, so its runs use the plain-process sandbox (whose worker imports torch before it forks)."""
    folder = tmp_path_factory.mktemp("classroom50-offline")
    out = build(folder / "out")
    wheel = site_wheel(folder)
    wheel.chmod(0o644)
    (out / "autograders" / SLUG / "requirements.txt").write_text(f"{wheel}\n")
    return out


# Student code whose printed output, exception messages and errors hold workflow commands, each
# the way the runner still finds one: at column 0, after white space, after a carriage return,
# as ##[ anywhere in a line; on stdout and on stderr.
WORKFLOW_COMMANDS = (
    "::add-mask::@MARKER@", "::stop-commands::@MARKER@stop", "::notice::@MARKER@ notice", "::error::@MARKER@ error",
    "##[error]@MARKER@ legacy error", "   ::warning::@MARKER@ indented", "\t::set-output name=status::success",
    "text before ##[group]@MARKER@ mid-line", "x\r::error::@MARKER@ after a carriage return", "::@MARKER@stop::",
)
COMMANDER = r"""

# ---- appended by a test: workflow commands in everything the student controls ----
import sys as _sys

_COMMANDS = @COMMANDS@
for _command in _COMMANDS:
    print(_command)
    print(_command, file=_sys.stderr)


def _commanding_forward(self, inputs, allowed_mask):
    raise ValueError("\n".join(_COMMANDS))


AttentionHead.forward = _commanding_forward
""".replace("@COMMANDS@", repr(tuple(command.replace("@MARKER@", MARKER) for command in WORKFLOW_COMMANDS)))
RAISE_COMMANDS_AT_IMPORT = f"\n\nraise RuntimeError({chr(10).join(c.replace('@MARKER@', MARKER) for c in WORKFLOW_COMMANDS)!r})\n"


def plant_command_file_names(checkout: Path, *_) -> None:
    """No exercise, two .py files named with commands: the sentence that says so lists them."""
    (checkout / "exercises" / f"::error::{MARKER} file.py").write_text("x = 1\n")
    (checkout / "exercises" / f"##[error]{MARKER}\r::add-mask::{MARKER}.py").write_text("x = 2\n")


@pytest.fixture(scope="module")
@tiers.slow_tier("platform")  # some twenty runs of autograder.py as the runner runs it
def runs(config, config_with_hidden_checks, offline_config, second_config) -> dict[str, Run]:
    installs = {"drop": ("MHA_GRADER_PYTHON",), "GRADER_SANDBOX": "process"}
    plans = {
        # The reference, in a virtualenv made for the run, over planted files.
        "reference": (offline_config, SOLUTION.read_text(), {"prepare": plant_links, **installs}),
        "stub": (config, STUB.read_text(), {}),
        "missing_scale": (config, catalogue.implementation_source(MISSING_SCALE), {}),
        "missing_scale_checks": (config_with_hidden_checks, catalogue.implementation_source(MISSING_SCALE), {}),
        "forger": (config, forger(Path("@BUNDLE@")), {}),
        "forger_process": (config, forger(Path("@BUNDLE@")), {"GRADER_SANDBOX": "process"}),
        "twin": (config, SOLUTION.read_text() + HONEST_TWIN, {}),
        "missing": (config, None, {}),
        "outside_the_runner": (config, SOLUTION.read_text(), {"drop": ("CLASSROOM", "SUBMISSION_TAG")}),
        "grader_failure": (config, SOLUTION.read_text(), {"GRADER_SANDBOX": "no-such-sandbox"}),
        # What a student's repository can hold.
        "venv_forgery": (offline_config, STUB.read_text(), {"prepare": plant_venv_forgery, **installs}),
        "logging_module": (offline_config, SOLUTION.read_text(), {"prepare": plant_logging_module, **installs}),
        "pip_folder": (offline_config, SOLUTION.read_text(), {"prepare": plant_pip_folder, **installs}),
        "standard_library_names": (offline_config, STUB.read_text(), {"prepare": plant_standard_library_names, **installs}),
        "poisoned_cache": (offline_config, STUB.read_text(), {"prepare": plant_poisoned_cache, **installs}),
        "odd_entries": (config, STUB.read_text(), {"prepare": plant_odd_entries}),
        "commands": (config, STUB.read_text() + COMMANDER, {}),
        "commands_at_import": (config, STUB.read_text() + RAISE_COMMANDS_AT_IMPORT, {}),
        "command_file_names": (config, None, {"prepare": plant_command_file_names}),
        "too_deep": (config, SOLUTION.read_text() + TOO_DEEP, {}),
        # The second exercise's reference and stub, in its own assignment, graded beside the first's.
        **{
            name: (second_config, source.read_text(), {"slug": SECOND_SLUG, "file_name": SECOND.student_file})
            for name, source in (("second_reference", SECOND_SOLUTION), ("second_stub", SECOND_STUB))
        },
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run_autograder, plan[0], plan[1], **plan[2]) for name, plan in plans.items()}
        return {name: future.result() for name, future in futures.items()}


def valid(run: Run, slug: str = SLUG) -> dict:
    """result.json, valid for Classroom 50: its schema, and the rules its runner checks in code."""
    assert run.returncode == 0, run.output
    assert run.result is not None, run.output
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(run.result)
    assert (run.result["classroom"], run.result["assignment"], run.result["owner"]) == (CLASSROOM, slug, OWNER)
    assert run.result["score"] <= run.result["max-score"]
    assert all(test["score"] <= test["max-score"] for test in run.result["tests"])
    assert run.result["score"] == sum(test["score"] for test in run.result["tests"])
    return run.result


def output_value(run: Run, key: str) -> str:
    values = [line.split("=", 1)[1] for line in run.outputs.splitlines() if line.startswith(f"{key}=")]
    assert len(values) == 1, run.outputs
    return values[0]


def group_points(result: dict, group: str) -> tuple[int, int]:
    tests = [test for test in result["tests"] if test["group"] == group]
    return sum(t["score"] for t in tests), sum(t["max-score"] for t in tests)


# --- what the command writes ----------------------------------------------------------------------


def test_the_bundle_is_what_the_runner_fetches_and_holds_the_grader_beside_its_entrypoint(config, tmp_path):
    bundle, size = publish_and_fetch(config, tmp_path)
    assert size < MAX_FETCH_BYTES
    assert (bundle / "autograder.py").read_text() == (REPO_ROOT / "grader" / "platforms" / "classroom50_autograder.py").read_text()
    for needed in ("grader/exercises/multi_head_attention/hidden/test_reference.py", "solutions/multi_head_attention.py", "requirements.txt", "classroom50.json"):
        assert (bundle / needed).is_file(), needed
    assert not (bundle / "tests").exists() and not (bundle / "exercises").exists()


def test_each_exercise_is_an_assignment_of_its_own_whose_bundle_grades_it(config, second_config):
    """Told only the exercise, the command names the assignment after it: the second exercise's
    bundle does not take the first's folder (its slug) in the config repository."""
    first, second = (json.loads((c / "autograders" / slug / "classroom50.json").read_text())["exercise"]
                     for c, slug in ((config, SLUG), (second_config, SECOND_SLUG)))
    assert (first, second) == (registry.exercise().name, SECOND.name)
    assert (second_config / "template" / "exercises" / SECOND.student_file).is_file()
    assert f"gh teacher assignment add ORG CLASSROOM {SECOND_SLUG}" in (second_config / "README.md").read_text()


def test_the_template_holds_no_solution_no_hidden_test_and_no_autograde_workflow(config):
    template = config / "template"
    assert release.leaked_solution_lines(template) == []
    assert not (template / "grader" / "hidden").exists() and not (template / EXERCISE_HIDDEN).exists()
    assert not (template / "solutions").exists()
    # The accept-time shim lives there; a copy in the template would be clobbered (Assignment Templates).
    assert not (template / ".github" / "workflows" / "autograde.yaml").exists()
    assert "Classroom 50" in (template / "README.md").read_text()


def test_the_runtime_block_passes_classroom50s_validator(config):
    runtime = json.loads((config / "runtime.json").read_text())
    assert set(runtime) <= RUNTIME_KEYS
    assert LANGUAGE_VERSION.match(runtime["python"])
    assert runtime["apt"] and all(APT_PACKAGE.match(package) for package in runtime["apt"])
    assert "bubblewrap" in runtime["apt"]


def test_the_readme_gives_the_steps_and_no_cache_step_a_student_could_fill(config):
    text = (config / "README.md").read_text()
    assert f"gh teacher assignment add ORG CLASSROOM {SLUG}" in text and "--runtime runtime.json" in text
    assert "uses: actions/cache" not in text and "Do not add an actions/cache step" in text


def test_a_slug_classroom50_would_refuse_is_refused(tmp_path):
    completed = command(tmp_path / "out", "--slug", "Multi_Head")
    assert completed.returncode == 2 and "slugs match" in completed.stderr
    assert not (tmp_path / "out").exists()


# --- grading, as the runner runs it ------------------------------------------------------------


def test_the_reference_gets_full_marks_and_replaces_what_the_checkout_held(runs):
    run = runs["reference"]
    result = valid(run)
    assert result["score"] == result["max-score"] == 100
    assert output_value(run, "status") == "success"
    assert output_value(run, "summary") == f"{FIRST_TITLE.lower()}: 100/100"
    assert run.body.startswith(f"### {FIRST_TITLE}: 100/100\n") and "Every check passed." in run.body
    # The planted link was replaced, not followed; the stale body too.
    assert not (run.checkout / "result.json").is_symlink()
    assert (run.checkout / "outside.txt").read_text() == "untouched\n"
    assert "stale" not in run.body
    # Closed to every other user before student code ran: where neither bubblewrap nor Landlock
    # can run, this is what keeps the hidden tests from a child dropped to nobody.
    assert stat.S_IMODE(run.bundle.stat().st_mode) == 0o700


def test_each_grading_installs_into_a_new_virtualenv_and_removes_it_after(runs):
    run = runs["reference"]
    assert "autograder: installing the grader's requirements into a new virtualenv" in run.output
    assert list(run.tool_cache.iterdir()) == []


def test_the_stubs_score_zero_with_every_check_failed(runs):
    result = valid(runs["stub"])
    assert result["score"] == 0 and result["max-score"] == 100
    assert not any(test["passed"] for test in result["tests"])
    assert output_value(runs["stub"], "status") == "failure"
    assert runs["stub"].body.startswith(f"### {FIRST_TITLE}: 0/100\n")


@pytest.mark.parametrize(("name", "full"), [("second_reference", True), ("second_stub", False)])
def test_the_second_exercise_scores_its_reference_full_and_its_stub_zero_in_its_own_groups(runs, name, full):
    run = runs[name]
    result = valid(run, SECOND_SLUG)
    totals = harness.second_exercise_totals()
    total = sum(totals.values())
    assert (result["score"], result["max-score"]) == ((total if full else 0), total)
    assert all(test["passed"] == full for test in result["tests"])
    for group, maximum in totals.items():
        assert group_points(result, group) == ((maximum if full else 0), maximum), group
    # The hidden group is one entry; no hidden check is named where the student reads.
    (hidden,) = [test for test in result["tests"] if test["group"] == SECOND.hidden_group]
    assert hidden["max-score"] == totals[SECOND.hidden_group]
    assert "test_reference" not in json.dumps(result) + run.body and "matches_the_reference" not in run.body
    # What the runner shows: the commit status's summary and the Release, naming the exercise
    # and each group by its own title.
    assert output_value(run, "status") == ("success" if full else "failure")
    assert output_value(run, "summary") == f"{SECOND.title.lower()}: {result['score']}/{total}"
    assert run.body.startswith(f"### {SECOND.title}: {result['score']}/{total}\n")
    for group, title in SECOND.group_titles.items():
        assert f"| {title} | {totals[group] if full else 0}/{totals[group]} |" in run.body, title


def test_a_missing_scale_loses_points_in_its_groups_and_is_diagnosed_in_the_release(runs):
    run = runs["missing_scale"]
    result = valid(run)
    assert 0 < result["score"] < 100
    for group in MISSING_SCALE.losing_groups:
        earned, maximum = group_points(result, group)
        assert earned < maximum, group
    title = next(mistake.title for mistake in mistakes.MISTAKES if mistake.id == MISSING_SCALE.mistake)
    assert "## What went wrong" in run.body and title in run.body
    failed = [test for test in result["tests"] if not test["passed"] and test["group"] != "reference"]
    assert failed and all(test["message"] in run.body for test in failed)
    assert all("expected" in test["message"].lower() or "diagnosis" in test["message"].lower() for test in failed)


def test_the_hidden_group_is_one_entry_unless_the_instructor_shows_its_checks(runs):
    total, checks = runs["missing_scale"].result, valid(runs["missing_scale_checks"])
    (hidden,) = [test for test in total["tests"] if test["group"] == "reference"]
    shown = [test for test in checks["tests"] if test["group"] == "reference"]
    assert len(shown) > 1 and hidden["max-score"] == sum(test["max-score"] for test in shown)
    assert hidden["passed"] == (hidden["score"] == hidden["max-score"]) and "message" in hidden
    # With one entry, no hidden check is named anywhere the student reads.
    names = [test["test-name"].split(": ", 1)[1] for test in shown]
    for text in (json.dumps(total), runs["missing_scale"].body, runs["missing_scale"].output):
        assert not [name for name in names if name in text]


def forged_files(run: Run) -> list[str]:
    """Files of the bundle and the checkout that hold the forger's marker (but the forger's own source)."""
    own = run.checkout / "exercises" / "multi_head_attention.py"
    return [
        str(path) for folder in (run.bundle, run.checkout) for path in folder.rglob("*")
        if path.is_file() and path != own and MARKER in path.read_text(errors="replace")
    ]


def test_the_results_forger_scores_what_its_honest_twin_scores(runs):
    twin = valid(runs["twin"])
    for name in ("forger", "forger_process"):
        run = runs[name]
        result = valid(run)
        assert result["score"] == twin["score"] < 100, name
        assert "What the submission printed" in run.output, name
        assert MARKER not in json.dumps(result) and MARKER not in run.body, name
        # Judged by what happened to the real files: inside bubblewrap /tmp (where these tests
        # keep the bundle) is the sandbox's own, so the forger's writes there land in its tmpfs.
        assert forged_files(run) == [], name
        breaches = [line.strip() for line in run.output.splitlines() if "BREACH" in line]
        assert not [line for line in breaches if line.startswith(("BREACH secrets", "BREACH results: could rewrite"))], name
        assert not [line for line in breaches if "score line" in line], name
        if name == "forger_process":  # no private /tmp: not one write may succeed
            assert breaches == [], breaches


def test_code_too_deep_for_pythons_parser_is_graded_and_the_release_names_its_line(runs):
    """Python raises MemoryError on such code, not SyntaxError (grader/reading/parser_limits.py):
    the student's own problem, graded, never the autograder's failure."""
    run = runs["too_deep"]
    result = valid(run)
    assert result["score"] == 0 and result["max-score"] == 100
    line = SOLUTION.read_text().count("\n") + 1
    assert "Your file could not be imported" in run.body
    assert f"too deeply nested for Python's parser, which stops reading the code there" in run.body
    assert f"(multi_head_attention.py, line {line})" in run.body


def test_a_checkout_without_the_exercise_is_an_error_result_not_a_zero(runs):
    run = runs["missing"]
    result = valid(run)  # exit status 0: the autograder ran; the runner reads the result
    assert (result["score"], result["max-score"], result["tests"]) == (0, 0, [])
    assert output_value(run, "status") == "error"
    assert "exercises/multi_head_attention.py" in output_value(run, "summary")
    assert run.body.startswith(f"### {FIRST_TITLE}: not graded\n")


def test_no_hidden_test_or_solution_text_is_left_in_the_checkout(runs):
    hidden_lines = {line.strip() for line in HIDDEN_TEST_SOURCE.read_text().splitlines() if len(line.strip()) > 30}
    for name in ("stub", "missing_scale", "missing", "forger"):
        run = runs[name]
        assert files_of(run.checkout) == run.files_before | {"result.json", "release-body.md"}, name
        for written in ("result.json", "release-body.md"):
            text = (run.checkout / written).read_text()
            assert not [line for line in hidden_lines if line in text], (name, written)
    assert release.leaked_solution_lines(runs["stub"].checkout) == []


def test_outside_the_runner_it_fails_as_an_infrastructure_failure(runs):
    run = runs["outside_the_runner"]
    assert run.returncode == 1 and "::error::autograder: CLASSROOM, SUBMISSION_TAG not set" in run.output
    assert run.result is None


def test_a_grader_failure_exits_non_zero_and_leaves_no_result_for_the_runner_to_publish(runs):
    run = runs["grader_failure"]
    assert run.returncode == 1, run.output
    assert "GRADER FAILURE" in run.output and "::error::autograder: the grading failed" in run.output
    assert run.result is None and run.body is None and "status=" not in run.outputs


def test_the_release_body_stays_bounded_however_many_checks_fail_with_long_messages():
    tests = [
        {"name": f"test_{index}", "group": "shapes", "outcome": "failed", "points": 0, "max_points": 1, "message": "m" * 5000}
        for index in range(100)
    ]
    document = {"tests": tests, "groups": {"shapes": {"earned": 0, "max": 100}}, "diagnoses": []}
    metadata = {"CLASSROOM": CLASSROOM, "ASSIGNMENT": SLUG, "SUBMISSION_TAG": "submit/x", "OWNER": OWNER}
    result = classroom50.classroom50_result(document, metadata)
    body = classroom50.release_body(document, result, "graded exercises/multi_head_attention.py", "total")
    assert len(body) <= classroom50.MAX_BODY_CHARS
    assert all(len(test["message"]) <= classroom50.MAX_MESSAGE_CHARS + 20 for test in result["tests"])
    shown = body.count("<details>")
    assert 0 < shown < 100 and f"{100 - shown} more failed checks: their messages are in result.json" in body


@pytest.mark.skipif(os.geteuid() != 0, reason="what root writes through sudo: needs root")
def test_what_the_grading_writes_as_root_belongs_to_the_user_that_reads_it(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    os.chown(folder, 65534, 65534)  # autograder.py's private folder, as the runner's user owns it
    classroom50._write(folder / "result.json", "{}\n")
    assert (folder / "result.json").stat().st_uid == 65534


# --- what a student's repository can hold --------------------------------------------------------


def breaches(run: Run) -> list[str]:
    return [line.strip() for line in run.output.splitlines() if "BREACH" in line]


def test_a_venv_py_in_the_checkout_never_runs_and_the_stub_beside_it_scores_zero(runs):
    run = runs["venv_forgery"]
    result = valid(run)
    assert result["score"] == 0 and output_value(run, "status") == "failure", run.output
    assert breaches(run) == []
    assert (run.checkout / "exercises" / "multi_head_attention.py").read_text() == STUB.read_text()


@pytest.mark.parametrize("name", ["logging_module", "pip_folder"])
def test_a_module_of_the_checkout_named_like_a_standard_one_neither_runs_nor_stops_the_grading(runs, name):
    run = runs[name]
    assert valid(run)["score"] == 100, run.output
    assert breaches(run) == []


def test_standard_library_names_at_the_checkouts_root_are_never_imported(runs):
    run = runs["standard_library_names"]
    assert valid(run)["score"] == 0, run.output
    assert breaches(run) == []


def test_a_virtualenv_left_where_a_cache_would_restore_it_is_never_run(runs):
    run = runs["poisoned_cache"]
    result = valid(run)
    assert result["score"] == 0, run.output
    assert breaches(run) == [] and "reusing" not in run.output
    assert (run.checkout / "exercises" / "multi_head_attention.py").read_text() == STUB.read_text()


def test_a_folder_or_a_fifo_where_the_runner_reads_its_files_still_gives_the_student_a_grade(runs):
    run = runs["odd_entries"]
    result = valid(run)
    assert result["score"] == 0 and output_value(run, "status") == "failure"
    assert (run.checkout / "release-body.md").is_file() and run.body.startswith(f"### {FIRST_TITLE}: 0/100")
    (moved,) = run.checkout.glob(".release-body.md.*.moved-aside")
    assert (moved / "notes.txt").read_text() == "my notes\n"


# --- the Actions log -------------------------------------------------------------------------------


def test_the_runners_parser_as_reimplemented_passes_the_runners_own_cases():
    # actions/runner's src/Test/L0/Worker/ActionCommandL0.cs and ActionCommandManagerL0.cs
    # (with their "do-something" registered), and .NET's ReadLine.
    registered = set(REGISTERED) | {"do-something"}
    assert parse(">>>   ##[do-something k1=v1;]msg", registered).data == "msg"
    assert parse("   ::do-something k1=v1,::msg", registered).data == "msg"
    assert parse("   >>>   ::do-something k1=v1,::msg", registered) is None
    assert parse("::unknown::x", registered) is None and parse("  ##[group", registered) is None
    assert lines("a\rb\r\nc\n") == ["a", "b", "c"]
    legacy = commands_run("##[stop-commands]stopToken\n##[set-env name=foo]bar\n##[stopToken]\n##[set-env name=foo]bar")
    assert [command.name for command in legacy] == ["stop-commands", "stoptoken", "set-env"]
    stopped = commands_run("::stop-commands::abcdefgh\n::error::ignored\n##[error]ignored\n::ABCDEFGH::\n::notice::read")
    assert [command.name for command in stopped] == ["stop-commands", "abcdefgh", "notice"]


def our_commands(run: Run) -> list[str]:
    """The commands the runner carries out reading the run's log: stop, resume, then ours."""
    run_on_stdout = commands_run(run.stdout)
    # First the python problem matcher goes (matchers read every line, stopped or not), then commands stop.
    assert [command.line for command in run_on_stdout[:1]] == ["::remove-matcher owner=python::"], run.stdout
    assert run_on_stdout[1].name == "stop-commands", run.stdout
    token = run_on_stdout[1].data.lower()
    assert len(token) >= 32 and MARKER not in token
    assert run_on_stdout[2].name == token, run.stdout  # the first command after the stop resumes
    return [command.line for command in run_on_stdout[3:]]


@pytest.mark.parametrize("name", ["commands", "commands_at_import", "command_file_names", "forger"])
def test_no_workflow_command_in_student_text_is_carried_out_by_the_runner(runs, name):
    run = runs[name]
    assert MARKER in run.stdout, run.stdout  # the student's text did reach the log
    assert our_commands(run) == []
    assert commands_run(run.stderr) == []  # nothing on stderr, whose order against stdout is not kept
    assert "##[error]" not in run.stdout and "##[group]" not in run.stdout  # not even shown as formatting


def test_a_graded_run_carries_out_no_command_of_its_own_but_stop_and_resume(runs):
    graded = {name: run for name, run in runs.items() if name not in ("grader_failure", "outside_the_runner")}
    assert {name: our_commands(run) for name, run in graded.items()} == {name: [] for name in graded}


def test_the_stop_token_is_new_for_every_run(runs):
    tokens = {commands_run(run.stdout)[1].data for run in runs.values()}
    assert len(tokens) == len(runs)


def test_the_autograders_own_error_is_a_command_again_after_the_resume(runs):
    assert our_commands(runs["grader_failure"]) == ["::error::autograder: the grading failed (exit 1); its log is above"]
    assert our_commands(runs["outside_the_runner"]) == [
        "::error::autograder: CLASSROOM, SUBMISSION_TAG not set: Classroom 50's runner runs this file"
    ]
