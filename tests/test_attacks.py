"""Attacks on the grader: submissions that try to cheat, escape the sandbox or wreck the run.

How an attack submission is built (one mechanism for all of them)
------------------------------------------------------------------
Each ``tests/attacks/<name>.py`` is a fragment of Python that is APPENDED to
``solutions/multi_head_attention.py``; the result is graded as ``<name>.py``. The fragment
runs at import, after the solution's definitions, so it can attack at import time and can
replace any definition (``AttentionHead.forward = ...``) to attack during a call. Before
the fragment is appended, three placeholders are substituted:

    @MARKER@     a token unique to this test run; every file or process an attack leaves
                 behind carries it, so the test can look for it on the machine afterwards
    @REPO_ROOT@  this repository's absolute path (from ``grader.__file__``): what a student
                 could learn from the course's instructions, for the thief and the forger
    @PORT@       a TCP and UDP port on 127.0.0.1 that this test listens on

An attack reports each success by printing a line ``BREACH <kind>: ...`` (``WROTE <path>``
for file writes, which are fine inside the sandbox's private /tmp); what it prints lands in
the results' ``output`` field, so a breach is visible even when its effect is not.

One exception: ``shipped_conftest.py`` and ``shipped_pytest.ini`` are not appended to
anything. They are shipped as ``conftest.py`` and ``pytest.ini`` beside a
``multi_head_attention.py`` whose head is not written, in a folder submission
(``shipped_conftest``); the same conftest.py also sits beside a file submission
(``shipped_beside/shipped_beside.py``). Should pytest load them, they run in the grader's
own process, so they are graded in a run of their own that cannot spoil the others.

Honest scores
-------------
An attack that only attacks keeps the solution's forward and must score what the solution
scores (100). An attack that breaks the forward must score exactly what an honest
submission with the same breakage scores: its "honest twin", graded in the same run
(``head_not_written``: AttentionHead.forward raises NotImplementedError; ``ignores_mask``:
AttentionHead.forward ignores the mask; their scores follow from the checks' points and are
kept in tests/golden.json). A submission that does not import scores 0.

All other attacks, the twins, and the plain solution last run in ONE grader session under
bubblewrap (one torch start-up); a selection runs again under ``--sandbox process``.

Each hole the first version of this suite found (a conftest.py or pytest.ini shipped beside
a submission, unlimited processes under bwrap run as root) keeps its test here.

What a student's whole repository can hold where Classroom 50 grades it (a venv.py, a pip/
folder, a logging.py or other standard library names at the root, a cache saved by the
student's own workflow, workflow commands for the Actions log, a folder where the runner reads
a file) is attacked in tests/test_classroom50.py, which runs autograder.py as the runner does.
"""

from __future__ import annotations

import json
import os
import re
import resource
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import grader
from grader.sandbox import landlock, processes
from grader.sandbox.isolated import OUTPUT_KEPT_BYTES
from grading import GradingRun, grade
from golden import stored as stored_figure
import tiers

REPO_ROOT = Path(grader.__file__).resolve().parent.parent
SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
ATTACKS = Path(__file__).resolve().parent / "attacks"
# Seconds; an endless loop costs this, at most twice per kind of call. Generous enough that an
# honest call never reaches it on a loaded two-core machine.
CALL_TIMEOUT = 4

# Honest twins: the same breakage as an attack, without the attack.
TWINS = {
    "head_not_written": (
        "\n\ndef _not_written(self, inputs, allowed_mask):\n"
        '    raise NotImplementedError("AttentionHead.forward is not written yet")\n\n\n'
        "AttentionHead.forward = _not_written\n"
    ),
    "ignores_mask": (
        "\n\n_honest_forward = AttentionHead.forward\n\n\n"
        "def _ignores_mask(self, inputs, allowed_mask):\n"
        "    return _honest_forward(self, inputs, torch.ones_like(allowed_mask, dtype=torch.bool))\n\n\n"
        "AttentionHead.forward = _ignores_mask\n"
    ),
    # Every tensor the child sends is zeros of the shape and dtype it would have had, honestly
    # encoded: what the forged_* attacks on the wire format must not beat.
    "sends_zeros": (
        "\n\nimport sys as _sys\n\n_wire = _sys.modules['grader.sandbox.wire']\n_honest_flatten = _wire._flatten\n\n\n"
        "def _zeros(value, blobs):\n"
        "    if type(value) is torch.Tensor:\n"
        "        return _honest_flatten(torch.zeros_like(value), blobs)\n"
        "    return _honest_flatten(value, blobs)\n\n\n"
        "_wire._flatten = _zeros\n"
    ),
}
SOLUTION_NAME = "multi_head_attention"  # the plain solution, graded last

# Every attack and its honest score: a number, or the name of its honest twin.
HONEST = {
    "exit_at_import": 0,
    "sys_exit_at_import": 0,
    "leave_processes": 100,
    "fork_flood": 100,
    "write_outside": 100,
    "forge_results": "head_not_written",
    "exit_in_forward": "head_not_written",
    "sys_exit_in_forward": "head_not_written",
    "patch_comparisons": "ignores_mask",
    "tensor_subclass": "head_not_written",
    "steal_solution": "head_not_written",
    "open_sockets": 100,
    "memory_bomb": "head_not_written",
    "spinning_thread": 100,
    "flood_output": 100,
    "endless_loop": "head_not_written",
    "ignore_sigterm": "head_not_written",
    "spy_on_leftovers": 100,  # graded after the others: looks for what they left behind
}
# Attacks on the wire format: the child rewrites its own encoder (grader/sandbox/wire.py) to send
# headers its bytes do not match. Each must be refused as malformed, call by call: it may score
# no more than its honest twin (every tensor sent as honest zeros), and show no value of its own.
FORGED_REPLIES = {
    "forged_empty_tensors": "sends_zeros", "forged_large_tensors": "sends_zeros", "forged_huge_tensors": "sends_zeros",
    "forged_tensor_sizes": "sends_zeros",
}
# A safety net, not the defence under test: should a regression let a forged header allocate
# what it announces, the allocation fails in the grader instead of the machine running out of
# memory (a 1 GiB header once had a shard killed at 23.9 GB resident). Grading needs under 1 GiB
# of address space; a child's own memory limit (grader/sandbox/processes.py) is lower still.
ADDRESS_SPACE_CAP = 4 * 1024**3


def capped_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_CAP, ADDRESS_SPACE_CAP))
# What the bwrap run grades, in order: every attack, the spy last.
BWRAP_SELECTION = (*(name for name in HONEST if name != "spy_on_leftovers"), *FORGED_REPLIES, "spy_on_leftovers")
# Attacks on the grader's own pytest session, graded in a run of their own (see above).
SHIPPED = ("shipped_conftest", "shipped_beside")
SHIPPED_INI_SEED = 271828  # the grading seed shipped_pytest.ini asks for
# What runs again with --sandbox process (no bwrap): scores stay honest, leftovers die.
# Where Landlock confines the plain-process sandbox (grader/sandbox/landlock.py), thieves and
# sockets too: the repository is out of reach, TCP is refused.
LANDLOCK_ABI = landlock.abi_version()
needs_landlock = pytest.mark.skipif(LANDLOCK_ABI < 4, reason="Landlock with network rules (ABI 4+) is not available here")
PROCESS_SELECTION = (
    "exit_at_import", "exit_in_forward", "forge_results", "write_outside", "leave_processes", "fork_flood",
    *(("steal_solution", "open_sockets") if LANDLOCK_ABI >= 4 else ()),
    *FORGED_REPLIES,
    "spy_on_leftovers",
)

# Places on the machine where a file written by a submission could land.
HOST_FOLDERS = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), REPO_ROOT, REPO_ROOT / "grader", REPO_ROOT / "out",
                Path("/root"), Path("/home"), Path("/"))
# Where files may appear in process mode (the machine's shared, world-writable folders).
SHARED_WRITABLE = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))

# Holes once known, now closed, keep their tests: a conftest.py beside a submission is never
# imported (grader/session/targets.py narrows pytest's conftest search to grader/), a pytest.ini in
# a submission's folder is refused, and a pids cgroup caps processes when bwrap runs as root.
KNOWN_HOLES: dict = {}

BWRAP_WORKS = processes.bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_WORKS, reason="bubblewrap (bwrap) is not installed or cannot create namespaces here")


# --- Building submissions ------------------------------------------------------------------


def attack_source(name: str, substitutions: dict[str, str]) -> str:
    text = (ATTACKS / f"{name}.py").read_text()
    for placeholder, value in substitutions.items():
        text = text.replace(placeholder, value)
    assert "@" + "MARKER@" not in text and "@" + "PORT@" not in text, f"{name}: a placeholder was not substituted"
    return SOLUTION.read_text() + "\n\n# ---- appended by tests/test_attacks.py ----\n" + text


def build_submissions(folder: Path, names: list[str], substitutions: dict[str, str], twins=tuple(TWINS)) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for twin in twins:
        fragment = TWINS[twin]
        path = folder / f"{twin}.py"
        path.write_text(SOLUTION.read_text() + fragment)
        paths.append(path)
    for name in names:
        if name in SHIPPED:
            paths.append(ship(folder, name, substitutions))
        else:
            path = folder / f"{name}.py"
            path.write_text(attack_source(name, substitutions))
            paths.append(path)
    paths.append(SOLUTION)  # last: it must still score 100 after every attack
    return paths


def ship(folder: Path, name: str, substitutions: dict[str, str]) -> Path:
    """A submission carrying the conftest.py (and pytest.ini) of tests/attacks/shipped_*."""
    conftest = (ATTACKS / "shipped_conftest.py").read_text()
    for placeholder, value in substitutions.items():
        conftest = conftest.replace(placeholder, value)
    not_written = SOLUTION.read_text() + TWINS["head_not_written"]
    if name == "shipped_conftest":  # a folder: multi_head_attention.py, conftest.py, pytest.ini
        shipped = folder / name
        shipped.mkdir()
        (shipped / "multi_head_attention.py").write_text(not_written)
        (shipped / "conftest.py").write_text(conftest)
        return shipped
    beside = folder / name  # a file, in a folder that also holds a conftest.py
    beside.mkdir()
    (beside / "conftest.py").write_text(conftest)
    (beside / f"{name}.py").write_text(not_written)
    return beside / f"{name}.py"


# --- What the test watches on the machine --------------------------------------------------


class Listener:
    """A TCP and a UDP socket on the same 127.0.0.1 port, recording anything that arrives."""

    def __init__(self) -> None:
        for _ in range(20):
            self.tcp = socket.create_server(("127.0.0.1", 0))
            self.port = self.tcp.getsockname()[1]
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                self.udp.bind(("127.0.0.1", self.port))
                break
            except OSError:
                self.tcp.close()
                self.udp.close()
        self.received: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        import select

        while not self._stop.is_set():
            readable, _, _ = select.select([self.tcp, self.udp], [], [], 0.1)
            for sock in readable:
                if sock is self.tcp:
                    connection, peer = sock.accept()
                    connection.close()
                    self.received.append(f"tcp connection from {peer}")
                else:
                    data, peer = sock.recvfrom(4096)
                    self.received.append(f"udp datagram {data!r} from {peer}")

    def close(self) -> list[str]:
        self._stop.set()
        self._thread.join(2)
        self.tcp.close()
        self.udp.close()
        return self.received


def processes_carrying(marker: str) -> dict[int, str]:
    """Processes on the machine whose command line holds ``marker``."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in command:
                found[int(entry.name)] = command.strip()
    return found


def survivors_after(marker: str, patience: float = 60.0) -> dict[int, str]:
    """What still carries the marker once dying processes had ``patience`` seconds to go: a wait
    for an event (the last one gone), whose cap only a failing run reaches, whatever the load."""
    deadline = time.monotonic() + patience
    while (found := processes_carrying(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def files_carrying(marker: str, folders: tuple[Path, ...]) -> list[Path]:
    found = []
    for folder in folders:
        try:
            found += [folder / name for name in os.listdir(folder) if marker in name]
        except OSError:
            pass
    return found


def files_under(marker: str, folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if marker in path.name]


@dataclass
class AttackRun:
    sandbox: str
    run: GradingRun
    marker: str
    results_dir: Path
    submissions_dir: Path
    run_dir: Path
    graded: list[str]
    connections: list[str] = field(default_factory=list)
    survivors: dict[int, str] = field(default_factory=dict)
    host_files: list[Path] = field(default_factory=list)

    def output(self, name: str) -> str:
        return self.run.results[name]["output"]

    def breaches(self, name: str, kind: str = "") -> list[str]:
        return [line for line in self.output(name).splitlines() if line.startswith(f"BREACH {kind}")]

    def messages(self, name: str) -> list[str]:
        return [test["message"] for test in self.run.failed_tests(name)]

    def honest_score(self, name: str) -> int:
        honest = HONEST[name]
        return honest if isinstance(honest, int) else self.run.score(honest)


def attack_run(tmp_path_factory, sandbox: str, names: list[str], twins=tuple(TWINS), label: str = "") -> AttackRun:
    marker = f"mhaattack{secrets.token_hex(6)}"
    listener = Listener()
    substitutions = {"@MARKER@": marker, "@REPO_ROOT@": str(REPO_ROOT), "@PORT@": str(listener.port)}
    label = label or sandbox
    submissions_dir = tmp_path_factory.mktemp(f"{label}-submissions")
    results_dir = tmp_path_factory.mktemp(f"{label}-results")
    paths = build_submissions(submissions_dir, names, substitutions, twins)
    run_dir = tmp_path_factory.mktemp(f"{label}-run")
    try:
        run = grade(
            paths, run_dir,
            "--isolate", "--sandbox", sandbox, "--call-timeout", str(CALL_TIMEOUT), "--results-dir", str(results_dir),
            timeout=300, preexec_fn=capped_address_space,
        )
        outcome = AttackRun(sandbox, run, marker, results_dir, submissions_dir, run_dir, [*twins, *names, SOLUTION_NAME])
        outcome.survivors = survivors_after(marker)
        outcome.host_files = files_carrying(marker, HOST_FOLDERS) + files_under(marker, results_dir)
    except BaseException:
        remove_files_carrying(marker)  # no test will look at them: the fixture fails
        raise
    finally:
        outcome_connections = listener.close()
        for pid in processes_carrying(marker):  # never leave an escaped attacker running
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    outcome.connections = outcome_connections
    return outcome


def remove_files_carrying(marker: str) -> None:
    for path in files_carrying(marker, HOST_FOLDERS):
        try:
            path.unlink()
        except OSError:
            pass
    for relative in ("results.json", "gradebook.csv"):  # the forger only ever creates these when absent
        path = REPO_ROOT / relative
        if path.is_file() and marker in path.read_text(errors="replace"):
            path.unlink()


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # every attack graded in one run: some timed out on purpose
def bwrap_run(tmp_path_factory):
    if not BWRAP_WORKS:
        pytest.skip("bubblewrap (bwrap) is not installed or cannot create namespaces here")
    outcome = attack_run(tmp_path_factory, "bwrap", list(BWRAP_SELECTION))
    yield outcome
    remove_files_carrying(outcome.marker)


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # every attack graded in one run: some timed out on purpose
def process_run(tmp_path_factory):
    outcome = attack_run(tmp_path_factory, "process", list(PROCESS_SELECTION))
    yield outcome
    remove_files_carrying(outcome.marker)


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # every attack graded in one run: some timed out on purpose
def shipped_run(tmp_path_factory):
    sandbox = "bwrap" if BWRAP_WORKS else "process"
    outcome = attack_run(tmp_path_factory, sandbox, list(SHIPPED), twins=(), label="shipped")
    yield outcome
    remove_files_carrying(outcome.marker)


@pytest.fixture(params=[pytest.param("bwrap", marks=needs_bwrap), "process"])
@tiers.slow_tier("slow")  # one of the runs above, asked for by name
def any_run(request) -> AttackRun:
    """The bwrap run or the process run: for behaviour both sandboxes must show."""
    return request.getfixturevalue(f"{request.param}_run")


def selection_of(sandbox: str) -> tuple[str, ...]:
    return BWRAP_SELECTION if sandbox == "bwrap" else PROCESS_SELECTION


def in_both_runs(names: tuple[str, ...], holes: dict | None = None) -> list:
    """(sandbox, attack) pairs for every run that grades the attack; ``holes``: known failures."""
    return [
        pytest.param(
            sandbox, name, id=f"{sandbox}-{name}",
            marks=([needs_bwrap] if sandbox == "bwrap" else []) + (holes or {}).get((sandbox, name), []),
        )
        for sandbox in ("bwrap", "process")
        for name in names
        if name in selection_of(sandbox)
    ]


@pytest.fixture
@tiers.slow_tier("slow")  # the runs above, asked for by name
def run_of(request):
    return lambda sandbox: request.getfixturevalue(f"{sandbox}_run")


# --- The run as a whole ----------------------------------------------------------------------


def test_every_submission_is_graded_and_the_solution_after_them_scores_full_marks(any_run):
    assert set(any_run.run.results) == set(any_run.graded), any_run.run.output[-3000:]
    assert all(any_run.run.results[name]["tests"] for name in any_run.graded)
    assert any_run.run.score(SOLUTION_NAME) == 100, any_run.run.failed_tests(SOLUTION_NAME)


@pytest.mark.parametrize("twin", list(TWINS))
def test_the_honest_twins_score_what_the_table_states(any_run, twin, golden):
    golden.check(f"score of the honest twin {twin}", any_run.run.score(twin), any_run.run.failed_tests(twin))


@pytest.mark.parametrize(("sandbox", "name"), in_both_runs(tuple(HONEST)))
def test_each_attack_scores_exactly_its_honest_score(run_of, sandbox, name):
    outcome = run_of(sandbox)
    assert outcome.run.score(name) == outcome.honest_score(name), outcome.run.failed_tests(name)


@pytest.mark.parametrize(("sandbox", "name"), in_both_runs(tuple(HONEST), KNOWN_HOLES))
def test_no_attack_reports_a_breach_of_the_sandbox(run_of, sandbox, name):
    outcome = run_of(sandbox)
    # The plain-process sandbox shares the machine's /tmp: files seen there are expected.
    expected = ("BREACH leftover-file",) if sandbox == "process" else ()
    breaches = [line for line in outcome.breaches(name) if not line.startswith(expected)]
    if sandbox == "bwrap":  # /tmp inside bwrap is a private tmpfs: a write that landed there
        breaches = [line for line in breaches if not landed_in_private_tmp(line)]  # reached nothing
    assert breaches == []


def landed_in_private_tmp(breach: str) -> bool:
    """A "wrote PATH" under /tmp that the machine never saw (say, a repository cloned to /tmp)."""
    match = re.match(r"BREACH results: wrote (/tmp/\S+)$", breach)
    return bool(match) and not Path(match.group(1)).exists()


# --- Forging results -------------------------------------------------------------------------


def test_a_forger_cannot_write_results_anywhere_the_grader_reads_them(any_run):
    written = sorted(path for path in any_run.results_dir.rglob("*") if path.is_file())
    # One JSON result and one Markdown feedback per submission, nothing else (no gradebook.csv).
    assert sorted(path.name for path in written) == sorted(f"{name}.{kind}" for name in any_run.graded for kind in ("json", "md"))
    for path in written:
        name, score = path.stem, any_run.run.score(path.stem)
        if path.suffix == ".json":
            assert json.loads(path.read_text())["score"] == score, f"{path} disagrees with results.json"
        else:
            assert f"**Score: {score}/100**" in path.read_text(), f"{path} disagrees with results.json"


def test_a_forger_cannot_create_results_in_the_repository(any_run):
    for relative in ("results.json", "gradebook.csv"):
        path = REPO_ROOT / relative
        assert not (path.exists() and any_run.marker in path.read_text(errors="replace")), path
    assert not files_under(any_run.marker, REPO_ROOT / "grader")
    assert not [path for path in any_run.host_files if REPO_ROOT in path.parents]


@needs_bwrap
def test_under_bwrap_a_forger_sees_no_command_line_of_the_grader(bwrap_run):
    assert "forger: 0 result paths" in bwrap_run.output("forge_results")


def test_in_process_mode_a_forger_cannot_write_the_results(process_run):
    output = process_run.output("forge_results")
    if LANDLOCK_ABI >= 1:  # /proc is out of reach: no command line of the grader to read
        assert "forger: 0 result paths" in output
    else:  # armed: it reads the grader's --results-json and --results-dir through /proc
        assert str(process_run.run_dir / "results.json") in output and str(process_run.results_dir) in output
    assert process_run.breaches("forge_results", "results") == []


def test_a_forgers_fake_score_line_never_reaches_the_grader_terminal(any_run):
    honest = any_run.run.score("forge_results")
    assert f"Score forge_results: {honest}/100" in any_run.run.output
    assert "Score forge_results: 100/100" not in any_run.run.output


# --- Exits -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sandbox", "name"), in_both_runs(("exit_at_import", "sys_exit_at_import")))
def test_an_exit_at_import_is_reported_as_an_import_error(run_of, sandbox, name):
    outcome = run_of(sandbox)
    assert outcome.run.results[name]["import_error"], "the reason is recorded"
    assert outcome.run.score(name) == 0


EXITS_DURING_A_CALL = {"exit_in_forward": "exited with status 0", "sys_exit_in_forward": "SystemExit"}


@pytest.mark.parametrize(("sandbox", "name"), in_both_runs(tuple(EXITS_DURING_A_CALL)))
def test_an_exit_during_a_call_fails_only_the_tests_that_reach_it(run_of, sandbox, name):
    outcome = run_of(sandbox)
    messages = outcome.messages(name)
    assert messages and all(EXITS_DURING_A_CALL[name] in m for m in messages), messages[:5]
    assert outcome.run.results[name]["groups"]["configuration"]["earned"] == 10  # no forward there


# --- Lies about comparisons ----------------------------------------------------------------------


@needs_bwrap
def test_monkeypatched_comparisons_leave_the_grader_verdicts_unchanged(bwrap_run):
    assert bwrap_run.run.lost_groups("patch_comparisons") == bwrap_run.run.lost_groups("ignores_mask")
    assert {"causal_masking", "reference"} <= bwrap_run.run.lost_groups("patch_comparisons")


@needs_bwrap
def test_a_tensor_subclass_is_rejected_as_not_plain_data(bwrap_run):
    messages = bwrap_run.messages("tensor_subclass")
    rejected = ("not plain data", "a torch.Tensor subclass?", "expected a plain torch.Tensor")
    assert messages and all(any(words in m for words in rejected) for m in messages), messages[:5]


# --- Forged replies ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("sandbox", "name"), in_both_runs(tuple(FORGED_REPLIES)))
def test_a_forged_reply_gains_no_point_over_honest_zeros(run_of, sandbox, name):
    outcome = run_of(sandbox)
    assert outcome.run.score(name) <= outcome.run.score(FORGED_REPLIES[name]), outcome.run.failed_tests(name)


@pytest.mark.parametrize(("sandbox", "name"), in_both_runs(tuple(FORGED_REPLIES)))
def test_a_forged_reply_is_refused_as_malformed_and_nothing_of_it_is_shown(run_of, sandbox, name):
    """Every call whose reply was forged fails with the same reason, and no value the grader
    rebuilt from it (its own uninitialised memory, or bytes read as another dtype) reaches a
    message, a diagnosis or the feedback."""
    outcome = run_of(sandbox)
    messages = outcome.messages(name)
    assert messages and all("the submission's process sent a malformed reply" in m for m in messages), messages[:5]
    assert not [m for m in messages if "got:" in m], "a value of the forged reply was compared and shown"
    named = outcome.run.diagnosed(name) - {"unknown"}
    assert named == set(), f"the diagnosis named {named} from forged numbers"
    feedback = (outcome.results_dir / "feedback" / f"{name}.md").read_text()
    assert "got:" not in feedback


@needs_bwrap
@pytest.mark.slow
def test_replies_announcing_megabytes_they_do_not_send_leave_the_shard_memory_at_its_baseline(tmp_path):
    """Two grading shards side by side, three students each: in one, honest zeros then two
    honest students; in the other, a forger announcing 16 MiB per tensor, one announcing 1 GiB,
    then an honest student. Each shard logs its peak resident memory (grader/batch/shard.py):
    the forgers' may not exceed the honest one's by more than a reply's bound allows
    (wire.REPLY), and the student after them in their shard is graded as if they were not there."""
    class_folder = tmp_path / "class"
    class_folder.mkdir()
    solution = SOLUTION.read_text()
    # Sorted by id and dealt to the two shards in turn: shard 0 gets a, c, e; shard 1 gets b, d, f.
    (class_folder / "a_honest_zeros.py").write_text(solution + TWINS["sends_zeros"])
    (class_folder / "b_forged_large.py").write_text(attack_source("forged_large_tensors", {}))
    (class_folder / "c_honest.py").write_text(solution)
    (class_folder / "d_forged_huge.py").write_text(attack_source("forged_huge_tensors", {}))
    (class_folder / "e_honest.py").write_text(solution)
    (class_folder / "f_after_forgers.py").write_text(solution)
    out = tmp_path / "out"
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(class_folder), "--out", str(out), "--quiet", "--jobs", "2",
         "--sandbox", "bwrap", "--no-report"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
        preexec_fn=capped_address_space,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    document = json.loads((out / "results.json").read_text())
    scores = {sid: result["score"] for sid, result in document["submissions"].items()}
    assert scores["f_after_forgers"] == scores["c_honest"] == scores["e_honest"] == 100, scores
    assert max(scores["b_forged_large"], scores["d_forged_huge"]) <= scores["a_honest_zeros"], scores
    peaks = [shard_peak_mib(out / "logs" / f"shard-{number}.log") for number in (0, 1)]
    assert peaks[1] <= peaks[0] + 64, f"the forgers' shard peaked at {peaks[1]:.0f} MiB, the honest one at {peaks[0]:.0f} MiB"


def shard_peak_mib(log: Path) -> float:
    match = re.search(r"grading shard peak memory: ([\d.]+) MiB", log.read_text())
    assert match, f"{log.name} reports no peak memory"
    return float(match.group(1))


# --- Reading what it should not ------------------------------------------------------------------


@pytest.mark.parametrize(("sandbox", "name"), in_both_runs(("steal_solution",)))
def test_a_thief_finds_neither_the_solution_nor_the_hidden_tests(run_of, sandbox, name):
    outcome = run_of(sandbox)
    assert "thief: searched" in outcome.output(name), "the thief ran its search"
    assert outcome.breaches(name, "read") == []
    assert outcome.run.score(name) == outcome.run.score("head_not_written")


@pytest.mark.parametrize("name", SHIPPED)
def test_a_conftest_shipped_with_a_submission_never_runs_in_the_grader(shipped_run, name):
    loaded = [path for path in shipped_run.host_files if path.name.endswith(f"conftest-loaded-{name}")]
    assert loaded == [], "the conftest.py shipped with the submission ran in the grader's process"


@pytest.mark.parametrize("name", SHIPPED)
def test_a_conftest_shipped_with_a_submission_cannot_change_its_score(shipped_run, name):
    # The twin's score as stored: a run where the conftest rewrote scoring has no honest twin.
    assert shipped_run.run.score(name) == stored_figure("score of the honest twin head_not_written")


@pytest.mark.parametrize("form", ["--submission PATH", "--submission=PATH"])
def test_a_pytest_ini_shipped_in_a_submission_folder_is_never_obeyed(tmp_path, form):
    folder = tmp_path / "shipped_ini"
    folder.mkdir()
    (folder / "multi_head_attention.py").write_text(SOLUTION.read_text() + TWINS["head_not_written"])
    (folder / "pytest.ini").write_text((ATTACKS / "shipped_pytest.ini").read_text())
    results = tmp_path / "results.json"
    option = ["--submission", str(folder)] if form == "--submission PATH" else [f"--submission={folder}"]
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "grader", "-q", "-p", "no:cacheprovider", *option, "--results-json", str(results)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    if form == "--submission PATH":  # pytest found the ini: the grader refuses to run under it
        assert finished.returncode == 4 and "refusing to grade" in finished.stderr, finished.stdout + finished.stderr
        assert not results.exists()
    else:  # pytest never saw the ini: graded honestly, with a seed of the grader's choosing
        document = json.loads(results.read_text())
        assert document["grading_seed"] != SHIPPED_INI_SEED
        assert document["submissions"]["shipped_ini"]["score"] == stored_figure("score of the honest twin head_not_written")


# --- Resources -------------------------------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize("name", ["endless_loop", "ignore_sigterm"])
def test_an_endless_loop_costs_at_most_two_timeouts_per_kind_of_call(bwrap_run, name):
    failures = bwrap_run.run.failed_tests(name)
    timed_out = [test for test in failures if "timed out after" in test["message"]]
    assert 1 <= len(timed_out) <= 4, [test["message"] for test in failures]  # run_head and run_attention
    # What bounds the cost is an event, not a clock: after two timeouts the grader refuses the
    # call at once instead of waiting out the limit again.
    refused = [test for test in failures if "already timed out" in test["message"]]
    assert refused, [test["message"] for test in failures]


@needs_bwrap
def test_a_memory_bomb_is_stopped_by_the_memory_limit(bwrap_run):
    assert bwrap_run.breaches("memory_bomb", "memory") == []
    messages = " ".join(bwrap_run.messages("memory_bomb"))
    # The memory limit refuses the allocation; on a loaded machine, touching the pages up to
    # the limit may outlast the call's time limit first. Either way the bomb is stopped.
    assert re.search(r"can't allocate memory|MemoryError|out of memory|timed out after", messages), messages[:2000]


@needs_bwrap
def test_a_spinning_thread_neither_hangs_the_run_nor_costs_points(bwrap_run):
    assert bwrap_run.run.score("spinning_thread") == 100, bwrap_run.run.failed_tests("spinning_thread")


@needs_bwrap
def test_megabytes_of_output_are_cut_to_about_10_kB_without_costing_points(bwrap_run):
    output = bwrap_run.output("flood_output")
    assert OUTPUT_KEPT_BYTES <= len(output) <= OUTPUT_KEPT_BYTES + 200
    assert re.search(r"\[\.\.\. \d+ more bytes of output not kept\]", output)
    assert bwrap_run.run.score("flood_output") == 100


# --- Traces on the machine --------------------------------------------------------------------------


def test_no_process_started_by_a_submission_outlives_the_run(any_run):
    assert "left behind:" in any_run.output("leave_processes"), "the attack started its processes"
    assert any_run.survivors == {}


@pytest.mark.parametrize(("sandbox", "name"), in_both_runs(("spy_on_leftovers",)))
def test_a_later_submission_finds_no_process_left_by_an_earlier_one(run_of, sandbox, name):
    outcome = run_of(sandbox)
    assert outcome.breaches(name, "leftover-process") == []


@needs_bwrap
def test_a_later_submission_finds_no_file_left_by_an_earlier_one(bwrap_run):
    assert bwrap_run.breaches("spy_on_leftovers", "leftover-file") == []


@needs_bwrap
def test_files_written_outside_the_sandbox_never_reach_the_machine(bwrap_run):
    assert bwrap_run.host_files == []
    written = [line.removeprefix("WROTE ") for line in bwrap_run.output("write_outside").splitlines() if line.startswith("WROTE ")]
    assert written, "the attack writes to its private /tmp at least: it must have run"
    private = ("/tmp/", "/dev/shm/")
    assert [path for path in written if not path.startswith(private)] == []


def test_in_process_mode_files_reach_only_the_shared_temporary_folders(process_run):
    assert [path for path in process_run.host_files if path.parent not in SHARED_WRITABLE] == []


@needs_landlock
def test_in_process_mode_landlock_refuses_tcp_connections(process_run):
    """Landlock rules cover TCP only: a UDP datagram to the machine may still arrive."""
    refused = [line for line in process_run.output("open_sockets").splitlines() if line.startswith("socket refused")]
    assert len(refused) == 4, "the attack tried its four connections"
    assert [line for line in process_run.connections if line.startswith("tcp")] == []
    assert process_run.breaches("open_sockets", "network") == []


@needs_bwrap
def test_the_network_is_unreachable_from_a_submission(bwrap_run):
    refused = [line for line in bwrap_run.output("open_sockets").splitlines() if line.startswith("socket refused")]
    assert len(refused) == 4, "the attack tried its four connections"
    assert bwrap_run.connections == []
    assert bwrap_run.breaches("open_sockets", "network") == []
