"""Intake of a class's submissions (grader/batch/intake.py): every kind of entry, good and bad.

Each test builds its entries in tmp_path/submissions and stages them into
tmp_path/staging; a bad entry must come back as a problem, never as an exception, and
nothing may be written outside the staging folder.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import struct
import zipfile
from pathlib import Path

import pytest

from grader.batch import intake

SOURCE = "import torch\n\n\ndef head_dimension(d_model, heads):\n    return d_model // heads\n"
OTHER = "# not the one to grade\nraise SystemExit('wrong file staged')\n"
MB = 1024 * 1024


# --- builders ------------------------------------------------------------------------


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def make_zip(path: Path, members: dict[str, str | bytes]) -> Path:
    """A zip whose member names are kept exactly (writestr does not clean ``..`` or ``/``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(zipfile.ZipInfo(name), content, compress_type=zipfile.ZIP_DEFLATED)
    return path


def zip_bytes(members: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def notebook(*cells: tuple[str, str | list[str]]) -> str:
    """A complete nbformat 4 notebook (valid for plain json and for nbformat alike)."""

    def cell(kind: str, source: str | list[str]) -> dict:
        made = {"cell_type": kind, "id": f"cell-{len(source)}-{kind}", "metadata": {}, "source": source}
        if kind == "code":
            made.update(execution_count=None, outputs=[])
        return made

    return json.dumps(
        {
            "cells": [cell(kind, source) for kind, source in cells],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        ensure_ascii=False,
    )




@pytest.fixture
def submissions(tmp_path: Path) -> Path:
    folder = tmp_path / "submissions"
    folder.mkdir()
    return folder


@pytest.fixture
def staging(tmp_path: Path) -> Path:
    return tmp_path / "staging"


def staged_text(entry: intake.Entry) -> str:
    assert entry.problem == "", entry.problem
    assert entry.source_path is not None
    return entry.source_path.read_text(encoding="utf-8")


def files_under(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*")}


# --- good entries --------------------------------------------------------------------


def test_a_python_file_of_any_name_is_staged_as_multi_head_attention_py(submissions, staging):
    entry = intake.stage_entry(write(submissions / "alice.py", SOURCE), staging)
    assert entry.student_id == "alice"
    assert entry.source_path == staging / "alice" / "multi_head_attention.py"
    assert staged_text(entry) == SOURCE


def test_the_content_hash_is_the_sha256_of_the_staged_text(submissions, staging):
    entry = intake.stage_entry(write(submissions / "alice.py", SOURCE), staging)
    assert entry.content_hash == hashlib.sha256(SOURCE.encode("utf-8")).hexdigest()


def test_windows_line_endings_and_a_byte_order_mark_give_the_same_source_and_hash(submissions, staging):
    plain = intake.stage_entry(write(submissions / "unix.py", SOURCE), staging)
    bom_and_crlf = b"\xef\xbb\xbf" + SOURCE.replace("\n", "\r\n").encode("utf-8")
    windows = intake.stage_entry(write(submissions / "win.py", bom_and_crlf), staging)
    assert staged_text(windows) == SOURCE
    assert windows.content_hash == plain.content_hash


def test_an_nbformat_3_notebook_is_upgraded_and_its_code_cells_kept(submissions, staging):
    old = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {"name": "lesson"},
        "worksheets": [{"cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Attention\n"]},
            {"cell_type": "code", "collapsed": False, "input": SOURCE.splitlines(keepends=True),
             "language": "python", "metadata": {}, "outputs": []},
        ], "metadata": {}}],
    }
    entry = intake.stage_entry(write(submissions / "old.ipynb", json.dumps(old)), staging)
    assert staged_text(entry) == SOURCE


def test_a_folder_stages_only_its_multi_head_attention_py(submissions, staging):
    folder = submissions / "carol"
    write(folder / "src" / "multi_head_attention.py", SOURCE)
    write(folder / "conftest.py", "raise SystemExit('student conftest ran')\n")
    write(folder / "pytest.ini", "[pytest]\naddopts = -p no:cacheprovider\n")
    write(folder / "helpers.py", OTHER)
    entry = intake.stage_entry(folder, staging)
    assert entry.student_id == "carol"
    assert staged_text(entry) == SOURCE
    assert sorted(path.name for path in (staging / "carol").iterdir()) == ["multi_head_attention.py"]


def test_a_folder_prefers_the_shallowest_multi_head_attention_py(submissions, staging):
    folder = submissions / "carol"
    write(folder / "a" / "old" / "multi_head_attention.py", OTHER)
    write(folder / "b" / "multi_head_attention.py", SOURCE)
    assert staged_text(intake.stage_entry(folder, staging)) == SOURCE


def test_a_folder_breaks_a_depth_tie_by_path(submissions, staging):
    folder = submissions / "carol"
    write(folder / "b" / "multi_head_attention.py", OTHER)
    write(folder / "a" / "multi_head_attention.py", SOURCE)
    assert staged_text(intake.stage_entry(folder, staging)) == SOURCE


STUB = 'def head_dimension(d_model, heads):\n    raise NotImplementedError("head_dimension is not written yet")\n'


def test_a_folder_with_both_files_stages_the_one_that_holds_the_work(submissions, staging):
    worked_in_notebook = submissions / "dana"
    write(worked_in_notebook / "multi_head_attention.py", STUB)
    write(worked_in_notebook / "multi_head_attention.ipynb", notebook(("markdown", "# lesson"), ("code", SOURCE)))
    entry = intake.stage_entry(worked_in_notebook, staging)
    assert (staged_text(entry), entry.graded_file) == (SOURCE, "multi_head_attention.ipynb")
    worked_in_py = submissions / "erik"
    write(worked_in_py / "multi_head_attention.py", SOURCE)
    write(worked_in_py / "multi_head_attention.ipynb", notebook(("code", STUB)))
    entry = intake.stage_entry(worked_in_py, staging)
    assert (staged_text(entry), entry.graded_file) == (SOURCE, "multi_head_attention.py")
    only_notebook = submissions / "fay"
    write(only_notebook / "multi_head_attention.ipynb", notebook(("code", SOURCE)))
    assert intake.stage_entry(only_notebook, staging).graded_file == "multi_head_attention.ipynb"


def test_a_folder_breaks_a_tie_between_the_two_files_for_the_py(submissions, staging):
    folder = submissions / "gus"
    write(folder / "multi_head_attention.py", SOURCE)
    write(folder / "multi_head_attention.ipynb", notebook(("code", SOURCE + "\n# the same work\n")))
    assert staged_text(intake.stage_entry(folder, staging)) == SOURCE


def test_a_folder_ignores_copies_in_hidden_folders_such_as_notebook_checkpoints(submissions, staging):
    folder = submissions / "carol"
    write(folder / ".ipynb_checkpoints" / "multi_head_attention.py", OTHER)
    write(folder / "work" / "multi_head_attention.py", SOURCE)
    assert staged_text(intake.stage_entry(folder, staging)) == SOURCE


def test_a_notebook_stages_its_code_cells_joined_by_blank_lines(submissions, staging):
    nb = notebook(
        ("markdown", "# Multi-head attention\nSome prose."),
        ("code", ["import torch\n"]),
        ("raw", "raw text, not code"),
        ("code", "def head_dimension(d_model, heads):\n    return d_model // heads\n"),
    )
    entry = intake.stage_entry(write(submissions / "dan.ipynb", nb), staging)
    assert entry.student_id == "dan"
    expected = "import torch\n\ndef head_dimension(d_model, heads):\n    return d_model // heads\n"
    assert staged_text(entry) == expected


def test_a_notebook_drops_magics_shell_and_help_lines(submissions, staging):
    nb = notebook(
        ("code", ["%matplotlib inline\n", "!pip install torch\n", "import torch\n", "  ?torch.nn\n"]),
        ("code", "%%bash\nexit 1  # a cell magic that runs something else than Python\n"),
        ("code", "x = 1  # 100% sure\n"),
    )
    entry = intake.stage_entry(write(submissions / "dan.ipynb", nb), staging)
    assert staged_text(entry) == "import torch\n\nx = 1  # 100% sure\n"


def test_a_zip_with_multi_head_attention_py_at_its_root_is_staged(submissions, staging):
    bob = make_zip(submissions / "bob.zip", {"multi_head_attention.py": SOURCE})
    entry = intake.stage_entry(bob, staging)
    assert entry.student_id == "bob"
    assert staged_text(entry) == SOURCE


def test_a_zip_of_a_folder_prefers_multi_head_attention_py_over_other_python_files(submissions, staging):
    members = {
        "bob/": b"",
        "bob/conftest.py": OTHER,
        "bob/helpers.py": OTHER,
        "bob/deeper/multi_head_attention.py": OTHER,
        "bob/multi_head_attention.py": SOURCE,
        "__MACOSX/bob/._multi_head_attention.py": b"\x00\x05\x16\x07",
    }
    entry = intake.stage_entry(make_zip(submissions / "bob.zip", members), staging)
    assert staged_text(entry) == SOURCE
    assert sorted(path.name for path in (staging / "bob").iterdir()) == ["multi_head_attention.py"]


def test_a_zip_with_a_single_notebook_stages_the_notebook_code(submissions, staging):
    members = {
        "work/attention.ipynb": notebook(("code", SOURCE)),
        "work/.ipynb_checkpoints/attention-checkpoint.ipynb": "{}",
    }
    entry = intake.stage_entry(make_zip(submissions / "bob.zip", members), staging)
    assert staged_text(entry) == SOURCE


def test_a_zip_with_a_single_python_file_of_any_name_stages_it(submissions, staging):
    members = {"homework3.py": SOURCE, "README.txt": "hi", ".DS_Store": b"\x00\x00"}
    entry = intake.stage_entry(make_zip(submissions / "bob.zip", members), staging)
    assert staged_text(entry) == SOURCE


def test_a_syntax_error_is_left_for_the_grader_to_report(submissions, staging):
    entry = intake.stage_entry(write(submissions / "eve.py", "def broken(:\n"), staging)
    assert staged_text(entry) == "def broken(:\n"


def test_the_staged_file_and_folder_have_fixed_permissions_whatever_the_umask(submissions, staging):
    previous = os.umask(0o077)
    try:
        entry = intake.stage_entry(write(submissions / "alice.py", SOURCE), staging)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(entry.source_path.stat().st_mode) == 0o644
    assert stat.S_IMODE(entry.source_path.parent.stat().st_mode) == 0o755


def test_staging_again_replaces_leftovers_of_a_previous_run(submissions, staging):
    write(staging / "alice" / "conftest.py", "raise SystemExit('stale')\n")
    entry = intake.stage_entry(write(submissions / "alice.py", SOURCE), staging)
    assert staged_text(entry) == SOURCE
    assert [path.name for path in (staging / "alice").iterdir()] == ["multi_head_attention.py"]


def test_an_entry_that_became_unreadable_leaves_no_stale_staged_file(submissions, staging):
    write(staging / "alice" / "multi_head_attention.py", SOURCE)
    entry = intake.stage_entry(write(submissions / "alice.py", b"\x00\x01"), staging)
    assert entry.problem
    assert not (staging / "alice").exists()


# --- bad entries ---------------------------------------------------------------------


def lying_zip(path: Path) -> Path:
    """A zip whose headers claim 100 bytes for a member that unpacks to 3 MB."""
    make_zip(path, {"multi_head_attention.py": "#" * (3 * MB)})
    data = bytearray(path.read_bytes())
    for signature, size_offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = data.index(signature)
        struct.pack_into("<I", data, start + size_offset, 100)
    path.write_bytes(bytes(data))
    return path


def symlink_zip(path: Path) -> Path:
    """A zip whose multi_head_attention.py is a symlink to /etc/passwd, as `zip --symlinks` makes."""
    link = zipfile.ZipInfo("multi_head_attention.py")
    link.create_system = 3  # Unix, so the mode bits in external_attr count
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(link, "/etc/passwd")
    return path


def folder_without_the_file(path: Path) -> Path:
    write(path / "attention.py", SOURCE)
    return path


def truncated_zip(path: Path) -> Path:
    return write(path, zip_bytes({"multi_head_attention.py": SOURCE})[:40])


def many_members_zip(path: Path) -> Path:
    return make_zip(path, {f"file{number}.txt": "x" for number in range(1001)})


def zip_bomb(path: Path) -> Path:
    """25 MB of one repeated byte: a few kilobytes zipped, over the 20 MB cap unpacked."""
    return make_zip(path, {"multi_head_attention.py": b"#" * (25 * MB)})


def file_of(content: str | bytes):
    return lambda path: write(path, content)


def zip_of(members: dict[str, str | bytes]):
    return lambda path: make_zip(path, members)


UNSAFE = "refused: the zip holds an unsafe path"
NOT_A_NOTEBOOK = "is not a valid notebook ("
OVER_1_MB = "x = 1\n" * (MB // 5)
LATIN_1_NOTEBOOK = notebook(("code", "# café\n")).encode("latin-1")
MAGICS_ONLY_NOTEBOOK = notebook(("code", "%pip install torch\n!ls\n"), ("code", "%%bash\necho hi\n"))

BAD_ENTRIES = [
    pytest.param("bin.py", file_of(b"\x7fELF\x00\x01\x02"), "NUL bytes", id="a binary file with NUL bytes"),
    pytest.param("latin.py", file_of("# café\nx = 1\n".encode("latin-1")), "is not UTF-8 text", id="a latin-1 file"),
    pytest.param("empty.py", file_of(b""), "is empty", id="an empty file"),
    pytest.param("blank.py", file_of(b"  \n\t\n"), "is empty", id="a whitespace-only file"),
    pytest.param("huge.py", file_of(OVER_1_MB), "larger than 1 MB", id="a file over 1 MB"),
    pytest.param("nb.ipynb", file_of('{"cells": [{"cell_type": "code"'), NOT_A_NOTEBOOK, id="broken notebook JSON"),
    pytest.param("nb.ipynb", file_of('{"cells": {"a": 1}}'), NOT_A_NOTEBOOK, id="a notebook whose cells are a dict"),
    pytest.param("nb.ipynb", file_of(LATIN_1_NOTEBOOK), "is not UTF-8 text", id="a latin-1 notebook"),
    pytest.param("nb.ipynb", file_of(MAGICS_ONLY_NOTEBOOK), "is empty", id="a notebook of magics only"),
    pytest.param("carol", folder_without_the_file, "holds no multi_head_attention.py", id="a folder without the file"),
    pytest.param("bob.zip", zip_of({"../evil.py": SOURCE}), UNSAFE, id="a zip with ../evil.py"),
    pytest.param("bob.zip", zip_of({"/abs/path/multi_head_attention.py": SOURCE}), UNSAFE, id="a zip with /abs/path"),
    pytest.param("bob.zip", zip_of({"C:\\Users\\bob\\x.py": SOURCE}), UNSAFE, id="a zip with a Windows drive path"),
    pytest.param("bob.zip", symlink_zip, UNSAFE, id="a zip with a symlink"),
    pytest.param("bob.zip", zip_bomb, "would unpack to more than 20 MB", id="a zip bomb over the size cap"),
    pytest.param("bob.zip", lying_zip, "is not a readable zip", id="a zip whose headers understate sizes"),
    pytest.param("bob.zip", many_members_zip, "more than 1000 files", id="a zip with too many members"),
    pytest.param(
        "bob.zip",
        zip_of({"multi_head_attention.py": OVER_1_MB}),
        "larger than 1 MB",
        id="a zip with a source over 1 MB",
    ),
    pytest.param("bob.zip", file_of(b"PK\x03\x04 not really a zip"), "is not a readable zip", id="a corrupt zip"),
    pytest.param("bob.zip", truncated_zip, "is not a readable zip", id="a truncated zip"),
    pytest.param(
        "bob.zip",
        zip_of({"inner.zip": zip_bytes({"multi_head_attention.py": SOURCE})}),
        "nested zips are not opened",
        id="a nested zip",
    ),
    pytest.param("bob.zip", zip_of({"a.py": SOURCE, "b.py": OTHER}), "candidates (a.py, b.py)", id="an ambiguous zip"),
    pytest.param("bob.zip", zip_of({}), "holds no .py file", id="an empty zip"),
    pytest.param("report.pdf", file_of(b"%PDF-1.7\n"), "unsupported entry type", id="an unsupported .pdf"),
]


@pytest.mark.parametrize(("name", "build", "expected"), BAD_ENTRIES)
def test_a_bad_entry_gives_a_problem_and_stages_nothing(tmp_path, submissions, staging, name, build, expected):
    entry_path = build(submissions / name)
    before = files_under(tmp_path)
    entry = intake.stage_entry(entry_path, staging)
    assert expected in entry.problem
    assert entry.source_path is None
    assert not (staging / entry.student_id).exists()
    assert len(entry.content_hash) == 64 and int(entry.content_hash, 16) >= 0
    assert all(staging in path.parents for path in files_under(tmp_path) - before), "wrote outside staging"


def test_a_problem_is_one_sentence_naming_the_entry(submissions, staging):
    entry = intake.stage_entry(write(submissions / "latin.py", "é".encode("latin-1")), staging)
    assert entry.problem.startswith("latin.py ") and entry.problem.endswith(".")
    assert "\n" not in entry.problem


def test_an_unreadable_entry_is_hashed_from_its_raw_bytes(submissions, staging):
    raw = "é = 1\n".encode("latin-1")
    entry = intake.stage_entry(write(submissions / "latin.py", raw), staging)
    assert entry.content_hash == hashlib.sha256(raw).hexdigest()


def test_a_zip_with_an_unsafe_path_writes_nothing_anywhere(tmp_path, submissions, staging, monkeypatch):
    monkeypatch.chdir(submissions)  # were it extracted relative to the working folder, it would show up next
    make_zip(submissions / "bob.zip", {"../evil.py": SOURCE, "multi_head_attention.py": SOURCE})
    entry = intake.stage_entry(submissions / "bob.zip", staging)
    assert "unsafe path '../evil.py'" in entry.problem
    assert not list(tmp_path.rglob("evil.py"))
    assert not (tmp_path.parent / "evil.py").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["submissions"]


def test_a_symlinked_multi_head_attention_py_in_a_folder_is_refused(tmp_path, submissions, staging):
    secret = write(tmp_path / "secret.py", "ANSWERS = 42\n")
    folder = submissions / "mallory"
    folder.mkdir()
    (folder / "multi_head_attention.py").symlink_to(secret)
    entry = intake.stage_entry(folder, staging)
    assert "symbolic link" in entry.problem
    assert entry.source_path is None


# --- listing and the whole batch -----------------------------------------------------


def test_hidden_and_os_junk_entries_are_skipped(submissions):
    for junk in (".DS_Store", "Thumbs.db", "desktop.ini", ".hidden.py", "._alice.py"):
        write(submissions / junk, SOURCE)
    (submissions / "__MACOSX").mkdir()
    (submissions / ".git").mkdir()
    write(submissions / "bob.py", SOURCE)
    write(submissions / "alice.py", SOURCE)
    assert [path.name for path in intake.list_entries(submissions)] == ["alice.py", "bob.py"]


def test_duplicate_student_ids_get_numbered_suffixes_in_entry_name_order(submissions, staging):
    write(submissions / "alice" / "multi_head_attention.py", "x = 'folder'\n")
    write(submissions / "alice.py", "x = 'py'\n")
    make_zip(submissions / "alice.zip", {"multi_head_attention.py": "x = 'zip'\n"})
    entries = intake.stage_all(submissions, staging)
    assert [(entry.student_id, staged_text(entry)) for entry in entries] == [
        ("alice", "x = 'folder'\n"),
        ("alice-2", "x = 'py'\n"),
        ("alice-3", "x = 'zip'\n"),
    ]


def test_duplicate_suffixes_are_the_same_on_every_run(submissions, staging):
    write(submissions / "alice.py", SOURCE)
    write(submissions / "alice.ipynb", notebook(("code", SOURCE)))
    first = intake.stage_all(submissions, staging)
    assert first == intake.stage_all(submissions, staging)


def test_a_suffix_never_takes_the_id_of_another_entry(submissions, staging):
    write(submissions / "alice.py", "x = 'py'\n")
    write(submissions / "alice.ipynb", notebook(("code", "x = 'notebook'\n")))
    write(submissions / "alice-2.py", "x = 'alice-2'\n")
    entries = {entry.student_id: staged_text(entry) for entry in intake.stage_all(submissions, staging)}
    assert entries == {"alice": "x = 'notebook'\n", "alice-2": "x = 'alice-2'\n", "alice-3": "x = 'py'\n"}


def test_ids_differing_only_in_case_count_as_duplicates(submissions, staging):
    write(submissions / "Bob.py", SOURCE)
    write(submissions / "bob.py", SOURCE)
    assert [entry.student_id for entry in intake.stage_all(submissions, staging)] == ["Bob", "bob-2"]


def test_stage_all_returns_one_entry_for_each_of_ten_mixed_entries(tmp_path, submissions, staging):
    write(submissions / "alice.py", SOURCE)
    write(submissions / "carol" / "src" / "multi_head_attention.py", SOURCE)
    write(submissions / "dan.ipynb", notebook(("code", SOURCE)))
    make_zip(submissions / "bob.zip", {"bob/multi_head_attention.py": SOURCE})
    write(submissions / "erin.py", b"\x00\x00binary")
    write(submissions / "frank.ipynb", "{not json")
    write(submissions / "gina.java", b"class Attention {}\n")
    make_zip(submissions / "hank.zip", {"../evil.py": SOURCE})
    write(submissions / "ivan.zip", b"PK\x05\x06 corrupt")
    (submissions / "judy").mkdir()
    write(submissions / ".DS_Store", b"\x00junk")

    entries = intake.stage_all(submissions, staging)

    ids = ["alice", "bob", "carol", "dan", "erin", "frank", "gina", "hank", "ivan", "judy"]
    assert [entry.student_id for entry in entries] == ids
    gradable = {entry.student_id for entry in entries if not entry.problem}
    assert gradable == {"alice", "bob", "carol", "dan"}
    for entry in entries:
        assert (entry.source_path is None) == bool(entry.problem)
        if entry.source_path is not None:
            assert entry.source_path.read_text(encoding="utf-8") == SOURCE
    assert sorted(path.name for path in staging.iterdir()) == sorted(gradable)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["staging", "submissions"]
    assert not list(tmp_path.rglob("evil.py"))


def test_ids_spelled_in_nfc_and_in_nfd_are_one_id_and_count_as_duplicates(submissions, staging):
    write(submissions / "jos\u00e9.py", SOURCE)  # NFC: é as one character
    write(submissions / "jose\u0301.py", SOURCE)  # NFD: e and a combining accent, as macOS writes it
    ids = [entry.student_id for entry in intake.stage_all(submissions, staging)]
    assert sorted(ids) == ["jos\u00e9", "jos\u00e9-2"], ids


# --- several entries of one student --------------------------------------------------------

SOLUTION = (Path(__file__).resolve().parent.parent / "solutions" / "multi_head_attention.py").read_text()
EXERCISE_STUB = (Path(__file__).resolve().parent.parent / "exercises" / "multi_head_attention.py").read_text()
HELPERS = "import torch\n\n\ndef scaled(scores, head_dim):\n    return scores / head_dim ** 0.5\n"


def resolve(submissions: Path):
    """(entries kept, {graded entry: names not graded}) of one_entry_per_student."""
    students = intake.one_entry_per_student(intake.list_entries(submissions))
    return students.entries, {path: [other.name for other in attempts.not_graded] for path, attempts in students.attempts.items()}


def test_canvas_gives_one_entry_per_uploaded_file_and_the_one_that_holds_the_work_is_graded(submissions):
    # Canvas's "Download Submissions": name_USERID_FILEID_file, one entry per uploaded file.
    finished = write(submissions / "smithjane_12345_67890_multi_head_attention.py", SOURCE)
    untouched = write(submissions / "smithjane_12345_67891_multi_head_attention.ipynb", notebook(("code", STUB)))
    other = write(submissions / "doejohn_222_333_multi_head_attention.py", STUB)
    assert resolve(submissions) == ([other, finished], {finished: [untouched.name]})
    # And the other way round: the notebook holds the work.
    finished.write_text(STUB)
    untouched.write_text(notebook(("code", SOURCE)))
    assert resolve(submissions) == ([other, untouched], {untouched: [finished.name]})


def test_a_helpers_file_beside_the_exercise_is_not_graded_instead_of_it(submissions):
    # Neither says "raise NotImplementedError"; only the exercise defines its functions.
    helpers = write(submissions / "smithjane_12345_100_attention_helpers.py", HELPERS)
    exercise = write(submissions / "smithjane_12345_101_multi_head_attention.py", SOLUTION)
    students = intake.one_entry_per_student(intake.list_entries(submissions))
    assert students.entries == [exercise]
    attempts = students.attempts[exercise]
    assert [other.name for other in attempts.set_aside] == [helpers.name] and attempts.superseded == ()
    assert "defines none of the exercise's 7 functions" in attempts.set_aside[0].reason
    assert "writes 7 of the exercise's 7 functions" in attempts.sentence() and "Canvas's names (user 12345)" in attempts.sentence()


def test_a_later_file_that_holds_no_work_does_not_hide_the_work_and_is_said(submissions):
    # The helpers module uploaded last (the higher attachment id): the latest attempt is the latest holding work.
    exercise = write(submissions / "smithjane_12345_101_multi_head_attention.py", SOLUTION)
    helpers = write(submissions / "smithjane_12345_102_attention_helpers.py", HELPERS)
    attempts = intake.one_entry_per_student(intake.list_entries(submissions)).attempts[exercise]
    assert [other.name for other in attempts.set_aside] == [helpers.name]
    assert "not graded: " + helpers.name in attempts.sentence()


def test_a_one_line_py_does_not_hide_a_complete_notebook(submissions):
    scratch = write(submissions / "alice.py", "x = 1\n")
    complete = write(submissions / "alice.ipynb", notebook(("markdown", "# lesson"), ("code", SOLUTION)))
    assert resolve(submissions) == ([complete], {complete: [scratch.name]})


def test_a_notebook_with_a_broken_cell_still_shows_the_work_in_its_other_cells(submissions):
    stub = write(submissions / "bo.py", EXERCISE_STUB)
    worked = write(submissions / "bo.ipynb", notebook(("code", SOLUTION), ("code", "def oops(:\n")))
    assert resolve(submissions) == ([worked], {worked: [stub.name]})


def test_one_canvas_student_spelled_in_nfc_and_in_nfd_is_one_student(submissions):
    # One student's two uploads, one name unpacked on macOS (NFD: e and a combining accent):
    # one student, the stub set aside, not a second student with a phantom 0.
    finished = write(submissions / "jos\u00e9garcia_12345_67890_multi_head_attention.py", SOLUTION)
    untouched = write(submissions / "jose\u0301garcia_12345_67891_multi_head_attention.ipynb", notebook(("code", EXERCISE_STUB)))
    assert resolve(submissions) == ([finished], {finished: [untouched.name]})


def test_two_students_whose_ids_look_like_canvas_names_stay_two_students_where_the_roster_says_so(submissions):
    # Both read as "user 2 named section, file 1": the roster's ID 2 is not "section", so neither is Canvas's.
    from grader.term.identity import Identities

    alice = write(submissions / "section_2_1_alice.py", SOLUTION)
    bob = write(submissions / "section_2_1_bob.py", EXERCISE_STUB)
    rows = [{"Student": "Lee, Kim", "ID": "2", "SIS User ID": "", "SIS Login ID": "klee"}]
    listed = intake.list_entries(submissions)
    students = intake.one_entry_per_student(listed, Identities(rows, [intake.student_id_of(path) for path in listed]))
    assert students.entries == [alice, bob] and students.attempts == {}
    assert [entry.student_id for entry in intake.stage_all(submissions, submissions.parent / "staging")] == [alice.stem, bob.stem]


def test_one_canvas_submission_of_two_files_sharing_an_id_is_one_student_without_a_course_file(submissions):
    # Files Canvas's names give one user id are one student (unchecked without a roster, and said);
    # one attachment id for both is no order: the file that holds the work is graded, as in a folder.
    exercise = write(submissions / "doejane_123_456_multi_head_attention.py", SOLUTION)
    helpers = write(submissions / "doejane_123_456_helpers.py", HELPERS)
    assert resolve(submissions) == ([exercise], {exercise: [helpers.name]})
    # Both holding work: chosen by the work they hold, never by a tie of ids.
    draft = write(submissions / "doejane_123_456_helpers.py", SOLUTION.replace("def causal_mask(", "def causal_mask(:", 1))
    students = intake.one_entry_per_student(intake.list_entries(submissions))
    assert students.entries == [exercise] and "the one that holds the most work" in students.attempts[exercise].rule
    assert [other.name for other in students.attempts[exercise].superseded] == [draft.name]


ALICE_ROW = {"Student": "Smith, Alice", "ID": "12", "SIS User ID": "", "SIS Login ID": "asmith"}


@pytest.mark.parametrize("eves_file", [SOLUTION, EXERCISE_STUB], ids=["eves_file_complete", "eves_file_a_stub"])
def test_a_name_ending_in_another_students_id_is_never_graded_as_theirs(submissions, eves_file):
    # Eve's sortable name "eve_12" ends in Alice's user id: Canvas writes eve_12_999_5000_..., whose
    # first reading is "user 12, file 999" (canvas-lms lib/content_zipper.rb keeps "_12" at a name's end).
    from grader.term.identity import Identities

    alice = write(submissions / "smithalice_12_777_multi_head_attention.py", SOLUTION if eves_file is EXERCISE_STUB else EXERCISE_STUB)
    eve = write(submissions / "eve_12_999_5000_multi_head_attention.py", eves_file)
    listed = intake.list_entries(submissions)
    stems = [intake.student_id_of(path) for path in listed]
    for rows in ([ALICE_ROW], [ALICE_ROW, {"Student": "eve_12", "ID": "999", "SIS User ID": "", "SIS Login ID": "eve"}], None):
        identities = Identities(rows, stems)
        students = intake.one_entry_per_student(listed, identities)
        assert sorted(students.entries) == sorted([alice, eve]) and students.attempts == {}, rows
        assert students.student_of[alice] != students.student_of[eve]
        assert identities.student_of(alice.stem).name == ("Smith, Alice" if rows else "smithalice (12)")
    # With Alice alone on the roster, Eve's file is held apart and said, never merged.
    notes = Identities([ALICE_ROW], stems).canvas_notes()
    assert any(note.startswith(eve.stem) and "'eve' is not the roster's for ID 12" in note for note in notes), notes


def test_of_two_canvas_uploads_that_both_hold_work_the_later_is_graded_and_the_earlier_superseded(submissions):
    # Canvas renames a file uploaded again under the same name "name-1.py" (Attachment.make_unique_filename)
    # and gives it a higher attachment id: the later upload.
    earlier = write(submissions / "smithjane_12345_67890_multi_head_attention.py", SOURCE)
    later = write(submissions / "smithjane_12345_67891_multi_head_attention-1.py", SOLUTION)
    students = intake.one_entry_per_student(intake.list_entries(submissions))
    assert students.entries == [later]
    attempts = students.attempts[later]
    assert [other.name for other in attempts.superseded] == [earlier.name] and attempts.set_aside == ()
    assert "the latest attempt (Canvas's attachment 67891" in attempts.sentence()
    assert "superseded: " + earlier.name + " (an earlier attempt: Canvas's attachment 67890" in attempts.sentence()


def test_the_attachment_id_orders_attempts_not_the_names_order(submissions):
    later = write(submissions / "smithjane_12345_900_a.py", SOURCE)  # sorts first by name, uploaded last
    earlier = write(submissions / "smithjane_12345_80_b.py", SOLUTION)
    assert resolve(submissions) == ([later], {later: [earlier.name]})


def test_submission_times_of_each_file_order_the_attempts_before_canvas_ids(submissions):
    import datetime

    first = write(submissions / "smithjane_12345_900_a.py", SOURCE)
    second = write(submissions / "smithjane_12345_80_b.py", SOLUTION)
    times = {first.stem: datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC), second.stem: datetime.datetime(2026, 12, 2, tzinfo=datetime.UTC)}
    students = intake.one_entry_per_student(intake.list_entries(submissions), submitted_at=times.get)
    assert students.entries == [second] and "by its submission time" in students.attempts[second].rule


def test_two_names_the_roster_gives_one_student_are_one_student(submissions):
    from grader.term.identity import Identities

    by_login = write(submissions / "jdoe.py", SOURCE)
    by_canvas = write(submissions / "doejane_LATE_4242_77_multi_head_attention.py", SOLUTION)
    rows = [{"Student": "Doe, Jane", "ID": "4242", "SIS User ID": "", "SIS Login ID": "jdoe"}]
    listed = intake.list_entries(submissions)
    students = intake.one_entry_per_student(listed, Identities(rows, [intake.student_id_of(path) for path in listed]))
    assert len(students.entries) == 1 and students.student_of[by_login] == students.student_of[by_canvas]
    (attempts,) = students.attempts.values()
    assert "one student's files by the roster (ID, SIS Login ID, name in Canvas's file names)" in attempts.sentence()


def test_the_same_name_with_another_extension_is_one_student_a_tie_goes_to_the_py(submissions):
    py = write(submissions / "alice.py", STUB)
    ipynb = write(submissions / "Alice.ipynb", notebook(("code", STUB)))
    folder = submissions / "alice"  # a folder of the same name: the same student
    write(folder / "multi_head_attention.py", STUB)
    kept, not_graded = resolve(submissions)
    assert kept == [py] and sorted(not_graded[py]) == sorted([ipynb.name, folder.name])


def test_an_unreadable_notebook_holds_no_work(submissions):
    py = write(submissions / "bo.py", STUB)
    broken = write(submissions / "bo.ipynb", "{ not json")
    assert resolve(submissions)[1] == {py: [broken.name]}


# --- Canvas's names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("smithjane_12345_67890_multi_head_attention.py", ("smithjane", False, "12345", "67890", "multi_head_attention.py")),
        ("smithjane_LATE_12345_67890_hw_3_2.ipynb", ("smithjane", True, "12345", "67890", "hw_3_2.ipynb")),
        ("anon_k3Xq9_4242_attention.py", ("", False, "anon_k3Xq9", "4242", "attention.py")),
        ("LATE_anon_k3Xq9_4242_attention.py", ("", True, "anon_k3Xq9", "4242", "attention.py")),
        ("kimlee_late_77_31415_multi_head_attention", ("kimlee", True, "77", "31415", "multi_head_attention")),
        ("alice.py", None),
        ("alice_12345.py", None),
        ("smithjane_12345_text.html", None),  # a text entry: no attachment id
    ],
)
def test_canvas_download_names_are_read_as_canvas_writes_them(filename, expected):
    from grader.term.canvas_names import parse_canvas_name

    parsed = parse_canvas_name(filename)
    got = None if parsed is None else (parsed.name, parsed.late, parsed.user_id, parsed.attachment_id, parsed.file_name)
    assert got == expected


# --- what is not a submission ------------------------------------------------------------------


def test_stray_files_are_listed_as_ignored_with_a_reason_never_as_students(submissions, staging):
    strays = {
        "README.txt": "a README file", "README": "a README file", "notes.md": "a text document",
        "scores.csv": "a spreadsheet", "photo.PNG": "an image", "lecture.pdf": "a document",
        ".DS_Store": "operating system", "Thumbs.db": "operating system", "__MACOSX": "macOS",
        "alice.py~": "editor", ".#alice.py": "editor", "#alice.py#": "editor", "alice.py.swp": "editor",
        "smithjane_12345_text.html": "web page",
    }
    for name in strays:
        if name == "__MACOSX":
            write(submissions / name / "._alice.py", b"\x00\x05\x16\x07")
        else:
            write(submissions / name, "x = 1\n")
    write(submissions / "alice.py", SOURCE)
    write(submissions / "bob.py", SOURCE)
    entries, ignored = intake.survey(submissions)
    assert [path.name for path in entries] == ["alice.py", "bob.py"]
    reasons = {item.name: item.reason for item in ignored}
    assert set(reasons) == set(strays)
    for name, words in strays.items():
        assert words in reasons[name], (name, reasons[name])
    assert [entry.student_id for entry in intake.stage_all(submissions, staging)] == ["alice", "bob"]
