"""Grades that do not depend on the answer cache.

The grader asks each distinct question of a student's code once and reuses the answer
(grader/submission.py); ``--ask-every-time`` turns that off. A module whose answers to the
same question change (a count of its calls, a cache of its own) would otherwise score
differently with and without the reuse (95 against 85 for a head that scales the scores only
the first time it sees an input). The first reuses ask the code again and compare: an answer
that changed ends the reuse before any answer was reused, so the grade is the one asking
afresh gives, at the desk (in-process) and in the batch (the sandbox) alike, and the student
is told, with the question asked twice and how the answers differ.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys

import pytest
import torch

import catalogue
from grader import submission as submissions
from grader.feedback import root_causes
from grader.exercises.multi_head_attention.handle import AttentionSubmission as Submission
from grader.submission import ErrorDescription
from grading import REPO_ROOT, grade, what_a_reader_sees

# Both kinds of state: answers that change with every call, and answers that change once after
# a question's first asking; beside them a module that draws random numbers and the solution.
STATEFUL = ("calls_counted_on_the_head", "scaled_on_first_sight", "output_remembered_by_shape", "keys_smoothed_with_the_last_call")
OTHERS = ("dropout_on_the_weights",)
SEED = "7"


class ScriptedBackend:
    """Answers ``causal_mask(n)`` with ``answer(n, how many calls so far)``; counts the calls."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.calls = 0

    def call(self, operation, **arguments):
        self.calls += 1
        value = self.answer(arguments["seq_len"], self.calls)
        return (None, value) if isinstance(value, ErrorDescription) else (value, None)

    def close(self) -> None:
        pass


def handle(answer, reuse: bool = True) -> Submission:
    return Submission("s", REPO_ROOT / "s.py", ScriptedBackend(answer), reuse_answers=reuse)


def ask(submission: Submission, sizes: list[int]) -> list:
    answers = []
    for index, seq_len in enumerate(sizes):
        submission.current_check = f"check_{index}"
        try:
            answers.append(submission.causal_mask(seq_len))
        except submissions.StudentCodeError as error:
            answers.append(error.error.type_name)
    return answers


def test_a_steady_module_is_asked_again_for_its_first_reuses_only():
    steady = handle(lambda n, calls: torch.ones(n, n, dtype=torch.bool).tril())
    ask(steady, [2, 3, 2, 3, 2, 3, 2])
    # 2 and 3 asked, then their first reuses asked again and compared, then reused.
    assert steady.backend.calls == 2 + submissions.REUSES_ASKED_AGAIN
    assert steady.changed_answer is None and steady.answers is not None


def test_an_answer_that_changes_ends_the_reuse_and_is_told_with_its_evidence():
    drifting = handle(lambda n, calls: torch.full((n, n), float(calls)))
    ask(drifting, [2, 3, 2, 3, 2, 3])
    assert drifting.backend.calls == 6  # every call reached the code: none was reused
    changed = drifting.changed_answer
    assert (changed.operation, changed.first_check, changed.again_check) == ("causal_mask", "check_0", "check_2")
    assert changed.sizes == (("seq_len", 2),)
    (difference,) = changed.differences
    assert (difference.how, difference.differing, difference.total, difference.largest) == ("values", 4, 4, 2.0)
    said = root_causes.changed_answer_evidence(changed)
    assert "check_2 asked your causal_mask (seq_len=2) the question check_0 had asked" in said
    assert "4 of 4 entries of the answer differ (largest difference 2)" in said


def test_nan_where_the_first_answer_had_nan_is_the_same_answer():
    with_nan = handle(lambda n, calls: torch.tensor([float("nan"), 1.0, float("inf")]))
    ask(with_nan, [2, 2, 2, 2])
    assert with_nan.changed_answer is None
    moved = handle(lambda n, calls: torch.tensor([float("nan"), 1.0]) if calls == 1 else torch.tensor([1.0, float("nan")]))
    ask(moved, [2, 2])
    (difference,) = moved.changed_answer.differences
    assert (difference.differing, difference.largest) == (2, None)  # NaN against a number: no difference to quote
    assert "a NaN or an infinity where the other answer has another number" in root_causes.changed_answer_evidence(moved.changed_answer)


def test_an_error_that_becomes_a_value_is_a_changed_answer_said_in_the_graders_words():
    raised = ErrorDescription("raised", "__Boom__", "no")  # a class of the student's, named in Markdown's bold
    first_raises = handle(lambda n, calls: raised if calls == 1 else torch.ones(n, n, dtype=torch.bool))
    assert ask(first_raises, [2, 2])[0] == "__Boom__"
    said = root_causes.changed_answer_evidence(first_raises.changed_answer)
    # A class of the student's is not named (its name is the student's text, read as Markdown).
    assert "first your code raised an exception, then it returned" in said and "Boom" not in said
    value_error = handle(lambda n, calls: ErrorDescription("raised", "ValueError", "no") if calls == 1 else torch.ones(1))
    ask(value_error, [2, 2])
    assert "first your code raised ValueError, then it returned" in root_causes.changed_answer_evidence(value_error.changed_answer)


@pytest.mark.parametrize("changes", [False, True], ids=["steady", "changing"])
def test_asked_every_time_the_same_questions_are_compared_and_the_same_evidence_kept(changes):
    def answer(n, calls):
        return torch.full((n,), float(calls if changes else 1))

    reused, every_time = handle(answer), handle(answer, reuse=False)
    sizes = [2, 3, 2, 3, 2, 3, 2, 3]
    ask(reused, sizes)
    ask(every_time, sizes)
    assert every_time.backend.calls == len(sizes)
    assert reused.changed_answer == every_time.changed_answer
    assert (reused.changed_answer is not None) == changes
    assert every_time.reuses_asked_again == reused.reuses_asked_again  # compared where reusing compares, no more


class StatefulBackend:
    """A head's forward that reports a change of what it keeps on every call (as grader/exercises/multi_head_attention/operations.py
    does) and whose answers agree with the first ones for its first ``steady`` calls, then differ."""

    def __init__(self, steady: int, reports_state: bool = True) -> None:
        self.steady, self.reports_state, self.calls = steady, reports_state, 0

    def call(self, operation, **arguments):
        self.calls += 1
        value = 1.0 if self.calls <= self.steady else 2.0
        n = arguments["inputs"].shape[-1]
        answer = {"output": torch.full((n,), value), "weights": torch.ones(n)}
        return answer | ({"state_changed": True} if self.reports_state else {}), None

    def close(self) -> None:
        pass


def forward_passes(submission: Submission, sizes: list[int]) -> None:
    for index, n in enumerate(sizes):
        submission.current_check = f"check_{index}"
        submission.run_head(inputs=torch.zeros(n), parameters={})


@pytest.mark.parametrize("reuse", [True, False], ids=["reused", "asked every time"])
def test_a_module_that_changes_what_it_keeps_is_asked_every_question_afresh_though_its_first_reuses_agree(reuse):
    sizes = [2, 3, 2, 3, 2, 3, 2]  # answers change from the fifth call on, after the first two reuses agreed
    stateful = Submission("s", REPO_ROOT / "s.py", StatefulBackend(steady=4), reuse_answers=reuse)
    forward_passes(stateful, sizes)
    assert stateful.keeps_state and stateful.backend.calls == len(sizes)
    changed = stateful.changed_answer
    assert (changed.first_check, changed.again_check) == ("check_0", "check_4")
    # Without the report of a change of state, the first two reuses agreeing let the rest be reused.
    unseen = Submission("s", REPO_ROOT / "s.py", StatefulBackend(steady=4, reports_state=False), reuse_answers=reuse)
    forward_passes(unseen, sizes)
    assert not unseen.keeps_state and unseen.changed_answer is None


# --- graded: the two kinds of state, at the desk and in the batch ---------------------------------


@pytest.fixture(scope="module")
def class_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stateful")
    by_name = {m.name: m for m in catalogue.MUTANTS}
    for name in (*STATEFUL, *OTHERS):
        catalogue.write_implementation(by_name[name], folder)
    (folder / "solution.py").write_text(catalogue.SOLUTION_PATH.read_text())
    return folder


def _paths(folder):
    return sorted(folder.glob("*.py"))


@pytest.fixture(scope="module")
def at_the_desk(class_folder, tmp_path_factory):
    """As a student grades: ``pytest grader`` in the student release (in-process, no hidden
    group), answers reused, and every call asked afresh."""
    release = tmp_path_factory.mktemp("release") / "mha-exercise"
    built = subprocess.run([sys.executable, "-m", "grader", "release", str(release)], cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    reused = grade(_paths(class_folder), tmp_path_factory.mktemp("reused"), "--grading-seed", SEED, cwd=release)
    afresh = grade(_paths(class_folder), tmp_path_factory.mktemp("afresh"), "--grading-seed", SEED, "--ask-every-time", cwd=release)
    return reused, afresh


@pytest.mark.slow  # a student release and two runs of it: some 20 s
def test_at_the_desk_a_module_whose_answers_change_is_graded_as_if_every_call_were_asked_afresh(at_the_desk):
    reused, afresh = at_the_desk
    assert reused.results.keys() == afresh.results.keys()
    for name in reused.results:  # the same bytes a reader sees: score, outcomes, messages, evidence
        assert what_a_reader_sees(reused.results[name]) == what_a_reader_sees(afresh.results[name]), name
    assert reused.score("solution") == reused.results["solution"]["max_score"] == 85  # the desk's points


@pytest.mark.slow  # shares the release's runs
@pytest.mark.parametrize("name", STATEFUL)
def test_the_student_is_told_which_question_was_asked_twice_and_what_differed(at_the_desk, name):
    reused, _ = at_the_desk
    (entry,) = reused.results[name]["diagnoses"]
    assert entry["mistake"] == root_causes.NONDETERMINISTIC
    why = entry["why"]
    # the question another check had asked, or one check's question asked twice
    assert re.search(r"(had asked|the same question twice), and the answer differed", why), why
    assert re.search(r"entries of [^ ]+( [^ ]+)? differ \(largest difference", why), why
    assert root_causes.AFRESH in why
    assert name not in why  # the checks are named without the submission's id (the student's text)
    assert set(entry["explains"]) == {t["name"] for t in reused.failed_tests(name)}


@pytest.fixture(scope="module")
def in_the_batch(class_folder, tmp_path_factory):
    """The batch (its sandbox, answers reused) against the sandbox asked every time."""
    out = tmp_path_factory.mktemp("batch") / "out"
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(class_folder), "--out", str(out), "--quiet", "--no-report",
         "--grading-seed", SEED, "--jobs", "1"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    with (out / "gradebook.csv").open(newline="") as file:
        batch_scores = {row["submission"]: int(row["score"]) for row in csv.DictReader(file)}
    batch_results = {path.stem: json.loads(path.read_text()) for path in (out / "results").glob("*.json")}  # one file a student
    afresh = grade(_paths(class_folder), tmp_path_factory.mktemp("isolated"), "--grading-seed", SEED, "--isolate", "--ask-every-time")
    return batch_scores, batch_results, afresh


@pytest.mark.slow  # a batch and a sandboxed run: some 20 s
def test_in_the_batch_a_module_whose_answers_change_scores_what_asking_afresh_gives(in_the_batch):
    batch_scores, batch_results, afresh = in_the_batch
    assert batch_scores == {name: afresh.score(name) for name in afresh.results}
    for name in afresh.results:
        outcomes = [(t["name"], t["outcome"]) for t in batch_results[name]["tests"]]
        assert outcomes == [(t["name"], t["outcome"]) for t in afresh.results[name]["tests"]], name
    for name in STATEFUL:
        (entry,) = batch_results[name]["diagnoses"]
        assert ", and the answer differed" in entry["why"]
