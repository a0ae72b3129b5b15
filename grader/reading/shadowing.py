"""Files beside the grader that would be imported instead of a library it needs.

At the desk, ``pytest grader`` puts the folder it runs from (and the folder holding grader/)
first on ``sys.path``: a student's ``torch.py`` or ``numpy.py`` there is imported in place of
the library, by the grader and by the student's code, and fails in ways that name neither.
The grader looks for them before it imports any of those libraries, and stops saying so.
Standard library only: this runs before torch is imported.
"""

from __future__ import annotations

import site
import sys
import sysconfig
from pathlib import Path

# The libraries the grader imports (requirements.txt), by their import names.
LIBRARIES = ("torch", "numpy", "pytest", "pytest_timeout", "nbformat", "pluggy")


def shadowing_files(folders: list[Path]) -> list[Path]:
    """``NAME.py`` files and ``NAME/`` packages in ``folders`` that hide one of ``LIBRARIES``."""
    found = []
    for folder in dict.fromkeys(folder.resolve() for folder in folders):
        for name in LIBRARIES:
            for candidate in (folder / f"{name}.py", folder / name / "__init__.py"):
                if candidate.is_file():
                    found.append(candidate if candidate.name != "__init__.py" else candidate.parent)
    return found


def searched_first(grader_dir: Path) -> list[Path]:
    """The folders Python searches before the installed libraries at the desk: the current
    folder and the one that holds grader/ (where pytest's rootdir puts it on ``sys.path``).
    Never a folder libraries are installed in: the student wheel puts grader/ beside torch."""
    installed = set()
    for folder in (*site.getsitepackages(), site.getusersitepackages(), *sysconfig.get_paths().values()):
        try:
            installed.add(Path(folder).resolve())
        except (OSError, RuntimeError):
            continue
    return [folder for folder in (Path.cwd(), grader_dir.parent) if folder.resolve() not in installed]


def message(found: list[Path]) -> str:
    names = ", ".join(str(path) for path in found)
    return (
        f"the grader stops: {names} hides a library the grader and your code import "
        f"({', '.join(path.stem for path in found)}), so Python would import that file instead. "
        "Rename it (for instance my_torch_notes.py) and run the grader again."
    )


def stop_if_shadowed(grader_dir: Path) -> None:
    found = shadowing_files(searched_first(grader_dir))
    if found:
        print(f"grader: {message(found)}", file=sys.stderr)
        raise SystemExit(4)
