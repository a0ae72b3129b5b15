"""Print the catalogue's figures: mutants caught, valid variants at full marks, mistakes named.

    .venv/bin/python tests/catalogue_report.py

A mutant counts as caught when it loses points in every group its entry names. A mistake
counts as named when the diagnosis gives exactly its vocabulary id (a pair: exactly both);
a valid variant with any diagnosis, or a mistake outside the vocabulary given a known id,
is a false diagnosis.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import catalogue  # noqa: E402
from grading import grade  # noqa: E402

from grader.feedback import diagnosis_text  # noqa: E402


# The catalogue's families: the first catalogue (""), and those added for code in a student's own style.
KINDS = {
    "": "the first catalogue",
    "style": "known mistakes and valid rewrites in a student's own style",
    "contract": "contract slips (biases, resized projections, missing attributes)",
    "randomness": "randomness (dropout, sampling)",
    "state": "answers that change from call to call (a count of calls, a cache of its own)",
    "in_place": "in-place operations",
    "behaviour": "mistakes in other forms, crashes and unknown mistakes beside known ones",
    "fifth": "a fifth class: an AI assistant's style, fused QKV, einsum for every head, scaled_dot_product_attention",
}


def main() -> int:
    pairs = {pair: catalogue.paired(*pair) for pair in catalogue.PAIRS}
    beside = {pair: catalogue.paired(*pair) for pair in catalogue.UNKNOWN_PAIRS}
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        entries = (*catalogue.MUTANTS, *catalogue.VARIANTS, *pairs.values(), *beside.values())
        paths = [catalogue.write_implementation(i, folder) for i in entries]
        run = grade(paths, folder, timeout=1800)  # a safety net: some 140 submissions, failing ones diagnosed
    caught = 0
    print(f"{'mutant':<34} {'score':>6}  {'diagnosis':<34} lost points in")
    for mutant in catalogue.MUTANTS:
        lost = run.lost_groups(mutant.name)
        ok = set(mutant.losing_groups) <= lost
        caught += ok
        diagnosed = " ".join(sorted(run.diagnosed(mutant.name))) or "-"
        print(f"{mutant.name:<34} {run.score(mutant.name):>6}  {diagnosed:<34} {', '.join(sorted(lost))}{'' if ok else '  <- MISSED'}")
    full = [v for v in catalogue.VARIANTS if run.score(v.name) == 100]
    for variant in catalogue.VARIANTS:
        print(f"{'variant ' + variant.name:<34} {run.score(variant.name):>6}  {' '.join(sorted(run.diagnosed(variant.name))) or '-'}")
    mistake_of = {m.name: m.mistakes for m in catalogue.MUTANTS}
    for pair, implementation in pairs.items():
        print(f"{'pair ' + ' + '.join(pair):<60} {' '.join(sorted(run.diagnosed(implementation.name))) or '-'}")

    for pair, implementation in beside.items():
        print(f"{'beside ' + ' + '.join(pair):<60} {' '.join(sorted(run.diagnosed(implementation.name))) or '-'}")

    known = [m for m in catalogue.MUTANTS if m.mistake]
    named = [m for m in known if run.diagnosed(m.name) == m.mistakes]
    pairs_named = [p for p, i in pairs.items() if run.diagnosed(i.name) == set().union(*(mistake_of[n] for n in p))]
    read = [m for m in catalogue.MUTANTS if m.must_read and not unread(run, m)]
    with_texts = [m for m in catalogue.MUTANTS if m.must_read]
    unlisted = [m for m in catalogue.MUTANTS if not m.mistake]
    wrongly_named = [m.name for m in unlisted if run.diagnosed(m.name) - {"unknown"}]
    false_on_variants = [v.name for v in catalogue.VARIANTS if run.diagnosed(v.name)]
    beside_named = [p for p, i in beside.items() if run.diagnosed(i.name) == mistake_of[p[1]] | {"unknown"}]
    names = [*(m.name for m in catalogue.MUTANTS), *(i.name for i in (*pairs.values(), *beside.values()))]
    unlicensed = {name: wrong for name in names if (wrong := catalogue.explains_against_the_fix(run, name))}
    print(f"mutants caught: {caught}/{len(catalogue.MUTANTS)}")
    print(f"valid variants at full marks: {len(full)}/{len(catalogue.VARIANTS)}")
    print(f"known mistakes beside an unknown one (a crash): the known named, the other unknown: {len(beside_named)}/{len(beside)}")
    print(f"entries whose every 'explains' list is exactly what its fix makes pass: {len(names) - len(unlicensed)}/{len(names)} "
          + " ".join(f"{name} ({len(wrong)}: {wrong[0]})" for name, wrong in unlicensed.items()))
    print(f"single mistakes named: {len(named)}/{len(known)}")
    print(f"pairs of mistakes named (both): {len(pairs_named)}/{len(pairs)}")
    print(f"false diagnoses on valid variants: {len(false_on_variants)}/{len(catalogue.VARIANTS)} {' '.join(false_on_variants)}")
    print(f"mistakes outside the vocabulary given a known id: {len(wrongly_named)}/{len(unlisted)} {' '.join(wrongly_named)}")
    for kind, title in KINDS.items():
        mutants = [m for m in catalogue.MUTANTS if m.kind == kind]
        variants = [v for v in catalogue.VARIANTS if v.kind == kind]
        print(f"{title}: " + ", ".join(part for part in (
            f"mutants caught {sum(set(m.losing_groups) <= run.lost_groups(m.name) for m in mutants)}/{len(mutants)}" if mutants else "",
            f"named {sum(run.diagnosed(m.name) == m.mistakes for m in mutants if m.mistake)}/{sum(1 for m in mutants if m.mistake)}"
            if any(m.mistake for m in mutants) else "",
            f"valid rewrites at 100 with no diagnosis {sum(run.score(v.name) == 100 and not run.diagnosed(v.name) for v in variants)}/{len(variants)}"
            if variants else "",
        ) if part))
    print(f"mutants whose student reads what they must: {len(read)}/{len(with_texts)} "
          + " ".join(f"{m.name} (missing {unread(run, m)})" for m in with_texts if m not in read))
    print(f"explained by one root cause (layout, randomness): "
          + ", ".join(f"{m.name} {run.score(m.name)}/100 {len(run.failed_tests(m.name))} failing" for m in catalogue.MUTANTS if m.mistakes & {"parameter_layout", "nondeterministic"}))
    perfect = (
        caught == len(catalogue.MUTANTS) and len(full) == len(catalogue.VARIANTS) and len(named) == len(known)
        and len(pairs_named) == len(pairs) and len(beside_named) == len(beside) and not unlicensed and not false_on_variants and not wrongly_named and len(read) == len(with_texts)
    )
    return 0 if perfect else 1


def unread(run, mutant) -> list[str]:
    """The texts the mutant's student must read that nothing the grader told them contains."""
    told = "\n".join([*diagnosis_text.text_lines(run.results[mutant.name]["diagnoses"]), *(t["message"] for t in run.failed_tests(mutant.name))])
    return [text for text in mutant.must_read if text not in told]


if __name__ == "__main__":
    sys.exit(main())
