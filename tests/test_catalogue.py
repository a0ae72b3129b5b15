"""The grader catches realistic mistakes and accepts valid rewrites.

Every mutant of tests/catalogue.py must lose points in each group it names; every valid
variant must score full marks. All of them are graded in one grader run.
"""

from __future__ import annotations

import pytest

import catalogue
from grading import grade


@pytest.fixture(scope="module")
def catalogue_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("catalogue")
    paths = [catalogue.write_implementation(impl, folder) for impl in (*catalogue.MUTANTS, *catalogue.VARIANTS)]
    return grade(paths, tmp_path_factory.mktemp("results"))


def test_the_catalogue_is_large_enough():
    assert len(catalogue.MUTANTS) >= 20
    assert len(catalogue.VARIANTS) >= 8


@pytest.mark.parametrize("mutant", catalogue.MUTANTS, ids=[m.name for m in catalogue.MUTANTS])
def test_mutant_loses_points_in_the_groups_it_breaks(catalogue_run, mutant):
    lost = catalogue_run.lost_groups(mutant.name)
    missed = set(mutant.losing_groups) - lost
    assert not missed, (
        f"{mutant.name} ({mutant.description}) kept full marks in {sorted(missed)}; "
        f"it lost points only in {sorted(lost)}"
    )
    assert catalogue_run.score(mutant.name) < 100


@pytest.mark.parametrize("variant", catalogue.VARIANTS, ids=[v.name for v in catalogue.VARIANTS])
def test_valid_variant_scores_full_marks(catalogue_run, variant):
    failures = [f"{t['name']}: {t['message'][:300]}" for t in catalogue_run.failed_tests(variant.name)]
    assert catalogue_run.score(variant.name) == 100, f"{variant.name} ({variant.description}) lost points:\n" + "\n".join(failures)


def test_failure_messages_say_what_was_expected_and_what_came_back(catalogue_run):
    """No bare assertion and no tensor dump reaches a student."""
    for mutant in catalogue.MUTANTS:
        for test in catalogue_run.failed_tests(mutant.name):
            message = test["message"]
            assert message, f"{mutant.name}/{test['name']} failed without a message"
            raw_pytest_output = any(line.startswith(("E ", "> ", "AssertionError")) for line in message.splitlines())
            leaked = raw_pytest_output or any(s in message for s in ("Traceback", "tensor(["))
            assert not leaked, f"{mutant.name}/{test['name']} shows raw pytest output:\n{message}"
            explained = any(s in message for s in ("expected", "your code raised", "not written yet", "timed out"))
            assert explained, f"{mutant.name}/{test['name']} does not say what was expected:\n{message}"
            assert len(message) < 1200, f"{mutant.name}/{test['name']} has a {len(message)}-character message"
