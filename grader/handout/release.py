"""The student release: ``python -m grader release OUT_DIR``.

What students receive, of one exercise (``--exercise``; python -m grader chooses it): its stubs, the notebook and the lesson, generated
at the chosen scaffolding level (``--level standard|guided``, recorded in
``grader/scaffolding.txt`` and from there in every results file), the visible grader (the
grader package's own modules, none of its instructor subpackages), a README written for
them, requirements.txt and a Makefile with the students' targets only (student.mk). Never solutions/, grader/hidden/,
the sandbox, the batch, the hand-outs or tests/; ``leaked_solution_lines`` lets a test prove that no line of
solution text slipped into any file of it. Of exercises/, the files the exercise's declaration
hands out (``handed_out``: its focused example and training script too, where it has them). ``--install-from SPEC``: the release's notebook
installs the student wheel from SPEC where it runs alone (Colab, a hosted Jupyter).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from grader import STUDENT_SUBPACKAGES, scoring
from grader.seam import registry
from grader.handout import notebook, stubs

REPO_ROOT = Path(__file__).resolve().parents[2]
# What students receive, by folder. The exercise folder whole; of the grader, the package's
# own modules and its student subfolders (what `pytest grader` loads at a student's desk) and
# none of its other subpackages: each of those is an instructor's layer (hidden/, sandbox/,
# batch/, handout/), so a new instructor module stays home without anyone listing it.
WHOLE_FOLDERS = ("exercises",)
OWN_FILES_ONLY = (
    "grader", *(f"grader/{name}" for name in STUDENT_SUBPACKAGES),
    *(f"grader/{folder}" for folder in registry.student_folders()),  # the exercise released, its package and visible checks
)
# source: name in the release. student.gitignore keeps .venv, caches and results out of a
# student's repository (the release is also Classroom 50's template repository).
TOP_LEVEL_FILES = {"requirements.txt": "requirements.txt", "student.mk": "Makefile", "student.gitignore": ".gitignore"}
NEVER_COPIED = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")

STUDENT_README = """\
# {title}: your exercise

You need Python 3.11 or newer. With `make`:

```sh
make grade     # create .venv if missing, install, grade your work and print your score
{make_example}```

Without `make` (on Linux, the extra index gives torch's CPU build instead of PyPI's
several-GB CUDA build; elsewhere leave `--extra-index-url ...` out):

```sh
python3 -m venv .venv
.venv/bin/python -m pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt
.venv/bin/python -m pytest grader
```

1. Read the lesson: `exercises/{lesson}` (the notebook holds the same lesson).
2. Work in **one** of `exercises/{student_file}` or the notebook
   `exercises/{notebook}`. Every function that still raises
   `NotImplementedError` is yours to write{constructors}; the `# TODO` above it says what the code
   must achieve and why, and the docstrings state every convention
   ({conventions}).
{try_example}{grade_step}. Grade yourself: `make grade` or `.venv/bin/python -m pytest grader`. It grades the file
   that holds your work: when both the `.py` file and the notebook are there, the one in which
   more of the functions are written (on a tie, the `.py` file). Each failed
   check says what was expected, what came back and the likely mistake; the last line names
   the functions not written yet, in the order they build on each other. `print()` and
   `breakpoint()` work (`pytest grader -s -x` stops at the first failure).

## What to hand in

The one file you worked in: `exercises/{student_file}`, or the notebook
`exercises/{notebook}` (saved, its cells in order; the setup and check cells
are left out when it is graded). Keep the names of the functions and classes, and their
parameters: the grader calls them by name and loads its own weights into the layers the
docstrings describe. If you hand in a folder holding both files, the same rule as `make
grade` picks the one that holds the work, and your results say which file was graded.

## Your score

The score you see here covers the visible checks ({visible} of the {total} points){examples_said}. The remaining {hidden} points come from hidden checks, run when
your work is graded: the same comparison on sizes and data drawn at grading time, so code
that matches the reference{examples_short} for the right reasons passes them too.
"""
# What the README says of a visible reference group, where the exercise has one (its
# declaration's ``examples``: fixed data and the reference's numbers, shipped).
EXAMPLES_SAID = (
    ",\nincluding the reference examples, which compare your numbers with the reference on fixed data\n"
    "shipped in `grader/exercises/{exercise}/reference_examples.json`"
)
CONSTRUCTORS = {
    "standard": ", the constructors included (their docstrings give the layout of the layers)",
    "guided": "",
}


def _never_copied_for(released):
    """What of exercises/ stays home besides caches: every file the released exercise does not
    hand out (its declaration's ``handed_out``), the other exercises' first."""
    own = set(released.handed_out)

    def ignored(folder: str, names: list[str]) -> set[str]:
        top = Path(folder).resolve() == (REPO_ROOT / "exercises").resolve()
        return set(NEVER_COPIED(folder, names)) | ({name for name in names if name not in own} if top else set())

    return ignored


def own_files() -> list[tuple[str, Path]]:
    """The student grader's files: each folder of ``OWN_FILES_ONLY``'s own files, none of its
    subfolders, as (path in the release, path here). The release copies them; the student
    wheel (grader/handout/wheel.py) packs the same list."""
    return [
        (f"{name}/{path.name}", path)
        for name in OWN_FILES_ONLY
        for path in sorted((REPO_ROOT / name).iterdir())
        if path.is_file() and path.suffix != ".pyc"
    ]


def write_release(out_dir: Path, level: str = stubs.DEFAULT_LEVEL, install_from: str | None = None) -> Path:
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    for name in WHOLE_FOLDERS:
        shutil.copytree(REPO_ROOT / name, out_dir / name, ignore=_never_copied_for(registry.exercise()))
    for relative, path in own_files():
        (out_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, out_dir / relative)
    for source, name in TOP_LEVEL_FILES.items():
        shutil.copy2(REPO_ROOT / source, out_dir / name)
    (out_dir / "Makefile").write_text(student_makefile(registry.exercise()), encoding="utf-8")
    # The exercise at the chosen level, made from the solution (not copied: exercises/ may be
    # at another level), and the level recorded where the grader reads it.
    solution = stubs.SOLUTION_PATH
    (out_dir / "exercises" / stubs.EXERCISE_PATH.name).write_text(
        stubs.make_stub(solution.read_text(encoding="utf-8"), level), encoding="utf-8"
    )
    released = registry.exercise()
    (out_dir / "exercises" / released.notebook).write_text(
        notebook.notebook_text(level=level, install_from=install_from), encoding="utf-8"
    )
    # The lesson page generated where the exercise's lesson is cut into parts (its declaration's
    # lesson_parts); otherwise it is the exercise's own page in exercises/, copied above as written.
    if notebook.lesson_parts() is not None:
        (out_dir / "exercises" / released.lesson).write_text(notebook.lesson_text(level=level), encoding="utf-8")
    (out_dir / "grader" / stubs.LEVEL_FILE.name).write_text(level + "\n", encoding="utf-8")
    (out_dir / "README.md").write_text(student_readme(released, level), encoding="utf-8")
    return out_dir


EXAMPLE_LINE = "EXAMPLE := exercises/example.py\n"  # student.mk's: the repository's default


def student_makefile(exercise) -> str:
    """student.mk, its example line naming the exercise's focused example (or none)."""
    text = (REPO_ROOT / "student.mk").read_text(encoding="utf-8")
    if EXAMPLE_LINE not in text:
        raise ValueError(f"student.mk has lost its line {EXAMPLE_LINE.strip()!r}, which the release rewrites")
    example = f"exercises/{exercise.example.file}" if exercise.example else ""
    return text.replace(EXAMPLE_LINE, f"EXAMPLE := {example}\n")


def student_readme(exercise, level: str) -> str:
    """The release's README, said of the exercise released: its files, its conventions, its
    points (from the checks' markers), and its focused example where it has one."""
    visible, hidden = scoring.visible_and_hidden_points()
    example = exercise.example
    make_example = f"make example   # the lesson's focused example: {example.shows}\n" if example else ""
    try_example = ""
    if example:
        options = f"\n   ({example.options})" if example.options else ""
        try_example = f"3. Try the lesson's example: `make example` or `.venv/bin/python exercises/{example.file}`{options}.\n"
    return STUDENT_README.format(
        title=exercise.title, make_example=make_example, lesson=exercise.lesson, conventions=exercise.conventions,
        constructors=CONSTRUCTORS[level], try_example=try_example, grade_step=4 if example else 3,
        visible=visible, hidden=hidden, total=visible + hidden,
        examples_said=EXAMPLES_SAID.format(exercise=exercise.name) if exercise.examples else "",
        examples_short=" examples" if exercise.examples else "",
        student_file=exercise.student_file, notebook=exercise.notebook,
    )


def leaked_solution_lines(release: Path, solution: Path = stubs.SOLUTION_PATH, level: str | None = None) -> list[str]:
    """Lines of solution text found in the release, as "file: line" (empty when clean).

    Lines without a letter or a digit (a lone bracket) say nothing and are not counted. The
    secret is what the student writes at ``level`` (the level recorded in the release when
    not given): at the guided level, the constructors are given, not secret.
    """
    if level is None:
        level = stubs.recorded_level(release / "grader" / stubs.LEVEL_FILE.name)
    resolved = stubs.resolve_level(solution.read_text(encoding="utf-8"), level)
    secret = {line.strip() for line in stubs.solution_lines(resolved)}
    secret = {line for line in secret if any(character.isalnum() for character in line)}
    leaks = []
    for path in sorted(release.rglob("*")):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="ignore")
        for line in text.splitlines():
            if line.strip() in secret:
                leaks.append(f"{path.relative_to(release)}: {line.strip()}")
        if path.suffix == ".ipynb":  # notebook sources are JSON strings: compare unescaped lines
            leaks += _notebook_leaks(path, release, secret)
    return leaks


def _notebook_leaks(path: Path, release: Path, secret: set[str]) -> list[str]:
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except ValueError:
        return []
    leaks = []
    for cell in cells:
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        leaks += [f"{path.relative_to(release)}: {line.strip()}" for line in source.splitlines() if line.strip() in secret]
    return leaks


def add_arguments(parser) -> None:
    parser.add_argument("out_dir", type=Path, help="folder to (re)create with the student release")
    stubs.add_level_argument(parser)
    notebook.add_install_from_argument(parser)


def run(arguments) -> int:
    level = arguments.level or stubs.recorded_level()
    out = write_release(arguments.out_dir, level, arguments.install_from)
    leaks = leaked_solution_lines(out, level=level)
    if leaks:
        print("the release holds solution text; fix before handing it out:", *leaks[:10], sep="\n  ", file=sys.stderr)
        return 1
    print(f"wrote the student release to {out} ({level} scaffolding; no solution text found in it)")
    return 0
