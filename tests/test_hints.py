"""A hint speaks only where its premise holds.

Every hint of the grader's checks names a cause ("you divided by head_dim", "your mask marks
the future"). Here each hint is matched by a phrase, and the submissions it may appear in are
those whose code has that cause: catalogue mutants, and a few more written the way students
write them (a hand-written softmax, torch.where for the mask, heads averaged). A hint shown
to code without its cause fails the test; so does a hint missing where its cause is.
Which submission has which cause is the catalogue's to say (tests/catalogue.py: STYLES,
PREMISES, FACTS, HINTS_GRADED): here are only the tests.
"""

from __future__ import annotations

import pytest

import catalogue
from catalogue import FACTS, PREMISES, STYLES
from grading import GradingRun, grade


def hints_of(run, name: str) -> list[str]:
    return [line.strip() for test in run.failed_tests(name) for line in test["message"].splitlines()
            if line.strip().startswith("hint:")]


@pytest.fixture(scope="module")
def graded(catalogue_run, tmp_path_factory):
    """The catalogue's entries from the run's grading of the whole catalogue (tests/conftest.py), and
    the styles graded here on the same seed: (each submission's result, the names read here)."""
    folder = tmp_path_factory.mktemp("hints")
    styles = grade([catalogue.write_implementation(impl, folder) for impl in STYLES], folder,
                   "--grading-seed", str(catalogue_run.seed))
    results = {name: catalogue_run.results[name] for name in catalogue.HINTS_GRADED} | styles.results
    return GradingRun(0, "", results), [*catalogue.HINTS_GRADED, *(impl.name for impl in STYLES)]


@pytest.fixture(scope="module")
def hints(graded):
    run, names = graded
    return {name: hints_of(run, name) for name in names}


@pytest.fixture(scope="module")
def messages(graded):
    run, names = graded
    return {name: [test["message"] for test in run.failed_tests(name)] for name in names}


@pytest.mark.parametrize("phrase", list(FACTS))
def test_a_fact_about_the_code_is_said_exactly_where_it_is_true(messages, phrase):
    said = {name for name, texts in messages.items() if any(phrase in text for text in texts)}
    wrongly = {name: next(text for text in messages[name] if phrase in text)[:300] for name in said - FACTS[phrase]}
    assert not wrongly, f"{phrase!r} said where it is false: {wrongly}"
    assert FACTS[phrase] <= said, f"{phrase!r} missing where it is true: {sorted(FACTS[phrase] - said)}"


@pytest.mark.parametrize("phrase", list(PREMISES))
def test_a_hint_appears_exactly_where_its_premise_holds(hints, phrase):
    shown = {name for name, lines in hints.items() if any(phrase in line for line in lines)}
    wrongly = {name: [line for line in hints[name] if phrase in line][:1] for name in shown - PREMISES[phrase]}
    assert not wrongly, f"{phrase!r} shown where its premise is false: {wrongly}"
    assert PREMISES[phrase] <= shown, f"{phrase!r} missing where its premise holds: {sorted(PREMISES[phrase] - shown)}"


def test_code_that_uses_torch_softmax_is_never_told_to_use_it(hints):
    """The issue's first case: the overflow hint shown to code that calls torch.softmax."""
    by_name = {impl.name: impl for impl in (*catalogue.MUTANTS, *catalogue.VARIANTS, *STYLES)}
    uses_softmax = {name for name in hints if "torch.softmax(" in catalogue.implementation_source(by_name[name])}
    told = {name for name in uses_softmax if any("torch.softmax" in line and "exp" in line for line in hints[name])}
    assert uses_softmax and not told, told


def test_valid_rewrites_get_no_hint(hints):
    assert not any(hints[name] for name in ("softmax_by_hand", "einsum_everywhere", "where_with_finfo_min"))
