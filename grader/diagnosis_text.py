"""How a diagnosis reads, wherever it is read: terminal, feedback page, Gradescope, notebook.

A diagnosis arrives as plain data (the ``"diagnoses"`` entries of a result: function,
mistake id, title, why, fix, the checks it explains), so every reader renders it the same
way without importing the instructor-only library it came from (grader/hidden/). One block
per function, the diagnosis first; the checks it explains are then listed compactly,
without their hints, and every other failing check keeps its full message.
"""

from __future__ import annotations

UNKNOWN = "unknown"


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
        first = entries[0].get("first_failing_check", "")
        return [
            f"{function}: a mistake that matches none of the known ones"
            + (f"; the first failing check is {first}" if first else "")
            + " (its full message is below)."
        ]
    known = [entry for entry in entries if entry.get("mistake") != UNKNOWN]
    lines = [f"{function}: " + (" and ".join(entry["title"] for entry in known)) + "."]
    for entry in known:
        prefix = f"  [{entry['mistake']}] " if len(known) > 1 else "  "
        lines.append(f"{prefix}why: {entry.get('why', '')}")
        lines.append(f"{' ' * (len(prefix) - 2)}  fix: {entry.get('fix', '')}")
    explains = known[0].get("explains", [])
    if explains:
        lines.append(f"  explains {len(explains)} failing check{'s' if len(explains) != 1 else ''}: {checks_in_short(explains)}")
    return lines


def checks_in_short(names: list[str]) -> str:
    """Check names without their parameters, each once, with how often it failed."""
    counts: dict[str, int] = {}
    for name in names:
        base = name.split("[", 1)[0]
        counts[base] = counts.get(base, 0) + 1
    return ", ".join(f"{base} (x{count})" if count > 1 else base for base, count in counts.items())


def text_lines(entries: list[dict]) -> list[str]:
    """Every function's block, for a terminal or a plain-text page."""
    lines: list[str] = []
    for function, group in by_function(entries).items():
        lines += block_lines(function, group)
    return lines


def markdown_lines(entries: list[dict]) -> list[str]:
    """The diagnosis section of a feedback page. Check names come from the grader, the
    texts from the instructors' library: none of it is the student's."""
    if not entries:
        return []
    lines = ["## What went wrong", ""]
    for function, group in by_function(entries).items():
        block = block_lines(function, group)
        lines += [f"### {block[0]}", ""]
        lines += [f"- {line.strip()}" for line in block[1:]]
        lines.append("")
    return lines


def compact_message(message: str) -> str:
    """A failing check's message once a diagnosis explains it: the problem line only, no
    expected/got/hint (the diagnosis says what to change)."""
    first = next((line for line in message.splitlines() if line.strip()), message)
    return first.strip()
