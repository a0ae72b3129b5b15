"""Intake against hostile folders and names (grader/batch/intake.py, grader/reading/notebooks.py).

A FIFO, a device or a link in the submissions must neither hang intake nor lead it to a
file outside the submissions; depth, width and name length are bounded; source is decoded
as Python decodes it; a notebook loses only its real magics. Every test here calls intake
in a forked process where it could hang, so that a hang fails the test instead of the suite.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import re
import stat
import struct
import zipfile
from pathlib import Path

import pytest

from grader import untrusted
from grader.batch import intake
from grader.reading.notebooks import join_code_cells

SOURCE = "import torch\n\n\ndef head_dimension(d_model, heads):\n    return d_model // heads\n"
REPO_ROOT = Path(__file__).resolve().parent.parent
SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"


@pytest.fixture
def submissions(tmp_path: Path) -> Path:
    folder = tmp_path / "submissions"
    folder.mkdir()
    return folder


@pytest.fixture
def staging(tmp_path: Path) -> Path:
    folder = tmp_path / "staging"
    folder.mkdir()
    return folder


def stage_without_hanging(entry: Path, staging: Path, seconds: float = 60) -> intake.Entry:
    """stage_entry in a forked process; one still busy after ``seconds`` (blocked on a FIFO,
    reading an endless device) is killed and the test fails naming the hang. A passing test
    never waits for the clock: the answer arrives as soon as intake returns."""
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    process = context.Process(target=lambda: answers.put(intake.stage_entry(entry, staging)), daemon=True)
    process.start()
    try:
        return answers.get(timeout=seconds)
    except queue.Empty:
        pytest.fail(f"intake hung on {entry.name}")
    finally:
        process.kill()
        process.join()


# --- 1. intake opens regular files inside SUBMISSIONS only ---------------------------


@pytest.mark.parametrize("where", ["top", "folder"])
def test_a_fifo_is_refused_without_being_opened(submissions, staging, where):
    path = submissions / "fifo.py" if where == "top" else submissions / "gwen" / "multi_head_attention.py"
    path.parent.mkdir(exist_ok=True)
    os.mkfifo(path)
    entry = stage_without_hanging(path if where == "top" else path.parent, staging)
    assert "not a regular file" in entry.problem
    assert entry.source_path is None and len(entry.content_hash) == 64


def test_a_device_file_is_refused(submissions, staging):
    if os.geteuid() != 0:
        pytest.skip("only root may create a device file")
    device = submissions / "zero.py"
    os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero: endless NUL bytes
    entry = stage_without_hanging(device, staging)
    assert "not a regular file" in entry.problem


@pytest.mark.parametrize(
    "target",
    ["solutions folder", "solution file", "private file", "fifo", "/dev/zero"],
)
def test_a_top_level_link_is_never_followed(tmp_path, submissions, staging, target):
    secret = tmp_path / "secret.py"
    secret.write_text("TOP SECRET first line\n")
    secret.chmod(0o600)
    fifo = tmp_path / "outside-fifo"
    os.mkfifo(fifo)
    points_to = {
        "solutions folder": SOLUTION.parent,
        "solution file": SOLUTION,
        "private file": secret,
        "fifo": fifo,
        "/dev/zero": Path("/dev/zero"),
    }[target]
    link = submissions / ("mallory" if points_to.is_dir() else "mallory.py")
    link.symlink_to(points_to)
    entry = stage_without_hanging(link, staging)
    assert "symbolic link" in entry.problem
    assert entry.source_path is None
    assert not list(staging.iterdir())
    assert "SECRET" not in entry.problem


def test_a_link_inside_a_folder_is_not_followed_to_a_folder_outside(submissions, staging):
    folder = submissions / "mallory"
    folder.mkdir()
    (folder / "code").symlink_to(SOLUTION.parent)  # holds a multi_head_attention.py
    entry = intake.stage_entry(folder, staging)
    assert "holds no multi_head_attention.py" in entry.problem


# --- 2. bounded depth, width and names -------------------------------------------------


def deep_folder(root: Path, levels: int) -> Path:
    root.mkdir()
    path = root
    for _ in range(levels):  # one level at a time: os.makedirs recurses
        path = path / "d"
        path.mkdir()
    return path


def remove_deep(root: Path) -> None:
    """Bottom-up, without recursion (shutil.rmtree recurses, and would fail at this depth)."""
    deepest = root
    while (deepest / "d").is_dir():
        deepest = deepest / "d"
    while deepest != root:
        for item in deepest.iterdir():
            item.unlink()
        deepest.rmdir()
        deepest = deepest.parent


def test_a_folder_nested_1100_levels_deep_is_graded_from_its_top(submissions, staging):
    folder = submissions / "deep"
    deep_folder(folder, 1100)
    (folder / "multi_head_attention.py").write_text(SOURCE)
    try:
        entry = intake.stage_entry(folder, staging)
        listed = intake.stage_all(submissions, staging)
        fingerprint = intake.fingerprint(folder)
    finally:
        remove_deep(folder)
    assert entry.problem == "" and entry.source_path.read_text() == SOURCE
    assert [e.student_id for e in listed] == ["deep"] and len(fingerprint) == 64


def test_a_file_below_the_depth_bound_is_not_searched(submissions, staging):
    folder = submissions / "deep"
    bottom = deep_folder(folder, intake.MAX_FOLDER_DEPTH + 3)
    (bottom / "multi_head_attention.py").write_text(SOURCE)
    entry = intake.stage_entry(folder, staging)
    assert "holds no multi_head_attention.py" in entry.problem and "levels down" in entry.problem


def test_a_folder_with_too_many_items_is_refused(submissions, staging, monkeypatch):
    monkeypatch.setattr(intake, "MAX_FOLDER_ITEMS", 50)
    folder = submissions / "wide"
    folder.mkdir()
    for index in range(60):
        (folder / f"f{index:03}.txt").write_text("x")
    (folder / "zz").mkdir()
    (folder / "zz" / "multi_head_attention.py").write_text(SOURCE)
    assert "more than 50 files and folders" in intake.stage_entry(folder, staging).problem


def test_a_240_character_id_stages_under_a_bounded_name(submissions, staging):
    name = "a" * 240
    (submissions / f"{name}.py").write_text(SOURCE)
    (submissions / "b.py").write_text(SOURCE)
    entries = intake.stage_all(submissions, staging)
    assert [entry.student_id for entry in entries] == [name, "b"]
    assert all(entry.problem == "" for entry in entries)
    assert entries[0].source_path.parent.name == untrusted.file_stem(name)
    assert len(entries[0].source_path.parent.name) <= untrusted.MAX_FILE_STEM_BYTES


def test_a_name_with_escape_sequences_gives_a_printable_id(submissions, staging):
    (submissions / "\x1b[2Jevil\x07.py").write_text(SOURCE)
    (submissions / os.fsdecode(b"bad\xffbyte.py")).write_text(SOURCE)
    ids = [entry.student_id for entry in intake.stage_all(submissions, staging)]
    assert ids == ["\\x1b[2Jevil\\x07", "bad\\xffbyte"]
    assert all(untrusted.printable(student_id) == student_id for student_id in ids)


def test_a_zip_member_name_too_long_is_refused(submissions, staging):
    with zipfile.ZipFile(submissions / "z.zip", "w") as archive:
        archive.writestr("/".join(["d"] * 40) + "/multi_head_attention.py", SOURCE)
    assert "deeper than" in intake.stage_entry(submissions / "z.zip", staging).problem


# --- 7. notebook magics ------------------------------------------------------------------


def test_a_percent_continuing_an_expression_is_code_not_a_magic():
    cell = 'message = ("model_dim=%d num_heads=%d"\n           % (8, 2))\n'
    backslash = 'other = "%d heads" \\\n% 2\n'
    assert join_code_cells([cell, backslash]) == cell + "\n" + backslash


def test_real_magics_shell_and_help_lines_are_still_dropped_beside_a_continuation():
    cell = '%matplotlib inline\nmessage = ("%d"\n    % 8)\n!ls\nfiles = !ls\ntorch?\n'
    assert join_code_cells([cell]) == 'message = ("%d"\n    % 8)\n'


def test_a_notebook_with_a_continued_percent_line_stages_the_same_code_as_the_py(submissions, staging):
    code = 'import torch\n\nmessage = ("model_dim=%d num_heads=%d"\n           % (8, 2))\n'
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (submissions / "nb.ipynb").write_text(json.dumps(notebook))
    (submissions / "py.py").write_text(code)
    staged = {entry.student_id: entry.source_path.read_text() for entry in intake.stage_all(submissions, staging)}
    assert staged["nb"] == staged["py"] == code


# --- 8. encodings ----------------------------------------------------------------------


def test_a_latin_1_file_with_a_coding_line_is_decoded_as_python_does(submissions, staging):
    raw = "# -*- coding: latin-1 -*-\nGREETING = 'café'\n".encode("latin-1")
    (submissions / "latin.py").write_bytes(raw)
    entry = intake.stage_entry(submissions / "latin.py", staging)
    assert entry.problem == ""
    staged = entry.source_path.read_bytes()
    namespace: dict = {}
    exec(compile(staged, "staged.py", "exec"), namespace)  # the staged copy means what the file meant
    assert namespace["GREETING"] == "café"
    assert staged.count(b"\n") == raw.count(b"\n")  # line numbers in messages stay right


def test_a_coding_line_naming_an_unknown_encoding_is_refused_with_a_reason(submissions, staging):
    (submissions / "odd.py").write_bytes(b"# coding: klingon\nx = 1\n")
    assert "declares an encoding Python cannot use" in intake.stage_entry(submissions / "odd.py", staging).problem


# --- 10. fingerprints ------------------------------------------------------------------


def test_the_fingerprint_changes_with_the_content_and_not_otherwise(submissions):
    path = submissions / "alice.py"
    path.write_text(SOURCE)
    first = intake.fingerprint(path)
    assert intake.fingerprint(path) == first
    path.write_text(SOURCE.replace("//", "/"))
    assert intake.fingerprint(path) != first
    folder = submissions / "bob"
    folder.mkdir()
    (folder / "multi_head_attention.py").write_text(SOURCE)
    before = intake.fingerprint(folder)
    (folder / "multi_head_attention.py").write_text(SOURCE + "# edit\n")
    assert intake.fingerprint(folder) != before


# --- 11. a class's zip (Canvas's "Download Submissions"), with every defence of a student's zip ---


def class_zip_file(path: Path, members: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(zipfile.ZipInfo(name), content, compress_type=zipfile.ZIP_DEFLATED)
    return path


def test_a_class_zip_is_unpacked_without_os_leftovers_and_a_student_zip_inside_is_graded_as_one(tmp_path, staging):
    from grader.batch import class_zip

    inner = tmp_path / "inner.zip"
    class_zip_file(inner, {"hw/multi_head_attention.py": SOURCE, "__MACOSX/hw/._multi_head_attention.py": b"\x00\x05"})
    download = class_zip_file(tmp_path / "submissions.zip", {
        "smithjane_12345_67890_multi_head_attention.py": SOURCE,
        "doejohn_LATE_222_333_hw.zip": inner.read_bytes(),
        "__MACOSX/._smithjane_12345_67890_multi_head_attention.py": b"\x00\x05\x16\x07",
        "__MACOSX/._doejohn_LATE_222_333_hw.zip": b"\x00\x05\x16\x07",
        ".DS_Store": b"\x00\x00\x00\x01Bud1",
        "README.txt": "from Canvas\n",
    })
    unpacked = class_zip.unpack_class_zip(download, tmp_path / "out")
    assert [(item.name, item.reason.split(" ")[0]) for item in unpacked.ignored] == [("__MACOSX/", "macOS's"), (".DS_Store", "a")]
    entries, ignored = intake.survey(unpacked.folder)
    assert [path.name for path in entries] == ["doejohn_LATE_222_333_hw.zip", "smithjane_12345_67890_multi_head_attention.py"]
    assert [item.name for item in ignored] == ["README.txt"]
    staged = [intake.stage_entry(path, staging) for path in entries]
    assert [(entry.problem, entry.source_path.read_text()) for entry in staged] == [("", SOURCE), ("", SOURCE)]


def test_a_class_zip_read_again_rewrites_nothing_unchanged_and_drops_what_it_no_longer_holds(tmp_path):
    from grader.batch import class_zip

    members = {"alice.py": SOURCE, "bob.py": SOURCE}
    first = class_zip.unpack_class_zip(class_zip_file(tmp_path / "a.zip", members), tmp_path / "out")
    before = intake.fingerprint(first.folder / "alice.py")
    second = class_zip.unpack_class_zip(class_zip_file(tmp_path / "b.zip", {"alice.py": SOURCE}), tmp_path / "out")
    assert intake.fingerprint(second.folder / "alice.py") == before  # not read again by the next run
    assert sorted(path.name for path in second.folder.iterdir()) == ["alice.py"]


def symlink_member(name: str) -> zipfile.ZipInfo:
    link = zipfile.ZipInfo(name)
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    return link


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        pytest.param({"../evil.py": SOURCE, "alice.py": SOURCE}, "unsafe path '../evil.py'", id="a .. path"),
        pytest.param({"/etc/evil.py": SOURCE}, "unsafe path", id="an absolute path"),
        pytest.param({"alice.py": "/etc/passwd"}, "unsafe path", id="a symlink"),
        pytest.param({"/".join(["d"] * 40) + "/alice.py": SOURCE}, "deeper than", id="too deep"),
        pytest.param({f"s{number}.py": SOURCE for number in range(30)}, "more than 20 files", id="too many members"),
        pytest.param({"bomb.py": b"#" * (3 * 1024 * 1024)}, "would unpack to more than 2 MB", id="a bomb by its headers"),
    ],
)
def test_a_hostile_class_zip_is_refused_whole_and_writes_nothing(tmp_path, monkeypatch, members, expected):
    from grader.batch import class_zip

    monkeypatch.setattr(class_zip, "MAX_CLASS_MEMBERS", 20)
    monkeypatch.setattr(class_zip, "MAX_CLASS_BYTES", 2 * intake.MB)
    path = tmp_path / "class.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            info = symlink_member(name) if content == "/etc/passwd" else zipfile.ZipInfo(name)
            archive.writestr(info, content, compress_type=zipfile.ZIP_DEFLATED)
    with pytest.raises(intake.Refused, match=expected):
        class_zip.unpack_class_zip(path, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "evil.py").exists()


def test_a_member_larger_than_any_gradable_entry_is_not_written_but_said(tmp_path, monkeypatch):
    from grader.batch import class_zip

    monkeypatch.setattr(intake, "MAX_UNPACKED_BYTES", 1000)
    path = class_zip_file(tmp_path / "class.zip", {"alice.py": SOURCE, "big.ipynb": "{" + " " * 4998 + "}"})
    unpacked = class_zip.unpack_class_zip(path, tmp_path / "out")
    assert [(item.name, "larger than" in item.reason) for item in unpacked.not_written] == [("big.ipynb", True)]
    assert sorted(item.name for item in unpacked.folder.iterdir()) == ["alice.py"]


def test_a_member_whose_headers_understate_its_size_costs_only_its_own_student(tmp_path):
    from grader.batch import class_zip

    path = class_zip_file(tmp_path / "class.zip", {"liar.py": "#" * 300_000, "alice.py": SOURCE})
    data = bytearray(path.read_bytes())
    for signature, size_offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # liar.py's headers come first
        struct.pack_into("<I", data, data.index(signature) + size_offset, 100)
    path.write_bytes(bytes(data))
    unpacked = class_zip.unpack_class_zip(path, tmp_path / "out")
    assert [(item.name, "could not be unpacked" in item.reason) for item in unpacked.not_written] == [("liar.py", True)]
    assert (unpacked.folder / "alice.py").read_text() == SOURCE


def test_batch_refuses_a_zip_that_is_not_one_with_a_sentence(tmp_path):
    import subprocess
    import sys

    broken = tmp_path / "submissions.zip"
    broken.write_bytes(b"PK\x03\x04 not a zip")
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(broken), "--out", str(tmp_path / "out"), "--quiet"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 2 and "submissions.zip is not a readable zip" in finished.stderr


@pytest.mark.parametrize(
    ("members", "entries"),
    [
        pytest.param({"HW3/alice.py": SOURCE, "HW3/bob.py": SOURCE, "__MACOSX/HW3/._alice.py": b"\x00"}, ["alice.py", "bob.py"], id="the download re-zipped from its folder"),
        pytest.param({"carol/multi_head_attention.py": SOURCE, "carol/notes.txt": "x"}, ["carol"], id="one student's folder"),
        pytest.param({"alice.py": SOURCE, "carol/multi_head_attention.py": SOURCE}, ["alice.py", "carol"], id="flat, with a folder"),
    ],
)
def test_a_class_zip_of_one_folder_is_read_as_that_folder_only_when_it_holds_several_students(tmp_path, members, entries):
    from grader.batch import class_zip

    unpacked = class_zip.unpack_class_zip(class_zip_file(tmp_path / "class.zip", members), tmp_path / "out")
    assert [path.name for path in intake.list_entries(unpacked.folder)] == entries


def test_a_full_disk_while_unpacking_stops_the_batch_loudly_not_as_a_student_problem(tmp_path, monkeypatch):
    import errno

    from grader.batch import class_zip

    def full(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(class_zip, "_write_if_changed", full)
    with pytest.raises(OSError, match="No space left"):
        class_zip.unpack_class_zip(class_zip_file(tmp_path / "class.zip", {"alice.py": SOURCE}), tmp_path / "out")


@pytest.mark.parametrize(
    ("names", "said"),
    [
        pytest.param(["alice.py", "bob.py", "alice.py"], "'alice.py' twice", id="one name twice"),
        pytest.param(["jos\u00e9.py", "jose\u0301.py"], "one name in Unicode's composed form (NFC)", id="NFC and NFD"),
        pytest.param(["HW3/alice.py", "HW3/bob.py", "HW3/alice.py"], "'alice.py' twice", id="twice in the re-zipped folder"),
    ],
)
def test_a_class_zip_whose_names_collide_is_refused_naming_them_and_writes_nothing(tmp_path, names, said):
    """Today the second file overwrote the first, and its student was graded on whichever came last."""
    import warnings

    from grader.batch import class_zip

    path = tmp_path / "class.zip"
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w") as archive:
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it writes
        for number, name in enumerate(names):
            archive.writestr(name, SOURCE if number == 0 else "raise NotImplementedError\n")
    with pytest.raises(intake.Refused, match=re.escape(said)) as refused:
        class_zip.unpack_class_zip(path, tmp_path / "out")
    assert "refused" in str(refused.value) and "give the folder" in str(refused.value)
    assert not (tmp_path / "out").exists()


def test_the_batch_refuses_such_a_zip_before_it_writes_anything_not_even_out_or_its_log(tmp_path, monkeypatch, capsys):
    """Once the refusal came after OUT, its batch.log and its lock file had been written."""
    import warnings

    from grader.__main__ import main

    monkeypatch.chdir(tmp_path)  # no course file here
    path = tmp_path / "class.zip"
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w") as archive:
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it writes
        archive.writestr("alice.py", SOURCE)
        archive.writestr("alice.py", "raise NotImplementedError\n")
    status = main(["batch", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    said = capsys.readouterr().err
    assert status == 2 and "refused: class.zip holds 'alice.py' twice" in said
    assert not (tmp_path / "out").exists()


def test_names_that_differ_only_in_case_collide_where_the_file_system_folds_case(tmp_path, monkeypatch):
    from grader.batch import class_zip

    path = class_zip_file(tmp_path / "class.zip", {"Alice.py": SOURCE, "alice.py": "raise NotImplementedError\n"})
    unpacked = class_zip.unpack_class_zip(path, tmp_path / "out")  # this machine's file system tells them apart
    assert sorted(item.name for item in unpacked.folder.iterdir()) == ["Alice.py", "alice.py"]
    monkeypatch.setattr(class_zip, "_folds_case", lambda folder: True)  # macOS's and Windows's do not
    with pytest.raises(intake.Refused, match="'Alice.py' and 'alice.py'.*differ only in case"):
        class_zip.unpack_class_zip(path, tmp_path / "out2")
    assert not (tmp_path / "out2").exists()


def test_whether_a_file_system_folds_case_is_asked_of_it_and_leaves_nothing(tmp_path):
    from grader.batch import class_zip

    assert class_zip._folds_case(tmp_path / "out" / "unpacked") is False  # Linux's file systems keep case
    assert list(tmp_path.iterdir()) == []
