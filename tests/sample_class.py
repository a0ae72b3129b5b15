"""The bundled sample class: eight students who show the whole batch-grading flow.

    .venv/bin/python tests/sample_class.py DEST          # (re)create DEST/
    .venv/bin/python -m grader batch DEST --out OUT      # grade it: OUT/gradebook.csv, feedback/...

Every entry is built at run time from ``solutions/multi_head_attention.py`` and
``tests/catalogue.py`` (the repository keeps one copy of the solution), and the output is
byte-for-byte the same on every run: fixed zip timestamps, fixed notebook cell ids.

=====================  ==================================================================
entry                  what it shows
=====================  ==================================================================
alice_correct.py       the solution under a student's file name: 100/100
bob_notebook.ipynb     the solution in a Jupyter notebook (markdown, ``%matplotlib inline``
                       and code split over several cells): the code cells are graded, 100
carol_partial.py       started from the stub and wrote every function but one, which still
                       raises NotImplementedError: partial marks, feedback names the function
dan_buggy.py           a catalogue mutant (softmax over the query axis): loses points in
                       probabilities, causal masking and the hidden reference tests
erin_lms.zip           what an LMS hands out: a folder inside the zip holding
                       multi_head_attention.py and a stray conftest.py (which would make every
                       test pass if pytest ever loaded it; intake stages only the .py): 100
frank_syntax_error.py  a missing colon: 0, the feedback shows the SyntaxError
grace_binary.py        a screenshot (PNG) saved as .py: refused at intake, 0, with the reason
mallory_hostile.py     an attacker: at import it writes a forged results.json beside itself
                       and into /tmp and patches torch.allclose to always say True; its
                       AttentionHead.forward calls os._exit(0). In the batch's sandbox the
                       writes fail, the patch only fools the worker (the grader compares
                       tensors itself) and the exit costs only the tests that reach it
=====================  ==================================================================

Do not grade mallory_hostile.py with plain ``pytest grader --submission`` (the in-process
backend, meant for a student's own code): its ``os._exit(0)`` ends that pytest session.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import struct
import sys
import zipfile
import zlib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from grader.handout import stubs  # noqa: E402
from tests import catalogue  # noqa: E402

SOLUTION_PATH = catalogue.SOLUTION_PATH
# A hidden file: intake skips it, so it never becomes a student. Its presence tells a rerun
# that DEST is a sample class it may wipe.
MARKER = ".sample-class"
ZIP_DATE = (2024, 1, 15, 9, 30, 0)  # fixed, so the zip's bytes are the same on every run

# --- one builder per student -------------------------------------------------------------


def solution_source() -> str:
    return SOLUTION_PATH.read_text(encoding="utf-8")


def correct_source() -> str:
    return solution_source()


def partial_source(missing: str = "concatenate_heads") -> str:
    """Every function written except ``missing``, which is still the stub's NotImplementedError.

    Blank the BEGIN/END markers of every other region (their code stays), then let
    ``make_stub`` replace the one region still marked, as tests/test_grader.py does.
    """
    source = solution_source()
    lines = source.splitlines()
    regions = stubs.find_regions(source)
    if missing not in [region.function for region in regions]:
        raise ValueError(f"the solution has no solution region in {missing!r}")
    for region in regions:
        if region.function != missing:
            for number in (region.begin, region.end):
                lines[number - 1] = lines[number - 1].replace(stubs.BEGIN_SOLUTION, "#").replace(stubs.END_SOLUTION, "#")
    return stubs.make_stub("\n".join(lines) + "\n")


def buggy_source(mutant: str = "softmax_over_queries") -> str:
    (implementation,) = [impl for impl in catalogue.MUTANTS if impl.name == mutant]
    return catalogue.implementation_source(implementation)


def syntax_error_source() -> str:
    edit = catalogue.Edit("class AttentionHead(nn.Module):", "class AttentionHead(nn.Module)")
    return catalogue.apply_edits(solution_source(), [edit], name="frank_syntax_error")


HOSTILE_ATTACK = '''

# ---- the attack: everything below runs at import ---------------------------------------
import json as _json
import os
from pathlib import Path as _Path

_FORGED = {
    "grader_version": "0.1.0",
    "grading_seed": 0,
    "submissions": {"mallory_hostile": {"submission": "mallory_hostile", "score": 100, "max_score": 100}},
}
for _place in (_Path(__file__).resolve().parent / "results.json", _Path("/tmp/results.json")):
    try:  # an attacker stays quiet when a write is refused
        _place.write_text(_json.dumps(_FORGED))
    except OSError:
        pass
torch.allclose = lambda *args, **kwargs: True  # "every comparison passes"
# ----------------------------------------------------------------------------------------
'''


def hostile_source() -> str:
    edits = [
        catalogue.Edit("from torch import nn\n", "from torch import nn\n" + HOSTILE_ATTACK),
        catalogue.Edit(
            "        ### BEGIN SOLUTION\n        queries = self.query(inputs)",
            "        ### BEGIN SOLUTION\n"
            "        os._exit(0)  # end the grader's process before any check can fail\n"
            "        queries = self.query(inputs)",
        ),
    ]
    return catalogue.apply_edits(solution_source(), edits, name="mallory_hostile")


def notebook_document(source: str) -> dict:
    """The solution as an nbformat-4 notebook: a markdown cell, then a few code cells."""
    starts = _top_level_starts(source)
    lines = source.splitlines(keepends=True)
    # Cell boundaries: before the dataclasses, the functions, the head, the combination.
    boundaries = [starts[name] for name in ("HeadResult", "head_dimension", "AttentionHead", "concatenate_heads")]
    chunks = ["".join(lines[a:b]).strip("\n") for a, b in zip([0, *boundaries], [*boundaries, len(lines)])]
    chunks[0] = "%matplotlib inline\n" + chunks[0]  # a magic line: intake drops it before grading
    markdown = (
        "# Multi-head self-attention\n"
        "\n"
        "My solution for the exercise *combining several attention heads*: each head projects\n"
        "the input to queries, keys and values, the heads are concatenated and projected back."
    )
    cells = [_cell("markdown", markdown, 0)] + [_cell("code", chunk, number) for number, chunk in enumerate(chunks, 1)]
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "version": "3.11"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _top_level_starts(source: str) -> dict[str, int]:
    """0-based first line (decorators included) of every top-level class and function."""
    starts = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            starts[node.name] = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    return starts


def _cell(kind: str, text: str, number: int) -> dict:
    cell = {
        "cell_type": kind,
        "id": f"{kind}-{number}",
        "metadata": {},
        "source": text.splitlines(keepends=True),
    }
    if kind == "code":
        cell["execution_count"] = number
        cell["outputs"] = []
    return cell


STRAY_CONFTEST = '''\
# My own pytest set-up from working on the exercise. If the grader ever loaded it, every
# test would pass: intake stages only multi_head_attention.py, so it never reaches pytest.
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
'''


def lms_zip_bytes(path: Path) -> None:
    """Write the zip an LMS hands out: one folder holding the module and a stray conftest.py."""
    folder = "erin_lms_assignment3_submission"
    members = {f"{folder}/": b"", f"{folder}/conftest.py": STRAY_CONFTEST, f"{folder}/multi_head_attention.py": solution_source()}
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED if name.endswith("/") else zipfile.ZIP_DEFLATED
            info.external_attr = (0o40755 << 16) | 0x10 if name.endswith("/") else 0o100644 << 16
            archive.writestr(info, content)


def png_bytes() -> bytes:
    """A tiny valid PNG (a 4x4 grey screenshot, as it were): NUL bytes and not UTF-8."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 4, 4, 8, 0, 0, 0, 0)  # 4x4, 8-bit greyscale
    pixels = b"".join(b"\x00" + bytes([0x80] * 4) for _ in range(4))  # filter byte + 4 pixels per row
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(pixels, 9)) + chunk(b"IEND", b"")


# --- the class -------------------------------------------------------------------------------

# entry name -> (what it is, what the grader should make of it)
STUDENTS = {
    "alice_correct.py": ("the solution under another name", "100"),
    "bob_notebook.ipynb": ("the solution as a notebook with a magic line", "100"),
    "carol_partial.py": ("concatenate_heads still a stub", "partial marks"),
    "dan_buggy.py": ("softmax over the query axis (catalogue mutant)", "loses points"),
    "erin_lms.zip": ("LMS zip: folder with the module and a stray conftest.py", "100"),
    "frank_syntax_error.py": ("a missing colon", "0, SyntaxError in the feedback"),
    "grace_binary.py": ("a PNG saved as .py", "0, refused at intake"),
    "mallory_hostile.py": ("forges results, patches torch.allclose, os._exit(0)", "no forged 100"),
}


def build_sample_class(dest: Path) -> list[Path]:
    """(Re)create ``dest`` holding the sample class; return its entries, sorted by name.

    Refuses to wipe a non-empty ``dest`` that this script did not create.
    """
    dest = Path(dest)
    if dest.exists():
        if not dest.is_dir():
            raise FileExistsError(f"{dest} exists and is not a folder")
        if any(dest.iterdir()) and not (dest / MARKER).exists():
            raise FileExistsError(f"{dest} is not empty and is not a sample class: refusing to wipe it")
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    (dest / MARKER).write_text("created by tests/sample_class.py; rerunning it wipes this folder\n", encoding="utf-8")

    def text(name: str, content: str) -> None:
        (dest / name).write_bytes(content.encode("utf-8"))

    text("alice_correct.py", correct_source())
    text("bob_notebook.ipynb", json.dumps(notebook_document(solution_source()), indent=1, ensure_ascii=False) + "\n")
    text("carol_partial.py", partial_source())
    text("dan_buggy.py", buggy_source())
    lms_zip_bytes(dest / "erin_lms.zip")
    text("frank_syntax_error.py", syntax_error_source())
    (dest / "grace_binary.py").write_bytes(png_bytes())
    text("mallory_hostile.py", hostile_source())
    entries = sorted(path for path in dest.iterdir() if not path.name.startswith("."))
    assert [path.name for path in entries] == sorted(STUDENTS), "STUDENTS and the builders disagree"
    return entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", type=Path, help="the folder to (re)create")
    arguments = parser.parse_args(argv)
    try:
        entries = build_sample_class(arguments.dest)
    except FileExistsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"sample class of {len(entries)} students in {arguments.dest}:")
    for entry in entries:
        what, expected = STUDENTS[entry.name]
        print(f"  {entry.name:<24} {what:<58} expect: {expected}")
    print(f"\ngrade it:  {Path(sys.executable).name} -m grader batch {arguments.dest} --out OUT")
    return 0


if __name__ == "__main__":
    sys.exit(main())
