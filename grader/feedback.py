"""The feedback a student reads after batch grading: a Markdown page per submission."""

from __future__ import annotations

from grader.scoring import GROUP_TITLES, SubmissionResult, describe_not_written


def render_markdown(result: SubmissionResult) -> str:
    lines = [f"# Feedback for {result.submission}", "", f"**Score: {result.score}/{result.max_score}**", ""]
    if result.import_error:
        lines += ["Your file could not be imported, so no test could run:", "", "```", result.import_error, "```", ""]
    lines += ["| group | points |", "|---|---|"]
    for group, (earned, total) in result.group_points().items():
        lines.append(f"| {GROUP_TITLES[group]} | {earned}/{total} |")
    failed = [test for test in result.tests if test.outcome != "passed"]
    if (missing := result.not_written()) and not result.import_error:
        lines += ["", describe_not_written(missing)]
    if failed and not result.import_error:
        lines += ["", "## What to fix", ""]
        for test in failed:
            lines += [f"### {test.name} ({test.max_points} point{'s' if test.max_points != 1 else ''})", "", "```", test.message or test.outcome, "```", ""]
    elif not failed:
        lines += ["", "Every check passed."]
    return "\n".join(lines).rstrip() + "\n"
