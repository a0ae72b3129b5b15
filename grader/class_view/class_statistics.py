"""The class in numbers: score distribution, per-group and per-check statistics, misconceptions.

Computed from the submissions of a batch's ``results.json`` (plain dicts), with nothing
drawn or written here: ``grader/class_view/report.py`` shows these numbers, the tests check them.

Definitions (those of PrairieLearn's and CodeGrade's statistics):
- every submission with a result counts, those that could not be imported at 0 included;
- standard deviation: of the class itself (population, ``statistics.pstdev``);
- an item is a group of checks or one check (a test function, its parametrised cases
  together); its pass rate is the share of students with all of its points, its mean the
  mean points earned;
- discrimination: the item-rest correlation, Pearson's r between the item's points and the
  total without them; ``None`` where either does not vary (r is undefined there).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from grader.scoring import GROUP_TITLES, GROUPS

BINS = 10


@dataclass(frozen=True)
class ScoreSummary:
    count: int
    max_score: int
    mean: float
    median: float
    standard_deviation: float
    minimum: int
    maximum: int
    share_at_zero: float
    share_at_full: float
    histogram: tuple[int, ...]  # students per tenth of max_score, the last bin closed ([90, 100])
    bin_edges: tuple[float, ...]


@dataclass(frozen=True)
class ItemStatistics:
    name: str  # a group's title, or a check's test function name
    group: str
    max_points: int
    pass_rate: float
    mean_points: float
    discrimination: float | None


UNKNOWN = "unknown"  # a diagnosis's mistake when no known mistake matched: not a misconception


@dataclass(frozen=True)
class Misconception:
    function: str
    mistake: str
    title: str
    why: str
    explains: tuple[str, ...]  # the checks it accounts for, without their parameters
    students: tuple[str, ...]


@dataclass
class ClassStatistics:
    scores: ScoreSummary | None  # None for a class without a single result
    groups: list[ItemStatistics] = field(default_factory=list)
    checks: list[ItemStatistics] = field(default_factory=list)
    misconceptions: list[Misconception] = field(default_factory=list)
    unexplained: dict[str, tuple[str, ...]] = field(default_factory=dict)  # function -> students no known mistake explains


def class_statistics(submissions: dict[str, dict]) -> ClassStatistics:
    """``submissions``: student id -> that student's result document (results.json)."""
    if not submissions:
        return ClassStatistics(None)
    totals = {sid: document["score"] for sid, document in submissions.items()}
    return ClassStatistics(
        scores=score_summary(list(totals.values()), max(d["max_score"] for d in submissions.values())),
        groups=hardest_first(_group_items(submissions, totals)),
        checks=hardest_first(_check_items(submissions, totals)),
        misconceptions=misconceptions(submissions),
        unexplained=unexplained(submissions),
    )


def score_summary(scores: list[int], max_score: int) -> ScoreSummary:
    count = len(scores)
    histogram = [0] * BINS
    for score in scores:
        # In integers (score * 10 // max): 2 // 0.4 is 4.0 in floating point, not 5.
        histogram[min(max(int(score * BINS // max_score), 0), BINS - 1) if max_score else 0] += 1
    return ScoreSummary(
        count=count,
        max_score=max_score,
        mean=statistics.fmean(scores),
        median=statistics.median(scores),
        standard_deviation=statistics.pstdev(scores),
        minimum=min(scores),
        maximum=max(scores),
        share_at_zero=sum(score == 0 for score in scores) / count,
        share_at_full=sum(score == max_score for score in scores) / count,
        histogram=tuple(histogram),
        bin_edges=tuple(max_score * index / BINS for index in range(BINS + 1)),
    )


def item_statistics(name: str, group: str, earned: dict[str, int], max_points: int, totals: dict[str, int]) -> ItemStatistics:
    """One item's numbers; ``earned`` and ``totals`` are per student id (the same ids)."""
    ids = sorted(totals)
    points = [earned.get(sid, 0) for sid in ids]
    rest = [totals[sid] - earned.get(sid, 0) for sid in ids]
    return ItemStatistics(
        name=name,
        group=group,
        max_points=max_points,
        pass_rate=sum(p == max_points for p in points) / len(ids),
        mean_points=statistics.fmean(points),
        discrimination=_correlation(points, rest),
    )


def hardest_first(items: list[ItemStatistics]) -> list[ItemStatistics]:
    return sorted(items, key=lambda item: (item.pass_rate, item.mean_points / (item.max_points or 1), item.name))


def check_name(test_name: str) -> str:
    """``test_rows_sum_to_one[alice-b1-s4]`` -> ``test_rows_sum_to_one``: one check, all its cases."""
    return test_name.split("[", 1)[0]


def misconceptions(submissions: dict[str, dict]) -> list[Misconception]:
    """Each diagnosed mistake with the students holding it, the most held first.

    A result's optional ``diagnoses``: [{"function", "mistake", "title", "why", "explains"}, ...]
    (one entry per mistake; ``"unknown"`` where none matched, left to ``unexplained``);
    results without them (older grader versions) simply add no one.
    """
    holders: dict[tuple[str, str], list[str]] = defaultdict(list)
    described: dict[tuple[str, str], dict] = {}
    explains: dict[tuple[str, str], dict[str, None]] = defaultdict(dict)  # ordered set of check names
    for sid, diagnosis in _diagnoses(submissions):
        if diagnosis.get("mistake") == UNKNOWN:
            continue
        key = (str(diagnosis.get("function", "")), str(diagnosis.get("mistake", "")))
        if sid not in holders[key]:
            holders[key].append(sid)
        described.setdefault(key, diagnosis)
        checks = diagnosis.get("explains") or []
        for name in [checks] if isinstance(checks, str) else checks:
            explains[key][check_name(str(name))] = None
    found = [
        Misconception(
            function=key[0],
            mistake=key[1],
            title=str(described[key].get("title") or key[1]),
            why=str(described[key].get("why") or ""),
            explains=tuple(explains[key]),
            students=tuple(students),
        )
        for key, students in holders.items()
    ]
    return sorted(found, key=lambda m: (-len(m.students), m.title))


def unexplained(submissions: dict[str, dict]) -> dict[str, tuple[str, ...]]:
    """Per function, the students whose failing function matched no known mistake."""
    found: dict[str, list[str]] = defaultdict(list)
    for sid, diagnosis in _diagnoses(submissions):
        function = str(diagnosis.get("function", ""))
        if diagnosis.get("mistake") == UNKNOWN and sid not in found[function]:
            found[function].append(sid)
    return {function: tuple(students) for function, students in sorted(found.items())}


def _diagnoses(submissions: dict[str, dict]):
    for sid in sorted(submissions):
        diagnoses = submissions[sid].get("diagnoses") or []
        for diagnosis in diagnoses if isinstance(diagnoses, list) else []:
            if isinstance(diagnosis, dict):
                yield sid, diagnosis


def _group_items(submissions: dict[str, dict], totals: dict[str, int]) -> list[ItemStatistics]:
    items = []
    for group in GROUPS:
        held = {sid: d["groups"][group] for sid, d in submissions.items() if group in d.get("groups", {})}
        if not held:
            continue
        max_points = max(points["max"] for points in held.values())
        earned = {sid: points["earned"] for sid, points in held.items()}
        items.append(item_statistics(GROUP_TITLES[group], group, earned, max_points, totals))
    return items


def _check_items(submissions: dict[str, dict], totals: dict[str, int]) -> list[ItemStatistics]:
    earned: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    max_points: dict[str, int] = {}
    group_of: dict[str, str] = {}
    for sid, document in submissions.items():
        per_student: dict[str, int] = defaultdict(int)
        for test in document.get("tests", []):
            name = check_name(test["name"])
            earned[name][sid] += test["points"]
            per_student[name] += test["max_points"]
            group_of[name] = test["group"]
        for name, points in per_student.items():
            max_points[name] = max(max_points.get(name, 0), points)
    return [item_statistics(name, group_of[name], earned[name], max_points[name], totals) for name in max_points]


def _correlation(xs: list[int], ys: list[int]) -> float | None:
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:  # fewer than two students, or a constant
        return None
