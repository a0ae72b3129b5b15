"""A student's feedback page (``feedback/<id>.md``) as HTML, for the links of the class report.

The Markdown holds what a student controls (their id, exception messages), so it is
rendered with mistune's ``escape`` (raw HTML shows as text), links and images become their
text (a student's ``![x](http://...)`` fetches nothing), and the page's Content Security
Policy allows no script and no request at all.
"""

from __future__ import annotations

import html

import mistune

CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'"
STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
pre { background: #f5f5f5; padding: .6rem; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: .2rem .6rem; text-align: left; }
nav { margin-bottom: 1rem; }
"""


class _TextOnlyLinks(mistune.HTMLRenderer):
    """Links and images render as their (escaped) text: no navigation, no request."""

    def link(self, text: str, url: str, title: str | None = None) -> str:
        return text

    def image(self, text: str, url: str, title: str | None = None) -> str:
        return text


_markdown = mistune.create_markdown(renderer=_TextOnlyLinks(escape=True), plugins=["table"])


def render_page(student_id: str, markdown_text: str, output: str = "", report_link: str = "../report.html") -> str:
    """The whole HTML page; ``output`` (what the code printed) is shown to instructors as text."""
    printed = ""
    if output:
        printed = f"<details><summary>What the code printed (for instructors)</summary><pre>{html.escape(output)}</pre></details>"
    body = f"""<nav><a href="{html.escape(report_link)}">← class report</a></nav>
<main>
{_markdown(markdown_text)}
{printed}
</main>"""
    return html_page(f"Feedback for {html.escape(student_id)}", body, STYLE, CONTENT_SECURITY_POLICY)


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
