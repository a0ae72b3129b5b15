"""The class report's students table at a laptop's screen (1366 x 768), in headless Chromium:
ids and file names of an ordinary class are shown whole, and a column with nothing in it
(no diagnoses, no intake problem) takes no more room than its name; a crowded class (Canvas's
long file stems, a long name, every group, the grade's trail, an override's reason of two
sentences, a long error) needs no sideways scroll, breaks no word and reads a reason as a
sentence. What is measured is what a person sees: the page's widths, and where each word lands."""

from __future__ import annotations

import json

import pytest

import browser
from grader.class_view import report
from handmade_class import document, in_every_group, write_out

needs_browser = browser.needs_browser
# Ids as LMS exports give them, with dots, hyphens and digits; half hand in a notebook.
IDS = ("jane.doe", "mohammed.al-rashid", "s2024001234", "wei_zhang_cs231", "lucia.fernandez-garcia", "o.okafor")


@pytest.fixture
def ordinary_class(tmp_path):
    documents = {}
    for index, sid in enumerate(IDS):
        result = document(sid, index % 3, bool(index % 2), diagnoses=False,
                          graded_from=f"{sid}.ipynb" if index % 2 else f"{sid}.py")
        documents[sid] = in_every_group(result)
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


# A term's class at its most crowded: Canvas's file stems, a family name of 31 letters, all eight
# groups, a late penalty and an override (the trail's columns), diagnoses, an import error naming
# a long module.
CROWDED = (
    ("rodriguezcastanedamariafernanda_LATE_123456_7890123", ".ipynb"),
    ("wolfeschlegelsteinhausenbergerdorff_hubert_blaine_7741", ".py"),
    ("nguyen_thi_minh_khai_cs231n_2026", ".zip"),
    ("jane.doe", ".py"),
    ("s2024001234", ".py"),
)
REASON = ("Regraded by hand after the office-hours discussion: the student's mask convention was documented "
          "in the notebook and is accepted. Late penalty waived by the department.")
LONGEST_WHOLE_WORD = 20  # letters and digits: no ordinary word is broken; a longer run may be, where no width shows it


@pytest.fixture
def crowded_class(tmp_path):
    documents = {}
    for index, (sid, suffix) in enumerate(CROWDED):
        result = document(sid, index % 3, bool(index % 2), diagnoses=False, graded_from=f"{sid}_multi_head_attention{suffix}")
        in_every_group(result)
        if index % 2:
            result["diagnoses"] = [{"function": "MultiHeadSelfAttention.forward", "mistake": "softmax_over_queries",
                                    "title": "Softmax taken over the query axis instead of the key axis", "explains": []}]
        documents[sid] = result
    first, second, third = (sid for sid, _ in CROWDED[:3])
    documents[first] |= {"raw_score": documents[first]["score"], "late": {"penalty": 12.5, "note": "2 days late: 25%"}}
    documents[second] |= {"raw_score": documents[second]["score"], "score": 4, "override": {"score": 4, "reason": REASON}}
    documents[third] |= {"status": "import error", "import_error": (
        "ModuleNotFoundError: No module named 'einops_helpers_for_attention_homework' (multi_head_attention.py, line 3)")}
    out = write_out(tmp_path / "out", documents)
    # The page as the report draws it: a late record and an override written straight into the
    # results would be refused by write_report, which derives them from a course's files
    # (tests/test_grade_trail.py); the table's layout is render_report's.
    page = json.loads((out / "results.json").read_text(encoding="utf-8")) | {"submissions": documents}
    (out / "report.html").write_text(report.render_report(page, "Crowded class", "2026-01-02 03:04"), encoding="utf-8")
    return out


BROKEN_WORDS = """([selector, longest]) => {
    const broken = [];
    for (const cell of document.querySelectorAll(selector)) {
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const word of node.data.matchAll(/[\\p{L}\\p{N}]+/gu)) {
                if (word[0].length > longest) continue;
                const range = document.createRange();
                range.setStart(node, word.index);
                range.setEnd(node, word.index + word[0].length);
                const places = new Set([...range.getClientRects()].map(r => `${Math.round(r.top)},${Math.round(r.left)}`));
                if (places.size > 1) broken.push(`${word[0]} (in ${cell.textContent.slice(0, 50)})`);
            }
        }
    }
    return broken;
}"""


# Columns a later change may add (a roster's name, a final score, days late), as plain cells with
# no class of their own: the table's defaults must keep them fitting too.
MORE_COLUMNS = """() => {
    for (const row of document.querySelector('#students-table').rows) {
        const header = row.parentElement.tagName === 'THEAD';
        const cells = [['name', 'María-Fernanda Rodríguez Castañeda', 1], ['final', '88.5', 6], ['days late', '2', 6]];
        for (const [title, text, before] of cells) {
            const cell = document.createElement(header ? 'th' : 'td');
            cell.textContent = header ? title : text;
            row.insertBefore(cell, row.cells[before]);
        }
    }
}"""


def assert_fits_and_breaks_no_word(page) -> None:
    widths = page.evaluate("""() => {
        const box = document.querySelector('#students .scroll'), root = document.documentElement;
        return [box.scrollWidth, box.clientWidth, root.scrollWidth, root.clientWidth];
    }""")
    assert widths[0] <= widths[1] and widths[2] <= widths[3], f"sideways scroll: {widths}"
    assert page.evaluate(BROKEN_WORDS, ["#students-table th, #students-table td", LONGEST_WHOLE_WORD]) == []
    [(reason, lines)] = [(text, count) for text, count in lines_of(page, "#students-table td.override").items() if text]
    assert REASON in reason and len(reason.split()) / lines >= 3, f"{lines} lines for {len(reason.split())} words"


@needs_browser
def test_a_crowded_class_fits_a_laptop_screen_without_breaking_a_word_and_a_reason_reads_as_a_sentence(crowded_class):
    with browser.browser() as chromium:
        page = chromium.new_page(viewport={"width": 1366, "height": 768})
        page.goto((crowded_class / "report.html").resolve().as_uri(), wait_until="load")
        assert_fits_and_breaks_no_word(page)
        page.evaluate(MORE_COLUMNS)
        assert_fits_and_breaks_no_word(page)
