"""The feed-forward exercise's focused example (exercises/feed_forward_example.py): the lesson's
point, that a change at one position moves that position's output only, shown on the
student's own code; each of its checks caught by the catalogue's mutants of that kind, and
every valid rewrite passing. Run in this process (the catalogue is ours, not a student's)."""

from __future__ import annotations

import importlib.util
import re

import pytest

import feed_forward_catalogue
from grading import REPO_ROOT
from grader.seam import registry

EXERCISE = registry.exercise("feed_forward")
EXAMPLE_FILE = REPO_ROOT / "exercises" / EXERCISE.example.file
# The example's check each mutant must fail: the kinds of mistake it can see. (Its one
# sequence cannot see the batch and position axes swapped: the grader's checks do.)
FAILS = {
    "activation_left_out": "the activation bends it",
    "positions_mixed_by_a_mean": "moves position 2's output only",
    "widened_by_four": "the hidden layer is 16 wide",
    "dropout_on_in_evaluation": "dropout is off",
}


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("feed_forward_example", EXAMPLE_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_on(example, source: str, tmp_path, capsys, monkeypatch) -> tuple[int, str]:
    code = tmp_path / EXERCISE.student_file
    code.write_text(source, encoding="utf-8")
    monkeypatch.setattr(example, "STUDENT_FILE", code)
    returncode = example.main([])
    return returncode, capsys.readouterr().out


def test_the_exercise_declares_its_example_and_the_release_ships_it():
    assert EXAMPLE_FILE.is_file() and EXERCISE.example.file in EXERCISE.handed_out


def test_on_the_reference_every_check_passes_and_only_the_changed_position_moves(example, tmp_path, capsys, monkeypatch):
    returncode, output = run_on(example, (REPO_ROOT / "solutions" / EXERCISE.solution).read_text(), tmp_path, capsys, monkeypatch)
    assert returncode == 0 and "✗" not in output, output
    assert len([line for line in output.splitlines() if line.startswith("✓")]) == len(example.CHECKS), output
    moved = {int(position): float(value) for position, value in re.findall(r"position (\d): (\d+\.\d+)", output)}
    assert moved[example.CHANGED] > 0 and all(value == 0 for position, value in moved.items() if position != example.CHANGED), output


def test_on_the_stub_it_names_the_function_to_write_first(example, tmp_path, capsys, monkeypatch):
    returncode, output = run_on(example, (REPO_ROOT / "exercises" / EXERCISE.student_file).read_text(), tmp_path, capsys, monkeypatch)
    assert returncode == 1 and f"not written yet: {EXERCISE.functions[0]}" in output and "Traceback" not in output, output


@pytest.mark.parametrize("name", sorted(FAILS))
def test_a_mutant_of_its_kind_fails_the_check_that_sees_it(name, example, tmp_path, capsys, monkeypatch):
    entry = next(entry for entry in feed_forward_catalogue.MUTANTS if entry.name == name)
    returncode, output = run_on(example, entry.source(), tmp_path, capsys, monkeypatch)
    crosses = [line for line in output.splitlines() if line.startswith("✗")]
    assert returncode == 1 and any(FAILS[name] in line for line in crosses), output


@pytest.mark.parametrize("entry", feed_forward_catalogue.VARIANTS, ids=lambda entry: entry.name)
def test_a_valid_rewrite_passes_every_check(entry, example, tmp_path, capsys, monkeypatch):
    returncode, output = run_on(example, entry.source(), tmp_path, capsys, monkeypatch)
    assert returncode == 0 and "✗" not in output, output


def test_an_output_of_nan_is_said_so_and_never_read_as_a_mistake_it_is_not(example, tmp_path, capsys, monkeypatch):
    source = (REPO_ROOT / "solutions" / EXERCISE.solution).read_text()
    returned = "return self.dropout(output)  # (batch, seq, model_dim)"
    assert source.count(returned) == 1
    returncode, output = run_on(example, source.replace(returned, 'return self.dropout(output) * float("nan")'), tmp_path, capsys, monkeypatch)
    crosses = [line for line in output.splitlines() if line.startswith("✗")]
    assert returncode == 1 and len(crosses) == 4 and all(example.NOT_FINITE in line for line in crosses), output
    assert "ignores its input" not in output and "dropout is left on" not in output and "is affine" not in output, output
