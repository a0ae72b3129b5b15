"""Attention as a picture wherever people look at it: a failed weights check shows the student's
matrix beside the reference's, as aligned text at the desk, as an inline PNG in the batch's
feedback page, in Gradescope's HTML output and in PrairieLearn's ``images``.

The mistake shown is the lesson's: the mask applied after the softmax (rows no longer sum to one).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import browser
import catalogue
from grader.feedback import attention_comparison
from grader.class_view import attention_picture, class_results, feedback_pages
from grader.platforms import gradescope, prairielearn
from grading import REPO_ROOT, grade
import tiers

MUTANT = "mask_after_softmax"
FIRST_WEIGHTS_CHECK = "test_every_row_of_every_head_sums_to_one"
needs_browser = browser.needs_browser


def write_mutant(folder: Path, name: str = MUTANT) -> Path:
    return catalogue.write_implementation(next(m for m in catalogue.MUTANTS if m.name == name), folder)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One desk run (``pytest grader``) of the mutant, hidden group included: its terminal and results."""
    folder = tmp_path_factory.mktemp("pictures")
    return grade([write_mutant(folder)], folder)


def pictured(run) -> list[dict]:
    return [test for test in run.results[MUTANT]["tests"] if test.get("attention")]


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the RGB rows of a PNG as attention_picture writes it: each row filtered
    with filter type 0 (none) or 2 ("Up": each byte minus the one above it; PNG specification,
    section 9.2), undone here as a viewer does; any other filter fails the test."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", data[16:24])
    idat = data.index(b"IDAT")
    length = struct.unpack(">I", data[idat - 4:idat])[0]
    raw = zlib.decompress(data[idat + 4:idat + 4 + length])
    stride = 1 + 3 * width
    assert len(raw) == height * stride
    rows, above = [], bytes(3 * width)  # above the first row: zeros
    for row in range(height):
        kind, line = raw[row * stride], raw[row * stride + 1:(row + 1) * stride]
        assert kind in (0, 2), f"row {row}: filter type {kind}"
        if kind == 2:
            line = bytes((byte + up) % 256 for byte, up in zip(line, above))
        rows.append(line)
        above = line
    return width, height, rows


# --- what the check records ------------------------------------------------------------------


def test_a_failed_weights_check_records_both_matrices_as_plain_data(graded):
    test = next(t for t in pictured(graded) if t["name"].startswith(FIRST_WEIGHTS_CHECK))
    picture = test["attention"]
    assert test["outcome"] == "failed" and picture["where"] == "batch 0, head 0", picture
    mine, theirs = picture["student"], picture["reference"]
    assert [round(sum(row), 3) for row in theirs] == [1.0] * len(theirs)  # the reference's rows are distributions
    assert any(round(sum(row), 3) != 1.0 for row in mine)  # the mutant's are not
    assert picture["allowed"][0] == [True] + [False] * (len(mine) - 1)  # the causal mask it ran under
    differing = {(q, k) for q, row in enumerate(picture["differs"]) for k, flag in enumerate(row) if flag}
    assert differing and all(picture["allowed"][q][k] for q, k in differing)  # masking after the softmax changes only allowed entries


def test_checks_that_are_not_about_weights_record_none(graded):
    outputs = [t for t in graded.results[MUTANT]["tests"] if t["outcome"] == "failed" and "output" in t["name"]]
    assert outputs and all(t["attention"] is None for t in outputs)


# --- the desk terminal -------------------------------------------------------------------------


def test_the_desk_prints_the_first_failed_weights_check_as_two_aligned_matrices(graded):
    lines = graded.output.splitlines()
    sections = [n for n, line in enumerate(lines) if "attention weights: " in line and line.startswith("-")]
    assert len(sections) == 1, graded.output[-4000:]  # the first failing weights check only
    start = sections[0]
    assert FIRST_WEIGHTS_CHECK in lines[start], lines[start]
    header = lines[start + 3]
    assert header.split() == ["yours", "reference"], lines[start:start + 10]
    rows = lines[start + 4:start + 9]  # seq 5
    column = header.index("reference")
    assert all(row[column - 4:column] == "    " and row[column] != " " for row in rows), "\n".join(rows)
    assert rows[0][column:].split()[0] == "1.00" and "*" in rows[0][:column]  # the reference keeps the whole weight
    assert all(row[:column].split().count(".") == 4 - n for n, row in enumerate(rows)), "\n".join(rows)  # the mask


def test_text_lines_mark_differences_and_masked_entries():
    picture = {"what": "w", "where": "batch 0", "student": [[0.5, 0.0], [0.25, None]], "reference": [[1.0, 0.0], [0.25, 0.75]],
               "allowed": [[True, False], [True, True]], "differs": [[True, False], [False, True]]}
    assert attention_comparison.text_lines(picture)[3:] == ["  0.50*    .     1.00     . ", "  0.25   nan*    0.25  0.75 "]


# --- the picture ---------------------------------------------------------------------------------


def test_the_png_frames_differing_entries_in_red_and_leaves_masked_ones_blank():
    picture = {"what": "w", "where": "batch 0", "student": [[0.5, 0.0], [0.25, 0.75]], "reference": [[1.0, 0.0], [0.25, 0.75]],
               "allowed": [[True, False], [True, True]], "differs": [[True, False], [False, False]]}
    width, height, rows = decode_png(attention_picture.png(picture))
    cell, margin = attention_picture.CELL, attention_picture.MARGIN
    assert (width, height) == (2 * margin + 4 * cell + attention_picture.GAP, 2 * margin + 2 * cell)

    def pixel(x: int, y: int) -> tuple[int, ...]:
        return tuple(rows[y][3 * x:3 * x + 3])

    assert pixel(margin + 2, margin + cell // 2) == attention_picture.RED  # query 0, key 0 differs: framed
    assert pixel(margin + cell + cell // 2, margin + cell // 2) == attention_picture.WHITE  # masked, zero: blank
    assert pixel(margin + cell // 2, margin + cell + cell // 2) == attention_picture.shade(0.25)  # equal: shaded, no frame


# --- the batch's feedback page, in Chromium --------------------------------------------------------


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # a class graded by the batch
def batch_out(tmp_path_factory):
    root = tmp_path_factory.mktemp("pictures-batch")
    (root / "class").mkdir()
    write_mutant(root / "class").rename(root / "class" / "alice.py")
    (root / "class" / "bob.py").write_text((REPO_ROOT / "solutions" / "multi_head_attention.py").read_text())
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(root / "class"), "--out", str(root / "out"), "--quiet", "--jobs", "1"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return root / "out"


def test_the_class_file_keeps_the_pictures_a_page_draws_and_the_students_file_keeps_them_all(batch_out):
    # The class file is read whole by the report and the export: the matrices of every failed
    # weights check (most of a failing result's bytes) stay in the student's own file.
    whole = json.loads((batch_out / "results" / "alice.json").read_text())
    pictured_there = [test for test in whole["tests"] if class_results.has_picture(test)]
    assert len(pictured_there) > feedback_pages.PICTURES_SHOWN  # the mutant fails many weights checks
    assert all("student" in test["attention"] for test in pictured_there)
    in_class = class_results.read_class_results(batch_out / "results.json")["submissions"]["alice"]["tests"]
    pictures = [test["attention"] for test in in_class if class_results.has_picture(test)]
    assert [("student" in picture) for picture in pictures] == (
        [True] * feedback_pages.PICTURES_SHOWN + [False] * (len(pictured_there) - feedback_pages.PICTURES_SHOWN)
    )
    assert {picture["kept_in"] for picture in pictures[feedback_pages.PICTURES_SHOWN:]} == {"results/alice.json"}
    # The page still counts the checks it does not draw.
    page = (batch_out / "feedback" / "alice.html").read_text()
    assert f"{len(pictured_there) - feedback_pages.PICTURES_SHOWN} more failed weights checks" in page
    assert page.count("<img src=\"data:image/png") == feedback_pages.PICTURES_SHOWN


def test_the_class_file_names_each_check_once_and_reads_back_as_every_students_own_file(batch_out):
    raw = json.loads((batch_out / "results.json").read_text())
    # Each check once, with the id's place marked; a student's tests are rows of that table.
    assert raw["checks"] and all(class_results.ID in name and "alice" not in name for name, _, _ in raw["checks"])
    assert all(isinstance(row, list) for result in raw["submissions"].values() for row in result["tests"])
    assert all(len(row) == 3 or set(row[3]) <= {"message", "attention"} for row in raw["submissions"]["alice"]["tests"])
    read = class_results.read_class_results(batch_out / "results.json")
    assert "checks" not in read
    for student in ("alice", "bob"):
        own = json.loads((batch_out / "results" / f"{student}.json").read_text())
        expected = class_results.as_kept_in_the_class_file(own, student)["tests"]
        assert read["submissions"][student]["tests"] == expected  # every field, in the same order
        assert [list(test) for test in read["submissions"][student]["tests"]] == [list(test) for test in expected]
        assert read["submissions"][student]["score"] == own["score"]


def test_the_feedback_pages_policy_allows_inline_images_and_still_no_request():
    policy = feedback_pages.CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in policy and "img-src data:;" in policy and "http" not in policy


@needs_browser
def test_in_chromium_the_feedback_page_shows_the_students_matrix_beside_the_references(batch_out, tmp_path):
    with browser.browser() as chromium:
        page = chromium.new_page(viewport={"width": 1366, "height": 900})
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto((batch_out / "feedback" / "alice.html").resolve().as_uri(), wait_until="load")
        images = page.eval_on_selector_all("section.attention img", "images => images.map(i => [i.complete, i.naturalWidth])")
        assert len(images) == feedback_pages.PICTURES_SHOWN and all(ok and width > 0 for ok, width in images), images
        caption = page.text_content("section.attention figcaption")
        assert FIRST_WEIGHTS_CHECK in caption and "left: your attention weights" in caption, caption
        # Above the list of failing checks, where a student starts reading.
        assert page.evaluate("""() => { const s = document.querySelector('section.attention'),
            h = [...document.querySelectorAll('h2')].find(e => /Failing checks|What to fix/.test(e.textContent));
            return !!(s.compareDocumentPosition(h) & Node.DOCUMENT_POSITION_FOLLOWING); }""")
        assert [url for url in requests if not url.startswith(("file:", "data:"))] == []
        page.screenshot(path=str(tmp_path / "alice.png"), full_page=True)
        page.goto((batch_out / "feedback" / "bob.html").resolve().as_uri(), wait_until="load")
        assert page.locator("img").count() == 0  # every check passed: nothing to compare


# --- Gradescope and PrairieLearn ----------------------------------------------------------------------


def mutant_document(run) -> dict:
    return dict(run.results[MUTANT], sandbox="process", sandbox_note="")


@needs_browser
def test_gradescope_shows_the_picture_as_html_output_with_an_inline_image(graded):
    report = gradescope.gradescope_results(mutant_document(graded), running_as_root=False)
    entry = next(t for t in report["tests"] if FIRST_WEIGHTS_CHECK in t["name"])
    assert entry["output_format"] == "html", entry
    assert re.search(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]+"', entry["output"]), entry["output"][:300]
    assert entry["output"].startswith("<pre>")  # the message, escaped, as text
    plain = next(t for t in report["tests"] if t["status"] == "failed" and "output_agrees" in t["name"])
    assert "output_format" not in plain  # no matrices: Gradescope's text, as before
    with browser.browser() as chromium:
        page = chromium.new_page()
        page.set_content(entry["output"], wait_until="load")
        assert page.eval_on_selector("img", "i => i.complete && i.naturalWidth > 0")


def test_gradescope_keeps_hidden_checks_pictures_back_until_their_details_are_shown(graded):
    for visibility, shown in (("after_published", False), ("visible", True)):
        report = gradescope.gradescope_results(mutant_document(graded), hidden_visibility=visibility, running_as_root=False)
        hidden = [t for t in report["tests"] if t["name"].startswith("8.") and t["status"] == "failed"]
        assert hidden and any("data:image/png" in t["output"] for t in hidden) is shown, visibility


def test_prairielearn_results_carry_the_picture_as_a_tests_image_within_1_mb(graded):
    report = prairielearn.prairielearn_results(mutant_document(graded), "graded mask_after_softmax.py")
    images = [image for test in report["tests"] for image in test.get("images", [])]
    assert images and all(set(image) == {"label", "url"} and image["url"].startswith("data:image/png;base64,") for image in images)
    assert decode_png(base64.b64decode(images[0]["url"].split(",", 1)[1]))[0] > 0
    text = prairielearn.results_text(report)
    assert len(text.encode("utf-8")) < prairielearn.RESULTS_LIMIT
    hidden_titles = [t["name"] for t in report["tests"] if "hidden" in t["name"]]
    assert all("images" not in t for t in report["tests"] if t["name"] in hidden_titles)  # no hidden check's data
    assert json.loads(text)["tests"][0].keys() >= {"name", "points", "max_points"}


def test_a_picture_that_cannot_be_made_leaves_the_checks_message_alone():
    import torch

    from grader.exercises.multi_head_attention import checks

    weights, reference = torch.full((1, 3, 3), 0.5), torch.eye(3)[None]
    assert checks.weights_picture("w", weights, reference, allowed=torch.ones(4, 4, dtype=torch.bool)) is None  # no broadcast
    with pytest.raises(pytest.fail.Exception) as failure:
        checks.expect_close(weights, reference, "w", "hint", attention=True, allowed=torch.ones(4, 4, dtype=torch.bool))
    assert not isinstance(failure.value, checks.AttentionMismatch) and "entries do not match" in str(failure.value)
    with pytest.raises(checks.AttentionMismatch) as drawn:
        checks.expect_close(weights, reference, "w", "hint", attention=True)
    assert drawn.value.picture["differs"][0] == [True, True, True] and "entries do not match" in str(drawn.value)


def test_the_caption_names_every_colour_the_picture_draws():
    # shade(): white to dark blue by weight, orange for a value that is not a number; the frame red.
    assert attention_picture.shade(None) == attention_picture.ORANGE
    for colour in ("white", "dark blue", "blank", "orange = NaN", "red frame"):
        assert colour in attention_picture.CAPTION, colour


def test_a_nan_in_the_weights_is_counted_not_read_as_an_infinite_difference():
    import torch

    from grader.exercises.multi_head_attention import checks

    reference = torch.full((1, 2, 4), 0.25)
    weights = reference.clone()
    weights[0, 0, 0] = 0.75
    weights[0, 1] = float("nan")
    with pytest.raises(pytest.fail.Exception) as failure:
        checks.expect_close(weights, reference, "w", "hint")
    message = str(failure.value)
    assert "largest difference 0.5; 4 entries are NaN" in message
    assert "inf" not in message
