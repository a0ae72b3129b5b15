"""The class report's students table at a laptop's width (1366 px), in headless Chromium:
ids and file names of an ordinary class are shown whole, and a column with nothing in it
(no diagnoses, no intake problem) takes no more room than its name."""

from __future__ import annotations

import pytest

import browser
from grader.batch import report
from grader.scoring import GROUPS
from handmade_class import document, write_out

needs_browser = browser.needs_browser
# Ids as LMS exports give them, with dots, hyphens and digits; half hand in a notebook.
IDS = ("jane.doe", "mohammed.al-rashid", "s2024001234", "wei_zhang_cs231", "lucia.fernandez-garcia", "o.okafor")


@pytest.fixture
def ordinary_class(tmp_path):
    documents = {}
    for index, sid in enumerate(IDS):
        result = document(sid, index % 3, bool(index % 2), diagnoses=False,
                          graded_from=f"{sid}.ipynb" if index % 2 else f"{sid}.py")
        result["groups"] = {group: {"earned": 0, "max": 10} for group in GROUPS} | result["groups"]
        documents[sid] = result
    out = write_out(tmp_path / "out", documents)
    report.write_report(out)
    return out


def lines_of(page, selector: str) -> dict[str, int]:
    """Each matching cell's text and the number of lines it is laid out on."""
    return dict(page.eval_on_selector_all(selector, """cells => cells.map(cell => {
        const range = document.createRange(); range.selectNodeContents(cell);
        const tops = new Set([...range.getClientRects()].map(rect => Math.round(rect.top)));
        return [cell.textContent, tops.size];
    })"""))


@needs_browser
def test_ids_and_file_names_are_not_broken_and_empty_columns_stay_narrow(ordinary_class):
    with browser.browser() as chromium:
        page = chromium.new_page(viewport={"width": 1366, "height": 900})
        page.goto((ordinary_class / "report.html").resolve().as_uri(), wait_until="load")
        names = lines_of(page, "#students-table tbody td:nth-child(-n+2)")  # student, graded from
        assert len(names) == 2 * len(IDS)
        assert {text: count for text, count in names.items() if count != 1} == {}
        widths = page.eval_on_selector_all(
            "#students-table tbody td:nth-last-child(-n+2)", "cells => cells.map(cell => cell.getBoundingClientRect().width)"
        )
        assert widths and max(widths) < 120, widths  # as wide as the header "diagnoses", not a quarter of the table
