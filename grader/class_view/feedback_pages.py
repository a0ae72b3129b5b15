"""A student's feedback page (``feedback/<id>.md``) as HTML, for the links of the class report.

Each page stands alone: it links nowhere (no "back to the report", which would break the
moment the page is handed to the student through the LMS, ``export --feedback-zip``), and
everything it shows is inside it.

The Markdown holds what a student controls (their id, exception messages), so it is
rendered with mistune's ``escape`` (raw HTML shows as text), links and images become their
text (a student's ``![x](http://...)`` fetches nothing), and the page's Content Security
Policy allows no script and no request at all: its one image source is ``data:``, for the
pictures of failed weights checks the grader draws itself (grader/class_view/attention_picture.py),
which are inline and fetch nothing.
"""

from __future__ import annotations

import html

import mistune

from grader import untrusted
from grader.class_view import attention_picture
from grader.class_view.class_results import PICTURES_SHOWN, has_picture
from grader.feedback.diagnosis_text import check_name

CONTENT_SECURITY_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
pre { background: #f5f5f5; padding: .6rem; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: .2rem .6rem; text-align: left; }
figure { margin: 1rem 0; } figure img { max-width: 100%; image-rendering: pixelated; border: 1px solid #ddd; }
figcaption { font-size: 13px; color: #555; }
"""


class _TextOnlyLinks(mistune.HTMLRenderer):
    """Links and images render as their (escaped) text: no navigation, no request."""

    def link(self, text: str, url: str, title: str | None = None) -> str:
        return text

    def image(self, text: str, url: str, title: str | None = None) -> str:
        return text


_markdown = mistune.create_markdown(renderer=_TextOnlyLinks(escape=True), plugins=["table"])


def render_page(student_id: str, markdown_text: str, output: str = "", tests: list[dict] = (), name: str | None = None) -> str:
    """The whole HTML page; ``output`` (what the code printed) is shown to instructors as text;
    ``tests`` (the result's) give the pictures of the failed weights checks; ``name`` (the
    roster's, where the batch had one) titles the page instead of the id."""
    feedback = _markdown(markdown_text)
    pictures = pictures_html(tests, student_id)
    # Before the list of failing checks (a heading the grader writes, never a student's text).
    for heading in ("<h2>What to fix</h2>", "<h2>Failing checks</h2>"):
        if pictures and heading in feedback:
            feedback, pictures = feedback.replace(heading, pictures + heading, 1), ""
    printed = ""
    if output:
        printed = f"<details><summary>What the code printed (for instructors)</summary><pre>{html.escape(output)}</pre></details>"
    # Which exercise the page is about: the Markdown says it under its heading (grader/feedback/markdown.py).
    body = f"""<main>
{feedback}
{pictures}
{printed}
</main>"""
    # One line, its line breaks shown escaped: a roster name cannot add a line to the title.
    return html_page(f"Feedback for {html.escape(untrusted.printable(name or student_id))}", body, STYLE, CONTENT_SECURITY_POLICY)


def pictures_html(tests: list[dict], submission: str = "") -> str:
    """The first failed weights checks, each the student's matrix beside the reference's (each
    check named without the ``submission``'s id: diagnosis_text.check_name)."""
    drawn = [test for test in tests if has_picture(test)]
    if not drawn:
        return ""
    parts = ["<section class=\"attention\"><h2>Attention weights, yours beside the reference's</h2>"]
    for test in drawn[:PICTURES_SHOWN]:
        picture = test["attention"]
        parts.append(
            f"<figure><img src=\"{attention_picture.data_url(picture)}\" alt=\"{html.escape(attention_picture.label(picture))}\">"
            f"<figcaption><strong>{html.escape(check_name(test['name'], submission))}</strong>: {html.escape(picture['what'])},"
            f" {html.escape(picture['where'])}. {html.escape(attention_picture.CAPTION)}.</figcaption></figure>"
        )
    if len(drawn) > PICTURES_SHOWN:
        parts.append(f"<p>{len(drawn) - PICTURES_SHOWN} more failed weights checks: the same comparison, on other data.</p>")
    return "\n".join(parts) + "</section>"


def html_page(title: str, body: str, style: str, policy: str) -> str:
    """A page the grader writes for people: no network (``policy``), no referrer, the
    laptop's or the phone's width. ``title`` and ``body`` are HTML, escaped by the caller."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
{body}
</body>
</html>
"""
