"""The few lines a batch prints when it ends: what was graded, how it went, where to look.

    34 students graded (3 in this run), mean 71.3, median 80 of 100
    5 at 0: 2 not written, 1 syntax error, 1 timed out, 1 refused at intake
    slowest: Eve Ng 12.4 s, Dan Li 3.1 s, Bob Roe 0.9 s
    2 late (penalty taken), 1 override applied
    NOT APPLIED: course.toml:14: extension for 'jdoe2': no submission by that name
    2 files of entries no longer graded moved to OUT/superseded: results/x.json, feedback/x.md
    report: OUT/report.html

One graded entry per student (grader/batch/intake.py), so the counts are students. A student is
shown by name where the roster gives one (the result's ``student``), else by their entry's id.
Every name passes through grader/untrusted.py: the terminal shows no escape sequence.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path

from grader import untrusted
from grader.class_view.class_results import student_name
from grader.term.status import NO_RESULT, NOT_GRADED_IN_THIS_RUN

SLOWEST = 3


def reason_for_zero(result: dict) -> str:
    """Why a final 0 is a 0: the override, the lateness, or the grading's status."""
    if result.get("override") is not None:
        return "override"
    if (result.get("late") or {}).get("penalty") and result.get("raw_score"):
        return "late"
    return str(result.get("status", "graded"))


def summary(
    documents: dict[str, dict], report_path: Path | None, out: Path, graded_now: int | None = None,
    not_applied: list[dict] = (), moved: list[str] = (), said: list[str] = (),
) -> str:
    graded = {sid: d for sid, d in documents.items() if "score" in d}
    failed = sorted(sid for sid, d in documents.items() if d.get("status") == NO_RESULT)
    lines = []
    if graded:
        scores = [d["score"] for d in graded.values()]
        most = max(d["max_score"] for d in graded.values())
        now = f" ({graded_now} in this run)" if graded_now is not None else ""
        lines.append(
            f"{len(graded)} student{'s' if len(graded) != 1 else ''} graded{now}, mean {statistics.fmean(scores):.1f}, "
            f"median {statistics.median(scores):g} of {most}"
        )
        zeros = Counter(reason_for_zero(d) for d in graded.values() if d["score"] == 0)
        if zeros:
            reasons = ", ".join(f"{count} {reason}" for reason, count in zeros.most_common())
            lines.append(f"{sum(zeros.values())} at 0: {reasons}")
        else:
            lines.append("none at 0")
        seconds = {sid: sum(float(t.get("duration") or 0) for t in d.get("tests") or [] if isinstance(t, dict)) for sid, d in graded.items()}
        slowest = sorted(seconds.items(), key=lambda item: (-item[1], item[0]))[:SLOWEST]
        if slowest:
            lines.append("slowest: " + ", ".join(f"{untrusted.printable(student_name(sid, graded[sid]))} {spent:.1f} s" for sid, spent in slowest))
        late = sum(1 for d in graded.values() if (d.get("late") or {}).get("penalty"))
        overridden = sum(1 for d in graded.values() if d.get("override") is not None)
        if late or overridden:
            lines.append(f"{late} late (penalty taken), {overridden} override{'s' if overridden != 1 else ''} applied")
    else:
        lines.append("nothing graded")
    if failed:
        names = ", ".join(untrusted.printable(student_name(sid, documents[sid])) for sid in failed)
        lines.append(f"{len(failed)} without a result (the grader failed; see {out / 'batch.log'}): {names}")
    waiting = sorted(sid for sid, d in documents.items() if d.get("status") == NOT_GRADED_IN_THIS_RUN)
    if waiting:
        names = ", ".join(untrusted.printable(student_name(sid, documents[sid])) for sid in waiting)
        lines.append(f"{len(waiting)} {NOT_GRADED_IN_THIS_RUN} (--only named others; a run without --only grades them): {names}")
    for row in not_applied:
        lines.append(
            f"NOT APPLIED: {untrusted.printable(row['file'])}:{row['line']}: {row['what']} for "
            f"{untrusted.printable(repr(row['key']))}: {untrusted.printable(row['reason'])}"
        )
    if moved:
        shown = ", ".join(untrusted.printable(path) for path in moved[:6]) + (", ..." if len(moved) > 6 else "")
        lines.append(
            f"{len(moved)} file{'s' if len(moved) != 1 else ''} of entries no longer graded (an earlier attempt, or gone from "
            f"the submissions) moved to {out / 'superseded'}: {shown}"
        )
    lines += [untrusted.printable(line) for line in said]  # the course's LMS, students without a submission time
    lines.append(f"report: {report_path}" if report_path else f"gradebook: {out / 'gradebook.csv'} (no report)")
    return "\n".join(lines)
