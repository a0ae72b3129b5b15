"""Print the catalogue's figures: mutants caught and valid variants at full marks.

    .venv/bin/python tests/catalogue_report.py

A mutant counts as caught when it loses points in every group its entry names.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import catalogue  # noqa: E402
from grading import grade  # noqa: E402


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        paths = [catalogue.write_implementation(i, folder) for i in (*catalogue.MUTANTS, *catalogue.VARIANTS)]
        run = grade(paths, folder)
    caught = 0
    print(f"{'mutant':<34} {'score':>6}  lost points in")
    for mutant in catalogue.MUTANTS:
        lost = run.lost_groups(mutant.name)
        ok = set(mutant.losing_groups) <= lost
        caught += ok
        print(f"{mutant.name:<34} {run.score(mutant.name):>6}  {', '.join(sorted(lost))}{'' if ok else '  <- MISSED'}")
    full = [v for v in catalogue.VARIANTS if run.score(v.name) == 100]
    for variant in catalogue.VARIANTS:
        print(f"{'variant ' + variant.name:<34} {run.score(variant.name):>6}")
    print(f"mutants caught: {caught}/{len(catalogue.MUTANTS)}")
    print(f"valid variants at full marks: {len(full)}/{len(catalogue.VARIANTS)}")
    return 0 if caught == len(catalogue.MUTANTS) and len(full) == len(catalogue.VARIANTS) else 1


if __name__ == "__main__":
    sys.exit(main())
