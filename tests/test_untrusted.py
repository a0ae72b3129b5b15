"""Text a student controls, where an instructor reads it (grader/untrusted.py, grader/feedback/markdown.py).

A student id comes from a file name; exception messages, exception class names and printed
output come from the student's code. None of it may run as a spreadsheet formula, move a
terminal's cursor, or render as Markdown or HTML the grader did not write.
"""

from __future__ import annotations

import csv
import io
import re

import pytest

from grader import untrusted
from grader.feedback.markdown import render_markdown
from grader import scoring
from grader.scoring import SubmissionResult

HOSTILE_MESSAGE = (
    "oops\n```\n\n# Score: 100/100\n\n<img src=x onerror=alert(1)>\n[claim your prize](http://evil.example)\n"
    "````\n~~~\n## Score: 100/100\n"
)


def outside_code_blocks(markdown: str) -> list[str]:
    """The lines a CommonMark renderer shows as Markdown: all but those of fenced code blocks
    (an opening fence of 3+ backticks or tildes, closed by a fence of the same character at
    least as long with nothing after it, or by the end of the page)."""
    shown, fence = [], None
    for line in markdown.split("\n"):
        match = re.match(r"^ {0,3}(`{3,}|~{3,})(.*)$", line)
        if fence is None:
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                fence = match.group(1)
                continue
            shown.append(line)
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and not match.group(2).strip():
            fence = None
    return shown


def test_csv_cells_starting_like_a_formula_get_a_leading_quote():
    for text in ("=HYPERLINK(\"http://evil\")", "+1+1", "-2+3", "@SUM(A1:A9)", "\tx", "\rx"):
        cell = untrusted.csv_cell(text)
        assert cell.startswith("'"), cell
    assert untrusted.csv_cell("alice") == "alice"
    assert untrusted.csv_cell(-3) == -3 and untrusted.csv_cell(97.5) == 97.5  # numbers stay numbers


def test_a_neutralised_cell_with_a_separator_or_a_quote_stays_one_cell():
    table = io.StringIO()
    csv.writer(table).writerow([untrusted.csv_cell('=1,"2"\n,=3'), 100])
    assert list(csv.reader(io.StringIO(table.getvalue()))) == [["'=1,\"2\"\\x0a,=3", "100"]]


def test_control_characters_and_bidi_overrides_are_escaped_for_logs_and_terminals():
    text = untrusted.printable("red\x1b[31m\x07bell\u202etxt.exe\x9b\udcff\nnext")
    assert text == "red\\x1b[31m\\x07bell\\u202etxt.exe\\x9b\\xff\\x0anext"
    assert untrusted.printable("a\nb\x1b", keep_newlines=True) == "a\nb\\x1b"


def test_markdown_text_cannot_start_a_link_html_emphasis_or_an_autolink():
    text = untrusted.markdown_text("x [a](http://e.vil) <b>*y*</b> www.e.vil &amp; `z`")
    assert not re.search(r"(?<!\\)[\[\]()<>*`&]", text)
    assert "www\\.e\\.vil" in text


@pytest.mark.parametrize("message", [HOSTILE_MESSAGE, "```", "a ````` b", "~~~", "\n\n"])
def test_no_text_can_close_the_code_block_it_is_put_in(message):
    block = untrusted.markdown_code_block(message)
    assert outside_code_blocks(block) == []


def test_a_hostile_exception_renders_no_heading_html_or_link_in_the_feedback_page():
    """The exception's class name and message (the student's) close the fence of the old
    page and render a heading "Score: 100/100", an image tag and a link."""
    hostile_id = "=evil <b>[x](http://e.vil)</b> # Score"
    result = SubmissionResult(hostile_id, import_error="", output="")
    message = f"your code raised Evil```\n# Score: 100/100\n: {HOSTILE_MESSAGE}"
    result.tests.append(scoring.TestRecord("test_shapes", "shapes", hostile_id, 5, "failed", message))
    result.tests.append(scoring.TestRecord("test_probabilities", "probabilities", hostile_id, 5, "passed"))
    page = render_markdown(result)
    shown = outside_code_blocks(page)
    headings = [line for line in shown if line.startswith("#")]
    assert headings[0].startswith("# Feedback for ") and headings[1:] == ["## What to fix", "### `test_shapes` (5 points)"]
    assert not any("Score: 100/100" in line for line in shown)
    # Outside code blocks and code spans (where Markdown renders every character as it is).
    outside_spans = [re.sub(r"(`+)(.+?)\1", "", line) for line in shown]
    assert not any(re.search(r"(?<!\\)[<\[]", line) for line in outside_spans), shown
    assert "Score: 100/100" in page  # the message itself is still shown, as text
    import_page = render_markdown(SubmissionResult("eve", import_error=HOSTILE_MESSAGE))
    assert not any("Score: 100/100" in line or "<img" in line for line in outside_code_blocks(import_page))


def test_file_stems_are_short_plain_and_distinct():
    assert untrusted.file_stem("alice") == "alice"
    assert untrusted.file_stem("Alice Smith (2)") == "Alice Smith (2)"
    long = "a" * 240
    stems = {untrusted.file_stem(name) for name in (long, long + "b", "../etc", "..", ".hidden", "x\x1by", "x/y", "é" * 200)}
    assert len(stems) == 8
    for stem in stems:
        assert len(stem.encode("utf-8")) <= untrusted.MAX_FILE_STEM_BYTES
        assert "/" not in stem and not stem.startswith(".") and untrusted.printable(stem) == stem
    # A plain id never holds "~", so it is never the stem of another id.
    assert untrusted.file_stem(untrusted.file_stem(long)) != untrusted.file_stem(long)
