"""The grader catches realistic mistakes, accepts valid rewrites, and names the mistakes it knows.

Every mutant of tests/catalogue.py must lose points in each group it names and be diagnosed
with exactly its vocabulary id (a mutant without one: with no known id); each of the PAIRS
with both ids; every valid variant must score full marks and get no diagnosis. All of them
are graded in one grader run.
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

import catalogue
from grading import grade, grade_in_parts, what_a_reader_sees
from sentences import misnamed_non_numbers

from grader.feedback import diagnosis_text, root_causes
from grader.exercises.multi_head_attention.hidden import mistakes


# catalogue_run (tests/conftest.py): the whole catalogue, graded once per test run on a seed
# drawn for that run (tests/shared.py), and shared with the other files that read it.


def assert_asking_every_time_changes_nothing_a_reader_sees(reused, asked, seed: int) -> None:
    # The grader asks the student's code each distinct question once (grader/submission.py's
    # answers); asked every time instead, the same submissions must grade to the same bytes. A
    # module whose answers change from call to call (random numbers, a count of calls, a cache
    # of its own) is found at its first reused answer, before any was reused, and then asked
    # every time: it too grades to the same bytes, its numbers and its evidence included.
    assert asked.results.keys() == reused.results.keys()
    differing = [
        name for name in reused.results
        if what_a_reader_sees(asked.results[name]) != what_a_reader_sees(reused.results[name])
    ]
    assert not differing, f"graded differently when every call reached the code (seed {seed}): {differing}"


def test_reusing_answers_changes_no_score_no_sentence_and_no_picture(catalogue_run, tmp_path):
    """The whole catalogue, asked every time (the slow tier: tests/tiers.py marks every test of
    catalogue_run)."""
    asked = grade_in_parts(catalogue_run.paths, tmp_path, "--grading-seed", str(catalogue_run.seed), "--ask-every-time", timeout=1800)
    changing = {name for name in catalogue_run.results if root_causes.NONDETERMINISTIC in catalogue_run.diagnosed(name)}
    assert {"dropout_on_the_weights", "calls_counted_on_the_head", "scaled_on_first_sight"} <= changing
    assert_asking_every_time_changes_nothing_a_reader_sees(catalogue_run, asked, catalogue_run.seed)


# The fast tier's guard of the same: the first mistake of each family the report counts (the first
# catalogue, a student's style, a contract slip, randomness, in place), a valid variant and a pair.
FAMILIES = ("", "style", "contract", "randomness", "in_place")
SAMPLE = (
    *(next(entry for entry in catalogue.MUTANTS if entry.kind == kind) for kind in FAMILIES),
    catalogue.VARIANTS[0], catalogue.paired(*catalogue.PAIRS[0]),
)


def test_reusing_answers_changes_nothing_a_reader_sees_on_a_sample_of_the_catalogue(tmp_path):
    """Also: a submission grades the same whichever others share its session (the asked run is
    graded in two sessions, as the whole catalogue is: tests/shared.py)."""
    seed = random.SystemRandom().randrange(10**6)
    paths = [catalogue.write_implementation(entry, tmp_path / "sample") for entry in SAMPLE]
    with ThreadPoolExecutor(max_workers=2) as pool:  # side by side: the two runs are independent
        (tmp_path / "reused").mkdir()
        reused = pool.submit(grade, paths, tmp_path / "reused", "--grading-seed", str(seed))
        asked = grade_in_parts(paths, tmp_path / "asked", "--grading-seed", str(seed), "--ask-every-time")
    assert_asking_every_time_changes_nothing_a_reader_sees(reused.result(), asked, seed)


def test_the_catalogue_is_large_enough():
    assert len(catalogue.MUTANTS) >= 20
    assert len(catalogue.VARIANTS) >= 8


@pytest.mark.parametrize("mutant", catalogue.MUTANTS, ids=[m.name for m in catalogue.MUTANTS])
def test_mutant_loses_points_in_the_groups_it_breaks(catalogue_run, mutant):
    lost = catalogue_run.lost_groups(mutant.name)
    missed = set(mutant.losing_groups) - lost
    assert not missed, (
        f"{mutant.name} ({mutant.description}) kept full marks in {sorted(missed)}; "
        f"it lost points only in {sorted(lost)} (--grading-seed {catalogue_run.seed})"
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


def test_no_message_calls_a_nan_or_an_infinity_weight_a_change_or_a_match(catalogue_run):
    """Over the whole catalogue (a mask without its diagonal, a softmax over the batch or the
    queries, scores returned as weights, and the fifth class's NaN-producing masks among them):
    a value that is not a number is never weight, never changed, never what is expected."""
    wrong = [f"{test['name']}: {problem}" for name in catalogue_run.results for test in catalogue_run.failed_tests(name)
             for problem in misnamed_non_numbers(test.get("message") or "")]
    assert wrong == [], "\n".join(wrong[:10])


KNOWN = [m for m in catalogue.MUTANTS if m.mistake]
UNLISTED = [m for m in catalogue.MUTANTS if not m.mistake]
MISTAKE_OF = {m.name: m.mistakes for m in catalogue.MUTANTS}


@pytest.mark.parametrize("mutant", KNOWN, ids=[m.name for m in KNOWN])
def test_a_known_mistake_is_diagnosed_with_its_id_and_nothing_else(catalogue_run, mutant):
    assert catalogue_run.diagnosed(mutant.name) == mutant.mistakes, catalogue_run.results[mutant.name]["diagnoses"]


@pytest.mark.parametrize("pair", catalogue.PAIRS, ids=["+".join(p) for p in catalogue.PAIRS])
def test_both_mistakes_of_a_pair_are_diagnosed(catalogue_run, pair):
    name = catalogue.paired(*pair).name
    assert catalogue_run.diagnosed(name) == set().union(*(MISTAKE_OF[n] for n in pair)), catalogue_run.results[name]["diagnoses"]


@pytest.mark.parametrize("mutant", UNLISTED, ids=[m.name for m in UNLISTED])
def test_a_mistake_outside_the_vocabulary_is_never_given_a_known_id(catalogue_run, mutant):
    assert catalogue_run.diagnosed(mutant.name) <= {"unknown"}, catalogue_run.results[mutant.name]["diagnoses"]


@pytest.mark.parametrize("variant", catalogue.VARIANTS, ids=[v.name for v in catalogue.VARIANTS])
def test_a_valid_variant_gets_no_diagnosis(catalogue_run, variant):
    assert catalogue_run.results[variant.name]["diagnoses"] == []


READ = [m for m in catalogue.MUTANTS if m.must_read]


@pytest.mark.parametrize("mutant", READ, ids=[m.name for m in READ])
def test_the_student_reads_what_the_mistake_needs(catalogue_run, mutant):
    """What the grader tells them (the diagnosis and the failing checks) holds each text."""
    result = catalogue_run.results[mutant.name]
    told = "\n".join([*diagnosis_text.text_lines(result["diagnoses"]), *(t["message"] for t in catalogue_run.failed_tests(mutant.name))])
    assert [text for text in mutant.must_read if text not in told] == [], told[:2000]


# --- issue 26: every sentence true ---------------------------------------------------------------


@pytest.mark.parametrize("pair", catalogue.UNKNOWN_PAIRS, ids=["+".join(p) for p in catalogue.UNKNOWN_PAIRS])
def test_a_known_mistake_beside_an_unknown_one_is_named_and_the_other_called_unknown(catalogue_run, pair):
    crash, mistake = pair
    name = catalogue.paired(*pair).name
    entries = catalogue_run.results[name]["diagnoses"]
    assert catalogue_run.diagnosed(name) - {"unknown"} == MISTAKE_OF[mistake], entries
    assert "unknown" in catalogue_run.diagnosed(name), entries  # the other function is said to be wrong
    for entry in entries:  # a known id sits on the known mistake's function, nowhere else
        if entry["mistake"] in mistakes.BY_ID:
            assert mistakes.BY_ID[entry["mistake"]].function in {function_of(id) for id in MISTAKE_OF[mistake]}, entries


ENTRIES = [
    *(m.name for m in catalogue.MUTANTS),
    *(catalogue.paired(*p).name for p in (*catalogue.PAIRS, *catalogue.UNKNOWN_PAIRS, *catalogue.LAYOUT_PAIRS)),
]


def function_of(mistake: str) -> str:
    return mistakes.BY_ID[mistake].function if mistake in mistakes.BY_ID else ""


@pytest.mark.parametrize("name", ENTRIES)
def test_explains_lists_exactly_the_failing_checks_that_pass_with_that_function_fixed(catalogue_run, name):
    """A check folded under a diagnosis is one the diagnosis's cause alone makes fail (sound),
    and every failing check that passes once that cause is taken out is folded under it
    (complete), unless its counterfactual could not be run (``unreplayable``): the same file
    without that cause is the other mutant of a pair, or for one mutant the solution, which
    passes everything."""
    assert catalogue.explains_against_the_fix(catalogue_run, name) == []



def test_a_missing_scale_fails_every_draw_of_the_hidden_head_check_on_the_seed_that_hid_it(tmp_path):
    # Seed 3 drew, for the hidden check's second head (batch 3, seq 2), a scattered mask in
    # which every row allowed one key: every weight was 1, whatever the scale, and the
    # mutant passed that draw (68 or 69 points depending on the seed). grader/exercises/multi_head_attention/data.py's
    # scattered_allowed now keeps a row that weighs two keys.
    mutant = next(m for m in catalogue.MUTANTS if m.name == "missing_scale")
    path = catalogue.write_implementation(mutant, tmp_path / "class")
    run = grade([path], tmp_path, "--grading-seed", "3")
    failed = {test["name"] for test in run.failed_tests(path.stem)}
    assert {f"test_head_matches_the_reference[{path.stem}-{draw}]" for draw in range(3)} <= failed, sorted(failed)


# --- issue 37: points in proportion to what is wrong ---------------------------------------------
LAYOUT_CHECK = "test_each_head_has_its_own_query_key_and_value_projections"


def _layout_points(run, name: str) -> int:
    return next(t["max_points"] for t in run.results[name]["tests"] if t["name"].startswith(LAYOUT_CHECK + "["))


@pytest.mark.parametrize("name", catalogue.LAYOUT_ONLY)
def test_a_bias_on_one_side_costs_the_layout_check_alone(catalogue_run, name):
    """A layout the lesson does not teach: the reference checks judge the attention in the
    student's layout, and the check that states the layout is the one that fails."""
    assert [t["name"] for t in catalogue_run.failed_tests(name)] == [f"{LAYOUT_CHECK}[{name}]"]
    assert catalogue_run.score(name) == catalogue_run.results[name]["max_score"] - _layout_points(catalogue_run, name)
    (entry,) = catalogue_run.results[name]["diagnoses"]
    assert entry["mistake"] == root_causes.PARAMETER_LAYOUT and entry["explains"] == [f"{LAYOUT_CHECK}[{name}]"]


@pytest.mark.parametrize("pair", catalogue.LAYOUT_PAIRS, ids=["+".join(p) for p in catalogue.LAYOUT_PAIRS])
def test_a_bias_on_one_side_beside_a_mistake_scores_as_that_mistake_less_the_layout_check(catalogue_run, pair):
    layout, other = pair
    name = catalogue.paired(*pair).name
    failed = {t["name"].replace(name, "X") for t in catalogue_run.failed_tests(name)}
    alone = {t["name"].replace(other, "X") for t in catalogue_run.failed_tests(other)}
    assert failed == alone | {f"{LAYOUT_CHECK}[X]"}, sorted(failed ^ alone)
    assert 0 < catalogue_run.score(other) - catalogue_run.score(name) == _layout_points(catalogue_run, name) <= 5
    assert catalogue_run.diagnosed(name) == MISTAKE_OF[layout] | MISTAKE_OF[other]
    (entry,) = [e for e in catalogue_run.results[name]["diagnoses"] if e["mistake"] == root_causes.PARAMETER_LAYOUT]
    assert entry["explains"] == [f"{LAYOUT_CHECK}[{name}]"]
