"""The class report: its numbers (worked out by hand), its safety with hostile names, and the
page as a real browser shows it (headless Chromium; those tests skip without it)."""

from __future__ import annotations

import csv
import json
import math
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from urllib.parse import quote

import browser
import handmade_class
from grader import untrusted
from grader.class_view import class_statistics, report
from grading import REPO_ROOT
import tiers
from handmade_class import HOSTILE_ID, class_documents, document, write_out
from sample_class import notebook_document

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
STUB = REPO_ROOT / "exercises" / "multi_head_attention.py"
needs_browser = browser.needs_browser


# --- the numbers, on the hand-made class (tests/handmade_class.py) ---------------------------


@pytest.fixture
def numbers():
    return class_statistics.class_statistics(class_documents())


def test_the_score_summary_has_the_class_figures(numbers):
    scores = numbers.scores  # 4, 3, 2, 0 out of 5
    assert (scores.count, scores.max_score, scores.minimum, scores.maximum) == (4, 5, 0, 4)
    assert scores.mean == 2.25
    assert scores.median == 2.5
    assert scores.standard_deviation == pytest.approx(math.sqrt((1.75**2 + 0.75**2 + 0.25**2 + 2.25**2) / 4))
    assert (scores.share_at_zero, scores.share_at_full) == (0.25, 0.0)


def test_the_histogram_has_ten_bins_over_the_maximum(numbers):
    # Bins of half a point: 0 in the first, 2 in [2, 2.5), 3 in [3, 3.5), 4 in [4, 4.5).
    assert numbers.scores.histogram == (1, 0, 0, 0, 1, 0, 1, 0, 1, 0)
    assert numbers.scores.bin_edges == (0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5)


def test_full_marks_fall_in_the_last_bin():
    assert class_statistics.score_summary([100, 90, 89], 100).histogram == (0,) * 8 + (1, 2)


def test_each_check_has_its_pass_rate_mean_and_item_rest_discrimination_hardest_first(numbers):
    checks = {item.name: item for item in numbers.checks}
    assert [item.name for item in numbers.checks] == ["test_c", "test_a", "test_b"]
    a, b, c = checks["test_a"], checks["test_b"], checks["test_c"]
    assert (a.max_points, a.pass_rate, a.mean_points) == (2, 0.25, 0.75)
    assert (b.max_points, b.pass_rate, b.mean_points) == (2, 0.75, 1.5)
    # test_a: points 2, 1, 0, 0 against the rest 2, 2, 2, 0:
    # r = 1.5 / sqrt(2.75 * 3.0) (sums of products of deviations from 0.75 and 1.5).
    assert a.discrimination == pytest.approx(1.5 / math.sqrt(2.75 * 3.0))
    assert b.discrimination == pytest.approx(1.5 / math.sqrt(2.75 * 3.0))
    assert (c.pass_rate, c.mean_points, c.discrimination) == (0.0, 0.0, None)  # nobody earns it: r is undefined


def test_groups_have_the_same_figures_under_their_titles(numbers):
    groups = {item.group: item for item in numbers.groups}
    assert groups["shapes"].name == "1. shapes"
    assert (groups["shapes"].pass_rate, groups["shapes"].mean_points) == (0.25, 0.75)
    assert (groups["probabilities"].pass_rate, groups["probabilities"].mean_points) == (0.75, 1.5)
    assert groups["configuration"].discrimination is None


def test_a_check_that_separates_nobody_the_right_way_has_negative_discrimination():
    # The weakest student passes it, the strongest fails it.
    item = class_statistics.item_statistics("odd", "shapes", {"a": 0, "b": 1}, 1, {"a": 5, "b": 1})
    assert item.discrimination == pytest.approx(-1.0)


def test_misconceptions_count_the_students_holding_each_the_most_held_first(numbers):
    found = numbers.misconceptions
    assert [(m.mistake, m.students) for m in found] == [("interleaved_heads", ("s2", "s3")), ("softmax_over_queries", ("s3",))]
    assert found[0].title == "Heads interleaved instead of side by side"
    assert found[0].explains == ("test_a",)  # each check once, without its parameters
    assert numbers.unexplained == {"causal_mask": ("s4",)}  # "unknown" is no misconception


def test_results_without_diagnoses_give_no_misconception():
    assert class_statistics.class_statistics(class_documents(diagnoses=False)).misconceptions == []


def test_an_empty_class_has_no_statistics_and_still_a_page():
    assert class_statistics.class_statistics({}).scores is None
    page = report.render_report({"submissions": {}}, "empty", "today")
    assert "No submission has a result yet." in page


# --- the page (HTML text) ------------------------------------------------------------------


@pytest.fixture
def handmade_out(tmp_path):
    return write_out(tmp_path / "out", class_documents())


def test_the_report_shows_the_header_the_figures_both_charts_and_the_misconceptions(handmade_out):
    page = report.write_report(handmade_out).read_text(encoding="utf-8")
    assert "<h1>Class report: Hand-made class</h1>" in page
    for fact in ("2026-01-02 03:04 UTC", "1234", "bwrap", '<span id="graded-count">4</span>', '<span id="refused-count">0</span>'):
        assert fact in page
    figures = dict(re.findall(r'<th scope="row">([^<]+)</th><td class="number">([^<]+)</td>', page))
    assert figures == {
        "mean": "2.25", "median": "2.5", "standard deviation": "1.48", "min": "0", "max": "4",
        "at 0": "25%", "at full marks (5)": "0%",
    }
    assert page.count('src="data:image/svg+xml;base64,') == 2  # histogram, groups (misconceptions are HTML bars)
    assert "Heads interleaved instead of side by side" in page and "Each head&#x27;s features must stay together." in page
    assert '<ul id="unexplained"><li>causal_mask: 1 student (<a href="feedback/s4.html">s4</a>)</li></ul>' in page
    assert '<td class="diagnoses text long">causal_mask: no known mistake</td>' in page


def test_the_report_needs_no_network_and_allows_only_its_own_script(handmade_out):
    page = report.write_report(handmade_out).read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "default-src 'none'" in page and f"'sha256-{report.SCRIPT_HASH}'" in page
    assert page.count("<script") == 1


def test_every_student_has_a_feedback_page_beside_the_report(handmade_out):
    report.write_report(handmade_out)
    page = (handmade_out / "feedback" / "s4.html").read_text(encoding="utf-8")
    assert "<h1>Feedback for s4</h1>" in page and "expected 1, got 2" in page
    assert '<a href="feedback/s4.html">feedback</a>' in (handmade_out / "report.html").read_text(encoding="utf-8")


def test_a_hostile_id_message_and_output_render_as_text(tmp_path):
    documents = class_documents()
    documents[HOSTILE_ID] = document(
        HOSTILE_ID, 1, False, graded_from=f"{HOSTILE_ID}.py", output="<script>alert(3)</script>\x1b[31m",
        import_error="SyntaxError: <b>bold</b>\nmore", diagnoses=[{"function": "f", "mistake": "m", "title": "<i>t</i>", "explains": ""}],
    )
    out = write_out(tmp_path / "out", documents)
    stem = untrusted.file_stem(HOSTILE_ID)  # as the batch names this student's files
    (out / "feedback" / f"{stem}.md").write_text(
        f"# Feedback for {HOSTILE_ID}\n\n[click](javascript:alert(1)) ![x](http://example.invalid/pixel.png)\n\n<script>alert(2)</script>\n",
        encoding="utf-8",
    )
    page = report.write_report(out).read_text(encoding="utf-8")
    assert HOSTILE_ID not in page and "<b>bold" not in page and "<i>t</i>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;img src=x onerror=alert(1)&gt;.py" in page
    assert "SyntaxError: &lt;b&gt;bold&lt;/b&gt;" in page
    assert f'href="feedback/{quote(stem + ".html", safe="")}"' in page
    feedback = (out / "feedback" / f"{stem}.html").read_text(encoding="utf-8")
    assert HOSTILE_ID not in feedback and "<script>alert" not in feedback
    assert "javascript:" not in feedback and "example.invalid" not in feedback  # links and images are text
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in feedback  # what the code printed, for instructors


def test_the_report_command_rebuilds_the_report_of_an_existing_out(handmade_out):
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "report", str(handmade_out), "--assignment", "Renamed"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )
    assert finished.returncode == 0, finished.stderr
    assert "<h1>Class report: Renamed</h1>" in (handmade_out / "report.html").read_text(encoding="utf-8")


def test_the_report_command_says_when_there_is_nothing_to_report(tmp_path):
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "report", str(tmp_path)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 2 and "no results.json" in finished.stdout


# --- a real batch: traceability, the hook, and the page in Chromium ---------------------------


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # a class graded by the batch
def graded(tmp_path_factory):
    """A batch of six entries: dup.py, dup.ipynb and dup.zip (one student's three files: the .py
    holds the most work, the notebook none), pair.py and pair.ipynb (both hold work: the notebook,
    which holds more, is graded), a hostile file name; and two files that are not submissions (a
    README and a CSV)."""
    root = tmp_path_factory.mktemp("report-batch")
    submissions = root / "class"
    submissions.mkdir()
    (submissions / "dup.py").write_text(SOLUTION.read_text())
    (submissions / "dup.ipynb").write_text(json.dumps(notebook_document(STUB.read_text())))
    with zipfile.ZipFile(submissions / "dup.zip", "w") as archive:
        archive.writestr("multi_head_attention.py", "def head_dimension(:\n")
    (submissions / f"{HOSTILE_ID}.py").write_bytes(b"\x00 not text")
    # pair.py and pair.ipynb both hold work and no order is known: the one holding more is graded, the other said.
    (submissions / "pair.py").write_text(STUB.read_text().replace(
        '    raise NotImplementedError("head_dimension is not written yet")', "    return model_dim // num_heads"))
    (submissions / "pair.ipynb").write_text(json.dumps(notebook_document(SOLUTION.read_text())))
    (submissions / "README.txt").write_text("Submissions for HW3, downloaded from Canvas.\n")  # the instructor's own files
    (submissions / "scores.csv").write_text("student,score\n")
    out = root / "out"
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out), "--quiet", "--jobs", "1", "--assignment", "Traced"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return out


def test_results_json_records_which_entry_each_id_was_graded_from(graded):
    document = handmade_class.read_results(graded)
    graded_from = {sid: result["graded_from"] for sid, result in document["submissions"].items()}
    assert graded_from == {"dup": "dup.py", "pair": "pair.ipynb", HOSTILE_ID: f"{HOSTILE_ID}.py"}  # one entry per student
    assert document["submissions"]["pair"]["score"] == 100
    assert "superseded: pair.py (writes 1 of the exercise's 7 functions, 6 left as stubs)" in document["submissions"]["pair"]["intake_note"]
    expected = (
        "graded dup.py (writes 7 of the exercise's 7 functions): no order of these attempts is known (not each named by Canvas with an attachment id of its own, "
        "no submission time for each file): the one that holds the most work; superseded: dup.zip (does not parse (a syntax "
        "error), so which of the exercise's 7 functions it writes cannot be told); not graded: dup.ipynb (writes 0 of the exercise's 7 functions, "
        "7 left as stubs); one student's files by their name (the same, another extension)"
    )
    assert document["submissions"]["dup"]["graded_file"] == document["submissions"]["dup"]["intake_note"] == expected
    assert "binary" in document["submissions"][HOSTILE_ID]["intake_problem"]
    assert document["submissions"]["dup"]["intake_problem"] == ""
    assert (document["assignment"], document["not_graded"]) == ("Traced", {})
    assert [(item["name"], item["reason"]) for item in document["ignored"]] == [
        ("README.txt", "a README file"), ("scores.csv", "a spreadsheet or table, not code"),
    ]


def test_every_batch_writes_the_report_with_the_entries_names(graded):
    page = (graded / "report.html").read_text(encoding="utf-8")
    assert "<h1>Class report: Traced</h1>" in page
    assert '<td class="text name">pair.ipynb</td>' in page and '<span id="refused-count">1</span>' in page
    assert HOSTILE_ID not in page
    ignored = re.search(r'<ul id="ignored">(.*?)</ul>', page, re.S)[1]
    assert "<code>README.txt</code>: a README file" in ignored and "<code>scores.csv</code>: a spreadsheet" in ignored
    assert "<code>dup</code>: graded dup.py" in re.search(r'<ul id="several-files">(.*?)</ul>', page, re.S)[1]
    assert sorted(path.name for path in (graded / "feedback").glob("*.html")) == sorted(
        f"{untrusted.file_stem(sid)}.html" for sid in ("dup", "pair", HOSTILE_ID)
    )


def _open(chromium, path: Path, height: int = 768):
    """The page from its file URL at a laptop's width, with every request, console error and dialog it caused."""
    page = chromium.new_page(viewport={"width": 1366, "height": height})
    seen = {"requests": [], "errors": [], "dialogs": []}
    page.on("request", lambda request: seen["requests"].append(request.url))
    page.on("console", lambda message: seen["errors"].append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    page.on("dialog", lambda dialog: (seen["dialogs"].append(dialog.message), dialog.dismiss()))
    page.goto(path.resolve().as_uri(), wait_until="load")
    return page, seen


def _network(requests: list[str]) -> list[str]:
    return [url for url in requests if not url.startswith(("file:", "data:"))]


@needs_browser
def test_in_chromium_the_report_loads_offline_and_equals_the_gradebook(graded):
    with browser.browser() as chromium:
        page, seen = _open(chromium, graded / "report.html")
        assert seen["errors"] == [] and _network(seen["requests"]) == [] and seen["dialogs"] == []
        shown = page.eval_on_selector_all(
            "#students-table tbody tr",
            """rows => rows.map(row => [row.querySelector('td.student').textContent, row.querySelector('td.score').textContent,
                    ...[...row.querySelectorAll('td[data-group]')].map(cell => cell.textContent)])""",
        )
        with open(graded / "gradebook.csv", newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
        groups = slice(rows[0].index("status") + 1, rows[0].index("diagnoses"))  # the gradebook's group columns
        assert shown == [[row[0], row[1], *row[groups]] for row in rows[1:]]
        assert page.locator("td.student", has_text="onerror").text_content() == HOSTILE_ID  # text, not an element
        charts = page.eval_on_selector_all("img", "images => images.map(image => [image.id, image.complete && image.naturalWidth > 0])")
        assert charts == [["histogram", True], ["groups-chart", True]]  # no student's <img>
        assert int(page.text_content("#graded-count")) == len(rows) - 1


@needs_browser
def test_in_chromium_the_charts_show_and_any_column_sorts(handmade_out):
    report.write_report(handmade_out)
    with browser.browser() as chromium:
        page, seen = _open(chromium, handmade_out / "report.html")
        charts = page.eval_on_selector_all("img", "images => images.map(image => [image.id, image.complete && image.naturalWidth > 0])")
        assert charts == [["histogram", True], ["groups-chart", True]]
        scores = lambda: page.eval_on_selector_all("#students-table td.score", "cells => cells.map(cell => Number(cell.textContent))")  # noqa: E731
        assert scores() == [4, 3, 2, 0]  # by student id
        page.click("#students-table th:has-text('score') button")
        assert scores() == [0, 2, 3, 4]
        page.click("#students-table th:has-text('score') button")
        assert scores() == [4, 3, 2, 0]
        page.click("#checks-table th:has-text('pass rate') button")
        assert page.eval_on_selector_all("#checks-table tbody tr td:first-child", "cells => cells.map(c => c.textContent)") == [
            "test_c", "test_a", "test_b"
        ]
        assert seen["errors"] == [] and _network(seen["requests"]) == [] and seen["dialogs"] == []


# A class whose text is as long as real classes make it: an LMS id with no place to break a line,
# misconception titles that are whole sentences (as grader/exercises/multi_head_attention/hidden/mistakes.py writes them),
# several diagnoses for one student, and an entry refused at intake with the intake's message.
LONG_ID = "a_student_whose_lms_export_gives_an_identifier_far_longer_than_any_table_column_0123456789"
LONG_TITLES = (
    "the softmax normalises over the query axis (dim=-2) instead of the key axis",
    "the causal mask allows later positions and blocks earlier ones (the upper triangle)",
    "head_dimension returns a number instead of raising when the width does not divide",
)


def _long_diagnosis(index: int) -> dict:
    explains = [f"test_a_check_with_a_long_descriptive_name_number_{n}[case]" for n in range(12)]
    return {"function": f"function_{index}", "mistake": f"mistake_{index}", "title": LONG_TITLES[index], "why": "", "explains": explains}


@pytest.fixture
def long_text_out(tmp_path):
    """The hand-made class in all eight groups of the real grader, with two students of long text
    and a refused entry; the misconceptions are held by 3, 2 and 1 students."""
    documents = class_documents(diagnoses=False)
    refused = LONG_ID + "-refused"
    documents[LONG_ID] = document(LONG_ID, 0, False, graded_from=f"{LONG_ID}.ipynb")
    documents[refused] = document(
        refused, 0, False, graded_from=f"{refused}.py",
        intake_problem=f"{refused}.py looks like a binary file (it contains NUL bytes), not Python source text.",
    )
    for sid, held in {LONG_ID: (0, 1, 2), "s2": (0, 1), "s3": (0,)}.items():
        documents[sid]["diagnoses"] = [_long_diagnosis(index) for index in held]
    for result in documents.values():
        handmade_class.in_every_group(result)
    return write_out(tmp_path / "out", documents)


def _overflowing(page) -> list[str]:
    """What reaches past the window's right edge, shown or scrolled to: what a 1366 px screen cuts off."""
    return page.evaluate(
        """() => [...document.body.querySelectorAll('*')]
            .filter(element => element.getBoundingClientRect().right > window.innerWidth + 0.5)
            .map(element => element.tagName.toLowerCase() + (element.id ? '#' + element.id : '') + ' ' + element.textContent.slice(0, 40))"""
    )


@needs_browser
def test_in_chromium_the_report_of_long_text_fits_a_laptop_screen_without_sideways_scrolling(long_text_out):
    report.write_report(long_text_out)
    with browser.browser() as chromium:
        page, seen = _open(chromium, long_text_out / "report.html", height=900)
        assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("window.innerWidth")
        assert _overflowing(page) == []  # not even inside a box that scrolls sideways on its own
        assert page.locator("td.student", has_text=LONG_ID + "-refused").is_visible()
        assert page.locator("td.problem", has_text="not Python source text").is_visible()
        scores = lambda: page.eval_on_selector_all("#students-table td.score", "cells => cells.map(cell => Number(cell.textContent))")  # noqa: E731
        assert scores() == [0, 0, 4, 3, 2, 0]  # by student id: the long ones first
        page.click("#students-table th:has-text('score') button")
        assert scores() == [0, 0, 0, 2, 3, 4]
        assert seen["errors"] == []


@needs_browser
def test_in_chromium_each_misconception_shows_its_full_title_beside_a_bar_of_its_students(long_text_out):
    report.write_report(long_text_out)
    with browser.browser() as chromium:
        page, _ = _open(chromium, long_text_out / "report.html", height=900)
        section = page.inner_text("#misconceptions")
        assert all(title in section for title in LONG_TITLES)
        shown = page.eval_on_selector_all(
            "#misconceptions .misconception",
            """items => items.map(item => {
                const title = item.querySelector('.title');
                return {title: title.innerText, size: parseFloat(getComputedStyle(title).fontSize),
                        cut: title.scrollWidth > title.clientWidth, students: Number(item.querySelector('.holders').innerText),
                        bar: item.querySelector('.bar').getBoundingClientRect().width};
            })""",
        )
        assert [(row["title"], row["students"]) for row in shown] == list(zip(LONG_TITLES, (3, 2, 1)))
        assert all(row["size"] >= 13 and not row["cut"] for row in shown), shown  # the page's own size, nothing hidden
        bars = [row["bar"] for row in shown]
        assert bars[0] > 0 and bars == pytest.approx([bars[0], bars[0] * 2 / 3, bars[0] / 3], abs=1)
        assert page.locator("#misconceptions img").count() == 0  # no chart whose labels are cut short
        # The dozen checks each explains are folded away until the teacher asks for them.
        checks = page.locator("#misconceptions .misconception").first.locator("details p")
        assert not checks.is_visible()
        page.locator("#misconceptions .misconception").first.locator("summary").click()
        assert checks.is_visible() and "test_a_check_with_a_long_descriptive_name_number_11" in checks.inner_text()


@needs_browser
def test_in_chromium_a_hostile_feedback_page_runs_nothing_and_fetches_nothing(tmp_path):
    documents = {HOSTILE_ID: document(HOSTILE_ID, 0, False)}
    out = write_out(tmp_path / "out", documents)
    stem = untrusted.file_stem(HOSTILE_ID)  # as the batch names this student's files
    (out / "feedback" / f"{stem}.md").write_text(
        f"# Feedback for {HOSTILE_ID}\n\n![x](http://example.invalid/pixel.png) <img src=x onerror=alert(1)>\n", encoding="utf-8"
    )
    report.write_report(out)
    with browser.browser() as chromium:
        page, seen = _open(chromium, out / "feedback" / f"{stem}.html")
        assert page.text_content("h1") == f"Feedback for {HOSTILE_ID}"
        assert page.locator("img").count() == 0
        assert _network(seen["requests"]) == [] and seen["dialogs"] == []


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda result: result.pop("score"), "has score None of max_score"),
        (lambda result: result.update(max_score="100"), "of max_score '100'"),
        (lambda result: result.update(score=120), "has score 120 of max_score"),
        (lambda result: result.update(groups=[]), "has a 'groups' that is not a dict"),
    ],
)
def test_a_hand_edited_results_json_is_refused_naming_the_student_and_what_is_wrong(tmp_path, edit, said):
    out = write_out(tmp_path / "out", class_documents())
    document = json.loads((out / "results.json").read_text())
    sid = sorted(document["submissions"])[0]
    edit(document["submissions"][sid])
    (out / "results.json").write_text(json.dumps(document))
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "report", str(out)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )
    assert finished.returncode == 2 and f"submission {sid!r} " in finished.stderr and said in finished.stderr, finished.stderr
    assert "Traceback" not in finished.stderr


def test_the_intake_section_names_what_was_set_aside_and_why():
    from grader.class_view import report

    document = {
        "submissions": {"jane": {"intake_note": "graded jane.py (writes 7 of the exercise's 7 functions); not graded: <b>x.py"}},
        "ignored": [{"name": "README.txt", "reason": "a README file"}],
        "not_unpacked": [{"name": "big.ipynb", "reason": "larger than 20 MB unpacked"}],
    }
    section = report._intake_section(document)
    assert "<code>jane</code>: graded jane.py" in section and "&lt;b&gt;x.py" in section and "<b>x" not in section
    assert '<ul id="ignored"><li><code>README.txt</code>: a README file</li></ul>' in section
    assert 'id="not-unpacked"><li><code>big.ipynb</code>: larger than 20 MB unpacked</li>' in section
    assert report._intake_section({"submissions": {}}) == ""
