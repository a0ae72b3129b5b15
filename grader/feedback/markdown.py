"""The feedback a student reads after batch grading: a Markdown page per submission.

The student id (which check names show without), import errors and test messages
(which quote exception messages and class names) are the student's text: names and one-line
messages sit in code spans, the rest in code blocks, each with a fence no text inside can
close (grader/untrusted.py), so nothing of it renders as a heading, a link or HTML, and it
reads as it was written (no backslash before every punctuation mark).

Checks that fail with the same message (numbers aside: the same failure on other sizes) are
folded into one box that names the others.

After a batch with a course file, the score at the top is the final one, and the grade's trail
(the tests' score, the late penalty, the override and its reason, an instructor's comment:
grader/feedback/trail_text.py) follows it: the number the gradebook and the export hold. Where
the course's roster names the student, the heading says their name, not their file's stem; the exercise's title follows it.
"""

from __future__ import annotations

import re

from grader.feedback import diagnosis_text, trail_text
from grader.scoring import EXERCISE, GROUP_TITLES, SubmissionResult, TestRecord, describe_not_written
from grader.untrusted import markdown_code_block, markdown_code_span, markdown_words, printable

_NUMBER = re.compile(r"\d+(\.\d+)?(e[+-]?\d+)?")


def _points(count: int) -> str:
    return f"{count} point{'s' if count != 1 else ''}"


def folded(tests: list[TestRecord]) -> list[list[TestRecord]]:
    """Failing checks grouped by their message with every number taken out, in order of first failure."""
    groups: dict[str, list[TestRecord]] = {}
    for test in tests:
        groups.setdefault(_NUMBER.sub("#", test.message or test.outcome), []).append(test)
    return list(groups.values())


def score_lines(result: SubmissionResult, trail: dict | None = None) -> list[str]:
    """The score at the top of the page: the tests' own, or with a ``trail`` (the batch's record of
    the grade, grader/term/grade_trail.py) the final one and how it was reached."""
    if trail is None:
        return [f"**Score: {result.score}/{result.max_score}**", ""]
    lines = [f"**Score: {trail_text.number(trail['score'])}/{trail_text.number(trail['max_score'])}**", ""]
    said = trail_text.lines(trail)
    return lines + [f"- {markdown_words(sentence)}" for sentence in said] + ([""] if said else [])


def title(result: SubmissionResult, name: str | None = None) -> str:
    """The page's heading: the student's ``name`` where the batch knows it (the roster's), else the
    submission's id (its file's stem)."""
    # A name is the roster's text: its line breaks shown escaped (printable), never joined by a space,
    # so that "Carol\nScore: 100/100" cannot read as a title followed by a score.
    return f"# Feedback for {markdown_words(printable(name)) if name else markdown_code_span(result.submission)}"


def render_markdown(result: SubmissionResult, trail: dict | None = None, name: str | None = None) -> str:
    """The page; ``trail``: the grade's (the batch's, with a course file); ``name``: the student's,
    from the roster (the page says it instead of the file's stem)."""
    # The exercise under the heading: a course grades several, and a page reaches a student
    # far from its batch (an LMS's comment, a zip of pages).
    lines = [title(result, name), "", f"Exercise: {markdown_words(EXERCISE.title)}", "", *score_lines(result, trail)]
    if result.import_error:
        lines += ["Your file could not be imported, so no test could run:", "", markdown_code_block(result.import_error), ""]
    if result.notebook:  # cells skipped or that raised, definitions in several cells
        lines += ["How your notebook ran:", "", markdown_code_block("\n".join(result.notebook)), ""]
    lines += ["| group | points |", "|---|---|"]
    for group, (earned, total) in result.group_points().items():
        lines.append(f"| {GROUP_TITLES[group]} | {earned}/{total} |")
    failed = [test for test in result.tests if test.outcome != "passed"]

    def shown(test: TestRecord) -> str:  # the check, not the file: no submission id in its name
        return diagnosis_text.check_name(test.name, result.submission)

    if (missing := result.not_written()) and not result.import_error:
        lines += ["", describe_not_written(missing, name_format=markdown_code_span)]
    if failed and not result.import_error:
        # The diagnosis first; the checks it explains then take one line each, the others
        # keep their whole message (expected, got, hint).
        lines += ["", *diagnosis_text.markdown_lines(result.diagnoses, result.submission)]
        explained = diagnosis_text.explained_checks(result.diagnoses)
        lines += ["## What to fix" if not explained else "## Failing checks", ""]
        for test in (test for test in failed if test.name in explained):
            message = diagnosis_text.compact_message(test.message or test.outcome)
            lines += [f"- {markdown_code_span(shown(test))} ({_points(test.max_points)}): {markdown_code_span(message)} (explained above)"]
        if explained:
            lines.append("")
        for group in folded([test for test in failed if test.name not in explained]):
            first, others = group[0], group[1:]
            lines += [f"### {markdown_code_span(shown(first))} ({_points(first.max_points)})", ""]
            if others:
                names = ", ".join(markdown_code_span(shown(test)) for test in others)
                alike = "" if all(test.message == first.message for test in others) else " (numbers aside)"
                lines += [f"The same failure{alike} in {len(others)} more check{'s' if len(others) != 1 else ''} "
                          f"({_points(sum(test.max_points for test in others))}): {names}.", ""]
            lines += [markdown_code_block(first.message or first.outcome), ""]
        lines.append("")
    elif not failed:
        lines += ["", "Every check passed."]
    return "\n".join(lines).rstrip() + "\n"
