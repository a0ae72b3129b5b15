"""exercises/train.py: the lesson's experiment, trained.

Two heads each take one of the task's two retrieval patterns; one head of the same width
ends far above them; heads that share one set of weights do not specialise; a module that is
not written is refused with a pointer to the grader, not trained.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tiers

import catalogue

REPO = Path(__file__).resolve().parent.parent
TRAIN_FILE = REPO / "exercises" / "train.py"
EXAMPLE_FILE = REPO / "exercises" / "example.py"
EXERCISE_NAME = "multi_head_attention.py"


def run_train(*arguments: str, folder: Path = REPO / "exercises", prelude: str = "") -> subprocess.CompletedProcess:
    """train.py as a student runs it (``prelude``: Python run first, in the same process)."""
    script = folder / TRAIN_FILE.name
    code = f"{prelude}\nimport runpy, sys\nsys.argv = [{str(script)!r}, *{list(arguments)!r}]\nrunpy.run_path({str(script)!r}, run_name='__main__')"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=folder.parent, env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        capture_output=True, text=True, encoding="utf-8", timeout=300,
    )


def exercises_folder(tmp_path: Path, source: str | None) -> Path:
    """A student's exercises/ folder: train.py, example.py and ``source`` as their module."""
    folder = tmp_path / "exercises"
    folder.mkdir()
    for path in (TRAIN_FILE, EXAMPLE_FILE):
        shutil.copy(path, folder / path.name)
    if source is not None:
        (folder / EXERCISE_NAME).write_text(source, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # the experiment trained
def reference_run(tmp_path_factory):
    """One run on the reference with --heads 1: the one head, then two heads beside it."""
    folder = tmp_path_factory.mktemp("train")
    finished = run_train("--solution", "--heads", "1", "--json", str(folder / "figures.json"))
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return finished, json.loads((folder / "figures.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_two_heads_each_take_a_different_pattern(reference_run):
    _, figures = reference_run
    two = figures["compared_with"]
    assert two["num_heads"] == 2, two
    assert {head["attends"] for head in two["heads"]} == {"previous token", "first token"}, two
    assert all(head["share"] >= 0.8 for head in two["heads"]), two


@pytest.mark.slow
def test_one_head_of_the_same_width_ends_at_three_times_the_loss_of_two(reference_run):
    finished, figures = reference_run
    assert figures["num_heads"] == 1 and len(figures["heads"]) == 1, figures
    assert figures["final_loss"] >= 3 * figures["compared_with"]["final_loss"], figures
    assert "One head lost a retrieval pattern" in finished.stdout, finished.stdout


@pytest.mark.slow
def test_the_run_prints_each_heads_attention_before_and_after_and_its_time(reference_run):
    finished, _ = reference_run
    out = finished.stdout
    assert out.count("before training (row = query position") == 2 and out.count("after training (row") == 2, out
    assert "head 0" in out and "head 1" in out and "The heads specialised" in out, out
    assert " s (" in out and "ms a step" in out, out  # the benchmark figure: the run's time


@pytest.mark.slow
def test_training_repeats_exactly_under_its_seed():
    spec = importlib.util.spec_from_file_location("train_under_test", TRAIN_FILE)
    train = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = train  # its dataclasses look their module up while being built
    spec.loader.exec_module(train)
    mha = train.example.load(REPO / "solutions" / EXERCISE_NAME)
    first, second = (train.train(mha, 2, steps=30, progress=False) for _ in range(2))
    assert first.losses == second.losses and first.final_loss == second.final_loss
    assert first.losses[0] != first.losses[-1]  # it did train


@pytest.mark.slow
def test_heads_that_share_one_set_of_weights_do_not_specialise(tmp_path):
    mutant = next(m for m in catalogue.MUTANTS if m.name == "shared_head_module")
    folder = exercises_folder(tmp_path, catalogue.implementation_source(mutant))
    finished = run_train("--json", str(tmp_path / "figures.json"), folder=folder)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    heads = json.loads((tmp_path / "figures.json").read_text(encoding="utf-8"))["heads"]
    assert heads[0]["attends"] == heads[1]["attends"] and heads[0]["share"] == heads[1]["share"], heads
    assert "heads 0 and 1 have the same matrix" in finished.stdout, finished.stdout  # the warning, before training
    assert "The heads did not specialise: they have the same attention matrix" in finished.stdout, finished.stdout


@pytest.mark.slow
def test_the_stubs_are_not_trained_and_the_grader_is_named():
    finished = run_train()  # exercises/ holds the stubs
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert "is not ready to train: not written yet: MultiHeadSelfAttention.__init__" in finished.stdout, finished.stdout
    assert "pytest grader" in finished.stdout and "Traceback" not in finished.stderr, finished.stdout + finished.stderr
    assert "training" not in finished.stderr  # no progress line: nothing was trained


@pytest.mark.slow
def test_a_module_that_fails_a_quick_check_is_not_trained(tmp_path):
    source = (REPO / "solutions" / EXERCISE_NAME).read_text(encoding="utf-8")
    wrong = source.replace('scores = scores.masked_fill(~allowed_mask, float("-inf"))', "scores = scores")
    folder = exercises_folder(tmp_path, wrong)
    finished = run_train(folder=folder)
    assert finished.returncode == 1, finished.stdout
    assert "not ready to train: future is zero: head 0: query 0 gives future key 1" in finished.stdout, finished.stdout
    assert "pytest grader" in finished.stdout


@pytest.mark.slow
def test_solution_says_cleanly_that_the_release_has_none(tmp_path):
    folder = exercises_folder(tmp_path, (REPO / "exercises" / EXERCISE_NAME).read_text(encoding="utf-8"))
    finished = run_train("--solution", folder=folder)
    assert finished.returncode == 1 and "absent" in finished.stdout, finished.stdout
    assert "Traceback" not in finished.stderr, finished.stderr


@pytest.mark.slow
def test_plot_without_matplotlib_says_how_to_get_it_before_training():
    finished = run_train("--solution", "--plot", "unused.png", prelude="import sys; sys.modules['matplotlib'] = None")
    assert finished.returncode == 2, finished.stdout + finished.stderr
    assert "--plot needs matplotlib" in finished.stdout and "pip install matplotlib" in finished.stdout, finished.stdout
    assert "Training" not in finished.stdout


@pytest.mark.slow
def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    finished = run_train("--solution", "--plot", str(tmp_path / "attention.png"))
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert (tmp_path / "attention.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
