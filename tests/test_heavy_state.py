"""The grader's own work never costs a student a point (grader/student_clock.py, grader/reading/state_kept.py).

What a file keeps besides its module (a logger, a figure, a progress bar, a data set, an object
graph) once cost valid work up to 77 points: the state check walked all of it after every forward
pass, on the student's clock. Here: the walk reads what the student's code owns, each object once,
library objects by identity, within a budget; only the student's code runs on the student's
clock; and valid work with heavy state beside it scores 100 everywhere, under load, while a
module wrapped in such a context grades as the bare module does.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy
import pytest
import torch

import catalogue
import heavy_state
from grading import REPO_ROOT, grade, grade_in_parts, what_a_reader_sees

from grader import student_clock, timeouts
from grader.reading import loading, state_kept
from grader.sandbox import libraries, processes

OWNER = "students_file"


def _student_class(name: str = "Node"):
    return type(name, (), {"__module__": OWNER})


# --- the walk: what it reads, and what it costs ---------------------------------------------------------


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3)
    for axis in axes:
        axis.imshow(numpy.eye(4))
    return {"fig": figure, "axes": axes}


def _optimiser():
    layer = torch.nn.Linear(4, 4)
    optimiser = torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        layer(torch.ones(1, 4)).sum().backward()
        optimiser.step()
    return {"optimiser": optimiser}


@pytest.mark.parametrize("make", [
    lambda: {"logger": logging.getLogger("students_file")},
    _figure,
    lambda: {"bar": __import__("tqdm").tqdm(range(3), disable=True)},
    _optimiser,
], ids=["logger", "figure", "tqdm", "optimiser"])
def test_a_library_object_costs_nothing_whatever_it_reaches(make):
    # A logger reaches logging's manager and every logger of the process, a figure its artists:
    # walked, they cost seconds after every forward pass. Taken by identity, they cost no visit:
    # only the dict that holds them is visited (and the figure's array of axes).
    kept = make()
    assert state_kept.objects_read(kept, OWNER) == 1 + sum(isinstance(value, numpy.ndarray) for value in kept.values())


def test_a_cycle_costs_each_object_once_and_a_change_deep_inside_it_is_seen():
    node_class = _student_class()
    nodes = [node_class() for _ in range(1_000)]
    for index, node in enumerate(nodes):
        node.value = index
        node.neighbours = [nodes[(index + 1) % 1_000], nodes[(index * 7) % 1_000]]
    kept = {"graph": nodes}
    # the dict, the list, and each node with its list of neighbours
    assert state_kept.objects_read(kept, OWNER) == 2 + 2 * 1_000
    before = state_kept.read(kept, OWNER)
    assert state_kept.read(kept, OWNER) == before
    nodes[617].value += 1
    assert state_kept.read(kept, OWNER) != before


def test_past_its_budget_the_state_is_unread_which_never_passes_for_unchanged():
    node_class = _student_class()
    kept = {"nodes": [node_class() for _ in range(3_000)], "more": [node_class() for _ in range(3_000)]}
    assert state_kept.objects_read(kept, OWNER) is None
    first, second = state_kept.read(kept, OWNER), state_kept.read(kept, OWNER)
    assert isinstance(first, state_kept.Unread) and first != second and first != first
    assert "more than 4000 objects" in first.why


def _counter():
    count = 0

    def counted():
        nonlocal count
        count += 1
        return count

    counted.__module__ = OWNER
    return counted


def _remembering():
    def remember(value, seen=[]):  # noqa: B006 - the mutable default is the point
        seen.append(value)

    remember.__module__ = OWNER
    return remember


# (what is kept, a change the student's code could make to it between two calls)
CHANGES = {
    "an attribute of an instance of the student's class": (
        lambda: {"cache": [_student_class()()]}, lambda kept: setattr(kept["cache"][0], "last", 1)),
    "a closure's counter": (lambda: {"counted": _counter()}, lambda kept: kept["counted"]()),
    "a mutable default": (lambda: {"remember": _remembering()}, lambda kept: kept["remember"](1)),
    "a SimpleNamespace": (lambda: {"state": types.SimpleNamespace(calls=0)}, lambda kept: setattr(kept["state"], "calls", 1)),
    "a generator's draws": (lambda: {"generator": torch.Generator().manual_seed(0)},
                            lambda kept: torch.rand(1, generator=kept["generator"])),
    "a numpy array in place": (lambda: {"table": numpy.zeros(8)}, lambda kept: kept["table"].__setitem__(3, 1.0)),
    "a tensor in place": (lambda: {"buffer": torch.zeros(8)}, lambda kept: kept["buffer"].add_(1)),
    "a large tensor in place": (lambda: {"buffer": torch.zeros(1 << 17)}, lambda kept: kept["buffer"][-1:].add_(1)),
    "a library object replaced": (
        lambda: {"logger": logging.getLogger("a")}, lambda kept: kept.__setitem__("logger", logging.getLogger("b"))),
    "a large data set grown": (lambda: {"data": [0] * 5_000}, lambda kept: kept["data"].append(1)),
}


@pytest.mark.parametrize("kept, change", CHANGES.values(), ids=CHANGES.keys())
def test_a_change_to_what_the_students_code_owns_is_seen(kept, change):
    kept = kept()
    before = state_kept.read(kept, OWNER)
    assert state_kept.read(kept, OWNER) == before
    change(kept)
    assert state_kept.read(kept, OWNER) != before


def test_using_a_library_object_is_no_change():
    # What the commonest valid files do on every forward pass: log, draw on their figure.
    kept = {"logger": logging.getLogger("students_file.used"), **_figure()}
    before = state_kept.read(kept, OWNER)
    kept["logger"].warning("forward on %s", (2, 5, 8))
    kept["axes"][0].imshow(numpy.ones((4, 4)))
    assert state_kept.read(kept, OWNER) == before


def test_the_solutions_module_and_file_are_read_in_a_few_dozen_objects():
    from grader.exercises.multi_head_attention import operations

    student = loading.import_source(heavy_state.SOLUTION)
    module = operations._construct(student, "MultiHeadSelfAttention", (12, 3))
    assert state_kept.objects_read(module, student.__name__) < 60
    assert state_kept.objects_read(state_kept.file_kept(student), student.__name__) < 60


# --- the clocks ---------------------------------------------------------------------------------------


def _compute(cpu_seconds: float) -> None:
    """Compute for ``cpu_seconds`` of this process's CPU time (the same work whatever the load)."""
    until = time.process_time() + cpu_seconds
    while time.process_time() < until:
        pass


def test_at_a_desk_only_the_students_code_runs_on_its_clock_and_a_time_out_names_its_function():
    # (The student's function named is the innermost frame outside Python, its libraries and the
    # grader: here this file's _compute.)
    clock = timeouts.DeskClock(0.3, wall_limit=False)
    student_clock.use(clock)
    clock.start()
    try:
        for _ in range(4):  # the grader's own work, far past the student's limit in all
            _compute(0.2)
            with student_clock.running("concatenate_heads"):
                _compute(0.05)  # the student's: 0.2 s of its 0.3 s in all
        with pytest.raises(timeouts.CallTimedOut, match=r"0\.3 s of computing in your _compute"):
            with student_clock.running("concatenate_heads"):
                _compute(1.0)
    finally:
        clock.cancel()
    assert student_clock.use(None) is None  # the clock left no host behind


@pytest.mark.slow  # a sandboxed grading with a 4 s sleep in it
def test_in_the_sandbox_time_the_child_says_is_the_graders_is_not_the_students(tmp_path):
    # The child's clock ticks are the only way the grader knows which time is whose: here the
    # student's forward, at its tenth call (warm: the call itself takes milliseconds of a 2 s
    # limit, however busy the machine), stops its own clock and sleeps 4 s. The call is not timed
    # out: the time is the grader's, whose allowance bounds such a forgery.
    forger = tmp_path / "forger.py"
    forger.write_text(heavy_state.with_context(heavy_state.SOLUTION.read_text(), """
import time as _time
from grader import student_clock as _clock
_calls = []
_honest_forward = MultiHeadSelfAttention.forward


def _forward(self, inputs, allowed_mask=None):
    _calls.append(1)
    if len(_calls) == 10 and _clock._host is not None:
        _clock._host.left()
        _time.sleep(4)
        _clock._host.entered("MultiHeadSelfAttention.forward")
    return _honest_forward(self, inputs, allowed_mask)


MultiHeadSelfAttention.forward = _forward
"""))
    run = grade([forger], tmp_path, "--isolate", "--call-timeout", "2")
    result = run.results["forger"]
    assert result["score"] == 100, run.failed_tests("forger")
    assert result["time_budget"]["grader_seconds_in_child"] >= 4 > result["time_budget"]["student_seconds"]


# --- valid work beside heavy state, everywhere ----------------------------------------------------------


class Busy:
    """Two processes computing beside the grading (a loaded 2-core machine)."""

    def __enter__(self):
        self.processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
        return self

    def __exit__(self, *exc):
        for process in self.processes:
            process.kill()
            process.wait()


SANDBOXES = ("bwrap", "process") if processes.bwrap_available() else ("process",)  # CI has bubblewrap (.ci/run)


@pytest.mark.slow
def test_valid_work_beside_heavy_state_scores_full_marks_at_a_desk_and_in_each_sandbox_on_a_busy_machine(tmp_path):
    paths = heavy_state.heavy_files(tmp_path / "class")
    names = {path.stem for path in paths}
    with Busy():
        desk = grade(paths, tmp_path / "desk")
        batches = {
            sandbox: subprocess.run(
                [sys.executable, "-m", "grader", "batch", str(tmp_path / "class"), "--out", str(tmp_path / sandbox),
                 "--sandbox", sandbox, "--jobs", "1"],
                cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
            )
            for sandbox in SANDBOXES
        }
    assert {name: desk.results[name]["score"] for name in names} == dict.fromkeys(names, 100), desk.output[-3000:]
    # The plain-process sandbox started as root runs the student's code as nobody, who can import
    # only what the worker imported before it forked when the interpreter lives where nobody can
    # read it (under /root, say: grader/sandbox/worker.py, warm_up). Not this to change.
    interpreter_hidden = not libraries.children_import_alike()
    for sandbox, finished in batches.items():
        results = json.loads((tmp_path / sandbox / "results.json").read_text())["submissions"]
        scores = {name: results[name]["score"] for name in names}
        hidden = {name for name in names if sandbox == "process" and interpreter_hidden
                  and "ModuleNotFoundError" in results[name]["import_error"]}
        assert {name: score for name, score in scores.items() if name not in hidden} == {
            name: 100 for name in names - hidden}, (sandbox, finished.stdout[-2000:], finished.stderr[-2000:])
        # The student's code spent next to nothing of its budget: the grader's own work is not counted.
        for name in names - hidden - {"figure", "colab_plot", "tqdm_training"}:  # these import or train at the top
            budget = results[name]["time_budget"]
            assert budget["student_seconds"] < 0.05 * budget["submission_seconds"], (sandbox, name, budget)


# --- the principle: what surrounds a module never changes its grade -------------------------------------

# One entry of each kind of the catalogue, every entry that keeps state or draws at random, a few
# valid variants and pairs: each wrapped in one context, the contexts taken in turn.
_KINDS = {}
for _entry in catalogue.MUTANTS:
    _KINDS.setdefault(_entry.kind, []).append(_entry)
SWEPT = [
    *(entries[0] for entries in _KINDS.values()),
    *(entry for entry in catalogue.MUTANTS if entry.kind in ("state", "randomness") and entry is not _KINDS[entry.kind][0]),
    *catalogue.MUTANTS[5::12], *catalogue.VARIANTS[:3], *(catalogue.paired(*pair) for pair in catalogue.PAIRS[:2]),
]


@pytest.mark.slow
def test_a_module_grades_the_same_whatever_its_file_keeps_beside_it(catalogue_run, tmp_path):
    # A module that keeps state between calls computes otherwise once a context has run it (a demo,
    # a training loop: the keys it smoothed with are the demo's): such a module is wrapped in the
    # contexts that only keep things beside it.
    passive = [context for context in heavy_state.CONTEXTS.values() if "MultiHeadSelfAttention(" not in context]
    paths = []
    for index, entry in enumerate(SWEPT):
        contexts = passive if entry.kind == "state" else list(heavy_state.CONTEXTS.values())
        bare = catalogue.write_implementation(entry, tmp_path / "bare")
        wrapped = tmp_path / "wrapped" / bare.name
        wrapped.parent.mkdir(exist_ok=True)
        wrapped.write_text(heavy_state.with_context(bare.read_text(), contexts[index % len(contexts)]))
        paths.append(wrapped)
    run = grade_in_parts(paths, tmp_path, "--grading-seed", str(catalogue_run.seed), timeout=1200)
    differing = {}
    for path in paths:
        wrapped, bare = (what_a_reader_sees(results[path.stem]) for results in (run.results, catalogue_run.results))
        wrapped.pop("output"), bare.pop("output")  # what the code printed: the contexts print
        if wrapped != bare:
            differing[path.stem] = [key for key in bare if wrapped.get(key) != bare[key]]
    assert not differing, f"graded differently beside a context (seed {catalogue_run.seed}): {differing}"
