"""The instructor's overrides: ``student,score,reason`` (``[files] overrides``).

An override is the instructor's final word on a student's score, in the gradebook's points
(out of the grader's max_score, as the gradebook's ``score`` column): it replaces the score
after grading and after any late penalty, and is kept beside the raw score everywhere. It
lives in its own file, so no regrade can revert it (a hand-edited result would be).

A row with a reason and no score is a comment: it changes no score, and the student reads it
on their feedback page (grader/batch/grade_trail.py).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path


class OverrideError(ValueError):
    """An overrides file that cannot be used; the message names the file and the line."""


@dataclass(frozen=True)
class Override:
    score: float | None  # None: a comment, which changes no score
    reason: str
    line: int

    def to_dict(self) -> dict:
        return {"score": self.score, "reason": self.reason}


def read_overrides(path: Path) -> dict[str, Override]:
    overrides: dict[str, Override] = {}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        rows = csv.reader(handle)
        header = [cell.strip().casefold() for cell in next(rows, [])]
        if header[:3] != ["student", "score", "reason"]:
            raise OverrideError(f"{path}:1: the first line must be the header student,score,reason (found {','.join(header)!r})")
        for number, row in enumerate(rows, start=2):
            if not any(cell.strip() for cell in row):
                continue
            student = row[0].strip()
            score_text = row[1].strip() if len(row) > 1 else ""
            reason = ",".join(row[2:]).strip()
            if not score_text and reason:  # a comment
                score = None
            else:
                try:
                    score = float(score_text)
                except ValueError:
                    score = math.nan
            if not student or (score is not None and (not math.isfinite(score) or score < 0)):
                raise OverrideError(f"{path}:{number}: needs a student and a score of 0 or more (found {','.join(row)!r})")
            if not reason:
                raise OverrideError(f"{path}:{number}: {student}'s override needs a reason (the third column)")
            if student in overrides:
                raise OverrideError(f"{path}:{number}: a second override for {student} (the first is on line {overrides[student].line})")
            overrides[student] = Override(int(score) if score is not None and score.is_integer() else score, reason, number)
    return overrides
