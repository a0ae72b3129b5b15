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

from grader.reading import parser_limits
from grader.seam import registry

# IPython line magics (%), shell escapes (!) and help (?): not Python, so they would not import.
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


# Cell magics whose body IPython runs as Python in the notebook's namespace, so that what the
# body defines is defined afterwards (IPython 9.18, IPython/core/magics/execution.py):
# ``%%time`` compiles the body and execs it in ``shell.user_ns`` (ExecutionMagics.time),
# ``%%capture`` passes it to ``shell.run_cell`` (ExecutionMagics.capture), ``%%prun`` runs it
# under the profiler with ``shell.user_ns`` as its namespace (ExecutionMagics.prun).
PYTHON_CELL_MAGICS = frozenset({"time", "capture", "prun"})
# Every other cell magic runs something that is not the notebook's Python, or keeps nothing
# of it: ``%%timeit`` execs its body many times inside a function ``inner`` it defines in a
# namespace of its own (ExecutionMagics.timeit: "ns = {}"), so nothing the body defines
# survives the cell; ``%%bash``, ``%%sh``, ``%%script`` hand it to another program
# (IPython/core/magics/script.py); ``%%writefile`` writes it to a file (osm.py);
# ``%%html``, ``%%javascript``, ``%%latex``, ``%%markdown``, ``%%svg`` display it (display.py);
# ``%%debug`` runs it under the interactive debugger, which waits for a person at the keyboard.
# Such a cell is skipped, and said to be.
WHAT_CELL_MAGICS_DO = {
    "timeit": "it times its body inside a function of its own, so nothing the body defines is kept",
    "bash": "it runs a shell script", "sh": "it runs a shell script", "script": "it runs another program",
    "writefile": "it writes a file", "file": "it writes a file",
    "html": "it displays HTML", "javascript": "it runs JavaScript in the browser", "js": "it runs JavaScript in the browser",
    "latex": "it displays LaTeX", "markdown": "it displays Markdown", "svg": "it displays an SVG picture",
    "debug": "it runs its body under the interactive debugger",
}
CELL_MAGIC = re.compile(r"%%\s*(?P<name>[\w!]*)")


@dataclass(frozen=True)
class CellSpan:
    """Where one cell's code landed in the joined file, and how the student knows that cell.

    A cell the grader does not run (a cell magic that is not Python) has no lines
    (``first_line`` 0) and says why in ``skipped``."""

    first_line: int  # 1-based line of the joined file where the cell's code starts
    last_line: int
    label: str  # "In [7]" (its run in a kernel) or "code cell 3" (see cell_label)
    first_code_line: str  # the cell's first line of code, to recognise it
    line_offsets: tuple[int, ...]  # the cell's own line number for each line of its code in the file
    skipped: str = ""  # why the cell is not run ("%%bash: it runs a shell script"), "" when it is

    def named(self) -> str:
        """``In [7] (the cell starting `class AttentionHead(nn.Module):`)``: how messages name it."""
        first = self.first_code_line if len(self.first_code_line) <= 60 else self.first_code_line[:57] + "..."
        return f"{self.label} (the cell starting `{first}`)"


def cell_magic_of(source: str) -> tuple[str, str] | None:
    """A cell magic's name and, when IPython runs its body as Python, "" (else why not);
    None when the cell is no cell magic. Like IPython, only a first line can be one."""
    first = source.lstrip("\n").split("\n", 1)[0]
    match = CELL_MAGIC.match(first.lstrip())
    if match is None:
        return None
    name = match["name"]
    if name in PYTHON_CELL_MAGICS:
        return name, ""
    return name, WHAT_CELL_MAGICS_DO.get(name, "it is a cell magic that does not run Python here")


def join_code_cells(sources: list[str]) -> str:
    """Code cells as one Python file: the grader's cells, cell magics that do not run Python and
    magic, shell or help lines dropped, the rest joined by blank lines. The notebook's check cells
    (grader/notebook_checks.py) rebuild the file they grade with this same function."""
    return join_code_cells_with_spans(sources)[0]


def join_code_cells_with_spans(sources: list[str], labels: list[str] | None = None) -> tuple[str, list[CellSpan]]:
    """``join_code_cells``, and where each cell's code lies in the file (for messages that name
    the cell, not a line of a file the student never saw, and for running the file cell by
    cell as a kernel does: grader/reading/loading.py, ``run_cells``). Cells skipped for their cell
    magic are among the spans, with no lines."""
    labels = labels or [cell_label(None, number) for number in range(1, len(sources) + 1)]
    kept: list[str] = []
    spans: list[CellSpan] = []
    line = 1
    for source, label in zip(sources, labels):
        source = source.replace("\r\n", "\n").replace("\r", "\n")
        if is_grader_cell(source):
            continue
        lines = source.split("\n")
        dropped: set[int] = set()
        if (magic := cell_magic_of(source)) is not None:
            name, why_not = magic
            magic_line = next(number for number, text in enumerate(lines, start=1) if text.strip())
            if why_not:
                first = lines[magic_line - 1].strip()
                spans.append(CellSpan(0, 0, label, first, (), f"%%{name}: {why_not}"))
                continue
            # The body is the cell's Python: the magic's own line goes, as a magic line does.
            dropped = set(range(1, magic_line + 1))
            body = "\n".join(lines[magic_line:])
            dropped |= {magic_line + number for number in magic_lines(body)}
        else:
            dropped = magic_lines(source)
        numbered = [(number, text) for number, text in enumerate(lines, start=1) if number not in dropped]
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


# Where Python names a line of the graded file: a traceback's frame ("multi_head_attention.py:75")
# and a SyntaxError's message ("invalid syntax (multi_head_attention.py, line 25)").
_STUDENT_FILE = re.escape(registry.exercise().student_file)
FILE_LINE = re.compile(_STUDENT_FILE + r"(?::|, line )(\d+)")


def cell_at(line: int, spans: list[CellSpan]) -> CellSpan | None:
    """The cell whose code holds ``line`` of the joined file."""
    return next((span for span in spans if span.first_line <= line <= span.last_line and span.first_line), None)


def in_cell_terms(text: str, spans: list[CellSpan]) -> str:
    """Replace ``multi_head_attention.py:75`` in ``text`` by the cell it came from:
    ``cell 7 (the cell starting `class AttentionHead(nn.Module):`), line 12``."""

    def cell_of(match: re.Match) -> str:
        line = int(match[1])
        span = cell_at(line, spans)
        if span is None:
            return match[0]
        return f"{span.named()}, line {span.line_offsets[line - span.first_line]}"

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
        parser_limits.parse(source, locate=False)
        return set()
    except parser_limits.TooDeeplyNested:
        # A kernel cannot run it either (the grading says so, in its cell): the plain rule, in
        # a millisecond where IPython's transformer takes a second on 100,000 tokens.
        return _plain_magic_lines(source)
    except (SyntaxError, ValueError):
        pass
    original = source.split("\n")
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        lines = TransformerManager().transform_cell(source).split("\n")
    except Exception:  # noqa: BLE001 - no IPython, or input it cannot transform: the plain rule
        return _plain_magic_lines(source)
    if len(lines) < len(original):  # it joined lines (a magic continued with a backslash)
        lines += [""] * (len(original) - len(lines))
    return {
        index + 1
        for index, line in enumerate(lines[: len(original)])
        if "get_ipython()" in line and line != original[index]
    }


def _plain_magic_lines(source: str) -> set[int]:
    """Every line that starts with a magic, shell or help prefix: the rule without IPython."""
    return {number for number, text in enumerate(source.split("\n"), start=1) if text.lstrip().startswith(MAGIC_PREFIXES)}


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


# --- what a message says about how the notebook was run ----------------------------------


def cells_to_run(spans: list[CellSpan]) -> list[tuple[int, int]]:
    """The first and last line of each cell the grader runs, in order (grader.reading.loading.run_cells)."""
    return [(span.first_line, span.last_line) for span in spans if span.first_line]


def skipped_cells(spans: list[CellSpan]) -> list[str]:
    """One line per cell not run for its cell magic."""
    return [f"{span.named()} was skipped: {span.skipped}." for span in spans if span.skipped]


STUDENT_LINE = re.compile(_STUDENT_FILE + r":(?P<line>\d+)(?: in (?P<function>[\w.<>]+))?")
SYNTAX_ERROR_PLACE = re.compile(r" \(" + _STUDENT_FILE + r", line \d+\)")


def failed_cell(spans: list[CellSpan], first_line: int, type_name: str, message: str, location: str) -> str:
    """One line for a cell that raised while the notebook ran: which cell, what it raised and
    where (a function of another cell, maybe), and that the run went on."""
    span = cell_at(first_line, spans)
    cell = span.named() if span is not None else "a cell"
    said = SYNTAX_ERROR_PLACE.sub("", (message.splitlines() or [""])[0])  # the place is said below, in the cell's terms
    said = said if len(said) <= 150 else said[:147] + "..."
    where = ""
    if (found := STUDENT_LINE.match(location)) and (place := cell_at(int(found["line"]), spans)) is not None:
        line = f"line {place.line_offsets[int(found['line']) - place.first_line]}"
        function = f" in {found['function']}" if found["function"] and found["function"] != "<module>" else ""
        where = f" at {line}{function}" if place == span else f" at {place.named()}, {line}{function}"
    why = " (input() gets no answer when the notebook is graded: nobody is there to type)" if type_name == "EOFError" else ""
    return f"{cell} raised {type_name}: {said}{where}{why}; the grading ran the cells after it, as a kernel does."


def defined_names(code: str, span: CellSpan, meant: bool = False) -> set[str]:
    """The functions and classes a cell defines at its top level; with ``meant``, also those a
    cell that does not compile means to define (its ``def`` and ``class`` lines)."""
    lines = code.split("\n")
    try:
        tree = parser_limits.parse("\n".join(lines[span.first_line - 1:span.last_line]), locate=False)
    except (SyntaxError, ValueError):
        tree = None
    if tree is None:
        if not meant:
            return set()
        return set(re.findall(r"^(?:def|class)\s+(\w+)", "\n".join(lines[span.first_line - 1:span.last_line]), re.MULTILINE))
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def why_not_defined(name: str, code: str, spans: list[CellSpan], failed_lines: set[int]) -> str:
    """Why a notebook does not define ``name`` when a cell that defines it raised (``failed_lines``,
    the first lines of the cells that raised); "" when no such cell defines it."""
    for span in spans:
        if span.first_line in failed_lines and name in defined_names(code, span, meant=True):
            return (f"`{name}` is not defined: its cell, {span.named()}, raised an error before defining it "
                    "(see how your notebook ran)")
    return ""


def redefinitions(code: str, spans: list[CellSpan]) -> list[str]:
    """One line per function or class defined in several cells, naming the cell whose
    definition was graded: the last one, since the cells run from the top, and a later
    definition replaces an earlier one, as in a kernel run from the top."""
    defined: dict[str, list[CellSpan]] = {}
    for span in spans:
        if span.first_line:
            for name in sorted(defined_names(code, span)):
                defined.setdefault(name, []).append(span)
    said = []
    for name, cells in defined.items():
        if len(cells) > 1:
            others = ", ".join(span.label for span in cells[:-1])
            said.append(
                f"`{name}` is defined in {len(cells)} cells ({others} and {cells[-1].label}): the grader graded the "
                f"definition in {cells[-1].named()}, the last one from the top, which replaces the others when the "
                "cells run in order."
            )
    return said
