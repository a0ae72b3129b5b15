"""A Jupyter notebook's code, as the grader reads it: the code cells joined into one file.

The batch's intake, a notebook given to ``pytest grader --submission`` and the notebook's own
check cells all rebuild the graded file with these functions, so a notebook scores the same
wherever it is graded. Only ``json`` is needed for a current notebook; nbformat upgrades
old (v3) ones.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass

# IPython magics (%), shell escapes (!) and help (?): not Python, so they would not import.
# Where IPython is missing, lines starting with these are dropped (IPython finds them exactly).
MAGIC_PREFIXES = ("%", "!", "?")
# The exercise notebook's own cells (its setup cell, its check cells and the training
# experiment) are never part of a submission. They start with this marker line (all a kernel
# sees of a cell is its source) and carry one of these tags.
GRADER_CELL_MARKER = "#| grader:"
GRADER_CELL_TAGS = frozenset({"grader-setup", "grader-check", "grader-experiment"})


def is_grader_cell(source: str, tags: object = ()) -> bool:
    """A setup or check cell of the exercise notebook: its first line is the marker, or it is tagged."""
    first_line = next((line.strip() for line in source.splitlines() if line.strip()), "")
    tagged = isinstance(tags, list) and any(isinstance(tag, str) and tag in GRADER_CELL_TAGS for tag in tags)
    return first_line.startswith(GRADER_CELL_MARKER) or tagged


@dataclass(frozen=True)
class CellSpan:
    """Where one cell's code landed in the joined file, and how the student knows that cell."""

    first_line: int  # 1-based line of the joined file where the cell's code starts
    last_line: int
    label: str  # "In [7]" (its run in a kernel) or "code cell 3" (see cell_label)
    first_code_line: str  # the cell's first line of code, to recognise it
    line_offsets: tuple[int, ...]  # the cell's own line number for each line of its code in the file


def join_code_cells(sources: list[str]) -> str:
    """Code cells as one Python file: the grader's cells, cell magics and magic, shell or help
    lines dropped, the rest joined by blank lines. The notebook's check cells
    (grader/notebook_checks.py) rebuild the file they grade with this same function."""
    return join_code_cells_with_spans(sources)[0]


def join_code_cells_with_spans(sources: list[str], labels: list[str] | None = None) -> tuple[str, list[CellSpan]]:
    """``join_code_cells``, and where each kept cell's code lies in the file (for messages
    that name the cell, not a line of a file the student never saw)."""
    labels = labels or [cell_label(None, number) for number in range(1, len(sources) + 1)]
    kept: list[str] = []
    spans: list[CellSpan] = []
    line = 1
    for source, label in zip(sources, labels):
        source = source.replace("\r\n", "\n").replace("\r", "\n")
        if is_grader_cell(source):
            continue
        if source.lstrip().startswith("%%"):  # a cell magic makes the whole cell non-Python
            continue
        magics = magic_lines(source)
        numbered = [(number, text) for number, text in enumerate(source.split("\n"), start=1) if number not in magics]
        while numbered and numbered[0][1] == "":  # as str.strip("\n") would
            numbered.pop(0)
        while numbered and numbered[-1][1] == "":
            numbered.pop()
        if not any(text.strip() for _, text in numbered):
            continue
        kept.append("\n".join(text for _, text in numbered))
        first_code = next(text.strip() for _, text in numbered if text.strip())
        spans.append(CellSpan(line, line + len(numbered) - 1, label, first_code, tuple(number for number, _ in numbered)))
        line += len(numbered) + 1  # the blank line that joins two cells
    return "\n\n".join(kept) + "\n", spans


FILE_LINE = re.compile(r"multi_head_attention\.py:(\d+)")


def in_cell_terms(text: str, spans: list[CellSpan]) -> str:
    """Replace ``multi_head_attention.py:75`` in ``text`` by the cell it came from:
    ``cell 7 (the cell starting `class AttentionHead(nn.Module):`), line 12``."""

    def cell_of(match: re.Match) -> str:
        line = int(match[1])
        span = next((span for span in spans if span.first_line <= line <= span.last_line), None)
        if span is None:
            return match[0]
        first = span.first_code_line if len(span.first_code_line) <= 60 else span.first_code_line[:57] + "..."
        return f"{span.label} (the cell starting `{first}`), line {span.line_offsets[line - span.first_line]}"

    return FILE_LINE.sub(cell_of, text) if spans else text


def magic_lines(source: str) -> set[int]:
    """The 1-based numbers of a cell's magic, shell and help lines, as IPython itself finds them.

    A line is a magic only where a statement starts: ``% (model_dim, num_heads)`` continuing
    a bracketed expression, or a line after a backslash, is Python and stays. A cell that
    parses as Python holds no magic (IPython leaves valid Python alone), so it is kept as it
    is without loading IPython; any other cell goes through IPython's own input
    transformation, and each line it turned into a ``get_ipython()`` call is a magic.
    """
    try:
        ast.parse(source)
        return set()
    except (SyntaxError, ValueError):
        pass
    original = source.split("\n")
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        lines = TransformerManager().transform_cell(source).split("\n")
    except Exception:  # noqa: BLE001 - no IPython, or input it cannot transform: the plain rule
        return {number for number, text in enumerate(original, start=1) if text.lstrip().startswith(MAGIC_PREFIXES)}
    if len(lines) < len(original):  # it joined lines (a magic continued with a backslash)
        lines += [""] * (len(original) - len(lines))
    return {
        index + 1
        for index, line in enumerate(lines[: len(original)])
        if "get_ipython()" in line and line != original[index]
    }


def code_cells(text: str) -> list[str]:
    return _code_cells(json.loads(text), text)


def _code_cells(notebook: object, text: str) -> list[str]:
    """``code_cells`` of an already parsed notebook (``text``, its JSON, for an old one's upgrade)."""
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


def notebook_code_with_spans(text: str) -> tuple[str, list[CellSpan]]:
    """``notebook_code``, and each cell's place, named by ``cell_label``."""
    labelled = labelled_code_cells(text)
    return join_code_cells_with_spans([source for _, source in labelled], [label for label, _ in labelled])


def cell_label(execution_count: object, code_cell_number: int) -> str:
    """How every message names a notebook cell, wherever it is graded (the desk, the check
    cells, the batch, Gradescope, PrairieLearn): ``In [8]``, the number the front end shows
    beside a cell that has run, else ``code cell 5``, its place among the code cells from the
    top (markdown cells not counted, as the words say). Messages add the cell's first line."""
    if type(execution_count) is int and execution_count > 0:
        return f"In [{execution_count}]"
    return f"code cell {code_cell_number}"


def labelled_code_cells(text: str) -> list[tuple[str, str]]:
    """The code cells ``code_cells`` keeps, each with its ``cell_label``."""
    notebook = json.loads(text)  # once: a notebook with its outputs may be 20 MB
    kept = _code_cells(notebook, text)
    cells = notebook.get("cells", []) if isinstance(notebook, dict) and notebook.get("nbformat", 4) >= 4 else []
    labelled: list[tuple[str, str]] = []
    remaining = list(kept)
    code_number = 0
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        code_number += 1
        if not remaining:
            break
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if source == remaining[0]:
            labelled.append((cell_label(cell.get("execution_count"), code_number), remaining.pop(0)))
    if remaining:  # an old notebook (worksheets): number the kept code cells by their order
        return [(cell_label(None, number), source) for number, source in enumerate(kept, start=1)]
    return labelled
