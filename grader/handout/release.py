"""The student release: ``python -m grader release OUT_DIR``.

What students receive: the stubs, the focused example and the notebook, the visible
grader (the grader package's own modules, none of its instructor subpackages), a README
written for them, requirements.txt and the Makefile. Never solutions/, grader/hidden/,
the sandbox, the batch, the hand-outs or tests/; ``leaked_solution_lines`` lets a test prove that no line of
solution text slipped into any file of it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from grader.handout import stubs

REPO_ROOT = Path(__file__).resolve().parents[2]
# What students receive, by folder. The exercise folder whole; of the grader, the package's
# own modules (what `pytest grader` loads at a student's desk) and none of its subpackages:
# each of those is an instructor's layer (hidden/, sandbox/, batch/, handout/), so a new
# instructor module stays home without anyone listing it.
WHOLE_FOLDERS = ("exercises",)
OWN_FILES_ONLY = ("grader",)
TOP_LEVEL_FILES = ("requirements.txt", "Makefile")
NEVER_COPIED = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")

STUDENT_README = """\
# Multi-head self-attention: your exercise

```sh
make grade   # create .venv if missing, install, grade your exercise and print your score
```

1. Open `exercises/multi_head_attention.py` (or the notebook
   `exercises/multi_head_attention.ipynb`). Every function that still raises
   `NotImplementedError` is yours to write; the `# TODO` above it says what to do, and the
   docstrings state every convention (shapes, `True` = may attend, heads in order).
2. Try the lesson's example: `.venv/bin/python exercises/example.py` prints a check mark
   or a cross for each of the lesson's six checks (`--heads 1` runs the one-head experiment).
3. Grade yourself: `make grade` or `.venv/bin/python -m pytest grader`. Each failed check
   says what was expected, what came back and the likely mistake; the last line names the
   functions not written yet, the most needed first. `print()` and `breakpoint()` work
   (`pytest grader -s -x` stops at the first failure).

The score you see here covers the visible checks (80 of the 100 points). The remaining
20 points come from hidden checks, run when your work is graded: they compare your numbers
with the reference on sizes and data drawn at grading time, so code that passes every
visible check for the right reasons passes them too.
"""


def write_release(out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    for name in WHOLE_FOLDERS:
        shutil.copytree(REPO_ROOT / name, out_dir / name, ignore=NEVER_COPIED)
    for name in OWN_FILES_ONLY:
        (out_dir / name).mkdir()
        for path in sorted((REPO_ROOT / name).iterdir()):
            if path.is_file() and path.suffix != ".pyc":
                shutil.copy2(path, out_dir / name / path.name)
    for name in TOP_LEVEL_FILES:
        shutil.copy2(REPO_ROOT / name, out_dir / name)
    (out_dir / "README.md").write_text(STUDENT_README, encoding="utf-8")
    return out_dir


def leaked_solution_lines(release: Path, solution: Path = stubs.SOLUTION_PATH) -> list[str]:
    """Lines of solution text found in the release, as "file: line" (empty when clean).

    Lines without a letter or a digit (a lone bracket) say nothing and are not counted.
    """
    secret = {line.strip() for line in stubs.solution_lines(solution.read_text(encoding="utf-8"))}
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


def run(arguments) -> int:
    out = write_release(arguments.out_dir)
    leaks = leaked_solution_lines(out)
    if leaks:
        print("the release holds solution text; fix before handing it out:", *leaks[:10], sep="\n  ", file=sys.stderr)
        return 1
    print(f"wrote the student release to {out} (no solution text found in it)")
    return 0
