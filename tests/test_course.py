"""The course file: found or named, checked with the key and line of any mistake, a flag winning
over it (and saying so), the seed written back without losing a comment."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from grader.__main__ import main
from grader.term import course
from handmade_class import class_documents, write_out

REPO_ROOT = Path(__file__).resolve().parent.parent

ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section\r\n"
    "    Points Possible,,,,\r\n"
    '"One, S",1001,U1,s1,A\r\n'
    '"Two, S",1002,U2,s2,A\r\n'
)


def write(tmp_path, text: str):
    path = tmp_path / "course.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_init_writes_a_commented_file_that_reads_back_and_names_every_key(tmp_path, capsys):
    path = tmp_path / "course.toml"
    assert main(["course", "init", str(path)]) == 0
    loaded = course.load(path)
    assert loaded.get("assignment", "points") == 100 and loaded.get("late", "penalty_per_day") == 10
    text = path.read_text(encoding="utf-8")
    for section, keys in course.SCHEMA.items():
        assert f"[{section}]" in text
        for key in keys or ():
            assert re.search(rf"^#? ?{key} = .*# \w", text, re.MULTILINE), f"{section}.{key} is not in the starting file with a comment"
    assert main(["course", "init", str(path)]) == 2  # never overwritten unasked
    assert "exists" in capsys.readouterr().err


def test_a_malformed_file_is_refused_with_its_line(tmp_path):
    path = write(tmp_path, '[assignment]\nname = "HW3"\npoints = = 100\n')
    with pytest.raises(course.CourseError, match=r"course\.toml: not valid TOML: .*line 3"):
        course.load(path)


def test_an_unknown_key_is_refused_naming_the_key_and_its_line(tmp_path):
    path = write(tmp_path, '[assignment]\nname = "HW3"\n\n[late]\npenalty_per_day = 10\npenalty_per_hour = 1\n')
    with pytest.raises(course.CourseError, match=r"course\.toml:6: unknown key 'penalty_per_hour' in \[late\]"):
        course.load(path)


def test_an_unknown_section_is_refused_naming_its_line(tmp_path):
    path = write(tmp_path, '[assignment]\nname = "HW3"\n[lateness]\nmax_days = 3\n')
    with pytest.raises(course.CourseError, match=r"course\.toml:3: unknown section \[lateness\]"):
        course.load(path)


@pytest.mark.parametrize(
    "line, message",
    [
        ('points = "a hundred"', r":3: \[assignment\] points must be a number above 0 and at most 1000000, not 'a hundred'"),
        ("points = nan", r":3: \[assignment\] points must be a number above 0"),
        ("points = 0", r":3: \[assignment\] points must be a number above 0"),
        ("grading_seed = -1", r":3: \[assignment\] grading_seed must be a whole number of 0 or more"),
        ("lms_id = 7.5", r":3: \[assignment\] lms_id must be a whole number"),
        ("grading_seed = true", r":3: \[assignment\] grading_seed must be a whole number"),
        ('deadline = "next friday"', r":3: \[assignment\] deadline must be a date and time with its UTC offset"),
        ('deadline = "2026-12-05T23:59:00"', r":3: \[assignment\] deadline must be a date and time with its UTC offset"),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused_naming_the_key_and_its_line(tmp_path, line, message):
    path = write(tmp_path, f'[assignment]\nname = "HW3"\n{line}\n')
    with pytest.raises(course.CourseError, match=message):
        course.load(path)


@pytest.mark.parametrize(
    "line, message",
    [
        ("penalty_per_day = -50", r"penalty_per_day must be a number from 0 to 100 \(percent of the points\), not -50"),
        ("penalty_per_day = 150", r"penalty_per_day must be a number from 0 to 100"),
        ("penalty_per_day = nan", r"penalty_per_day must be a number from 0 to 100 .*, not nan"),
        ("penalty_per_day = inf", r"penalty_per_day must be a number from 0 to 100 .*, not inf"),
        ("grace_minutes = inf", r"grace_minutes must be a number from 0 to 10080 \(minutes: a week at most\), not inf"),
        ("grace_minutes = -15", r"grace_minutes must be a number from 0 to 10080"),
        ("grace_minutes = 1e9", r"grace_minutes must be a number from 0 to 10080"),
        ("max_days = -1", r"max_days must be a whole number from 0 to 365 \(days\), not -1"),
        ("max_days = 2.5", r"max_days must be a whole number from 0 to 365"),
        ("max_days = 100000", r"max_days must be a whole number from 0 to 365"),
        ("unknown_delay_days = -1", r"unknown_delay_days must be a whole number from 0 to 365"),
        ("unknown_delay_days = true", r"unknown_delay_days must be a whole number from 0 to 365 \(days\), not True"),
    ],
)
def test_a_late_policy_value_out_of_its_range_is_refused_naming_the_key_and_its_line(tmp_path, line, message):
    path = write(tmp_path, f"[assignment]\nname = \"HW3\"\n[late]\n{line}\n")
    with pytest.raises(course.CourseError, match=rf"course\.toml:4: \[late\] {message}"):
        course.load(path)


def test_every_bad_value_is_named_at_once(tmp_path):
    path = write(tmp_path, "[late]\npenalty_per_day = -50\ngrace_minutes = inf\nmax_days = 3\n")
    with pytest.raises(course.CourseError) as refused:
        course.load(path)
    assert [line.split("course.toml", 1)[1][:3] for line in str(refused.value).splitlines()] == [":2:", ":3:"]


def test_a_huge_key_is_named_in_a_line_of_its_own(tmp_path):
    path = write(tmp_path, f'[extensions]\n"{"x" * 200_000}" = "next week"\n')
    with pytest.raises(course.CourseError, match=r"course\.toml:2: \[extensions\] x+\.\.\. must be a date and time") as refused:
        course.load(path)
    assert len(str(refused.value)) < 400


def test_the_edges_of_each_range_are_accepted(tmp_path):
    path = write(tmp_path, "[late]\npenalty_per_day = 100\ngrace_minutes = 0\nmax_days = 0\nunknown_delay_days = 365\n")
    assert course.load(path).late == course.LatePolicy(penalty_per_day=100, max_days=0, grace_minutes=0, unknown_delay_days=365)


def test_an_extension_must_be_a_deadline(tmp_path):
    path = write(tmp_path, '[extensions]\nsmith = "2026-12-07T23:59:00-05:00"\njones = 3\n')
    with pytest.raises(course.CourseError, match=r":3: \[extensions\] jones must be a date and time"):
        course.load(path)
    path = write(tmp_path, '[extensions]\nsmith = 2026-12-07T23:59:00-05:00\n')  # TOML's own date-time works too
    assert course.load(path).extensions["smith"].isoformat() == "2026-12-07T23:59:00-05:00"


def test_a_command_refuses_a_broken_course_file_with_one_message(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "[assignment]\nlevel = 3\n")
    with pytest.raises(SystemExit) as stopped:
        main(["report", str(tmp_path)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "course.toml:2: [assignment] level must be a non-empty string" in err


def test_the_seed_is_written_into_the_assignment_section_keeping_every_comment(tmp_path):
    text = '# my course\n[assignment]   # the assignment\nname = "HW3"  # its title\n\n[late]\nmax_days = 3 # three\n'
    path = write(tmp_path, text)
    course.record_seed(course.load(path), 4242)
    written = path.read_text(encoding="utf-8")
    assert tomllib.loads(written)["assignment"]["grading_seed"] == 4242
    assert written.replace(next(line + "\n" for line in written.splitlines() if line.startswith("grading_seed")), "") == text
    course.record_seed(course.load(path), 7)  # replaced in place, not added twice
    assert path.read_text(encoding="utf-8").count("grading_seed") == 1 and course.load(path).get("assignment", "grading_seed") == 7


def test_the_seed_goes_into_a_new_assignment_section_when_there_is_none(tmp_path):
    path = write(tmp_path, "[late]\nmax_days = 3")  # no line end at the end either
    course.record_seed(course.load(path), 11)
    assert course.load(path).get("assignment", "grading_seed") == 11 and course.load(path).get("late", "max_days") == 3


def test_the_report_takes_the_assignment_from_the_course_file_found_in_the_working_directory(tmp_path, monkeypatch, capsys):
    out = write_out(tmp_path / "out", class_documents())
    monkeypatch.chdir(tmp_path)
    write(tmp_path, '[assignment]\nname = "HW3 from the course"\n')
    assert main(["report", str(out)]) == 0
    assert "<h1>Class report: HW3 from the course</h1>" in (out / "report.html").read_text(encoding="utf-8")
    assert capsys.readouterr().err == ""  # no flag, nothing to say


def test_a_flag_wins_over_the_course_file_and_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    out = write_out(tmp_path / "out", class_documents())
    monkeypatch.chdir(tmp_path)
    write(tmp_path, '[assignment]\nname = "HW3 from the course"\n')
    assert main(["report", str(out), "--assignment", "From the flag"]) == 0
    assert "<h1>Class report: From the flag</h1>" in (out / "report.html").read_text(encoding="utf-8")
    err = capsys.readouterr().err
    assert err == "note: --assignment given: it wins over course.toml's [assignment] name = 'HW3 from the course'\n"


def test_export_needs_no_flag_when_the_course_file_names_the_column_the_points_and_the_roster(tmp_path, capsys):
    out = write_out(tmp_path / "out", class_documents())
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "roster.csv").write_text(ROSTER, encoding="utf-8")
    path = write(tmp_path / "course", '[assignment]\nname = "HW3"\nlms_id = 777\npoints = 10\n[files]\nroster = "roster.csv"\n')
    target = tmp_path / "grades.csv"
    assert main(["export", str(out), "--course", str(path), "--out", str(target)]) == 0
    lines = target.read_text(encoding="utf-8").splitlines()
    assert lines[0].endswith(",HW3 (777)") and lines[1].endswith(",10")
    assert lines[2].endswith(",8") and lines[3].endswith(",6")  # 4 of 5 and 3 of 5, in 10 points


def test_a_course_value_is_checked_as_the_flag_would_be(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, '[assignment]\nlevel = "expert"\n')
    with pytest.raises(SystemExit) as stopped:
        main(["wheel", str(tmp_path / "wheel")])
    assert stopped.value.code == 2


def test_a_handout_takes_its_setting_from_the_course_file(tmp_path):
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--slug", default="multi-head-attention")
    path = write(tmp_path, '[handout]\nslug = "hw3-attention"\n')
    assert course.apply_to_parser("classroom50", parser, ["--course", str(path)]) == []
    assert parser.parse_args([]).slug == "hw3-attention"
    notes = course.apply_to_parser("classroom50", parser, ["--course", str(path), "--slug", "other"])
    assert notes == ["--slug given: it wins over course.toml's [handout] slug = 'hw3-attention'"]


def test_the_gradescope_zip_takes_the_hidden_tests_visibility_from_the_course_file(tmp_path, capsys):
    path = write(tmp_path, '[handout]\nhidden_visibility = "visible"\n')
    assert main(["gradescope", str(tmp_path / "autograder.zip"), "--course", str(path)]) == 0
    assert "hidden tests visible" in capsys.readouterr().out
    assert main(["gradescope", str(tmp_path / "autograder.zip"), "--course", str(path), "--hidden-visibility", "hidden"]) == 0
    captured = capsys.readouterr()
    assert "hidden tests hidden" in captured.out and "--hidden-visibility given: it wins" in captured.err


def test_the_gradescope_zip_carries_the_courses_deadline_and_late_policy(tmp_path, capsys):
    import json
    import zipfile

    path = write(tmp_path, '[assignment]\ndeadline = "2026-12-05T23:59:00-05:00"\n[late]\npenalty_per_day = 10\n')
    assert main(["gradescope", str(tmp_path / "autograder.zip"), "--course", str(path)]) == 0
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        policy = json.loads(archive.read("late_policy.json"))
    assert policy["deadline"] == "2026-12-05T23:59:00-05:00" and policy["penalty_per_day"] == 10
    assert "late work: the course's deadline" in capsys.readouterr().out


def test_the_points_are_checked_as_the_flag_checks_them(tmp_path, capsys):
    out = write_out(tmp_path / "out", class_documents())
    path = write(tmp_path, "[assignment]\npoints = 0\n")
    with pytest.raises(SystemExit) as stopped:
        main(["export", str(out), "--course", str(path), "--roster", "r.csv", "--assignment", "A (1)", "--out", "g.csv"])
    assert stopped.value.code == 2 and "course.toml:2: [assignment] points" in capsys.readouterr().err


# --- a course file that is not a plain file, and other files it names --------------------------


@pytest.mark.parametrize("kind", ["a link to nothing", "a folder"])
def test_a_course_toml_in_the_working_directory_that_is_no_file_is_refused_never_passed_over(tmp_path, monkeypatch, capsys, kind):
    """Once ``course check`` refused it while the batch, the report and the export ran without
    the course's deadline, late policy and overrides, saying nothing."""
    if kind == "a folder":
        (tmp_path / "course.toml").mkdir()
    else:
        (tmp_path / "course.toml").symlink_to(tmp_path / "a drive not mounted" / "course.toml")
    monkeypatch.chdir(tmp_path)
    assert course.find(None) == tmp_path / "course.toml"
    out = write_out(tmp_path / "out", class_documents())
    with pytest.raises(SystemExit) as stopped:
        main(["report", str(out)])
    said = capsys.readouterr().err
    assert stopped.value.code == 2 and "course.toml: " + ("a folder, not a file" if kind == "a folder" else "a link to a file that does not exist") in said
    assert not (out / "report.html").exists()


def test_a_device_named_as_the_roster_is_refused_without_being_read(tmp_path):
    """/dev/zero once took the memory of the machine (a line that never ends), and a FIFO waited
    forever. Read in a process whose memory is capped, so that a grader that reads it fails here
    with a MemoryError instead of taking the machine's memory."""
    import json
    import resource
    import subprocess
    import sys

    path = write(tmp_path, '[files]\nroster = "/dev/zero"\noverrides = "/dev/zero"\n')
    code = (
        "import json, sys; from grader.term import course, course_inputs; "
        "print(json.dumps(course_inputs.read(course.load(sys.argv[1])).problems))"
    )

    def capped():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    read = subprocess.run(
        [sys.executable, "-c", code, str(path)], cwd=REPO_ROOT, capture_output=True, text=True, preexec_fn=capped,
        timeout=120, stdin=subprocess.DEVNULL,
    )
    assert read.returncode == 0, read.stderr[-2000:]
    assert json.loads(read.stdout) == [
        "/dev/zero: not a regular file (a device, a FIFO or a socket): give the file itself",
        "/dev/zero: not a regular file (a device, a FIFO or a socket): give the file itself",
    ]


def test_a_file_larger_than_any_instructors_file_is_refused_unread(tmp_path, monkeypatch):
    from grader.term import course_inputs, instructor_files

    monkeypatch.setattr(instructor_files, "LIMIT", 1000)
    (tmp_path / "submitted_at.csv").write_text("student,submitted_at\n" + "x" * 2000 + "\n", encoding="utf-8")
    path = write(tmp_path, '[files]\nsubmitted_at = "submitted_at.csv"\n')
    [problem] = course_inputs.read(course.load(path)).problems
    assert problem.endswith("submitted_at.csv: larger than 1000 bytes, far more than such a file holds: is it the right file?")


def test_a_course_file_saved_with_a_byte_order_mark_reads_and_keeps_it_when_the_seed_is_written(tmp_path):
    """Notepad writes one; tomllib read it as "Invalid statement (at line 1, column 1)"."""
    path = tmp_path / "course.toml"
    path.write_bytes(b'\xef\xbb\xbf[assignment]\nname = "HW3"\n')
    loaded = course.load(path)
    assert loaded.get("assignment", "name") == "HW3"
    course.record_seed(loaded, 7)
    assert path.read_bytes().startswith(b'\xef\xbb\xbf[assignment]\ngrading_seed = 7 ')
    assert course.load(path).get("assignment", "grading_seed") == 7


@pytest.mark.parametrize("extension", ['"2025-12-08T23:59:00-05:00"', '"2026-12-05T23:59:00-05:00"'])
def test_an_extension_that_is_not_after_the_deadline_is_refused_with_its_line(tmp_path, extension):
    """A year mistyped (or the deadline moved past it) would take that student's points."""
    path = write(tmp_path, f'[assignment]\ndeadline = "2026-12-05T23:59:00-05:00"\n[extensions]\njdoe = {extension}\n')
    with pytest.raises(course.CourseError, match=r"course\.toml:4: \[extensions\] jdoe = 202\d-12-0\dT23:59:00-05:00 is not after "
                       r"the assignment's deadline \(2026-12-05T23:59:00-05:00\)"):
        course.load(path)
    write(tmp_path, '[assignment]\ndeadline = "2026-12-05T23:59:00-05:00"\n[extensions]\njdoe = "2026-12-05T23:59:01-05:00"\n')
    assert course.load(path).extensions["jdoe"].second == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [("jos\u00e9", "jose\u0301"), ("ann lee", "ann  lee"), ("Ann", "ann")],  # NFC and NFD, two spaces, case
)
def test_course_check_refuses_roster_twins_the_resolver_takes_for_one_name(tmp_path, capsys, first, second):
    (tmp_path / "roster.csv").write_text(
        f'Student,ID,SIS User ID,SIS Login ID,Section\r\n"One, S",1001,U1,{first},A\r\n"Two, S",1002,U2,{second},A\r\n',
        encoding="utf-8",
    )
    path = write(tmp_path, '[files]\nroster = "roster.csv"\n')
    assert main(["course", "check", str(path)]) == 2
    assert "roster.csv:3: SIS Login ID" in capsys.readouterr().err


def test_course_check_without_a_roster_refuses_an_extension_named_twice_as_the_resolver_compares_names(tmp_path, capsys):
    path = write(tmp_path, '[assignment]\ndeadline = "2026-12-05T23:59:00Z"\n\n[extensions]\n"ann lee" = "2026-12-07T23:59:00Z"\n'
                           '"ANN  LEE" = "2026-12-08T23:59:00Z"\n')
    assert main(["course", "check", str(path)]) == 2
    assert "a second extension for 'ANN  LEE' (the first is 'ann lee' on line 5" in capsys.readouterr().err
