"""The Markdown feedback page (feedback/<id>.md) as an instructor or a student reads it.

* a hostile id, which reaches the page inside check names, renders as text even in a
  Markdown renderer that keeps inline HTML (mistune with ``escape=False``), as the HTML
  pages do;
* names and messages read as written: code spans, not a backslash before every mark;
* checks that fail alike are folded into one box;
* a diagnosis counts its failing checks and their tests, and the class report says which
  of the two it counts.
"""

from __future__ import annotations

from html.parser import HTMLParser

import mistune

from grader.class_view import report
from grader.class_view.class_statistics import Misconception
from grader.feedback.markdown import render_markdown
from grader.scoring import SubmissionResult, TestRecord

HOSTILE_ID = "<img src=x onerror=alert(1)>"
# The elements the page itself is made of; anything else came from the student's text.
PAGE_ELEMENTS = {"h1", "h2", "h3", "p", "strong", "code", "pre", "ul", "li", "table", "thead", "tbody", "tr", "th", "td"}


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: set[str] = set()

    def handle_starttag(self, tag, attrs) -> None:
        self.found.add(tag)


def elements_of(markdown: str) -> set[str]:
    """The HTML elements a renderer that keeps inline and block HTML makes of the page."""
    parser = Elements()
    parser.feed(mistune.create_markdown(escape=False, plugins=["table"])(markdown))
    return parser.found


def hostile_result() -> SubmissionResult:
    result = SubmissionResult(HOSTILE_ID)
    explained = [f"test_concatenation[{HOSTILE_ID}-case{n}]" for n in range(3)]
    for name in explained:
        result.tests.append(TestRecord(name, "shapes", HOSTILE_ID, 1, "failed",
                                       "concatenate_heads: features 0:4 do not hold head 0's output.\n  expected: x\n  got:      y"))
    result.tests.append(TestRecord(f"test_other[{HOSTILE_ID}]", "probabilities", HOSTILE_ID, 1, "failed",
                                   f"your code raised ValueError: {HOSTILE_ID} *bold* [link](http://x)"))
    result.diagnoses = [
        {"function": "concatenate_heads", "mistake": "heads_interleaved", "title": "the heads' features are interleaved",
         "why": "why", "fix": "fix", "explains": explained},
        {"function": "AttentionHead.forward", "mistake": "unknown", "first_failing_check": f"test_other[{HOSTILE_ID}]", "explains": []},
    ]
    return result


def test_a_hostile_id_in_check_names_renders_as_text_in_the_markdown_feedback():
    page = render_markdown(hostile_result())
    assert elements_of(page) <= PAGE_ELEMENTS, elements_of(page) - PAGE_ELEMENTS
    assert "img" not in elements_of(page)


def test_a_hostile_roster_name_in_the_title_renders_as_text():
    """The roster's name titles the page where the batch knows it: it is text from a file, never markup."""
    page = render_markdown(hostile_result(), name=f"{HOSTILE_ID}, *Jane* [x](http://x)")
    assert page.splitlines()[0].startswith("# Feedback for ") and "`" not in page.splitlines()[0]
    assert elements_of(page) <= PAGE_ELEMENTS, elements_of(page) - PAGE_ELEMENTS
    rendered = mistune.create_markdown(escape=False)(page.splitlines()[0])
    assert rendered.strip() == "<h1>Feedback for &lt;img src=x onerror=alert(1)&gt;, *Jane* [x](http://x)</h1>"  # as written


def test_names_and_messages_read_without_backslash_escapes():
    page = render_markdown(hostile_result())
    assert "\\_" not in page and "\\:" not in page, page
    assert "`concatenate_heads: features 0:4 do not hold head 0's output.`" in page, page


def test_checks_that_fail_alike_are_folded_into_one_box():
    result = SubmissionResult("zoe")
    for n in range(45):
        result.tests.append(TestRecord(f"test_rows_sum_to_one[zoe-b{n}]", "probabilities", "zoe", 1, "failed",
                                       f"the row at index ({n}, 0) is not a distribution.\n  expected: 1\n  got:      {n / 7:.3f}"))
    result.tests.append(TestRecord("test_other[zoe]", "shapes", "zoe", 2, "failed", "something else entirely"))
    page = render_markdown(result)
    assert page.count("### ") == 2, page
    assert "The same failure (numbers aside) in 44 more checks (44 points): `test_rows_sum_to_one[b1]`" in page, page


def test_check_names_do_not_carry_the_submissions_file_name():
    stem = "smithjane_LATE_123456_7890123_multi_head_attention"
    result = SubmissionResult(stem)
    result.tests.append(TestRecord(f"test_rows_sum_to_one[{stem}-b3-s5]", "probabilities", stem, 1, "failed", "not a distribution"))
    result.tests.append(TestRecord(f"test_other[{stem}]", "shapes", stem, 2, "failed", "something else entirely"))
    result.diagnoses = [{"function": "f", "mistake": "unknown", "title": "t", "first_failing_check": f"test_other[{stem}]"}]
    page = render_markdown(result)
    assert "### `test_rows_sum_to_one[b3-s5]` (1 point)" in page and "### `test_other` (2 points)" in page, page
    assert "the first failing check is `test_other`" in page, page
    assert page.count(stem) == 1  # the page's title alone


def test_a_diagnosis_counts_its_failing_checks_and_their_tests_and_the_report_says_tests():
    result = SubmissionResult("zoe")
    explained = [f"test_{name}[zoe-{n}]" for name, cases in (("a", 4), ("b", 1), ("c", 1), ("d", 1)) for n in range(cases)]
    for name in explained:
        result.tests.append(TestRecord(name, "shapes", "zoe", 1, "failed", "wrong"))
    result.diagnoses = [{"function": "f", "mistake": "m", "title": "t", "why": "w", "fix": "x", "explains": explained}]
    assert "explains 7 failing checks of 4 tests" in render_markdown(result)
    item = report._misconception_item(
        Misconception(function="f", mistake="m", title="t", why="w", explains=("test_a", "test_b", "test_c", "test_d"), students=("zoe",)), 1
    )
    assert "the tests it explains (4 tests)" in item, item


def test_a_layout_diagnosis_quoting_the_students_parameter_names_renders_them_as_text():
    """A module's parameter names are the student's text (register_parameter takes any name
    without a dot): the layout root cause's why quotes them, so they must not become markup."""
    from grader.exercises.multi_head_attention import causes
    from grader.feedback import root_causes

    message = (f"your module's parameters do not match the contract.\n  expected: heads.0.query.weight\n"
               f"  got:      heads.0.{HOSTILE_ID}, heads.0.*loud*")
    result = SubmissionResult("zoe")
    result.tests.append(TestRecord("test_layout[zoe]", "shapes", "zoe", 2, "failed", message))
    result.diagnoses = [root_causes._layout_entry(message, causes.HEAD_CONSTRUCTOR) | {"explains": ["test_layout[zoe]"]}]
    page = render_markdown(result)
    assert elements_of(page) <= PAGE_ELEMENTS - {"em"}, elements_of(page) - PAGE_ELEMENTS
    assert "img" not in elements_of(page) and "em" not in elements_of(page), page


def test_a_roster_name_with_a_line_break_titles_the_page_on_one_line_that_shows_the_break():
    """"Carol\nScore: 100/100" once titled a page "Feedback for Carol Score: 100/100", above the real score."""
    from grader.class_view import feedback_pages

    result = hostile_result()
    page = render_markdown(result, name="Carol\nScore: 100/100")
    title, rendered = page.splitlines()[0], mistune.create_markdown(escape=False)(page.splitlines()[0])
    assert "Carol Score" not in title and rendered.strip() == "<h1>Feedback for Carol\\x0aScore: 100/100</h1>"
    html_page = feedback_pages.render_page(result.submission, page, "", tests=[], name="Carol\nScore: 100/100")
    assert "<title>Feedback for Carol\\x0aScore: 100/100</title>" in html_page


def test_a_page_names_the_exercise_under_its_heading():
    from grader.seam import registry

    result = SubmissionResult("zoe")
    result.tests.append(TestRecord("test_other[zoe]", "shapes", "zoe", 2, "failed", "something else entirely"))
    lines = [line for line in render_markdown(result).splitlines() if line]
    assert lines[0] == "# Feedback for `zoe`" and lines[1] == f"Exercise: {registry.exercise().title}" and lines[2].startswith("**Score: 0/")
