"""The held-out class's bar (issue 37's "Measured"), re-runnable: files in hands this repository's
catalogue does not use (tests/held_out_class.py), graded once with one seed, and held to

* every valid rewrite scores 100 with no diagnosis;
* every planted known mistake is named with its id, and none is ruled out (no "unknown" beside
  it, no other known id);
* a diagnosis's "explains" lists only checks that pass once its mistake is fixed (the same file
  with that mistake taken out, graded in the same run);
* no sentence calls a NaN or an infinity weight, a change or a match;
* the file whose output projection has no bias scores within 5 points of its twin with the bias;
* the sentence about shared parameters names both shared projections;
* a module whose answers change from call to call is graded as if every question were asked
  afresh: the same grade and outcomes with and without --ask-every-time, and it is told.

``python tests/test_held_out_class.py`` prints how many of the bars hold (for a measurement
against another version of the grader: run it from that version's checkout).
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import pytest

import held_out_class as held
from grading import grade
from test_nan_said import MISNAMED

from grader.feedback import diagnosis_text, root_causes

SEED = "37"
BIAS_GAP = 5
BOTH_SHARED = "one as their key.weight and one as their value.weight"
VALID = {"einsum_valid", "sdpa_valid", "assistant_valid", "einsum_projection_by_its_call"}


def grade_class(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    paths = [file.write(folder) for file in held.every_file()]
    run = grade(paths, folder / "reused", "--grading-seed", SEED, timeout=1800)
    stateful = [path for path in paths if path.stem in held.STATEFUL]
    afresh = grade(stateful, folder / "afresh", "--grading-seed", SEED, "--ask-every-time")
    return run, afresh


def told(run, name: str) -> str:
    result = run.results[name]
    return "\n".join([*diagnosis_text.text_lines(result["diagnoses"]), *(t.get("message") or "" for t in run.failed_tests(name))])


def bars(run, afresh) -> list[tuple[str, bool]]:
    """(what is held, whether it holds), one per file and bar."""
    held_bars = []

    def bar(what: str, holds: bool) -> None:
        held_bars.append((what, bool(holds)))

    for file in held.FILES:
        name = file.name
        ids = run.diagnosed(name)
        if name in VALID:
            bar(f"{name}: valid, 100 with no diagnosis", run.score(name) == 100 and not run.results[name]["diagnoses"])
            continue
        known = ids - {"unknown", *root_causes.IDS}
        if file.mistakes:
            bar(f"{name}: names {sorted(file.mistakes)}", file.mistakes <= ids)
            bar(f"{name}: none ruled out", "unknown" not in ids and known <= file.mistakes)
        else:
            bar(f"{name}: no known id it does not have", not known)
        failed = {t["name"] for t in run.failed_tests(name)}
        for function in sorted({held.function_of(m) for m in file.mistakes} - {""}):
            # One bar per wrong function (vacuous where it is not diagnosed: naming is a bar of its own).
            twin = held.fixed(file, function).name
            still = {t["name"].replace(twin, name) for t in run.failed_tests(twin)}
            wrong = {check for entry in run.results[name]["diagnoses"] if entry["function"] == function
                     for check in entry.get("explains", [])} - (failed - still)
            bar(f"{name}: {function}'s diagnosis explains only what its fix makes pass {sorted(wrong)}", not wrong)
        if name in held.NOT_NUMBERS:
            said = told(run, name)
            misnamed = [pattern for patterns in MISNAMED.values() for pattern in patterns if re.search(pattern, said)]
            bar(f"{name}: no NaN called weight, a change or a match {misnamed}", not misnamed)
    gap = abs(run.score(held.MISSING_BIAS) - run.score(held.BIAS_TWIN))
    bar(f"the missing bias costs at most {BIAS_GAP} points more than its twin (gap {gap})", gap <= BIAS_GAP)
    bar("the sharing sentence names both shared projections", BOTH_SHARED in told(run, held.SHARED))
    for name in held.STATEFUL:
        same = afresh.score(name) == run.score(name) and [
            (t["name"], t["outcome"]) for t in afresh.results[name]["tests"]
        ] == [(t["name"], t["outcome"]) for t in run.results[name]["tests"]]
        bar(f"{name}: the same grade asked afresh ({run.score(name)} and {afresh.score(name)})", same)
        bar(f"{name}: told its answers change", "gives different answers to the same call" in told(run, name))
    return held_bars


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade_class(tmp_path_factory.mktemp("held_out"))


@pytest.mark.slow  # some 40 files graded, and the stateful ones again: a minute
def test_every_bar_of_the_held_out_class_holds(graded):
    run, afresh = graded
    assert run.results.keys() >= {file.name for file in held.every_file()}
    failing = [what for what, holds in bars(run, afresh) if not holds]
    assert failing == [], "\n".join(failing)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        measured = bars(*grade_class(Path(folder)))
    for what, holds in measured:
        print("holds " if holds else "BREAKS", what)
    print(f"{sum(holds for _, holds in measured)} of {len(measured)} hold")
    sys.exit(0)
