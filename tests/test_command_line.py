"""`python -m grader` as its own index, and errors that name their cause.

The index groups the commands by reader with one line each; every command's --help ends
with an example its own parser accepts. A missing library is named with the command that
installs it; a path the user got wrong gets one line saying so, no traceback, and nothing
is written.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from grader import __main__ as command_line
from grader.seam import registry
from grading import REPO_ROOT


def run_grader(*arguments: str, prelude: str = "") -> subprocess.CompletedProcess:
    """``python -m grader ARGUMENTS`` in a fresh interpreter; ``prelude`` runs first (to hide a library)."""
    script = f"import sys\n{prelude}\nfrom grader.__main__ import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", script, *arguments], cwd=REPO_ROOT, capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL,
    )


# --- the index ----------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", [(), ("--help",)], ids=["bare", "help"])
def test_the_index_lists_every_command_once_under_its_readers_heading(arguments):
    finished = run_grader(*arguments)
    assert finished.returncode == 0, finished.stderr
    text = finished.stdout
    headings = ["students", *command_line.READERS]
    starts = [text.index(f"\n{heading} (") for heading in headings]
    assert starts == sorted(starts), "the readers' groups are listed in order"
    for command in command_line.COMMANDS:
        group = headings.index(command.reader)
        end = starts[group + 1] if group + 1 < len(starts) else len(text)
        lines = [line.split() for line in text[starts[group]:end].splitlines()]
        assert [command.name] in [line[:1] for line in lines], f"{command.name} under {command.reader}"
    assert "pytest grader" in text[starts[0]:starts[1]]
    # Under students, the scripts every exercise hands out, each under its exercise's name and
    # each a file that exists: the course's second exercise's focused example among them.
    scripts = [line.split()[:3] for line in text[starts[0]:starts[1]].splitlines() if line.split()[:1] == ["python"]]
    for name in registry.course_order():
        for script in registry.exercise(name).scripts:
            assert ["python", f"exercises/{script.file}", f"{name}:"] in scripts, text
            assert (REPO_ROOT / "exercises" / script.file).is_file()
    assert any(registry.exercise(name).example for name in registry.course_order()[1:]), "the second exercise's example"


@pytest.mark.parametrize("command", command_line.COMMANDS, ids=lambda command: command.name)
def test_each_commands_help_ends_with_an_example_its_parser_accepts(command):
    parser = command_line.parser_for([command.name])
    words = shlex.split(command.example)
    assert words[:4] == ["python", "-m", "grader", command.name]
    arguments = parser.parse_args(words[3:])
    assert arguments.command == command.name
    subparsers = next(action for action in parser._actions if action.dest == "command")
    help_text = subparsers.choices[command.name].format_help()
    assert help_text.rstrip().endswith(f"example:\n  {command.example}")


def test_adding_a_command_is_one_entry_each_reader_known():
    assert {command.reader for command in command_line.COMMANDS} <= set(command_line.READERS)
    assert len(command_line.BY_NAME) == len(command_line.COMMANDS)


# --- a missing library --------------------------------------------------------------------

HIDE_TORCH = "sys.modules['torch'] = None  # import torch now raises ModuleNotFoundError, as without torch"


def test_a_python_without_torch_is_told_that_torch_is_missing_and_how_to_install_it():
    finished = run_grader("examples", "--check", prelude=HIDE_TORCH + "\nsys.prefix = '/usr'  # not the repository's .venv")
    assert finished.returncode == 2
    assert "Traceback" not in finished.stderr
    assert f"torch is not installed for {sys.executable}" in finished.stderr
    assert "run make .venv in" in finished.stderr
    assert ".venv/bin/python -m grader examples --check" in finished.stderr
    assert "instructor's command" not in finished.stderr


def test_the_repositorys_own_virtualenv_without_torch_is_told_to_install_the_requirements():
    prefix = f"sys.prefix = {str(REPO_ROOT / '.venv')!r}"
    finished = run_grader("examples", "--check", prelude=HIDE_TORCH + "\n" + prefix)
    assert finished.returncode == 2
    assert "torch is not installed" in finished.stderr
    assert "pip install -r requirements-instructor.txt" in finished.stderr


# --- paths a user can get wrong ------------------------------------------------------------


def files_under(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


def test_batch_on_a_folder_that_does_not_exist_writes_nothing(tmp_path, capsys):
    status = command_line.main(["batch", str(tmp_path / "submisions"), "--out", str(tmp_path / "marks")])
    assert status == 2
    assert "submisions is not a folder of submissions (it does not exist)" in capsys.readouterr().err
    assert not (tmp_path / "marks").exists()


# Each: the arguments (with {tmp} for the folder), and what the message must name.
MISTAKES = {
    "batch --out a file": (["batch", "{tmp}/class", "--out", "{tmp}/notes.txt"], "--out {tmp}/notes.txt is a file"),
    "batch on a file": (["batch", "{tmp}/notes.txt", "--out", "{tmp}/marks"], "notes.txt is not a folder of submissions (a file)"),
    "release onto a file": (["release", "{tmp}/notes.txt"], "Not a directory: {tmp}/notes.txt"),
    "wheel onto a file": (["wheel", "{tmp}/notes.txt"], "{tmp}/notes.txt"),
    "gradescope onto a folder": (["gradescope", "{tmp}/class"], "Is a directory: {tmp}/class"),
    "prairielearn onto a file": (["prairielearn", "{tmp}/notes.txt"], "Not a directory: {tmp}/notes.txt"),
    "classroom50 onto a file": (["classroom50", "{tmp}/notes.txt"], "Not a directory: {tmp}/notes.txt"),
    "export without a batch": (["export", "{tmp}/class", "--roster", "{tmp}/notes.txt", "--assignment", "A", "--out", "{tmp}/g.csv"],
                               "{tmp}/class holds no results.json: run `python -m grader batch` first"),
}


@pytest.mark.parametrize("case", MISTAKES, ids=list(MISTAKES))
def test_a_path_a_user_got_wrong_gets_one_line_naming_it_and_writes_nothing(case, tmp_path, capsys):
    (tmp_path / "class").mkdir()
    (tmp_path / "notes.txt").write_text("not a folder\n", encoding="utf-8")
    before = files_under(tmp_path)
    arguments, named = MISTAKES[case]
    status = command_line.main([argument.format(tmp=tmp_path) for argument in arguments])
    error = capsys.readouterr().err
    assert status == 2
    assert named.format(tmp=tmp_path) in error
    assert len(error.strip().splitlines()) == 1
    assert files_under(tmp_path) == before


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_batch_refuses_a_number_of_shards_that_grades_nobody(jobs, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_status:
        command_line.main(["batch", str(tmp_path), "--out", str(tmp_path / "marks"), "--jobs", jobs])
    assert exit_status.value.code == 2
    assert "argument --jobs" in capsys.readouterr().err
    assert not (tmp_path / "marks").exists()


@pytest.mark.slow
def test_batch_run_from_another_folder_writes_where_its_relative_paths_point(tmp_path):
    """The shards run from the repository's folder: a relative --out once sent their results there."""
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "alice.py").write_text((REPO_ROOT / "solutions" / "multi_head_attention.py").read_text())
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", "class", "--out", "marks", "--jobs", "1", "--quiet", "--no-report"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, capture_output=True, text=True,
        timeout=300, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert (tmp_path / "marks" / "results" / "alice.json").is_file()
    assert "\nalice," in (tmp_path / "marks" / "gradebook.csv").read_text()
