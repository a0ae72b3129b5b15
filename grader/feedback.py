"""The feedback a student reads after batch grading: a Markdown page per submission.

The student id, import errors and test messages (which quote exception messages and class
names) are the student's text: the id is escaped, the rest sits in code blocks whose fence
no text inside can close (grader/untrusted.py), so nothing of it renders as a heading, a
link or HTML.
"""

from __future__ import annotations

from grader import diagnosis_text
from grader.scoring import GROUP_TITLES, SubmissionResult, describe_not_written
from grader.untrusted import markdown_code_block, markdown_text


def render_markdown(result: SubmissionResult) -> str:
    lines = [f"# Feedback for {markdown_text(result.submission)}", "", f"**Score: {result.score}/{result.max_score}**", ""]
    if result.import_error:
        lines += ["Your file could not be imported, so no test could run:", "", markdown_code_block(result.import_error), ""]
    lines += ["| group | points |", "|---|---|"]
    for group, (earned, total) in result.group_points().items():
        lines.append(f"| {GROUP_TITLES[group]} | {earned}/{total} |")
    failed = [test for test in result.tests if test.outcome != "passed"]
    if (missing := result.not_written()) and not result.import_error:
        lines += ["", describe_not_written(missing)]
    if failed and not result.import_error:
        # The diagnosis first; the checks it explains then take one line each, the others
        # keep their whole message (expected, got, hint).
        lines += ["", *diagnosis_text.markdown_lines(result.diagnoses)]
        explained = diagnosis_text.explained_checks(result.diagnoses)
        lines += ["## What to fix" if not explained else "## Failing checks", ""]
        for test in failed:
            points = f"{test.max_points} point{'s' if test.max_points != 1 else ''}"
            if test.name in explained:
                message = diagnosis_text.compact_message(test.message or test.outcome)
                lines += [f"- {test.name} ({points}): {markdown_text(message)} (explained above)"]
            else:
                lines += [f"### {test.name} ({points})", "", markdown_code_block(test.message or test.outcome), ""]
        lines.append("")
    elif not failed:
        lines += ["", "Every check passed."]
    return "\n".join(lines).rstrip() + "\n"
