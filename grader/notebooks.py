"""A Jupyter notebook's code, as the grader reads it: the code cells joined into one file.

The batch's intake, a notebook given to ``pytest grader --submission`` and the notebook's own
check cells all rebuild the graded file with these functions, so a notebook scores the same
wherever it is graded. Only ``json`` is needed for a current notebook; nbformat upgrades
old (v3) ones.
"""

from __future__ import annotations

import json
import warnings

# IPython magics (%), shell escapes (!) and help (?): not Python, so they would not import.
MAGIC_PREFIXES = ("%", "!", "?")
# The exercise notebook's own cells (its setup cell and its check cells) are never part of a
# submission. They start with this marker line (all a kernel sees of a cell is its source)
# and carry one of these tags.
GRADER_CELL_MARKER = "#| grader:"
GRADER_CELL_TAGS = frozenset({"grader-setup", "grader-check"})


def is_grader_cell(source: str, tags: object = ()) -> bool:
    """A setup or check cell of the exercise notebook: its first line is the marker, or it is tagged."""
    first_line = next((line.strip() for line in source.splitlines() if line.strip()), "")
    tagged = isinstance(tags, list) and any(isinstance(tag, str) and tag in GRADER_CELL_TAGS for tag in tags)
    return first_line.startswith(GRADER_CELL_MARKER) or tagged


def join_code_cells(sources: list[str]) -> str:
    """Code cells as one Python file: the grader's cells, cell magics and magic, shell or help
    lines dropped, the rest joined by blank lines. The notebook's check cells
    (grader/notebook_checks.py) rebuild the file they grade with this same function."""
    kept = []
    for source in sources:
        source = source.replace("\r\n", "\n").replace("\r", "\n")
        if is_grader_cell(source):
            continue
        if source.lstrip().startswith("%%"):  # a cell magic makes the whole cell non-Python
            continue
        lines = [line for line in source.split("\n") if not line.lstrip().startswith(MAGIC_PREFIXES)]
        code = "\n".join(lines).strip("\n")
        if code.strip():
            kept.append(code)
    return "\n\n".join(kept) + "\n"


def code_cells(text: str) -> list[str]:
    notebook = json.loads(text)
    if not isinstance(notebook, dict):
        raise TypeError("it is not a JSON object")
    if notebook.get("nbformat", 4) < 4:
        # Older notebooks keep their cells in worksheets: nbformat upgrades them. Only
        # for them: importing nbformat (its schema validator) takes about a second, and
        # a current notebook's code cells need nothing but json.
        import nbformat

        with warnings.catch_warnings():  # its schema warnings are noise here
            warnings.simplefilter("ignore")
            notebook = nbformat.reads(text, as_version=4)
    cells = notebook["cells"]
    if not isinstance(cells, list):
        raise TypeError("its 'cells' is not a list")
    sources = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if not isinstance(source, str):
            raise TypeError("a code cell's source is not text")
        metadata = cell.get("metadata")
        if is_grader_cell(source, metadata.get("tags", []) if isinstance(metadata, dict) else []):
            continue
        sources.append(source)
    return sources


def notebook_code(text: str) -> str:
    """A notebook's text (JSON) as the one Python file the grader grades."""
    return join_code_cells(code_cells(text))
