"""Generate the notebook version of the exercise: ``python -m grader notebook``.

The exercise's notebook (its declaration's ``notebook``, under exercises/) is made from the same
solution as the stubs: the lesson in markdown cells, cut into the parts its declaration's
``lesson_parts`` gives (for the first exercise grader/exercises/multi_head_attention/lesson_parts.py;
an exercise that declares none gets one part holding every definition, and says so in it), one
code cell per definition of the solution (its solution
regions stubbed out exactly as ``grader.stubs`` does), and after each part a check cell
that runs the pytest grader's checks on the code run so far (``grader.notebook_checks``).

The setup cell chooses the notebook's exercise (``registry.choose``) before the checks are
imported, so that a kernel started with no choice grades the notebook's own exercise. The lesson
page (the declaration's ``lesson``) is generated from the same parts, unless it is hand-written
(it lacks ``LESSON_NOTICE``): then it is kept as written, and ``--check`` does not judge it.

The notebook is generated, never executed: no outputs, no execution counts, and every cell
has a fixed id, so the same solution always gives the same bytes (``--check`` compares them).

Cells that are not part of a submission (the setup cell and the check cells) start with
``grader.reading.notebooks.GRADER_CELL_MARKER`` and carry a tag from ``GRADER_CELL_TAGS``: the intake
(batch grading, ``pytest grader --submission X.ipynb``) and the checks themselves drop them.
``grader/platforms/nbgrader_course.py`` builds the nbgrader version from the same pieces.

``--install-from SPEC`` (here, in ``release`` and in ``nbgrader``) makes a setup cell for a
notebook that runs alone, as on Colab: when no grader/ folder is beside it, it installs the
student wheel (``python -m grader wheel``) from SPEC into the kernel, keeping the kernel's torch
(grader/handout/kernel_install.py). The committed notebook is made without it.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.handout import kernel_install, stubs
from grader.reading.notebooks import GRADER_CELL_MARKER
from grader.seam import registry
from grader.seam.lesson_parts import IMPORTS, IMPORTS_PART, Part

REPO_ROOT = Path(__file__).resolve().parents[2]
EXERCISE = registry.exercise()
NOTEBOOK_PATH = REPO_ROOT / "exercises" / EXERCISE.notebook
SETUP_TAG, CHECK_TAG, EXPERIMENT_TAG = "grader-setup", "grader-check", "grader-experiment"

NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


class NotebookLayoutError(ValueError):
    """The solution has a top-level statement the notebook's parts do not place."""


HOW_IT_WORKS = """\
## How this notebook works

* **Run the setup cell first** (just below). It finds the grader beside this notebook (or
  installs it, where the notebook is on its own, as on Colab) and imports torch.
* Each function you write raises `NotImplementedError`; the `# TODO` above it says what to do
  and its docstring states the conventions.
* **Each part ends with a check cell.** It grades the code you have run so far with exactly the
  checks of `pytest grader`, in a separate process (a bug of yours cannot stop the notebook),
  and prints your points per group and what to fix. Run your cell, then its check.
* **Your submission is every other code cell**, top to bottom, as one Python file. The setup
  and check cells (their first line is `#| grader: ...`) are left out. Code that fails at the
  top level, such as a quick experiment calling a function you have not written yet, stops the
  whole file from importing: delete such experiments, or put them under
  `if __name__ == "__main__":`, which runs here but not when your work is graded.
"""

def lesson_parts():
    """The exercise's lesson as the notebook cuts it (its declaration's ``lesson_parts``), or None."""
    return registry.optional(EXERCISE, EXERCISE.lesson_parts)


# The one part, after the imports (IMPORTS_PART), of an exercise that declares none: every definition.
ONE_PART_LESSON = """\
## The exercise

Write each function whose body raises `NotImplementedError`; the `# TODO` above it says what to
do. (This exercise's lesson is not cut into parts: its declaration names no `lesson_parts`.)
"""


def parts(solution: str) -> tuple[Part, ...]:
    """The notebook's parts for the solution ``solution`` (its source): the exercise's own, or
    one part holding every definition, in the solution's order."""
    declared = lesson_parts()
    if declared is not None:
        return declared.PARTS
    names = tuple(name for name in _definitions(solution) if name != IMPORTS)
    return (IMPORTS_PART, Part("exercise", ONE_PART_LESSON, names))


def part_lesson(part: Part, level: str = stubs.DEFAULT_LEVEL) -> str:
    return part.lesson.format(**lesson_parts().WORK[level]) if "{" in part.lesson else part.lesson


# How the student sees the score: in the notebook, the check cell below; in the .py file, the
# grader's command. The group numbers and titles are the score table's (grader.scoring.GROUP_TITLES).
SCORE_IN_THE_NOTEBOOK = "The cell below shows your score for all the code you have run, and what still fails."
SCORE_IN_THE_PY_FILE = "`make grade` (or `python -m pytest grader`) shows your score, and what still fails."
# The last lesson of an exercise that declares none of its own.
FINAL_LESSON = """\
## Your score

{where_the_score_is}
"""


def final_lesson(where_the_score_is: str) -> str:
    declared = lesson_parts()
    return (FINAL_LESSON if declared is None else declared.FINAL_LESSON).format(where_the_score_is=where_the_score_is)


def training(field: str) -> str | None:
    """The exercise's training experiment (``TRAINING_LESSON``, ``TRAINING_SOURCE``, ...), or
    None where it has none: the notebook and LESSON.md leave it out."""
    declared = lesson_parts()
    return None if declared is None or declared.TRAINING_LESSON is None else getattr(declared, field)


# The notebook's last cell. Menu names: Colab's File menu ("Download > Download .ipynb"),
# JupyterLab's File menu ("Download"); the batch grades the downloaded file as any notebook.
HAND_IN = """\
## Handing in

Hand in this notebook as one `.ipynb` file:

1. **Run it from the top once more**: *Runtime > Restart session and run all* in Colab, *Kernel >
   Restart Kernel and Run All Cells* in JupyterLab. Your work is graded as its code cells read
   from top to bottom, not in the order you ran them, so this shows the score it will get.
2. **Download it**: *File > Download > Download .ipynb* in Colab, *File > Download* in JupyterLab.
3. **Upload that `.ipynb` file** where your course collects the work. Keep the names of the
   functions and classes. Its outputs do not count: your code is run again when it is graded,
   with the hidden checks too.
"""


# --- the solution, cut into definitions -------------------------------------------------


def definitions(source: str) -> dict[str, str]:
    """The module's top-level definitions by name, plus its imports under ``IMPORTS``, each
    placed in one of the notebook's parts.

    The module docstring becomes markdown and ``from __future__`` imports are dropped (a
    notebook's cells can be joined in any order; annotations need no future import in 3.11).
    """
    found = _definitions(source)
    placed = [name for part in parts(source) for name in part.names]
    missing, unknown = set(found) - set(placed), set(placed) - set(found)
    if missing or unknown:
        raise NotebookLayoutError(
            f"the notebook's parts do not match the solution: not placed {sorted(missing)}, "
            f"placed but not in the solution {sorted(unknown)}"
        )
    return found


def _definitions(source: str) -> dict[str, str]:
    """The module's top-level definitions by name, its imports first under ``IMPORTS``."""
    tree = ast.parse(source)
    lines = source.splitlines()
    found: dict[str, str] = {}
    imports: list[str] = []
    for index, node in enumerate(tree.body):
        first = min([node.lineno, *(decorator.lineno for decorator in getattr(node, "decorator_list", []))])
        text = "\n".join(lines[first - 1 : _end_of_body(lines, node.end_lineno)])
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the module docstring
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(text)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = text
        else:
            raise NotebookLayoutError(f"line {node.lineno}: a top-level statement the notebook cannot place")
    return {IMPORTS: _join_imports(imports), **found}


def _end_of_body(lines: list[str], end: int) -> int:
    """The last line of a definition, indented comments after its last statement included
    (``### END SOLUTION`` often comes last, and ast ends a definition at its last statement)."""
    last = end
    for number in range(end + 1, len(lines) + 1):
        line = lines[number - 1]
        if line.strip() and not line[0].isspace():
            break
        if line.strip():
            last = number
    return last


def _join_imports(imports: list[str]) -> str:
    """Standard-library imports, then the others (torch), as in the solution file."""
    standard = [line for line in imports if not re.match(r"(from|import) torch\b", line)]
    third_party = [line for line in imports if line not in standard]
    return "\n".join(standard) + ("\n\n" if standard and third_party else "") + "\n".join(third_party)


def module_docstring(source: str) -> str:
    return ast.get_docstring(ast.parse(source)) or ""


def rst_to_markdown(text: str) -> str:
    """The docstring's ``literal`` markup as markdown's `literal`."""
    return re.sub(r"``(.+?)``", r"`\1`", text)


def exercise_source(solution: str, filled: bool, level: str = stubs.DEFAULT_LEVEL) -> str:
    """The solution with its regions stubbed (``grader.stubs``), or filled in without markers."""
    if not filled:
        return stubs.make_stub(solution, level).removeprefix(stubs.GENERATED_NOTICE)
    markers = (stubs.BEGIN_SOLUTION, stubs.END_SOLUTION)
    resolved = stubs.resolve_level(solution, level)
    return "\n".join(line for line in resolved.splitlines() if line.strip() not in markers) + "\n"


# --- cells ---------------------------------------------------------------------------------


def markdown(cell_id: str, text: str, **metadata) -> nbformat.NotebookNode:
    return new_markdown_cell(text.strip("\n"), id=cell_id, metadata=dict(metadata))


def code(cell_id: str, text: str, tags: tuple[str, ...] = (), **metadata) -> nbformat.NotebookNode:
    metadata = ({"tags": list(tags)} if tags else {}) | metadata
    return new_code_cell(text.strip("\n"), id=cell_id, metadata=metadata)


# What the setup cell says when the grader is neither beside the notebook nor to be installed.
NOT_BESIDE = (
    "No grader/ folder beside this notebook: open the notebook from the exercise's folder, or, on Colab ",
    "or a hosted Jupyter, ask your instructor for the version of the notebook that installs the grader.",
)


def setup_source(extra_places: tuple[str, ...] = (), install_from: str | None = None) -> str:
    """The setup cell: find the folder holding grader/ (``extra_places`` first), else install the
    grader from ``install_from`` (a wheel's URL or path, or a requirement) into the kernel; then
    import torch and start. When neither works, it says why in one sentence, and so does every
    check cell (a stand-in whose ``points`` raises, so that nbgrader never counts a missing grader)."""
    places = "".join(f"{place}, " for place in extra_places)
    os_import = "import os\n" if "os." in places else ""
    if install_from:  # grader/handout/kernel_install.py says how, and why so
        installer = "\n" + kernel_install.source() + "\n\n"
        missing = f"install_grader({_python_string(install_from)}, {_python_string(EXERCISE.distribution_name)})"
    else:
        installer = ""
        missing = "(\n" + "".join(f"    {_python_string(part)}\n" for part in NOT_BESIDE) + ")"
    return f'''\
{GRADER_CELL_MARKER} setup (not part of your submission: it finds the grader and starts the checks)
{os_import}import sys
from pathlib import Path
from types import SimpleNamespace

{installer}GRADER_PLACES = [{places}Path.cwd(), *Path.cwd().parents]
GRADER_ROOT = next((p for p in GRADER_PLACES if (p / "grader" / "notebook_checks.py").is_file()), None)
if GRADER_ROOT is not None and str(GRADER_ROOT) not in sys.path:
    sys.path.insert(0, str(GRADER_ROOT))
GRADER_PROBLEM = None if GRADER_ROOT is not None else {missing}

import torch  # imported here, once, so that no check cell shows torch's start-up messages

if GRADER_PROBLEM is None:
    from grader.seam import registry

    registry.choose({_python_string(EXERCISE.name)})  # the exercise this notebook's checks grade
    from grader import notebook_checks

    notebook_checks.start()
else:
    print(GRADER_PROBLEM)

    def no_grader(*_, **__):
        raise RuntimeError(GRADER_PROBLEM)

    notebook_checks = SimpleNamespace(
        check=lambda: print(f"The check could not run. {{GRADER_PROBLEM}}"), points=no_grader
    )
'''


def _python_string(text: str) -> str:
    """``text`` as a double-quoted Python literal (JSON's escapes are Python's)."""
    return json.dumps(text)


CHECK_SOURCE = f"""\
{GRADER_CELL_MARKER} check (not part of your submission)
notebook_checks.check()
"""


def intro_cells(solution: str) -> list[nbformat.NotebookNode]:
    title, _, body = module_docstring(solution).partition("\n")
    return [
        markdown("lesson-intro", f"# {title.rstrip('.')}\n\n{rst_to_markdown(body.strip())}"),
        markdown("how-it-works", HOW_IT_WORKS),
    ]


def build_notebook(
    solution: str, filled: bool = False, level: str = stubs.DEFAULT_LEVEL, install_from: str | None = None
) -> nbformat.NotebookNode:
    """The exercise notebook: stubs (``filled=False``) or the solution filled in; with
    ``install_from``, a setup cell that installs the grader when it is not beside the notebook."""
    pieces = definitions(exercise_source(solution, filled, level))
    definitions(solution)  # the solution itself must fit the parts too
    cells = intro_cells(solution)
    cells.append(code("setup", setup_source(install_from=install_from), tags=(SETUP_TAG,)))
    for part in parts(solution):
        cells.append(markdown(f"lesson-{part.key}", part_lesson(part, level)))
        cells += [code(f"code-{name}", pieces[name]) for name in part.names]
        if part.names != (IMPORTS,):
            cells.append(code(f"check-{part.key}", CHECK_SOURCE, tags=(CHECK_TAG,)))
    if training("TRAINING_LESSON") is not None:
        cells.append(markdown("lesson-training", training("TRAINING_LESSON").format(how_to_run=training("TRAINING_IN_THE_NOTEBOOK"))))
        cells.append(code("experiment-training", training("TRAINING_SOURCE"), tags=(EXPERIMENT_TAG,)))
    cells.append(markdown("lesson-score", final_lesson(SCORE_IN_THE_NOTEBOOK)))
    cells.append(code("check-score", CHECK_SOURCE, tags=(CHECK_TAG,)))
    cells.append(markdown("hand-in", HAND_IN))
    return new_notebook(cells=cells, metadata=NOTEBOOK_METADATA)


def dumps(notebook: nbformat.NotebookNode) -> str:
    nbformat.validate(notebook)
    return nbformat.writes(notebook, version=4) + "\n"


def notebook_text(
    solution_path: Path = stubs.SOLUTION_PATH, filled: bool = False, level: str = stubs.DEFAULT_LEVEL,
    install_from: str | None = None,
) -> str:
    solution = solution_path.read_text(encoding="utf-8")
    return dumps(build_notebook(solution, filled=filled, level=level, install_from=install_from))


def notebook_is_current(
    solution_path: Path = stubs.SOLUTION_PATH, notebook_path: Path = NOTEBOOK_PATH, level: str = stubs.DEFAULT_LEVEL,
    install_from: str | None = None,
) -> bool:
    expected = notebook_text(solution_path, level=level, install_from=install_from)
    return notebook_path.is_file() and notebook_path.read_text(encoding="utf-8") == expected


# --- the lesson as one Markdown file, for students who work in the .py file -----------------

LESSON_PATH = REPO_ROOT / "exercises" / EXERCISE.lesson
LESSON_NOTICE = "<!-- Generated from the reference solution by `python -m grader notebook`: the notebook's lesson. -->\n\n"
FOR_THE_PY_FILE = f"""\
## Working in `{EXERCISE.student_file}`

This is the lesson of the notebook `{EXERCISE.notebook}`, for those who work in the
`.py` file instead: write the same functions there, try them with `python exercises/example.py`,
and grade them with `make grade` (or `python -m pytest grader`).
"""


def lesson_markdown(solution: str, level: str = stubs.DEFAULT_LEVEL) -> str:
    """The notebook's lesson cells, in order, as one Markdown document (exercises/LESSON.md)."""
    sections = [intro_cells(solution)[0].source, FOR_THE_PY_FILE.strip("\n")]
    sections += [part_lesson(part, level).strip("\n") for part in parts(solution) if part.names != (IMPORTS,)]
    if training("TRAINING_LESSON") is not None:
        sections.append(training("TRAINING_LESSON").format(how_to_run=training("TRAINING_FROM_THE_PY_FILE")).strip("\n"))
    sections.append(final_lesson(SCORE_IN_THE_PY_FILE).strip("\n"))
    return LESSON_NOTICE + "\n\n".join(sections) + "\n"


def lesson_is_hand_written(lesson_path: Path = LESSON_PATH) -> bool:
    """Whether the exercise's lesson page is its authors' own, not generated: a page without the
    generated notice. The notebook is still cut from its ``lesson_parts``; the page is never
    overwritten (an exercise may keep a longer lesson than its notebook's, in its own words)."""
    return lesson_path.is_file() and not lesson_path.read_text(encoding="utf-8").startswith(LESSON_NOTICE)


def lesson_text(
    solution_path: Path = stubs.SOLUTION_PATH, level: str = stubs.DEFAULT_LEVEL, lesson_path: Path = LESSON_PATH
) -> str:
    """The exercise's lesson page: the notebook's lesson as one document, or the page as its
    authors wrote it where it is hand-written (what the release copies either way)."""
    if lesson_is_hand_written(lesson_path):
        return lesson_path.read_text(encoding="utf-8")
    return lesson_markdown(solution_path.read_text(encoding="utf-8"), level)


def lesson_is_current(
    solution_path: Path = stubs.SOLUTION_PATH, lesson_path: Path = LESSON_PATH, level: str = stubs.DEFAULT_LEVEL
) -> bool:
    return lesson_path.is_file() and lesson_path.read_text(encoding="utf-8") == lesson_text(solution_path, level, lesson_path)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--check", action="store_true", help="only report whether the notebook or LESSON.md is stale (exit 1 if so)"
    )
    parser.add_argument(
        "--filled", type=Path, metavar="PATH", help="also write the notebook with the solution filled in to PATH"
    )
    stubs.add_level_argument(parser)
    add_install_from_argument(parser)


def add_install_from_argument(parser) -> None:
    parser.add_argument(
        "--install-from", metavar="SPEC", default=None,
        help="where the notebook's setup cell installs the grader from when no grader/ folder is beside it "
        "(Colab, a hosted Jupyter): the URL or path of the wheel `python -m grader wheel` builds, or a requirement",
    )


def run(arguments) -> int:
    level = arguments.level or stubs.recorded_level()
    install_from = arguments.install_from
    if arguments.check:
        command = f"python -m grader notebook --level {level}" + (f" --install-from {install_from}" if install_from else "")
        current = notebook_is_current(notebook_path=NOTEBOOK_PATH, level=level, install_from=install_from)
        notebook_status = stubs.report_freshness(NOTEBOOK_PATH, current, command)
        if lesson_is_hand_written(LESSON_PATH):
            print(f"{LESSON_PATH.name} is hand-written: not generated, not judged.")
            return notebook_status
        lesson_current = lesson_is_current(lesson_path=LESSON_PATH, level=level)
        return notebook_status | stubs.report_freshness(LESSON_PATH, lesson_current, command)
    NOTEBOOK_PATH.write_text(notebook_text(level=level, install_from=install_from), encoding="utf-8")
    if lesson_is_hand_written(LESSON_PATH):
        print(f"wrote {NOTEBOOK_PATH.relative_to(REPO_ROOT)} ({level} scaffolding); "
              f"{LESSON_PATH.relative_to(REPO_ROOT)} is hand-written: left as it is")
    else:
        LESSON_PATH.write_text(lesson_text(level=level), encoding="utf-8")
        print(f"wrote {NOTEBOOK_PATH.relative_to(REPO_ROOT)} and {LESSON_PATH.relative_to(REPO_ROOT)} ({level} scaffolding)")
    if arguments.filled:
        arguments.filled.write_text(notebook_text(filled=True, level=level, install_from=install_from), encoding="utf-8")
        print(f"wrote {arguments.filled} (the solution filled in: for instructors only)")
    return 0
