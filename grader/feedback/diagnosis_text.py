"""How a diagnosis reads, wherever it is read: terminal, feedback page, Gradescope, notebook.

A diagnosis arrives as plain data (the ``"diagnoses"`` entries of a result: function,
mistake id, title, why, fix, the checks it explains), so every reader renders it the same
way without importing the instructor-only library it came from (grader/hidden/). One block
per function, the diagnosis first; the checks it explains are then listed compactly,
without their hints, and every other failing check keeps its full message.
"""

from __future__ import annotations

UNKNOWN = "unknown"
# Where to look when no check of the function's own failed: the grader's own call (a probe, in the
# grader's words: grader/exercises/multi_head_attention/hidden/probes.py) on which it parts from the reference.
PROBE_SAID = "it first answers otherwise than the reference when the grader calls {probe}"


def by_function(entries: list[dict]) -> dict[str, list[dict]]:
    """Entries grouped by function, in the order given (one block per function)."""
    grouped: dict[str, list[dict]] = {}
    for entry in entries:
        grouped.setdefault(str(entry.get("function", "")), []).append(entry)
    return grouped


def explained_checks(entries: list[dict]) -> set[str]:
    return {name for entry in entries if entry.get("mistake") != UNKNOWN for name in entry.get("explains", [])}


def block_lines(function: str, entries: list[dict]) -> list[str]:
    """One function's diagnosis as plain lines (no markup)."""
    if all(entry.get("mistake") == UNKNOWN for entry in entries):
        first, probe = entries[0].get("first_failing_check", ""), entries[0].get("first_failing_probe", "")
        if probe and not first:
            return [f"{function}: a mistake that matches none of the known ones; {PROBE_SAID.format(probe=probe)}."]
        return [
            f"{function}: a mistake that matches none of the known ones"
            + (f"; the first failing check is {first}" if first else "")
            + " (its full message is below)."
        ]
    known = [entry for entry in entries if entry.get("mistake") != UNKNOWN]
    lines = [f"{function}: " + (" and ".join(entry["title"] for entry in known)) + "."]
    for entry in known:
        prefix = f"  [{entry['mistake']}] " if len(known) > 1 else "  "
        lines.append(f"{prefix}why: {why_said(entry)}")
        lines.append(f"{' ' * (len(prefix) - 2)}  fix: {entry.get('fix', '')}")
    explains = known[0].get("explains", [])
    if explains:
        lines.append(f"  {explains_count(explains)}: {checks_in_short(explains)}")
    return lines


def why_said(entry: dict) -> str:
    """The why a student reads: what their own answers showed of the mistake (``seen``, the grader's
    words: the dtype their mask came back in), then the mistake's why, which every holder shares."""
    seen, why = str(entry.get("seen") or ""), str(entry.get("why", ""))
    return f"{seen} {why}" if seen else why


def explains_count(explains: list[str]) -> str:
    """How many failing checks (parametrised cases, what the score counts) and of how many
    test functions: "explains 7 failing checks of 4 tests". The class report counts the
    test functions and says so."""
    tests = len(tests_of(explains))
    return (f"explains {len(explains)} failing check{'s' if len(explains) != 1 else ''} "
            f"of {tests} test{'s' if tests != 1 else ''}")


def tests_of(names: list[str]) -> dict[str, int]:
    """Check names without their parameters (their tests), each once, with how often it failed."""
    counts: dict[str, int] = {}
    for name in names:
        base = name.split("[", 1)[0]
        counts[base] = counts.get(base, 0) + 1
    return counts


def check_name(name: str, submission: str) -> str:
    """A check's name as the student reads it: without the submission's id among its parameters
    (``test_x[smithjane_LATE_1234_5678_multi_head_attention-b1-s4]`` -> ``test_x[b1-s4]``), which
    names the file, not the check, and which the batch makes of Canvas's 50-character file names."""
    if not submission:
        return name
    # pytest writes a non-ASCII id escaped in the name (_pytest/compat.py ascii_escaped:
    # ``val.encode("unicode_escape").decode("ascii")``): "zoë" is "zo\\xeb" there.
    for written in dict.fromkeys((submission, submission.encode("unicode_escape").decode("ascii"))):
        if f"[{written}-" in name or f"[{written}]" in name:
            return name.replace(f"[{written}-", "[", 1).replace(f"[{written}]", "", 1)
    return name


def checks_in_short(names: list[str], name_format=str) -> str:
    return ", ".join(f"{name_format(base)} (x{count})" if count > 1 else name_format(base) for base, count in tests_of(names).items())


def text_lines(entries: list[dict]) -> list[str]:
    """Every function's block, for a terminal or a plain-text page."""
    lines: list[str] = []
    for function, group in by_function(entries).items():
        lines += block_lines(function, group)
    return lines


def markdown_lines(entries: list[dict], submission: str = "") -> list[str]:
    """The diagnosis section of a feedback page. Titles, whys and fixes come from the
    instructors' library (read as written); a root cause's why that quotes the student's code
    (``quotes_student_code``: a layout's parameter names) passes through ``markdown_words``, so
    none of it starts markup; function and check names sit in code spans, since a check's
    parameters may hold text of the student's (``submission``, the id, is taken out of them)."""
    from grader.untrusted import markdown_code_span, markdown_words

    if not entries:
        return []
    lines = ["## What went wrong", ""]
    for function, group in by_function(entries).items():
        known = [entry for entry in group if entry.get("mistake") != UNKNOWN]
        if not known:
            first, probe = group[0].get("first_failing_check", ""), group[0].get("first_failing_probe", "")
            lines += [f"### {markdown_code_span(function)}: a mistake that matches none of the known ones", ""]
            if first:
                lines += [f"- the first failing check is {markdown_code_span(check_name(first, submission))} (its full message is below).", ""]
            elif probe:
                lines += [f"- {PROBE_SAID.format(probe=markdown_code_span(probe))}.", ""]
            continue
        lines += [f"### {markdown_code_span(function)}: " + " and ".join(entry["title"] for entry in known) + ".", ""]
        for entry in known:
            prefix = f"[{entry['mistake']}] " if len(known) > 1 else ""
            why = markdown_words(why_said(entry)) if entry.get("quotes_student_code") else why_said(entry)
            lines += [f"- {prefix}why: {why}", f"- {prefix}fix: {entry.get('fix', '')}"]
        explains = known[0].get("explains", [])
        if explains:
            lines.append(f"- {explains_count(explains)}: {checks_in_short(explains, markdown_code_span)}")
        lines.append("")
    return lines


def compact_message(message: str) -> str:
    """A failing check's message once a diagnosis explains it: the problem line only, no
    expected/got/hint (the diagnosis says what to change)."""
    first = next((line for line in message.splitlines() if line.strip()), message)
    return first.strip()
