"""Reading a check's message the way a student does: does a sentence call a NaN or an infinity
weight, a change, a difference or the same as something?

A message is the grader's problem line, then ``expected:``, ``got:`` and maybe ``hint:``
(grader/exercises/multi_head_attention/checks.py ``fail``). The rules below need no knowledge of the submission: each ties a
word to the value the same message shows, so they hold over any graded file (the catalogue's
whole run) as well as over the files built to hold NaN (tests/test_nan_said.py).
"""

from __future__ import annotations

import math
import re

NOT_A_NUMBER = re.compile(r"^(nan|NaN|-?inf)$")


def _value(text: str) -> float | None:
    """The first value of a got/expected line ("NaN (...)", "-inf at (0, 1)", "0.25 (...)")."""
    match = re.match(r"\s*(?:sum )?(-?inf|nan|NaN|-?\d[\d.e+-]*)", text)
    if not match:
        return None
    word = match.group(1)
    return float("nan") if word.lower() == "nan" else float(word)


def misnamed_non_numbers(message: str) -> list[str]:
    """The sentences of ``message`` that call a value that is not a number weight, a change,
    a difference or a match; [] when there are none."""
    lines = message.splitlines()
    fields = {}
    for line in lines[1:]:
        stripped = line.strip()
        for field in ("expected:", "got:", "hint:"):
            if stripped.startswith(field):
                fields[field[:-1]] = stripped[len(field):].strip()
    problem = lines[0] if lines else ""
    got = _value(fields.get("got", ""))
    expected = _value(fields.get("expected", ""))
    wrong = []
    if got is not None and not math.isfinite(got):
        for words in ("gives weight to key position", "has negative weights", "hidden positions have weight"):
            if words in problem or words in fields.get("got", ""):
                wrong.append(f"calls {got} weight: {problem}")
    if expected is not None and math.isnan(expected):
        wrong.append(f"expects NaN, a NaN taken as the value to match: {fields['expected']}")
    compares_with_itself = ("entries changed with the inputs after them" in problem
                            or "do not match the output before the change" in problem)  # the latter: grader before issue 37
    if compares_with_itself and got is not None and expected is not None and not (math.isfinite(got) or math.isfinite(expected)):
        wrong.append(f"calls a value that is not a number before and after a change \"changed\": {problem}")
    if re.search(r"largest (difference|change) (nan|NaN|-?inf)\b", message):
        wrong.append("a largest difference that is not a number")
    return wrong
