"""Batch grading for instructors: ``python -m grader batch SUBMISSIONS --out OUT``.

The batch itself decides no score. It stages each student's file (``grader.intake``),
splits the class into ``--jobs`` shards, and runs each in a process of its own
(``grader/batch/shard.py``: ``pytest grader --isolate`` sessions over its students). Those
sessions hold the reference and the hidden tests, and write each student's result the
moment that student is graded. This process watches the results arrive (progress bar),
then assembles the gradebook.

    OUT/gradebook.csv        submission,score (the final one),max_score,raw_score,late_penalty,override,status,
                             <one column per group>,diagnoses (mistake ids),late,override_reason,comment,exercise
    OUT/results.json         every test of every submission, each student's trail, the grading seed, the version
    OUT/results/<id>.json    one per student, written as soon as it is graded (the tests' score)
    OUT/feedback/<id>.md     what the student reads: their final score and its trail, then the checks
    OUT/report.html          the instructor's view of the class (grader/class_view/report.py)
    OUT/batch.log            the run log (appended to)
    OUT/intake.json          what each entry looked like when it was last read (see below)
    OUT/.batch.lock          held while a batch writes to OUT: one batch per OUT at a time
    OUT/grading-seed.txt     the assignment's grading seed, when there is no course file to hold it

The run is a pipeline of named stages passing one value (``Batch``: what was asked, ``Options``,
and what each stage added): ``intake`` (the class's entries staged, one per student, on one
sandbox and one seed), ``plan`` (who is graded in this run), ``grade`` (the shards), ``adjust``
(each final score derived with the late policy and the overrides), ``write`` (feedback pages,
gradebook.csv, results.json), ``report`` (report.html and the summary). ``STAGES`` lists them;
``run_stages`` runs them, and each can be run alone on a value (tests/test_batch.py does).

One assignment is graded on one seed (``--grading-seed``, else the course file's, else the one
recorded in OUT, else drawn once and recorded): a result graded on another seed is graded again,
and ``--only`` refuses to mix seeds. ``--only NAME...`` regrades the named students (any of
their names; ``NAME=FILE`` from a corrected file: grader/batch/class_intake.py) and leaves every
other result as it is. Before anything is written, the course's files are read and every name in
them resolved to one student (grader/term/course_inputs.py, grader/term/identity.py), and one
entry per student is kept, the latest attempt. After grading, the course's late policy and the
overrides file make each student's final score (grader/term/grade_trail.py, derived on every
run, never read back), and each feedback page shows it with its trail and, with a roster, the
student's name; the run ends with a summary on stdout (``--quiet``: the summary alone).

Interrupted runs lose nothing: a rerun skips every student whose result is already there
for the same file and the same grader version, unless ``--force``. An entry whose file
system record (size, times, inode: ``intake.fingerprint``) is unchanged since the run that
graded it is not even read again: a 20 MB notebook costs a stat, not a parse.

Ctrl-C (SIGINT), SIGTERM and SIGHUP all stop the batch the same way, within seconds: the
shards end their sessions and remove their workers (killed after a few seconds' grace), the
staging folder is removed, OUT's lock is released, and the run says what it kept and what it
left undone. Stopped while grading, it keeps every result written so far and does nothing
more: the gradebook, the comparison of submissions and the report wait for the next run,
which grades only what is left. Stopped after grading, the comparison or the report is cut
short (the gradebook is written without the comparison; ``python -m grader report OUT`` or
the same command again finishes them). The class files (feedback pages, gradebook.csv,
results.json, report.html) are staged by the write and report stages and replaced together
(grader/class_view/class_files.py): a stop at any moment leaves the last run's set or this
run's, never a mix, and its message says which. A shard also ends when the batch
is killed outright (its parent-death signal); what a killed run left in the temporary
folder and in the pids cgroups is removed by the next run (``processes.remove_leftovers``).
Everything a student controls that reaches the gradebook, the log or the terminal passes
through grader/untrusted.py.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import fcntl
import io
import json
import logging
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from tqdm import tqdm

from grader import __version__, results, settings, untrusted
from grader.term import course as course_file
from grader.batch import class_intake, class_zip, intake, summary
from grader.class_view import class_files, class_results, similarity
from grader.term import course_inputs, grade_trail, roster
from grader.term.identity import Student
from grader.term.identity import normal as identity_normal
from grader.term.status import NO_RESULT, NOT_GRADED_IN_THIS_RUN, status_of
from grader.sandbox import processes
from grader.feedback.markdown import render_markdown
from grader.scoring import GROUPS, SubmissionResult
from grader.seam import registry

log = logging.getLogger("grader.batch")

EXIT_OK = 0
EXIT_GRADER_FAILED = 2
EXIT_INTERRUPTED = 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "submissions", type=Path,
        help="a folder with one entry per student (.py, folder, .ipynb, .zip), or Canvas's Download Submissions zip as it comes",
    )
    parser.add_argument("--out", type=Path, required=True, help="where the gradebook, results and feedback go")
    parser.add_argument("--jobs", type=settings.COUNT, default=os.cpu_count() or 1, help="shards graded side by side (default: cores)")
    parser.add_argument("--force", action="store_true", help="regrade students whose results are already there")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "process"), default="auto")
    parser.add_argument("--call-timeout", type=settings.SECONDS, default=5.0, help="seconds allowed for one call into student code")
    parser.add_argument(
        "--submission-budget", type=settings.SECONDS, default=None,
        help="wall-clock seconds for one submission, import to last call; what remains scores 0 (default 120)",
    )
    parser.add_argument(
        "--diagnosis-budget", type=settings.SECONDS, default=None,
        help="wall-clock seconds for one submission's diagnosis, within its budget; past it the diagnosis is dropped (default 10)",
    )
    parser.add_argument(
        "--grading-seed", type=int, default=None,
        help="the hidden tests' data (default: the course file's, else the one recorded in OUT, else drawn once and recorded)",
    )
    parser.add_argument(
        "--only", nargs="+", metavar="ID[=FILE]", default=None,
        help="regrade these students (any of their names: the gradebook's id, login, SIS id, Canvas id, roster name) and "
        "leave every other result as it is; ID=FILE grades FILE in place of that student's entry, in this run and every "
        "later one (kept in OUT/replacements/), ID= drops it",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the summary at the end (no progress bar, no notes)")
    parser.add_argument("--assignment", default=None, help="the title shown in the report (default: the folder's name)")
    parser.add_argument("--no-report", action="store_true", help="skip OUT/report.html (it needs matplotlib)")


class OutInUse(RuntimeError):
    """Another batch is writing to the same OUT."""


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclasses.dataclass
class _Stop:
    """A stop signal's effect on this run: which signal, what the run was doing, what it cut short."""

    signal: str = ""  # "SIGTERM"; "" until one arrives
    stage: str = "reading the submissions, before grading began"
    cut_short: list[str] = dataclasses.field(default_factory=list)  # post-grading stages skipped or stopped
    replaced: bool = False  # this run's class files are in OUT (committed together)


_STOP = _Stop()


def _stop_signal(number: int, _frame) -> None:
    """Ctrl-C, SIGTERM, SIGHUP: remembered (for the sentence that says what was kept), then
    raised as Ctrl-C is, at whatever the run is doing."""
    _STOP.signal = signal.Signals(number).name
    raise KeyboardInterrupt


@dataclasses.dataclass(frozen=True)
class Options:
    """What this run was asked, read once from the command line (and the course file behind its
    defaults): the stages read it here, never from ``argparse``."""

    submissions: Path  # as given, made absolute: a folder of entries, or a class zip
    out: Path
    jobs: int
    force: bool
    sandbox: str  # as asked: auto, bwrap or process
    call_timeout: float
    submission_budget: float | None
    diagnosis_budget: float | None
    grading_seed: int | None
    only: list[str] | None
    quiet: bool
    assignment: str | None
    no_report: bool
    course: course_file.Course | None

    @classmethod
    def from_arguments(cls, arguments: argparse.Namespace) -> Options:
        # Absolute: the shards run from the repository's folder (processes.py), not the caller's.
        return cls(
            submissions=arguments.submissions.absolute(), out=arguments.out.absolute(), jobs=arguments.jobs,
            force=arguments.force, sandbox=arguments.sandbox, call_timeout=arguments.call_timeout,
            submission_budget=arguments.submission_budget, diagnosis_budget=arguments.diagnosis_budget,
            grading_seed=arguments.grading_seed, only=arguments.only, quiet=arguments.quiet,
            assignment=arguments.assignment, no_report=arguments.no_report,
            course=getattr(arguments, "course_settings", None),
        )


@dataclasses.dataclass(frozen=True)
class Adjusted:
    """One graded student after the adjust stage: their result with its trail (raw score, late
    penalty, override, final score: grader/term/grade_trail.py) and who they are."""

    student_id: str
    document: dict
    student: Student


@dataclasses.dataclass(frozen=True)
class Batch:
    """The one value the stages pass along: what the run was asked (``options``, the course's
    ``inputs``) and what each stage added, each stage returning a new value. Its fields are filled
    in the order of ``STAGES``; a stage reads only the fields before its own."""

    options: Options
    inputs: course_inputs.Inputs
    prepared: class_intake.Prepared | None  # None for a class zip until intake unpacks it
    # intake: the class's entries, staged, on one sandbox and one seed
    unpacked: class_zip.Unpacked | None = None
    submissions: Path | None = None  # the folder graded: the one given, or the class zip's unpacked folder
    sandbox: str = ""
    fallback_note: str = ""
    seed: int = 0
    staging: Path | None = None  # removed when the write stage ends, however it ends
    entries: list[intake.Entry] = dataclasses.field(default_factory=list)
    moved: list[str] = dataclasses.field(default_factory=list)  # files of entries no longer graded, set aside
    # plan: who is graded in this run
    to_grade: list[intake.Entry] = dataclasses.field(default_factory=list)
    # grade: the shards' exit (EXIT_OK, or EXIT_GRADER_FAILED when a student has no result)
    status: int = EXIT_OK
    # adjust: each graded student's final score derived, the students with no result, the rows not applied
    adjusted: list[Adjusted] = dataclasses.field(default_factory=list)
    not_graded: dict[str, dict] = dataclasses.field(default_factory=dict)
    not_applied: list[dict] = dataclasses.field(default_factory=list)
    # write: every student's result as results.json keeps it (or why there is none), and the new
    # set of class files staged (committed by the report stage: grader/class_view/class_files.py)
    documents: dict[str, dict] = dataclasses.field(default_factory=dict)
    class_files: class_files.ClassFiles | None = None
    # report
    report_path: Path | None = None


class Halt(Exception):
    """A stage ends the run with ``status`` (what went wrong is already in the log or on stderr)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def run(arguments: argparse.Namespace) -> int:
    options = Options.from_arguments(arguments)
    out = options.out
    # A mistyped path writes nothing: not even OUT/batch.log.
    if not options.submissions.is_dir() and not _is_class_zip(options.submissions):
        print(f"error: {options.submissions} is not a folder of submissions"
              f" ({'a file' if options.submissions.exists() else 'it does not exist'}), nor a .zip of them", file=sys.stderr)
        return EXIT_GRADER_FAILED
    if out.exists() and not out.is_dir():
        print(f"error: --out {out} is a file, not a folder", file=sys.stderr)
        return EXIT_GRADER_FAILED
    # The course's files and every name in them, checked before anything is written: a
    # problem stops the batch with every line named (a class zip by its listing of entries).
    inputs = course_inputs.read(options.course)
    prepared = None
    if _is_class_zip(options.submissions):
        try:  # a zip refused whole (two members of one name, a ".."...) is refused before OUT exists
            class_zip.check_class_zip(options.submissions, out)
        except intake.Refused as refusal:
            said = untrusted.printable(str(refusal))
            print(said if said.startswith("refused:") else f"error: {said}", file=sys.stderr)
            return EXIT_GRADER_FAILED
    try:
        if not _is_class_zip(options.submissions):
            prepared = class_intake.prepare(options.submissions, inputs, options.only)
        elif (listing := class_zip.top_level_entries(options.submissions)) is not None:
            stems = [intake.id_of_name(name, folder) for name, folder in listing if intake.not_a_submission(name, folder) is None]
            class_intake.check_names(stems, inputs, options.only)
    except class_intake.Refused as refused:
        _say_refused(refused)
        return EXIT_GRADER_FAILED
    except OSError as error:  # a submissions folder that cannot be listed
        print(f"error: {options.submissions} cannot be read ({error.strerror or error})", file=sys.stderr)
        return EXIT_GRADER_FAILED
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o700)  # other students' results are not for the worker's unprivileged user
    _start_log(out / "batch.log")
    try:
        lock = lock_out(out)
    except OutInUse as error:
        log.error("%s", error)
        return EXIT_GRADER_FAILED
    # SIGTERM (kill, a scheduler's stop) and SIGHUP (the terminal closed) stop the batch as
    # Ctrl-C does: shards stopped and cleaned up, staging removed, what was graded kept. Ctrl-C
    # too even where it was ignored when the batch started (a batch started in the background).
    _STOP.__init__()
    previous = {number: signal.signal(number, _stop_signal) for number in STOP_SIGNALS}
    try:
        for said in class_files.finish_interrupted(out):  # a set a killed run left half moved: completed first
            log.warning("%s", said)
        return run_stages(Batch(options, inputs, prepared))
    except KeyboardInterrupt:
        class_files.discard_own(out)  # a set staged, not committed: OUT keeps the last one, whole
        log.warning(
            "stopped%s while %s: every result graded so far is kept in %s; %s; run the same command again to continue",
            f" by {_STOP.signal}" if _STOP.signal else "", _STOP.stage, results.results_folder(out), _kept(out),
        )
        return EXIT_INTERRUPTED
    finally:
        class_files.discard_own(out)
        for number, handler in previous.items():
            signal.signal(number, handler)
        lock.close()


def _kept(out: Path) -> str:
    """What a stop left of the class files, in words: one run's set, whole (grader/class_view/class_files.py)."""
    if _STOP.replaced:
        return "the class files are this run's, replaced together before the stop took effect"
    kept = class_files.present(out)
    if not kept:
        return "no class files written yet"
    return f"{', '.join(kept)} and the feedback pages are all still the last finished run's, unchanged together"


def _say_refused(refused: class_intake.Refused) -> None:
    for problem in refused.problems:
        print(f"error: {untrusted.printable(problem)}", file=sys.stderr)
    count = len(refused.problems)
    print(f"{count} problem{'s' if count != 1 else ''} in the course's files or --only: nothing graded, nothing written", file=sys.stderr)


def _is_class_zip(path: Path) -> bool:
    """A class's submissions handed in as one zip (Canvas's Download Submissions): grader/batch/class_zip.py."""
    return path.is_file() and path.suffix.lower() == ".zip"


def lock_out(out: Path):
    """Hold ``OUT/.batch.lock`` (an flock, released by the kernel when the holder ends,
    however it ends) and write who holds it; a second batch into the same OUT gets
    ``OutInUse`` naming the first."""
    handle = open(out / ".batch.lock", "a+", encoding="utf-8")  # noqa: SIM115 - held until the run ends
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = untrusted.printable(handle.read().strip()) or "another batch"
        handle.close()
        raise OutInUse(
            f"{out} is in use by another batch ({holder}); wait for it to finish, or give this one "
            "another --out: two batches writing one OUT would mix their grading seeds"
        ) from None
    handle.truncate(0)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    handle.write(f"pid {os.getpid()}, started {started}: {' '.join(sys.argv)}")
    handle.flush()
    return handle


def run_stages(batch: Batch) -> int:
    """The batch's stages in order, each taking the value the one before returned: intake, plan,
    grade, adjust (late work and overrides), write, report. The staging folder intake made is
    removed when the write stage ends, however it ends; a ``Halt`` ends the run with its status."""
    try:
        batch = intake_stage(batch)
        try:
            batch = write_stage(adjust_stage(grade_stage(plan_stage(batch))))
        finally:
            _clean_up(batch.staging)
        return report_stage(batch).status
    except Halt as halt:
        return halt.status


def intake_stage(batch: Batch) -> Batch:
    """The class's entries: a class zip unpacked, one entry per student staged (or read from the
    record of an earlier run), on the sandbox this machine allows and the assignment's one seed."""
    options, prepared = batch.options, batch.prepared
    given, unpacked, submissions = options.submissions, None, options.submissions
    if _is_class_zip(given):
        try:
            unpacked = class_zip.unpack_class_zip(given, options.out)
        except intake.Refused as refusal:
            log.error("%s", refusal)
            raise Halt(EXIT_GRADER_FAILED) from None
        log.info("unpacked %s into %s", given, unpacked.folder)
        for item in unpacked.ignored:
            log.info("ignored %s: %s", item.name, item.reason)
        for item in unpacked.not_written:
            log.warning("%s in %s: not graded, %s", item.name, given.name, item.reason)
        for name in unpacked.restored:
            log.warning(
                "%s in %s differed from the class zip and was rewritten from it: a file changed there is not graded; "
                "give a corrected file with --only ID=FILE", name, unpacked.folder,
            )
        submissions = unpacked.folder
        try:
            prepared = class_intake.prepare(unpacked.folder, batch.inputs, options.only)
        except class_intake.Refused as refused:
            for problem in refused.problems:
                log.error("%s", problem)
            log.error("nothing graded: fix the course's files (python -m grader course check) or --only")
            raise Halt(EXIT_GRADER_FAILED) from None
    _remove_leftovers("a run that ended without cleaning up")
    try:
        sandbox, fallback_note = processes.resolve_sandbox(options.sandbox)
    except RuntimeError as error:
        log.error("%s", error)
        raise Halt(EXIT_GRADER_FAILED) from None
    if fallback_note:
        log.warning("%s", fallback_note)
    course = options.course
    if course is not None and course.deadline is None and (batch.inputs.times or course.extensions):
        log.warning("%s: submission times or extensions but no [assignment] deadline: no late penalty applied", course.path)
    try:
        seed = _assignment_seed(options, course)
    except (OSError, ValueError) as error:  # the course file, as the instructor wrote it
        log.error("%s", error)
        raise Halt(EXIT_GRADER_FAILED) from None
    # 0o700: invisible to the worker's user; named for its owner, so that the next run can
    # tell a folder left by a killed run from one in use.
    staging = processes.owned_temporary_folder("mha-staging-")
    try:
        entries, moved = _intake(options, staging, seed, prepared)
    except BaseException:
        _clean_up(staging)
        raise
    log.info("grader %s, sandbox %s, seed %d: %d submissions in %s", __version__, sandbox, seed, len(entries), submissions)
    return dataclasses.replace(
        batch, prepared=prepared, unpacked=unpacked, submissions=submissions, sandbox=sandbox, fallback_note=fallback_note,
        seed=seed, staging=staging, entries=entries, moved=moved,
    )


def plan_stage(batch: Batch) -> Batch:
    """Who is graded in this run (``_to_grade``): a mix of seeds that --only cannot fix ends the run."""
    try:
        to_grade = _to_grade(batch.options, batch.entries, batch.seed, batch.prepared.only)
    except ValueError as error:
        log.error("%s", error)
        raise Halt(EXIT_GRADER_FAILED) from None
    log.info("%d to grade, %d already graded", len(to_grade), len(batch.entries) - len(to_grade))
    return dataclasses.replace(batch, to_grade=to_grade)


def grade_stage(batch: Batch) -> Batch:
    """The shards grade ``to_grade``, each result written as its student is graded; a stop
    signal ends the run here (said by ``_grade``: what is kept, what waits for the next run)."""
    _STOP.stage = "grading"
    status = _grade(batch.to_grade, batch.options, batch.staging, batch.seed, batch.sandbox)
    if status == EXIT_INTERRUPTED:
        raise Halt(status)
    return dataclasses.replace(batch, status=status)


def adjust_stage(batch: Batch) -> Batch:
    """Each student's final score derived from the tests' score, the course's late policy and
    the overrides file (grader/term/grade_trail.py: derived on every run, never read back), and
    the rows of the instructor's files that changed no grade."""
    _STOP.stage = "writing the gradebook"
    out, prepared = batch.options.out, batch.prepared
    adjustments = prepared.adjustments
    adjusted, not_graded, too_high = [], {}, []
    asked = {entry.student_id for entry in batch.to_grade} if prepared.only else {entry.student_id for entry in batch.entries}
    for entry in batch.entries:
        student = prepared.student(entry.student_id)
        # Which entry each id was graded from, and who that is (the roster's name, when there is one).
        trace = {"graded_from": entry.entry_name, "intake_problem": entry.problem, "student": {"name": student.name, "on_roster": student.on_roster}}
        if entry.note:
            trace["intake_note"] = entry.note  # one student's several entries, a replaced file: what was graded, why
        try:
            document = json.loads(_result_path(out, entry.student_id).read_text(encoding="utf-8")) | trace
            # The trail from the tests' score to the final one, derived (grader/term/grade_trail.py).
            trail = grade_trail.derive(document, adjustments, entry.student_id)
        except (OSError, ValueError) as error:  # TrailError is a ValueError
            problem = f": {error}" if isinstance(error, grade_trail.TrailError) else ""
            if isinstance(error, OSError) and entry.student_id not in asked:
                # --only named others and no earlier run graded this one: still to grade, no failure
                log.info("%s: %s (--only named others); a run without --only grades it", entry.student_id, NOT_GRADED_IN_THIS_RUN)
                not_graded[entry.student_id] = trace | {"status": NOT_GRADED_IN_THIS_RUN}
                continue
            log.error("%s has no result%s and is left out of the gradebook", entry.student_id, problem)
            not_graded[entry.student_id] = trace | {"status": NO_RESULT}
            continue
        for note in trail.notes:  # an override above the points: listed with the rows not applied
            too_high.append((adjustments.override_row(entry.student_id)[0], note))
        document = {key: value for key, value in document.items() if key not in TRAIL_FIELDS} | trail.fields
        adjusted.append(Adjusted(entry.student_id, document, student))
    return dataclasses.replace(batch, adjusted=adjusted, not_graded=not_graded, not_applied=_not_applied(prepared, too_high))


def write_stage(batch: Batch) -> Batch:
    """Each student's feedback page with their final score, gradebook.csv and results.json."""
    options = batch.options
    assignment = options.assignment or (options.submissions.stem if batch.unpacked else options.submissions.resolve().name)
    ignored = (batch.unpacked.ignored if batch.unpacked is not None else []) + batch.prepared.ignored
    files = class_files.ClassFiles(options.out)  # staged: OUT changes only when the report stage commits the set
    documents = _write_class_files(
        files, batch.adjusted, batch.not_graded, batch.not_applied, batch.seed, (batch.sandbox, batch.fallback_note),
        assignment, batch.submissions, ignored, batch.unpacked.not_written if batch.unpacked else [], batch.moved,
    )
    return dataclasses.replace(batch, documents=documents, class_files=files)


def report_stage(batch: Batch) -> Batch:
    """The class report (unless --no-report, or a stop cut the run short) and the summary; the
    run's status, EXIT_INTERRUPTED when a stop signal cut the comparison or the report short."""
    if _STOP.cut_short:  # stopped while comparing: the report would wait as long
        _STOP.cut_short.append("the report")
    options, files = batch.options, batch.class_files
    report_path = None if options.no_report or _STOP.cut_short else _write_report(options.out, options.course, files)
    dropped = [] if report_path else _drop_the_report(options.out, files)
    _STOP.stage = "replacing the class files"
    try:
        files.commit()  # gradebook, results, pages and report replace the last run's together
    finally:  # a stop held during the commit takes effect as it ends: the set is in place
        _STOP.replaced = files.committed
    if dropped:
        log.info("%s removed with the last run's class files: they showed its grades (python -m grader report %s writes them)",
                 ", ".join(dropped), options.out)
    said = lms_said(batch) + without_time(batch)
    print(summary.summary(batch.documents, report_path, options.out, len(batch.to_grade), batch.not_applied, batch.moved, said), flush=True)
    status = batch.status
    if _STOP.cut_short:
        log.warning(
            "stopped by %s after grading: every student is graded and the gradebook written; not done: %s. "
            "Run the same command again (nothing is graded again) to finish them. The class files were replaced "
            "together: this run's gradebook.csv, results.json and feedback pages, and no report.html (the last run's "
            "would show its grades)",
            _STOP.signal or "a signal", " and ".join(_STOP.cut_short),
        )
        status = EXIT_INTERRUPTED
    return dataclasses.replace(batch, report_path=report_path, status=status)


STAGES = (intake_stage, plan_stage, grade_stage, adjust_stage, write_stage, report_stage)


def lms_said(batch: Batch) -> list[str]:
    """Which LMS the course is, and why: its roster's (grader/term/roster.py), else its download's names."""
    if batch.inputs.lms is not None:
        return [batch.inputs.lms.said()]
    recognised = batch.prepared.identities.recognised  # as the resolver read the names (grader/term/identity.py)
    if recognised is not None:
        return [f"LMS: {roster.TITLES[recognised]} (recognised from the download's names)"]
    course = batch.options.course
    return [roster.choose(course, None).said()] if course is not None and course.get("lms", "kind") else []


def without_time(batch: Batch) -> list[str]:
    """Graded students to whom the course's deadline could not be applied: no submission time is
    known for them (no time file row, no LMS worksheet time, no LMS late marker). Said, never silent."""
    course = batch.options.course
    if course is None or course.deadline is None:
        return []
    names = sorted(item.student.name for item in batch.adjusted if not item.document.get("late"))
    if not names:
        return []
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return [
        f"NO SUBMISSION TIME for {len(names)} of {len(batch.adjusted)} graded students, so the deadline "
        f"({course.deadline.isoformat()}) is not applied to them: {shown} (give [files] submitted_at, or the LMS's roster "
        "that holds the times: Moodle's grading worksheet as [files] roster, with [assignment] timezone)"
    ]


def _clean_up(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)
    # A shard killed during this run (its worker then dies with it) left its worker's
    # folder and cgroup: they are gone now, not at the next run.
    _remove_leftovers("a grading shard that was killed")


def _remove_leftovers(left_by: str) -> None:
    """What killed runs left in the temporary folder: removed, or said (never a reason to stop)."""
    leftovers = processes.remove_leftovers()
    for removed in leftovers:
        log.info("removed %s, left behind by %s", removed, left_by)
    for kept in leftovers.kept:
        log.warning("could not remove %s (left behind by %s); the next run tries again", kept, left_by)


def _drop_the_report(out: Path, files: class_files.ClassFiles) -> list[str]:
    """A set without a report: the last run's report.html and HTML pages leave with it (they
    show its grades); the pages staged by a report cut short are not committed either."""
    pages = sorted({*(f"feedback/{path.name}" for path in (out / "feedback").glob("*.html")),
                    *(name for name in files.written if name.startswith("feedback/") and name.endswith(".html"))})
    dropped = [name for name in ("report.html", *pages) if (out / name).is_file()]
    for name in ("report.html", *pages):
        files.remove(name)
    return dropped


def _write_report(out: Path, course: course_file.Course | None, files: class_files.ClassFiles | None = None) -> Path | None:
    """The class report (every final score derived again with the ``course``'s files, as
    ``python -m grader report`` does); its failure is logged, never a reason to lose the grades written."""
    imported_what_follows()
    try:
        from grader.class_view import report  # matplotlib: an instructor's requirement, not a student's
    except ImportError as error:  # matplotlib missing, or a copy without the report (the student release)
        log.warning("no report.html: %s (pip install -r requirements-instructor.txt)", error)
        return None
    except Exception:  # noqa: BLE001 - a library that fails as it loads: the class files are committed all the same
        log.exception("no report.html: its modules could not be imported; the gradebook is complete (python -m grader report OUT)")
        return None
    try:
        path = report.write_report(out, course=course, files=files)
    except KeyboardInterrupt:  # a stop signal: the gradebook is written, the report waits
        _STOP.cut_short.append(f"the report (python -m grader report {out} writes it)")
        return None
    except Exception:  # noqa: BLE001 - the gradebook is written; the report can be rebuilt
        log.exception("the report could not be written; the gradebook is complete (python -m grader report OUT)")
        return None
    log.info("report: %s", path)
    return path


class _PrintableFormatter(logging.Formatter):
    """Log lines quote student ids and error messages: escape their control characters, so
    no escape sequence reaches batch.log or the terminal (line breaks are kept)."""

    def format(self, record: logging.LogRecord) -> str:
        return untrusted.printable(super().format(record), keep_newlines=True)


def _start_log(path: Path) -> None:
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(_PrintableFormatter("%(asctime)s %(levelname)s %(message)s"))
    console = logging.StreamHandler()
    console.setLevel(logging.WARNING)
    console.setFormatter(_PrintableFormatter())
    log.handlers[:] = [handler, console]
    log.setLevel(logging.INFO)


def _result_path(out: Path, student_id: str) -> Path:
    return results.result_file(out, student_id)


INTAKE_RECORD = "intake.json"


def _intake(
    options: Options, staging: Path, seed: int, prepared: class_intake.Prepared
) -> tuple[list[intake.Entry], list[str]]:
    """Every graded entry (one per student) as an ``intake.Entry``, and the files of entries no
    longer graded that were moved to OUT/superseded/. An entry whose fingerprint is the one recorded when
    it was last read, and whose result for that content is there, is not read again: it is
    already graded, and reading (a big notebook above all) is the costly part of a rerun."""
    out = options.out
    for item in prepared.ignored:
        log.info("ignored %s: %s", item.name, item.reason)
    # Canvas names whose name and user id disagree with the roster (held apart), one user id under
    # two names (never merged), and without a roster, that these identities are unchecked.
    for note in prepared.identities.canvas_notes():
        log.warning("%s", untrusted.printable(note))
    students = prepared.students
    for chosen, attempts in students.attempts.items():
        log.info("%s: %s", untrusted.printable(prepared.ids[chosen]), attempts.sentence())
    for said in class_intake.save_replacements(out, prepared):
        log.warning("%s", said)
    replaced = class_intake.read_replacements(out)
    for unused in class_intake.unused_replacements(replaced, prepared):
        log.warning("the replacement of %s is not used: that entry is no longer graded (a later attempt, or gone from the submissions)", unused)
    moved = class_intake.set_aside_gone(out, list(prepared.ids.values()))
    if moved:
        log.warning(
            "%d files of entries no longer graded (an earlier attempt, or a file gone from the submissions) moved to %s: %s",
            len(moved), out / class_intake.SUPERSEDED, ", ".join(moved),
        )
    record = _read_intake_record(out)
    entries, fresh = [], {}
    for path, student_id in prepared.ids.items():
        source = class_intake.replacement_of(out, path.name, replaced) or path
        read_from = str(source.relative_to(out)) if source != path else ""
        if path.name in replaced and not read_from:
            log.warning("%s: the replacement recorded in %s is gone; graded from %s", student_id, class_intake.REPLACEMENTS_RECORD, path.name)
        fingerprint = intake.fingerprint(source)
        known = record.get(student_id, {})
        if (
            not options.force
            and student_id not in (prepared.only or ())  # --only: these are graded again, from their file
            and known.get("entry") == path.name
            and known.get("read_from", "") == read_from
            and known.get("fingerprint") == fingerprint
            and _has_result(out, student_id, known.get("content_hash", ""), seed=seed)
        ):
            # As it was read then: a refusal stays one (its status says "refused at intake", not "import error").
            entry = intake.Entry(student_id, None, known["content_hash"], known.get("problem", ""), entry_name=path.name)
        else:
            entry = dataclasses.replace(intake.stage_entry(source, staging, student_id=student_id), entry_name=path.name)
            similarity.keep_graded_code(out, student_id, entry.source_path)
        if untrusted.file_stem(student_id) != student_id:
            log.info("%s: result files named %s", student_id, untrusted.file_stem(student_id))
        notes = []
        if path in students.attempts:  # said with the result too: which file of this student's was graded, and why
            notes.append(students.attempts[path].sentence())
        if read_from:
            given = replaced[path.name]
            notes.append(
                f"graded from {read_from}, the file the instructor gave on {given.get('at', '?')} in place of {path.name} "
                f"(--only {student_id}= grades {path.name} again)"
            )
            log.warning("%s: %s", untrusted.printable(student_id), notes[-1])
        if notes:
            entry = dataclasses.replace(entry, graded_file="; ".join(notes), note="; ".join(notes))
        entries.append(entry)
        fresh[student_id] = {
            "entry": path.name, "read_from": read_from, "fingerprint": fingerprint, "content_hash": _entry_hash(entry),
            "problem": entry.problem,
        }
        if path in students.attempts:
            fresh[student_id]["not_graded"] = [dataclasses.asdict(other) for other in students.attempts[path].not_graded]
    document = {"grader_version": __version__, "entries": fresh}
    results.write_atomically(out / INTAKE_RECORD, json.dumps(document, indent=1, ensure_ascii=True) + "\n")
    return sorted(entries, key=lambda entry: entry.student_id), moved


def _read_intake_record(out: Path) -> dict:
    try:
        document = json.loads((out / INTAKE_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict) or document.get("grader_version") != __version__:
        return {}
    entries = document.get("entries")
    return entries if isinstance(entries, dict) else {}


def _already_graded(out: Path, entry: intake.Entry, seed: int) -> bool:
    return _has_result(out, entry.student_id, _entry_hash(entry), seed=seed)


def _to_grade(options: Options, entries: list[intake.Entry], seed: int, only: list[str] | None) -> list[intake.Entry]:
    """Who is graded in this run: everyone not yet graded for this file, grader and seed (all
    with --force), or the students --only names (``only``: their entries' ids), on the assignment's seed."""
    out = options.out
    if not only:
        other_seed = sorted(sid for sid in (e.student_id for e in entries) if _result_seed(out, sid) not in (None, seed))
        if other_seed and not options.force:
            note = (
                f"{len(other_seed)} results in {out} were graded on another seed than this assignment's {seed}: "
                "graded again, so that the gradebook holds one seed"
            )
            log.warning("%s", note)
        return [entry for entry in entries if options.force or not _already_graded(out, entry, seed)]
    others = [entry.student_id for entry in entries if entry.student_id not in only]
    other_seeds = {sid: _result_seed(out, sid) for sid in others}
    mixed = sorted(sid for sid, other in other_seeds.items() if other is not None and other != seed)
    if mixed:
        raise ValueError(
            f"--only would mix grading seeds: {len(mixed)} other results ({', '.join(mixed[:5])}{', ...' if len(mixed) > 5 else ''}) "
            f"were graded on another seed than this run's {seed}, and one gradebook holds one seed; run without --only "
            f"to regrade everyone on {seed}, or give the others' seed with --grading-seed"
        )
    return [entry for entry in entries if entry.student_id in only]


def _result_seed(out: Path, student_id: str) -> int | None:
    try:
        return json.loads(_result_path(out, student_id).read_text(encoding="utf-8")).get("grading_seed")
    except (OSError, ValueError, AttributeError):
        return None


SEED_FILE = "grading-seed.txt"


def _assignment_seed(options: Options, course) -> int:
    """The one seed of this assignment (see the module's docstring), recorded once drawn:
    in the course file when there is one, else in OUT."""
    out = options.out
    recorded = course.get("assignment", "grading_seed") if course else None
    where = f"{course.path.name}'s grading_seed" if course else None
    if recorded is None:
        recorded, where = _read_seed_file(out), f"{SEED_FILE} in {out}"
    if options.grading_seed is not None:
        seed = options.grading_seed
        if recorded is not None and recorded != seed:
            note = f"--grading-seed {seed} given: it wins over {where} ({recorded}); results graded on another seed are graded again"
            log.info("%s", note)
            if not options.quiet:
                print(f"note: {note}", file=sys.stderr)
    elif recorded is not None:
        seed = recorded
    else:  # an OUT graded before seeds were recorded keeps its seed, if its results agree on one
        previous = {document.get("grading_seed") for document in _result_documents(out)}
        seed = previous.pop() if len(previous) == 1 and isinstance(next(iter(previous)), int) else secrets.randbelow(2**31)
        log.info("grading seed %d drawn for this assignment", seed)
    if course is not None and course.get("assignment", "grading_seed") is None:
        course_file.record_seed(course, seed)
        log.info("grading seed %d recorded in %s", seed, course.path)
    elif course is None and _read_seed_file(out) is None:
        results.write_atomically(out / SEED_FILE, f"{seed}\n")
    return seed


def _read_seed_file(out: Path) -> int | None:
    try:
        return int((out / SEED_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def _result_documents(out: Path) -> list[dict]:
    documents = []
    for path in sorted(results.results_folder(out).glob("*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(document, dict):
            documents.append(document)
    return documents


def _entry_hash(entry: intake.Entry) -> str:
    # The same hash the grading session records for the file it graded.
    return results.hash_of(entry.source_path) if entry.source_path else entry.content_hash


def _grade(entries: list[intake.Entry], options: Options, staging: Path, seed: int, sandbox: str) -> int:
    if not entries:
        return EXIT_OK
    out = options.out
    jobs = max(1, min(options.jobs, len(entries)))
    shard_processes = []
    # A result counts as this run's only if written after this moment: with --force, the
    # previous run's result for the same file is still there until it is replaced.
    since = time.time()
    expected = {entry.student_id: _entry_hash(entry) for entry in entries}
    try:
        return _grade_in_shards(entries, options, staging, seed, jobs, sandbox, shard_processes, since, expected)
    except KeyboardInterrupt:
        processes.stop(shard_processes)
        done = {sid for sid in expected if _has_result(out, sid, expected[sid], since)}  # the last ones included
        log.warning(
            "stopped by %s while grading: %d of %d graded in this run, kept in %s with their feedback. Not done: "
            "grading the other %d, the gradebook (%s), the comparison of submissions and the report. Run the same "
            "command again to continue from there: what is graded is not graded again",
            _STOP.signal or "a signal", len(done), len(entries), results.results_folder(out), len(entries) - len(done), _kept(out),
        )
        return EXIT_INTERRUPTED


# The thread importing what follows the grading, while the shards grade: joined before the main thread
# imports any of it (``imported_what_follows``).
_IMPORTS: list[threading.Thread] = []


def _import_what_follows_the_grading(report: bool, fingerprinted: tuple[Path, list[str]] | None = None) -> None:
    """The comparison of submissions and the report import copydetect and matplotlib (some 0.4 s
    of a coordinator's CPU): imported while the shards grade, on the coordinator's otherwise idle
    thread, they no longer hold the class files back once the last student is graded; and so is
    the comparison's fingerprinting of the graded code (``fingerprinted``: OUT and the students
    graded; some 0.25 s for a class of 200). A failure here is said where the module is used:
    there it is imported (and the code fingerprinted) again."""
    with contextlib.suppress(Exception):
        from grader.class_view import code_comparison  # noqa: F401
        if report:
            from grader.class_view import report as _  # noqa: F401
        if fingerprinted is not None:
            similarity.fingerprint_ahead(*fingerprinted)


def start_importing_what_follows(report: bool, fingerprinted: tuple[Path, list[str]] | None = None) -> None:
    _IMPORTS.append(threading.Thread(target=_import_what_follows_the_grading, args=(report, fingerprinted), name="imports", daemon=True))
    _IMPORTS[-1].start()


def imported_what_follows() -> None:
    """Wait for the imports begun while the shards graded: matplotlib, half imported on that thread,
    would be seen half made by an import on this one (``matplotlib.use`` reaches for
    ``matplotlib.pyplot`` in ``sys.modules``: "partially initialized module")."""
    while _IMPORTS:
        _IMPORTS.pop().join()


def _grade_in_shards(
    entries: list[intake.Entry], options: Options, staging: Path, seed: int, jobs: int, sandbox: str,
    shard_processes: list, since: float, expected: dict[str, str],
) -> int:
    """``_grade``'s work, filling ``shard_processes`` as it starts them (for ``_grade`` to stop
    them when a signal comes); ``expected``: each student's file hash, ``since``: when it began."""
    out = options.out
    done: set[str] = set()
    # One queue for every shard: each takes the next students when it is free (grader/batch/shard.py).
    manifest = staging / "queue.json"
    manifest.write_text(json.dumps({"shards": jobs, "entries": [_manifest_entry(entry) for entry in entries]}), encoding="utf-8")
    for number in range(jobs):
        pytest_options = [
            # Only the plugins grading needs: others installed beside it (anyio, via
            # nbgrader) would cost start-up time in every shard.
            # The sandbox as asked for, so each shard records why "auto" fell back, if it did.
            # No terminal reporter: the shard's log needs no progress dots or score tables,
            # and the reporter keeps every test report of its session.
            # Nor per-test capture of output, logs and warnings: the grader prints nothing, and
            # what the student's code prints is captured in the worker.
            "-p", "pytest_timeout", "-p", "no:terminal", "-p", "no:cacheprovider", "-p", "no:logging",
            "-p", "no:warnings", *SHARD_UNUSED_PLUGINS, "--capture=no", "--isolate", "--sandbox", options.sandbox,
            "--results-dir", str(out), "--grading-seed", str(seed), "--call-timeout", str(options.call_timeout),
            *(["--submission-budget", str(options.submission_budget)] if options.submission_budget else []),
            *(["--diagnosis-budget", str(options.diagnosis_budget)] if options.diagnosis_budget else []),
        ]
        shard_processes.append(processes.start_grading_shard(
            manifest, pytest_options, out / "logs" / f"shard-{number}.log", warm_worker=sandbox == "process"
        ))
    start_importing_what_follows(report=not options.no_report, fingerprinted=(out, [entry.student_id for entry in entries]))
    started = time.monotonic()
    result_names = {_result_path(out, sid).name: sid for sid in expected}
    with tqdm(total=len(entries), unit="submission", disable=options.quiet) as progress:
        while len(done) < len(entries):
            running = [process for process in shard_processes if process.poll() is None]
            newly_done = {sid for sid in _results_in(out, result_names, done) if _has_result(out, sid, expected[sid], since)}
            if newly_done:
                progress.update(len(newly_done))
                done |= newly_done
            if not running:
                break
            time.sleep(0.1)
    for process in shard_processes:
        process.wait()  # each has written its last result; let it finish cleanly
    seconds = time.monotonic() - started
    log.info("graded %d submissions in %.1f s (%.1f per second)", len(done), seconds, len(done) / max(seconds, 1e-9))
    failed_shards = [process.returncode for process in shard_processes if process.returncode not in (0, 1)]
    missing = [entry for entry in entries if entry.student_id not in done]
    for entry in missing:
        log.error("no result for %s: its grading shard ended with an error (see logs/shard-N.log)", entry.student_id)
    if failed_shards:
        log.error("grading shards exited with %s (see logs/shard-N.log)", failed_shards)
    return EXIT_GRADER_FAILED if missing else EXIT_OK


def _results_in(out: Path, result_names: dict[str, str], done: set[str]) -> list[str]:
    """The students not yet ``done`` whose result file is in OUT/results (``result_names``: each
    file's name, its student), from one listing of the folder: looked at every 0.1 s while the
    shards grade, on the cores they grade on (a look for each student's file cost a class of 200
    some 20,000 calls)."""
    try:
        with os.scandir(results.results_folder(out)) as listing:
            names = [entry.name for entry in listing]
    except OSError:  # no result yet: the folder is made with the first
        return []
    return [sid for name in names if (sid := result_names.get(name)) is not None and sid not in done]


# pytest's own plugins (_pytest/config/__init__.py, ``default_plugins``) that grading never uses, blocked
# in the shards: the grader's checks are functions (no unittest classes, doctests, skip or xfail marks,
# no debugger, no junit file, no per-step plans), and each of these has hooks pytest calls for every
# check (skipping's three, unraisableexception's and threadexception's wrappers around each step,
# faulthandler's, subtests') or every object collected (unittest's, doctest's), some 2 ms a student.
# The checks are the same: tests/test_batch.py grades a class both ways.
SHARD_UNUSED_PLUGINS = tuple(
    option for plugin in (
        "debugging", "unittest", "skipping", "legacypath", "pastebin", "junitxml", "doctest", "setuponly",
        "setupplan", "stepwise", "unraisableexception", "threadexception", "faulthandler", "subtests",
    ) for option in ("-p", f"no:{plugin}")
)


def _manifest_entry(entry: intake.Entry) -> dict:
    return {
        "name": entry.student_id,
        "path": str(entry.source_path or ""),
        "problem": entry.problem,
        "content_hash": _entry_hash(entry),
        "graded_file": entry.graded_file,
        "cells": [dataclasses.asdict(cell) for cell in entry.cells],
    }


_SAID_EDITED: set[str] = set()
_SAID_OTHER_EXERCISE: set[str] = set()


def _has_result(out: Path, student_id: str, content_hash: str, written_since: float = 0.0, seed: int | None = None) -> bool:
    """A result for this very file by this grader version (written after ``written_since``;
    on ``seed``, when given) whose numbers are the grading's (not edited by hand)."""
    path = _result_path(out, student_id)
    try:
        if path.stat().st_mtime < written_since:
            return False
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(document, dict):
        return False
    if document.get("exercise") != registry.exercise().name:
        # Another exercise's result (or one from before results recorded theirs): never kept.
        if student_id not in _SAID_OTHER_EXERCISE:
            _SAID_OTHER_EXERCISE.add(student_id)
            log.warning(
                "%s: its result is of the exercise %r, not %s: graded again",
                untrusted.printable(student_id), document.get("exercise"), registry.exercise().name,
            )
        return False
    if problem := grade_trail.check_graded(document):
        if student_id not in _SAID_EDITED:
            _SAID_EDITED.add(student_id)
            log.warning(
                "%s: its result's %s (edited by hand?): graded again; change a score in the overrides file instead",
                student_id, problem,
            )
        return False
    return (
        document.get("content_hash") == content_hash and document.get("grader_version") == __version__
        and (seed is None or document.get("grading_seed") == seed)
    )


def _diagnosed_ids(document: dict) -> str:
    """The mistake ids of a result's diagnosis (``unknown`` included), each once, by spaces."""
    ids = [str(entry.get("mistake", "")) for entry in document.get("diagnoses", [])]
    return " ".join(dict.fromkeys(i for i in ids if i))


def _similar_submissions(out: Path, documents: dict) -> dict:
    """Pairs of near-identical code, for a person to look at (grader/class_view/similarity.py); its
    failure is logged and never costs the gradebook."""
    imported_what_follows()
    try:
        record = similarity.class_similarity(out, documents)
    except KeyboardInterrupt:  # a stop signal: the grades are written without it, at once
        _STOP.cut_short.append("the comparison of submissions (cut short; results.json holds none)")
        return {}
    except Exception:  # noqa: BLE001 - a flag for people, never a reason to lose the grades
        log.exception("the comparison of submissions failed; the grades are complete")
        return {}
    if record["pairs_found"]:
        log.info("similar submissions: %d pairs (at least %.0f%% shared both ways), listed in the report", record["pairs_found"], 100 * record["threshold"])
    return record


# What the batch derives beside a result's own figures (grader/term/grade_trail.py): never kept from a previous run.
TRAIL_FIELDS = ("raw_score", "late", "override", "comment")


def _write_feedback(files: class_files.ClassFiles, student_id: str, document: dict, student: Student) -> None:
    """The student's page with their final score and its trail (grader/feedback/markdown.py), and
    their name where the roster gives it, written where it changed: the page the grading wrote
    (in a sandboxed session that knows the file, not the roster) shows the tests' score and the
    file's stem."""
    trail = {key: document[key] for key in (*TRAIL_FIELDS, "score", "max_score") if key in document}
    text = render_markdown(SubmissionResult.from_dict(document), trail, name=student.name if student.on_roster else None)
    path = results.feedback_file(files.out, student_id)
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    files.write(path.relative_to(files.out).as_posix(), text)  # one of the class files: replaced with the set


def _write_class_files(
    files: class_files.ClassFiles, adjusted: list[Adjusted], not_graded: dict[str, dict], not_applied: list[dict], seed: int,
    sandbox: tuple[str, str], assignment: str, submissions: Path, ignored: list[intake.Ignored],
    not_unpacked: list[intake.Ignored], moved: list[str],
) -> dict[str, dict]:
    """Each student's feedback page with their final score, gradebook.csv and results.json, staged
    in ``files`` (the new set of class files); returns every student's result (or why there is none)."""
    out, documents = files.out, {}
    for graded in adjusted:
        _write_feedback(files, graded.student_id, graded.document, graded.student)
        documents[graded.student_id] = class_results.as_kept_in_the_class_file(
            graded.document | {"status": status_of(graded.document)}, graded.student_id,
        )
    groups = [g for g in GROUPS if any(g in d.get("groups", {}) for d in documents.values())]
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow([
        "submission", "score", "max_score", "raw_score", "late_penalty", "override", "status", *groups, "diagnoses",
        "late", "override_reason", "comment", "exercise",
    ])
    exercise = registry.exercise().name  # every row's: one run grades one exercise
    for student_id in sorted(documents.keys() | not_graded.keys()):
        if student_id in not_graded:  # a row all the same: the grader failed, or --only named others, and says which
            row = [student_id, "", "", "", "", "", not_graded[student_id]["status"], *([""] * len(groups)), "", "", "", "", exercise]
        else:
            document = documents[student_id]
            points = document.get("groups", {})
            earned = [points.get(g, {}).get("earned", 0) for g in groups]
            late, override = document.get("late") or {}, document.get("override") or {}
            row = [
                student_id, document["score"], document["max_score"], document["raw_score"], late.get("penalty", ""),
                override.get("score", ""), document["status"], *earned, _diagnosed_ids(document),
                late.get("note", ""), override.get("reason", ""), document.get("comment", ""), exercise,
            ]
        writer.writerow([untrusted.csv_cell(cell) for cell in row])  # no formula, no escape sequence
    files.write("gradebook.csv", table.getvalue())
    run = {
        "assignment": assignment, "graded_at": time.strftime("%Y-%m-%d %H:%M %Z"), "not_graded": not_graded,
        "not_applied": not_applied,  # rows of the instructor's files that changed no grade, and why
        "superseded": list(moved),  # files of entries no longer graded, moved to OUT/superseded/ by this run
        "submissions_folder": str(submissions.resolve()),  # where export --feedback-zip finds each student's file
        "similar_submissions": _similar_submissions(out, documents),
    }
    # What the submissions held that is not a student's submission, and students' files the
    # class zip could not give (grader/batch/class_zip.py): both shown in the report.
    run["ignored"] = [dataclasses.asdict(item) for item in ignored]
    if not_unpacked:
        run["not_unpacked"] = [dataclasses.asdict(item) for item in not_unpacked]
    # Each check named once for the class, each student's tests as rows of that table: a third
    # of the bytes (grader/class_view/class_results.py; read_class_results gives the dictionaries back).
    run["checks"], kept = class_results.compacted(documents)
    results.write_class_results(files.staged("results.json"), kept, seed, sandbox, run, scaffolding=results.scaffolding_level())
    for student_id in sorted(documents):
        document = documents[student_id]
        problem = f" ({document['import_error'].splitlines()[0]})" if document.get("import_error") else ""
        log.info("%s: %s/%s%s", student_id, document["score"], document["max_score"], problem)
    scores = [d["score"] for d in documents.values()]
    if scores:
        log.info("gradebook: %d students, mean score %.1f, written to %s", len(scores), sum(scores) / len(scores), out)
    return documents | not_graded


def _not_applied(prepared: class_intake.Prepared, too_high: list = ()) -> list[dict]:
    """The rows of the instructor's files that apply to no graded entry: a name that matches no
    submission (without a roster), a student on the roster who handed nothing in, an override
    above the points (``too_high``); each said in the log here, and in the summary and the report."""
    rows = [*prepared.unmatched, *too_high]
    resolved = prepared.adjustments.resolved
    if resolved is not None:
        graded = {prepared.students.student_of[path].key for path in prepared.ids}
        files = {identity_normal(intake.student_id_of(path)) for path in prepared.students.student_of}
        for assigned in (resolved.extensions, resolved.times, resolved.overrides):
            for student_key, (keyed, _) in assigned.by_student.items():
                if student_key not in graded:
                    rows.append((keyed, f"{assigned.students[student_key].name} has no submission"))
            for entry, (keyed, _) in assigned.by_entry.items():
                if identity_normal(entry) not in files:
                    rows.append((keyed, "no submission has that file name"))
    said = []
    for keyed, reason in sorted(rows, key=lambda item: (item[0].file, item[0].line)):
        log.warning("%s: %s for %s: %s; not applied", keyed.where, keyed.what, untrusted.printable(keyed.key), untrusted.printable(reason))
        said.append({"file": keyed.file, "line": keyed.line, "key": keyed.key, "what": keyed.what, "reason": reason})
    return said
