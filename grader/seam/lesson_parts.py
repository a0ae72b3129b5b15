"""How an exercise cuts its lesson into the notebook's parts (grader/handout/notebook.py): each
part's lesson, in markdown, then the solution's definitions it holds. Plain data, no torch."""

from __future__ import annotations

from dataclasses import dataclass

IMPORTS = "imports"  # the key of the solution's import statements among its definitions


@dataclass(frozen=True)
class Part:
    key: str  # for cell ids
    lesson: str  # markdown, shown before the part's code ("{name}" fields are filled per scaffolding level)
    names: tuple[str, ...]  # the solution's top-level definitions in this part, in order


# The first part of every notebook: the solution's imports, which the student may add to.
IMPORTS_PART = Part("imports", """\
## The exercise's imports

This cell is part of your submission: add an import here if you need one.
""", (IMPORTS,))
