"""The instructor's make targets (the Makefile), read with make's dry run: what each would run."""

from __future__ import annotations

import subprocess

from grading import REPO_ROOT


def dry_run(*arguments: str) -> str:
    finished = subprocess.run(["make", "-n", "-C", str(REPO_ROOT), *arguments], capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    return finished.stdout


def test_make_report_reuses_the_sample_classs_results_when_they_are_there(tmp_path):
    (tmp_path / "results.json").write_text("{}\n")
    commands = dry_run("report", f"BATCH_OUT={tmp_path}")
    assert f"-m grader report {tmp_path}" in commands
    assert "-m grader batch" not in commands


def test_make_report_grades_the_sample_class_first_when_it_has_no_results(tmp_path):
    commands = dry_run("report", f"BATCH_OUT={tmp_path / 'none'}")
    assert commands.index("-m grader batch") < commands.index("-m grader report")
