"""What an exercise declares: the one place its facts live, read by the engine as plain data.

A declaration names its modules by their place in the exercise's package (``"operations"``),
never by importing them, so that reading one (the batch's coordinator, a platform's script,
choosing which file holds the work) costs no torch import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Group:
    """A group of checks: ``test_<name>.py`` is its module; ``hidden`` groups run only when the
    work is graded (never shipped, never shown to a student before grades are released)."""

    name: str
    title: str  # as the score table, the report and every platform show it ("1. shapes")
    hidden: bool = False


@dataclass(frozen=True)
class Script:
    """A script handed out beside the student's file, which students run on their own work:
    the lesson's focused example (``make example``) to see the lesson's point happen, a
    training run."""

    file: str  # under exercises/: "example.py"
    shows: str  # what it does, as the student README and ``python -m grader --help`` say it
    options: str = ""  # what else to try with it, as the README says it after the command


@dataclass(frozen=True)
class Declaration:
    """One exercise, as the engine knows it."""

    name: str  # the package's name under grader/exercises/
    title: str  # for people: "Multi-head self-attention"
    student_file: str  # the file a student works in, and the stem the batch stages: "multi_head_attention.py"
    notebook: str  # the same work as a notebook: "multi_head_attention.ipynb"
    lesson: str  # the lesson's page beside them: "LESSON.md"
    solution: str  # the reference, under solutions/: the source of stubs, notebook and hand-outs
    # The student's functions in the order they build on each other (methods as Class.method):
    # "Start with" names the first one not written; a file holds the work it writes of them.
    functions: tuple[str, ...]
    groups: tuple[Group, ...]  # in the order the score table shows them
    operations: str  # the module of every call the worker may make on the student's objects
    handle: str  # the grader's handle on one submission: "module.Class", a subclass of grader.submission.Submission
    data: str  # the module every input the checks draw comes from (its purposes, one stream each)
    # What an exercise has only if its authors wrote it (None: the engine does without, and says so):
    # the module, under hidden/, of its vocabulary of known mistakes, its probes and the tables the
    # diagnosis reads (grader/hidden/diagnosis.py names what it asks of it): "hidden.vocabulary".
    mistakes: str | None = None
    # The module, shipped, of what the root causes found at a desk read (grader/feedback/root_causes.py
    # names it): whose layout a slip is, the calls that build or draw, the randomness question: "causes".
    causes: str | None = None
    # Modules, under hidden/, of what the hand-out tools make from the solution: the visible
    # reference group's examples (grader/handout/reference_examples.py) and the behaviour scan's
    # case (grader/handout/behaviour_scan.py): "hidden.handouts" for both.
    examples: str | None = None
    scan: str | None = None
    # The module, shipped, of the lesson cut into the notebook's parts (grader/handout/notebook.py
    # names what it reads: PARTS, WORK, TRAINING_*, FINAL_LESSON): "lesson_parts".
    lesson_parts: str | None = None
    # What the hand-outs say of it and ship beside it (grader/handout/release.py, the platforms):
    # what the docstrings state (the student README lists it), the focused example, other files
    # of exercises/ handed out with it (a training script), and PrairieLearn's topic (a chapter of
    # the course, infoCourse.json's "topics"; the title when empty).
    conventions: str = "names, shapes"
    example: Script | None = None
    also_ships: tuple[Script, ...] = ()
    topic: str = ""
    package: Path = Path()  # set by the registry: where the exercise's package lives

    def __post_init__(self) -> None:
        names = [group.name for group in self.groups]
        if len(set(names)) != len(names):
            raise ValueError(f"exercise {self.name!r} declares a group twice: {names}")
        # The score table, the release and every platform show one hidden group, after the others.
        hidden = [group.name for group in self.groups if group.hidden]
        if len(hidden) != 1 or names[-1] != hidden[0]:
            raise ValueError(f"exercise {self.name!r} must declare one hidden group, its last: it declares {hidden or 'none'}")
        if len(set(self.functions)) != len(self.functions) or not self.functions:
            raise ValueError(f"exercise {self.name!r} must name its functions once each: {self.functions}")

    @property
    def handed_out(self) -> tuple[str, ...]:
        """Its files in exercises/, as a release ships them: the student's file, notebook and
        lesson, the focused example and whatever else it hands out (no other exercise's)."""
        return (self.student_file, self.notebook, self.lesson, *(script.file for script in self.scripts))

    @property
    def scripts(self) -> tuple[Script, ...]:
        """The scripts students run beside their work: the focused example first."""
        return ((self.example,) if self.example else ()) + self.also_ships

    @property
    def distribution_name(self) -> str:
        """The student grader's name as an installable package (``python -m grader wheel``): one
        per exercise, so that a kernel that installed one exercise's grader installs the next's."""
        return f"{self.name.replace('_', '-')}-grader"

    @property
    def module_name(self) -> str:
        """The stem Python names the student's module by (``multi_head_attention``)."""
        return Path(self.student_file).stem

    @property
    def classes(self) -> frozenset[str]:
        return frozenset(name.split(".")[0] for name in self.functions if "." in name)

    @property
    def group_titles(self) -> dict[str, str]:
        return {group.name: group.title for group in self.groups}

    @property
    def hidden_group(self) -> str:
        """The group run only when the work is graded (one per exercise, its last)."""
        return next(group.name for group in self.groups if group.hidden)

    @property
    def visible_checks(self) -> Path:
        """The folder of the visible checks (``test_<group>.py``, one module per group)."""
        return self.package / "visible"

    @property
    def hidden_checks(self) -> Path:
        """The folder of what never ships: the hidden group's checks, and where it has them the
        exercise's known mistakes and probes (absent from the student release)."""
        return self.package / "hidden"
