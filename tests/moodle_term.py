"""A small Moodle term as an instructor gets it: the assignment's "Download all submissions" zip
(in both of its download settings), its "Download grading worksheet" CSV, and a course file (with
an overrides file) written as a person would. Built as Moodle writes them (grader/lms/ cites each):

- the download (mod/assign/classes/downloader.php): ``Full Name_<participant id>_assignsubmission_file``
  then ``/file`` (folders, the default) or ``_file`` (flat), the name through clean_filename
  (``'`` dropped: "Aoife OConnell"), a student's ``_`` made a space;
- the worksheet (mod/assign/gradingtable.php, strings of mod/assign/lang/en/assign.php): Identifier
  "Participant <id>", Full name, Email address, Status, Grade, Maximum grade, Grade can be changed,
  Last modified (submission), Last modified (grade), Feedback comments; dates as userdate writes them
  in English, in the downloader's time zone (Europe/Berlin here), "-" for none; an extension in Status.

    participant  student             handed in                                   the course says
    2931501      Aoife O'Connell     the solution, on time                        (her apostrophe dropped in the zip)
    2931502      María García        the solution, on time                        (two students of one name)
    2931503      María García        a file with a syntax error, on time
    2931504      Tom Baker           nothing
    2931505      Lee Park            a helpers file and the solution              (two files)
    2931506      Nora Quinn          the solution as a notebook only
    2931507      Larry Late          the solution, 21 hours late                  (10% a day: 18 of 20)
    2931508      Emma Stone          the solution, late, within Moodle's extension
    2931509      Otto Gray           the untouched stub                           override 55 of 100, by his email
    2931510      Rita Moreno         the solution as "multi_head_attention (1).py" (a browser's second download)
"""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import nbformat

from grading import REPO_ROOT

SOLUTION = (REPO_ROOT / "solutions" / "multi_head_attention.py").read_text(encoding="utf-8")
STUB = (REPO_ROOT / "exercises" / "multi_head_attention.py").read_text(encoding="utf-8")
SYNTAX_ERROR = SOLUTION.replace("def head_dimension(", "def head_dimension(:", 1)
HELPERS = "def shape_of(tensor):\n    return tuple(tensor.shape)\n"


def notebook_of(code: str) -> str:
    return nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# My attention"), nbformat.v4.new_code_cell(code)]))


ON_TIME = "Thursday, 16 October 2025, 6:05 PM"
# (participant, full name, email, submitted, extension, files)
STUDENTS = [
    ("2931501", "Aoife O'Connell", "aoife@uni.example", ON_TIME, None, {"multi_head_attention.py": SOLUTION}),
    ("2931502", "María García", "mgarcia1@uni.example", ON_TIME, None, {"multi_head_attention.py": SOLUTION}),
    ("2931503", "María García", "mgarcia2@uni.example", ON_TIME, None, {"multi_head_attention.py": SYNTAX_ERROR}),
    ("2931504", "Tom Baker", "tbaker@uni.example", None, None, {}),
    ("2931505", "Lee Park", "lpark@uni.example", ON_TIME, None, {"helpers.py": HELPERS, "multi_head_attention.py": SOLUTION}),
    ("2931506", "Nora Quinn", "nquinn@uni.example", ON_TIME, None, {"multi_head_attention.ipynb": notebook_of(SOLUTION)}),
    ("2931507", "Larry Late", "llate@uni.example", "Friday, 17 October 2025, 9:12 PM", None, {"multi_head_attention.py": SOLUTION}),
    ("2931508", "Emma Stone", "estone@uni.example", "Saturday, 18 October 2025, 10:30 AM", "Sunday, 19 October 2025, 11:59 PM",
     {"multi_head_attention.py": SOLUTION}),
    ("2931509", "Otto Gray", "ogray@uni.example", ON_TIME, None, {"multi_head_attention.py": STUB}),
    ("2931510", "Rita Moreno", "rmoreno@uni.example", ON_TIME, None, {"multi_head_attention (1).py": SOLUTION}),
]
MAXIMUM = "20.00"
# What each worksheet row is sent, in points of 20 (the worksheet's order): "" where nothing is graded.
EXPORTED = ["20", "20", "0", "", "20", "20", "18", "20", "11", "20"]

HEADER = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum grade", "Grade can be changed",
          "Last modified (submission)", "Last modified (grade)", "Feedback comments"]


def clean_filename(text: str) -> str:
    """lib/moodlelib.php clean_filename: PARAM_FILE's characters dropped."""
    return "".join(char for char in text if char not in "&<>\"`|':\\/" and ord(char) >= 32)


def prefix(participant: str, name: str) -> str:
    return clean_filename(name.replace("_", " ") + "_" + participant)


def download(folders: bool = True, students=STUDENTS) -> dict[str, str]:
    members = {}
    for participant, name, _, _, _, files in students:
        for file_name, text in files.items():
            base = prefix(participant, name) + "_assignsubmission_file"
            members[f"{base}/{file_name}" if folders else clean_filename(f"{base}_{file_name}")] = text
    return members


def status(submitted: str | None, extension: str | None) -> str:
    parts = ["Submitted for grading" if submitted else "No submission"]
    if extension:
        parts.append(f"Extension granted until: {extension}")
    return " - ".join(parts)


def worksheet(students=STUDENTS) -> str:
    buffer = io.StringIO()
    table = csv.writer(buffer)
    table.writerow(HEADER)
    for participant, name, email, submitted, extension, _ in students:
        table.writerow([f"Participant {participant}", name, email, status(submitted, extension), "", MAXIMUM, "Yes",
                        submitted or "-", "-", ""])
    return buffer.getvalue()


COURSE = """\
[assignment]
name = "HW3 Multi-head attention"
deadline = "2025-10-16T23:59:00+02:00"
timezone = "Europe/Berlin"

[late]
penalty_per_day = 10
max_days = 3

[lms]
kind = "moodle"

[files]
roster = "worksheet.csv"
overrides = "overrides.csv"
"""
OVERRIDES = "student,score,reason\nogray@uni.example,55,presented the work in office hours\n"


def write_download(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return path


def write_term(folder: Path, folders: bool = True, course: str = COURSE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "course.toml").write_text(course, encoding="utf-8")
    (folder / "worksheet.csv").write_text(worksheet(), encoding="utf-8", newline="")
    (folder / "overrides.csv").write_text(OVERRIDES, encoding="utf-8")
    write_download(folder / "submissions.zip", download(folders))
    return folder
