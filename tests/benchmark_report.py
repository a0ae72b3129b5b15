"""How long the class report takes for a large class: ``python tests/benchmark_report.py [--students N]``.

Writes a synthetic OUT (results.json as the batch writes it, the grader's checks for each
student, a feedback page each, diagnoses for some) into a temporary folder, then times
``grader.report.write_report`` on it: statistics, charts, the page and one feedback page per
student. Prints the figures; it asserts nothing (timing is no test).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader import results  # noqa: E402
from grader.class_view import class_statistics, report  # noqa: E402
from grader.scoring import GROUPS, grader_checks  # noqa: E402
from grader.class_view import class_results  # noqa: E402

# (group, check, cases, points per case), as the real grader has them (its markers).
CHECKS = [(check.group, check.function, check.cases, check.points) for check in grader_checks()]
MISTAKES = [
    {"function": "concatenate_heads", "mistake": "interleaved", "title": "Heads interleaved instead of side by side", "explains": "shapes"},
    {"function": "attention_weights", "mistake": "softmax_over_queries", "title": "Softmax over the query axis", "explains": "probabilities"},
    {"function": "attention_weights", "mistake": "no_scale", "title": "Scores not scaled by 1/sqrt(head_dim)", "explains": "reference"},
    {"function": "causal_mask", "mistake": "upper_triangle", "title": "Mask keeps the future instead of the past", "explains": "masking"},
]


def synthetic_class(out: Path, students: int, seed: int = 0) -> None:
    chance = random.Random(seed)
    documents = {}
    for number in range(students):
        sid = f"student{number:04}"
        ability = chance.random()
        tests = []
        for group, check, cases, points in CHECKS:
            difficulty = chance.random() * 0.6
            for case in range(cases):
                passed = chance.random() < ability + 0.4 - difficulty
                tests.append({
                    "name": f"{check}[{sid}-case{case}]", "group": group, "submission": sid, "max_points": points,
                    "outcome": "passed" if passed else "failed", "message": "" if passed else "expected 1.0, got 0.5\nhint: ...",
                    "duration": 0.01, "points": points if passed else 0,
                })
        groups = {g: {"earned": sum(t["points"] for t in tests if t["group"] == g), "max": sum(t["max_points"] for t in tests if t["group"] == g)} for g in GROUPS}
        document = {
            "submission": sid, "score": sum(t["points"] for t in tests), "max_score": sum(t["max_points"] for t in tests),
            "groups": groups, "import_error": "", "output": "", "tests": tests, "graded_from": f"{sid}.py", "intake_problem": "",
            "diagnoses": chance.sample(MISTAKES, k=chance.choice([0, 0, 1, 2])),
        }
        documents[sid] = document
        failed = [t for t in tests if t["outcome"] != "passed"]
        page = [f"# Feedback for {sid}", "", f"**Score: {document['score']}/{document['max_score']}**", "", "## What to fix", ""]
        page += [f"### {t['name']} ({t['max_points']} points)\n\n```\n{t['message']}\n```\n" for t in failed]
        (out / "feedback").mkdir(parents=True, exist_ok=True)
        (out / "feedback" / f"{sid}.md").write_text("\n".join(page), encoding="utf-8")
    run = {"assignment": f"Synthetic class of {students}", "graded_at": "benchmark", "not_graded": {}}
    results.write_class_results(out / "results.json", documents, 1, ("bwrap", ""), run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=1000)
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="report-benchmark-") as folder:
        out = Path(folder)
        synthetic_class(out, arguments.students)
        import json

        started = time.perf_counter()
        submissions = class_results.read_class_results(out / "results.json")["submissions"]
        loaded = time.perf_counter()
        class_statistics.class_statistics(submissions)
        computed = time.perf_counter()
        cpu = time.process_time()
        path = report.write_report(out)
        finished = time.perf_counter()
        cpu = time.process_time() - cpu
        size = path.stat().st_size
    print(f"class of {arguments.students} students, {len(CHECKS)} checks, 52 tests each:")
    print(f"  results.json read:           {loaded - started:6.2f} s")
    print(f"  statistics alone:            {computed - loaded:6.2f} s")
    print(f"  whole report (write_report): {finished - computed:6.2f} s  ({cpu:.2f} s of CPU; report.html {size / 1e6:.1f} MB, {arguments.students} feedback pages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
