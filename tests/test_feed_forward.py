"""The course's second exercise, the position-wise feed-forward network, graded as the first is:
the reference at full marks and the stub at 0 at the desk and in a batch, each with the exercise
chosen by GRADER_EXERCISE; its draw service's streams; its catalogue of mutants (each caught by
its named check, named by its mistake where the vocabulary has one) and valid rewrites (full
marks). The first exercise's tests hold it graded as before."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import feed_forward_catalogue as catalogue
from grading import REPO_ROOT, grade

from grader.exercises.feed_forward import data
from grader.exercises.feed_forward.hidden import mistakes
from grader.seam import registry

EXERCISE = "feed_forward"
SOLUTION = REPO_ROOT / "solutions" / "feed_forward.py"
STUB = REPO_ROOT / "exercises" / "feed_forward.py"


@pytest.fixture
def chosen(monkeypatch):
    """This test's gradings grade the feed-forward exercise (the variable every process inherits)."""
    monkeypatch.setenv(registry.CHOSEN, EXERCISE)
    return registry.exercise(EXERCISE)


def test_the_course_teaches_it_after_attention():
    assert registry.course_order()[:2] == ("multi_head_attention", EXERCISE)


def test_the_reference_scores_full_marks_and_the_stub_zero_at_the_desk_with_only_its_own_checks(chosen, tmp_path):
    stub_copy = tmp_path / "stub.py"
    stub_copy.write_text(STUB.read_text())
    run = grade([SOLUTION, stub_copy], tmp_path)
    solution, stub = run.results["feed_forward"], run.results["stub"]
    assert solution["score"] == solution["max_score"] > 0, run.output[-3000:]
    assert stub["score"] == 0 and stub["max_score"] == solution["max_score"]
    # Only this exercise's groups were collected: the first exercise's checks are not run on it.
    assert set(solution["groups"]) == {group.name for group in chosen.groups}
    assert {test["group"] for test in solution["tests"]} == set(solution["groups"])


def test_each_purpose_of_the_grading_seed_draws_a_stream_of_its_own():
    firsts = {purpose.name: data.sizes(purpose, 7, 1).randrange(2**31) for purpose in data.PURPOSES}
    assert len(set(firsts.values())) == len(data.PURPOSES)
    # Pinned: a change in how a purpose derives its generator moves grades, and shows here first.
    assert [purpose.seed_of(7, 1) for purpose in data.PURPOSES] == [55451, 56434, 57434, 58434, 59434]
    assert data.tensors(data.HIDDEN_DATA, 7, 1).initial_seed() == 56434


def test_the_vocabulary_names_each_mistake_once_and_says_it_only_when_one_implementation_matches():
    import torch

    ids = [mistake.id for mistake in mistakes.MISTAKES]
    assert len(set(ids)) == len(ids)
    config = data.Config(2, 3, 5, 7)
    rng = data.generator(3)
    parameters, inputs = data.parameters(config, rng), data.random_inputs(config, rng)
    for mistake in mistakes.MISTAKES:  # each reproduces itself and no other
        assert mistakes.matching(parameters, inputs, mistake.output(parameters, inputs)) is mistake
    assert mistakes.hint(parameters, inputs, torch.zeros(2, 3, 5)) == ""


def gradebook(out: Path) -> dict[str, dict]:
    with open(out / "gradebook.csv", newline="") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


@pytest.mark.slow
def test_a_batch_grades_the_reference_full_and_the_stub_zero(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.py").write_text(SOLUTION.read_text())
    (folder / "bob.py").write_text(STUB.read_text())
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(tmp_path / "out"), "--quiet", "--jobs", "1"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        env=os.environ | {registry.CHOSEN: EXERCISE},
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    rows = gradebook(tmp_path / "out")
    assert rows["alice"]["score"] == rows["alice"]["max_score"] and int(rows["alice"]["score"]) > 0
    assert rows["bob"]["score"] == "0"
    assert {"positions", "nonlinearity", "dropout"} <= set(rows["alice"])  # its own groups, its own columns


@pytest.mark.slow
def test_each_mutant_fails_its_check_and_each_valid_rewrite_scores_full_marks(chosen, tmp_path):
    folder = tmp_path / "catalogue"
    folder.mkdir()
    entries = (*catalogue.MUTANTS, *catalogue.VARIANTS)
    for entry in entries:
        (folder / f"{entry.name}.py").write_text(entry.source())
    run = grade([folder / f"{entry.name}.py" for entry in entries], tmp_path)
    problems = []
    for entry in catalogue.VARIANTS:
        result = run.results[entry.name]
        if result["score"] != result["max_score"]:
            problems.append(f"{entry.name}: a valid rewrite scored {result['score']}/{result['max_score']}: "
                            + "; ".join(t["message"][:200] for t in result["tests"] if t["outcome"] != "passed"))
    for entry in catalogue.MUTANTS:
        result = run.results[entry.name]
        failed = [test for test in result["tests"] if test["outcome"] != "passed"]
        said = "\n".join(test["message"] for test in failed)
        if not any(test["name"].startswith(f"{entry.caught_by}[") or test["name"] == entry.caught_by for test in failed):
            problems.append(f"{entry.name}: {entry.caught_by} passed")
        if result["groups"][entry.group]["earned"] == result["groups"][entry.group]["max"]:
            problems.append(f"{entry.name}: lost nothing in {entry.group}")
        lost = {group for group, points in result["groups"].items() if points["earned"] < points["max"]}
        if entry.alone and lost != {entry.group}:
            problems.append(f"{entry.name}: lost points in {sorted(lost)}, not in {entry.group} alone")
        if entry.mistake and f"(known mistake: {entry.mistake})" not in said:
            problems.append(f"{entry.name}: its mistake {entry.mistake} is not named")
        named = {mistake.id for mistake in mistakes.MISTAKES if f"(known mistake: {mistake.id})" in said}
        if named - {entry.mistake}:
            problems.append(f"{entry.name}: named {sorted(named - {entry.mistake})}")
        problems += [f"{entry.name}: does not say {text!r}" for text in entry.must_read if text not in said]
    problems += diagnosis_problems(run.results)
    assert not problems, "\n".join(problems)


def diagnosis_problems(results: dict[str, dict]) -> list[str]:
    """What the engine's diagnosis got wrong on the catalogue's results (the desk's results, or a
    batch's): each mutant the vocabulary covers named by its mistake and by nothing else, no
    valid rewrite diagnosed, and a mutant outside the vocabulary never given a known name."""
    problems = []
    for entry in (*catalogue.MUTANTS, *catalogue.VARIANTS):
        named = {d["mistake"] for d in results[entry.name].get("diagnoses", []) if d.get("mistake") in mistakes.BY_ID}
        diagnosed = results[entry.name].get("diagnoses", [])
        if entry in catalogue.VARIANTS and diagnosed:
            problems.append(f"{entry.name}: a valid rewrite was diagnosed {diagnosed}")
        elif entry.mistake and named != {entry.mistake}:
            problems.append(f"{entry.name}: the diagnosis named {sorted(named)}, not {entry.mistake}")
        elif not entry.mistake and named:
            problems.append(f"{entry.name}: outside the vocabulary, the diagnosis named {sorted(named)}")
    return problems


@pytest.mark.slow
def test_a_batch_diagnoses_each_mutant_the_vocabulary_covers_and_no_valid_rewrite(tmp_path):
    folder = tmp_path / "catalogue"
    folder.mkdir()
    for entry in (*catalogue.MUTANTS, *catalogue.VARIANTS):
        (folder / f"{entry.name}.py").write_text(entry.source())
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(tmp_path / "out"), "--quiet", "--jobs", "2",
         "--exercise", EXERCISE],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    results = {path.stem: json.loads(path.read_text()) for path in (tmp_path / "out" / "results").glob("*.json")}
    problems = diagnosis_problems(results)
    # The feedback page says the mistake the results name (its title, from the one entry of the vocabulary).
    for entry in catalogue.MUTANTS:
        page = (tmp_path / "out" / "feedback" / f"{entry.name}.md").read_text()
        if entry.mistake and f"`{mistakes.FORWARD}`: {mistakes.BY_ID[entry.mistake].title}." not in page:
            problems.append(f"{entry.name}: its feedback page does not say {mistakes.BY_ID[entry.mistake].title!r}")
    assert not problems, "\n".join(problems)


def test_the_hint_and_the_diagnosis_read_each_mistake_from_one_entry():
    import torch

    vocabulary = registry.module(registry.exercise(EXERCISE), registry.exercise(EXERCISE).mistakes)
    assert vocabulary.BY_ID is mistakes.BY_ID and set(vocabulary.BY_ID) == {m.id for m in mistakes.MISTAKES}
    assert vocabulary.REFERENCE_STEPS is mistakes.REFERENCE_STEPS
    config = data.Config(2, 3, 5, 7)
    rng = data.generator(4)
    parameters, inputs = data.parameters(config, rng, torch.float64), data.random_inputs(config, rng, torch.float64)
    reference = mistakes.forward(mistakes.REFERENCE_STEPS[mistakes.FORWARD], parameters, inputs)
    for mistake in mistakes.MISTAKES:
        # The hint names the entry the diagnosis's candidates are made of, computing the same numbers.
        (form,) = mistake.forms_in(mistakes.FORWARD)
        candidate = mistakes.forward(vocabulary.REFERENCE_STEPS[mistakes.FORWARD] | form, parameters, inputs)
        assert mistakes.matching(parameters, inputs, candidate) is vocabulary.BY_ID[mistake.id]
        assert not torch.allclose(candidate, reference, atol=1e-6), f"{mistake.id} computes the reference"
        assert f"(known mistake: {mistake.id})" in mistakes.hint(parameters, inputs, candidate)


def test_the_probes_are_drawn_from_the_grading_seed():
    from grader.exercises.feed_forward.hidden import probes

    first, again, other = (probes.for_seed(seed)[mistakes.FORWARD] for seed in (11, 11, 4242))
    assert [p.config for p in first] == [p.config for p in again]
    assert [p.config for p in first] != [p.config for p in other]
    assert not torch_equal(first[0].data()["inputs"], other[0].data()["inputs"])
    for probe in first:
        assert not data.sizes_alike(probe.config) and probe.data()["inputs"].dtype == probes.DTYPE


def torch_equal(a, b) -> bool:
    return a.shape == b.shape and bool((a == b).all())


def test_its_stub_is_the_one_generated_from_its_solution_and_names_its_lesson(tmp_path):
    checked = subprocess.run(
        [sys.executable, "-m", "grader", "stubs", "--check"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL, env=os.environ | {registry.CHOSEN: EXERCISE},
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lesson = registry.exercise(EXERCISE).lesson
    assert f"The lesson is in {lesson}" in STUB.read_text() and (REPO_ROOT / "exercises" / lesson).is_file()
