"""Before a batch grades: who is in the class, which entry of each student is graded, and what
the instructor's files say about each student, all checked before anything is written.

``prepare`` lists the submissions, resolves every entry to a student (grader/term/identity.py,
with the course's roster when it names one), keeps one entry per student (the latest attempt:
grader/batch/intake.py ``one_entry_per_student``), resolves every name in the course's
extensions, ``submitted_at.csv``, ``overrides.csv`` and ``--only`` to one of those students,
and raises ``Refused`` with every problem (each with its file and line) when a name matches
nobody on the roster, more than one student, or a student a second time. Without a roster a
name that matches no submission may be a student who handed nothing in: it is not applied, and
said in the log, the summary and the report (``Prepared.unmatched``).

``--only ID=FILE`` regrades one student from a corrected file the instructor gives: the file is
kept in ``OUT/replacements/`` (``save_replacements``), graded in place of the student's own
entry in this run and every later one (each says so), until ``--only ID=`` drops it. Nothing in
the submissions folder (nor the class zip's ``OUT/unpacked/``) is edited.

Results and feedback of entries no longer graded (an earlier attempt, a file gone from a new
download) leave ``OUT/results`` and ``OUT/feedback`` for ``OUT/superseded/`` (``set_aside_gone``),
and the run says which.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader import results, untrusted
from grader.term import course_inputs
from grader.batch import intake
from grader.class_view import similarity
from grader.term.identity import Identities, Keyed, Student

REPLACEMENTS = "replacements"  # OUT/replacements/<stem>/<the file given>
REPLACEMENTS_RECORD = "replacements.json"  # entry name -> what replaces it
SUPERSEDED = "superseded"  # OUT/superseded/results/, feedback/, graded/
REPLACEABLE = (".py", ".ipynb", ".zip")


Refused = course_inputs.Refused  # every problem, one line each with its file and line


@dataclass
class Prepared:
    folder: Path
    ignored: list[intake.Ignored]
    identities: Identities
    students: intake.Students
    ids: dict[Path, str]  # graded entry -> its id (the gradebook's first column)
    adjustments: course_inputs.Adjustments  # the course's deadline, times and overrides, by student
    only: list[str] | None = None  # ids to regrade (--only)
    replacements: dict[str, Path | None] = field(default_factory=dict)  # id -> the file given now (None: drop)
    unmatched: list[tuple[Keyed, str]] = field(default_factory=list)  # names of no submission (no roster)

    def path_of(self, student_id: str) -> Path:
        return next(path for path, sid in self.ids.items() if sid == student_id)

    def student(self, student_id: str) -> Student:
        return self.students.student_of[self.path_of(student_id)]

    def entries_of(self, student: Student) -> list[str]:
        return [sid for path, sid in self.ids.items() if self.students.student_of[path].key == student.key]


def check_names(stems: list[str], inputs: course_inputs.Inputs, only: list[str] | None) -> tuple[Identities, course_inputs.Resolved | None]:
    """Every name in the course's files and ``--only`` resolved against the roster and the
    submissions' names (``stems``, their ids before one is kept per student); raises ``Refused``
    naming every problem. Reads no submission and writes nothing: the batch runs it before it
    makes OUT (for a class zip, on the zip's listing)."""
    try:
        identities, resolved = course_inputs.resolve_names(inputs, stems)
        problems = []
    except Refused as refused:
        if inputs.problems:  # files that cannot be read: their names are not resolved
            raise
        identities, resolved, problems = Identities(inputs.rows, stems, inputs.lms_kind), None, list(refused.problems)
    owners = {identities.student_of(stem).key for stem in stems}
    named: dict[str, str] = {}  # student key -> the first word of --only that named them
    for word in only or ():
        key, given, file_text = word.partition("=")
        resolution = identities.resolve(key)
        if len(resolution.students) > 1:
            problems.append(f"--only {untrusted.printable(key)}: {resolution.problem(identities.has_roster)}")
        elif resolution.student is None or resolution.student.key not in owners:
            problems.append(
                f"--only: no submission for {untrusted.printable(key)} (a student's id in the gradebook, their login, "
                "SIS id, Canvas id or name, or a submission's file name)"
            )
        elif resolution.student.key in named:
            # As every course file takes one row per student: which of two files, or whether to
            # grade one or drop its replacement, would be a guess.
            problems.append(
                f"--only {untrusted.printable(word)}: a second time for {untrusted.printable(resolution.student.name)} (the first is "
                f"{untrusted.printable(named[resolution.student.key])}): name each student once"
            )
        elif file_text:
            path = Path(file_text)
            mode = path.lstat().st_mode if path.exists() or path.is_symlink() else None
            if mode is None or not stat.S_ISREG(mode):
                problems.append(f"--only {key}={file_text}: {'no such file' if mode is None else 'not a regular file'}")
            elif path.suffix.lower() not in REPLACEABLE:
                problems.append(f"--only {key}={file_text}: give a {', '.join(REPLACEABLE)} file, as a student hands in")
        if resolution.student is not None:
            named.setdefault(resolution.student.key, word)
    if problems:
        raise Refused(problems)
    return identities, resolved


def prepare(folder: Path, inputs: course_inputs.Inputs, only: list[str] | None) -> Prepared:
    """See the module's docstring; raises ``Refused`` naming every problem."""
    listed, ignored = intake.survey(folder)
    identities, resolved = check_names([intake.student_id_of(path) for path in listed], inputs, only)
    adjustments = course_inputs.Adjustments(inputs, identities, resolved)
    students = intake.one_entry_per_student(listed, identities, adjustments.time_of_file)
    ids = dict(zip(students.entries, intake.unique_ids([intake.student_id_of(path) for path in students.entries])))
    adjustments.stems = {sid: intake.student_id_of(path) for path, sid in ids.items() if intake.student_id_of(path) != sid}
    prepared = Prepared(folder, ignored, identities, students, ids, adjustments, unmatched=resolved.unmatched if resolved else [])
    if only:
        for word in only:
            key, given, file_text = word.partition("=")
            sid = prepared.entries_of(identities.resolve(key).student)[0]
            prepared.only = [*(prepared.only or []), sid]
            if given:
                prepared.replacements[sid] = Path(file_text) if file_text else None
        prepared.only = list(dict.fromkeys(prepared.only))
    return prepared


# --- an instructor's replacement of one student's file -----------------------------------------


def read_replacements(out: Path) -> dict[str, dict]:
    try:
        record = json.loads((out / REPLACEMENTS_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def save_replacements(out: Path, prepared: Prepared) -> list[str]:
    """Keep the files given with ``--only ID=FILE`` in OUT (dropping those ``--only ID=``
    names); the sentences that say what was kept, replaced or dropped."""
    if not prepared.replacements:
        return []
    record, said = read_replacements(out), []
    names = {sid: path.name for path, sid in prepared.ids.items()}
    for sid, given in prepared.replacements.items():
        entry = names[sid]
        folder = out / REPLACEMENTS / untrusted.file_stem(sid)
        earlier = record.pop(entry, None)
        if folder.exists():
            shutil.rmtree(folder)
        if given is None:
            said.append(f"{sid}: the replacement {earlier['file'] if earlier else ''} dropped; graded from {entry} again"
                        if earlier else f"{sid}: no replacement to drop; graded from {entry}")
            continue
        data = given.read_bytes()
        target = folder / given.name
        folder.mkdir(parents=True)
        target.write_bytes(data)
        record[entry] = {
            "file": str(target.relative_to(out)), "given": str(given.resolve()), "sha256": hashlib.sha256(data).hexdigest(),
            "at": time.strftime("%Y-%m-%d %H:%M %Z"),
        }
        also = f" (it replaces the earlier replacement {earlier['file']})" if earlier else ""
        said.append(f"{sid}: {given} kept as {target}{also}; graded in place of {entry} from now on (--only {sid}= drops it)")
    results.write_atomically(out / REPLACEMENTS_RECORD, json.dumps(record, indent=1, ensure_ascii=True) + "\n")
    return said


def replacement_of(out: Path, entry_name: str, record: dict) -> Path | None:
    """The file an instructor gave in place of ``entry_name``, if it is still there."""
    kept = record.get(entry_name)
    if not isinstance(kept, dict) or not isinstance(kept.get("file"), str):
        return None
    path = out / kept["file"]
    return path if path.is_file() and not path.is_symlink() and (out / REPLACEMENTS) in path.parents else None


def unused_replacements(record: dict, prepared: Prepared) -> list[str]:
    """Replacements of entries that are no longer graded (a later attempt came, the file left)."""
    graded = {path.name for path in prepared.ids}
    return [f"{entry} (replaced by {kept.get('file')})" for entry, kept in record.items() if entry not in graded and isinstance(kept, dict)]


# --- results of entries no longer graded ---------------------------------------------------------


def set_aside_gone(out: Path, ids: list[str]) -> list[str]:
    """Move the results, feedback and graded code of entries no longer in the class (an earlier
    attempt, a file gone from a new download) into OUT/superseded/; the paths moved."""
    kept = {untrusted.file_stem(sid) for sid in ids}
    moved = []
    for folder, suffixes in (("results", (".json",)), ("feedback", (".md", ".html")), (similarity.GRADED_CODE_FOLDER, (".py",))):
        source = out / folder
        if not source.is_dir():
            continue
        for path in sorted(source.iterdir()):
            stem = next((path.name[: -len(suffix)] for suffix in suffixes if path.name.endswith(suffix)), None)
            if stem is None or stem in kept or path.name.startswith(".") or not path.is_file():
                continue
            target = out / SUPERSEDED / folder / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            again = " (in place of the copy an earlier run set aside)" if target.exists() else ""
            path.replace(target)
            moved.append(f"{folder}/{path.name}{again}")
    return moved
