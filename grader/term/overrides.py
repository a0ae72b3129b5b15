"""The instructor's overrides: ``student,score,reason`` (``[files] overrides``).

An override is the instructor's final word on a student's score, in the gradebook's points
(out of the grader's max_score, as the gradebook's ``score`` column): it replaces the score
after grading and after any late penalty, and is kept beside the raw score everywhere. It
lives in its own file, so no regrade can revert it (a hand-edited result would be).

A row with a reason and no score is a comment: the instructor's words for that student, shown
on their page with the grade's trail (grader/term/grade_trail.py), changing no score
(``Override.score`` is None).

The student is any of their names (grader/term/identity.py resolves it: login, SIS id,
Canvas id, roster name, a submission's file name). Every row is checked here, where the file is
read, and every problem is said at once, each with the file, the line and the key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from grader.term.identity import InstructorFileError, Keyed, normal, read_csv, shown

HEADER = ("student", "score", "reason")
WHAT = "override"


class OverrideError(InstructorFileError):
    """An overrides file that cannot be used; each line of the message names the file and the line."""


@dataclass(frozen=True)
class Override:
    score: float | None  # None: a comment, no change of score
    reason: str
    line: int

    @property
    def is_comment(self) -> bool:
        return self.score is None

    def to_dict(self) -> dict:
        return {"score": self.score, "reason": self.reason}


def read_overrides(path: Path) -> dict[str, Override]:
    """Each row by its student's name as written. Refused, all at once: a row without a
    student, a score that is not a number of 0 or more, a row without a reason (an override
    needs one; a comment is its reason), the same name twice."""
    overrides: dict[str, Override] = {}
    first_line: dict[str, int] = {}
    problems = []
    try:
        rows = read_csv(path, HEADER)
    except InstructorFileError as error:
        raise OverrideError(str(error)) from None
    for number, row in rows:
        student = row[0].strip()
        score_text = row[1].strip() if len(row) > 1 else ""
        reason = ",".join(row[2:]).strip()
        if not student:
            problems.append(f"{path}:{number}: a row needs a student (found {shown(','.join(row))!r})")
            continue
        score = _score(score_text)
        if score_text and score is None:
            problems.append(f"{path}:{number}: {shown(student)}: the score must be a number of 0 or more (found {shown(score_text)!r})")
            continue
        if not reason:
            problems.append(
                f"{path}:{number}: {shown(student)}: " + ("an override needs a reason (the third column)" if score_text else
                                                           "a row needs a score and a reason, or a reason alone (a comment)")
            )
            continue
        if normal(student) in first_line:
            problems.append(f"{path}:{number}: a second override for {shown(student)} (the first is on line {first_line[normal(student)]})")
            continue
        first_line[normal(student)] = number
        overrides[student] = Override(score, reason, number)
    if problems:
        raise OverrideError("\n".join(problems))
    return overrides


def keyed(path: Path, overrides: dict[str, Override]) -> list[tuple[Keyed, Override]]:
    """The rows as grader/term/identity.py resolves them."""
    return [(Keyed(str(path), override.line, student, WHAT), override) for student, override in overrides.items()]


def _score(text: str) -> float | int | None:
    try:
        score = float(text)
    except ValueError:
        return None
    if not math.isfinite(score) or score < 0:
        return None
    return int(score) if score.is_integer() else score
