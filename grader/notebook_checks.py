"""What the notebook's check cells run: the pytest grader's own checks, on the notebook's code.

The notebook's setup cell calls ``start()``, which records every cell the kernel runs from
then on (and the ones it ran before). A check cell then

1. writes those cells, with the numbers their runs got, to a temporary notebook, which the
   grader reads as the batch reads a notebook handed in (grader/reading/notebooks.py: the setup and
   check cells, magics and shell lines dropped; the cells run one by one, as in the kernel);
2. runs
   ``python -m pytest grader --submission THAT --results-json ...`` in a fresh process, so
   the checks are exactly the grader's, and nothing the student's code does there (an
   endless loop, ``os._exit``) can stop the kernel or the notebook; when that process dies
   before writing results, the grader runs again with the student's code in its worker
   (``--isolate``), as the batch runs it;
3. prints the points per group and what failed (``check()``), or, in the nbgrader version,
   returns the points earned on one group as the cell's value (``points(group, out_of)``),
   which nbgrader takes as the cell's partial credit.

One grading run serves every check cell until the code changes (the result is cached by the
code's hash). When the front end sends cell ids (JupyterLab does), a cell run twice counts
once, with its latest source; otherwise (nbclient, nbgrader, older front ends) every run
counts, in order, as it would if the cells were pasted one after another into a file.

Imports nothing heavy (no torch) and writes nothing to stderr: nbgrader scores a test cell
zero when anything appears on its stderr.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.reading.notebooks import cell_label, in_cell_terms, join_code_cells, join_code_cells_with_spans
from grader.reading.loading import MODULE_FILE_NAME, NOTEBOOK_FILE_NAME
from grader import scoring
from grader.feedback import diagnosis_text
from grader.scoring import GROUP_TITLES, HIDDEN_GROUP, NOT_WRITTEN

REPO_ROOT = Path(__file__).resolve().parent.parent
SEED_VARIABLE = "GRADER_GRADING_SEED"  # set it to replay the hidden checks' data (nbgrader_config.py)
# In-process first, then isolated: together below nbgrader's cell time limit (nbgrader_config.py).
TIMEOUT_SECONDS = {False: 150, True: 300}
# The checks run on the CPU whatever the kernel has (Colab's GPU, say), as the batch does: with no
# CUDA device visible, code that picks `"cuda" if torch.cuda.is_available() else "cpu"` gets the
# CPU, and the grader's tensors and the student's meet on one device.
ON_THE_CPU = {"CUDA_VISIBLE_DEVICES": ""}
SHOWN_PROBLEMS = 6  # distinct failure messages shown by a check cell; the rest are counted

NOT_DEFINED = re.compile(r"expected your file to define `(?P<name>\w+)`, but it does not")


class GradingFailed(RuntimeError):
    """The grader itself could not give a result (it is missing, or its process died)."""


class GraderDied(GradingFailed):
    """The grader's process ended, or ran out of time, before writing its results."""


class _CellLog:
    """The cells the kernel ran, keyed by cell id when the front end sends one."""

    def __init__(self, shell=None) -> None:
        self.sources: dict[tuple[str, object], str] = {}
        self.labels: dict[tuple[str, object], str] = {}  # "In [7]": how the front end numbers the run
        self._runs = itertools.count()
        self._shell = shell
        self._running: tuple[str, object] | None = None

    def add_history(self, inputs: list[str]) -> None:
        for number, source in enumerate(inputs, start=1):
            key = ("run", next(self._runs))
            self.sources[key], self.labels[key] = source, cell_label(number, number)

    def pre_run_cell(self, info) -> None:
        cell_id = getattr(info, "cell_id", None)
        key = ("cell", cell_id) if cell_id else ("run", next(self._runs))
        self.sources[key] = info.raw_cell or ""
        self.labels[key] = "the cell running now"
        self._running = key

    def post_run_cell(self, result) -> None:
        """Name the cell by the number its run got, ``In [n]``: the result's own
        execution_count. The shell's counter is no guide before the run ends: IPython 9
        advances it before ``pre_run_cell``, IPython 8 after the cell."""
        count = getattr(result, "execution_count", None)
        if self._running in self.labels:
            self.labels[self._running] = f"In [{count}]" if type(count) is int and count > 0 else "a cell run without a number"

    def code(self) -> str:
        return join_code_cells(list(self.sources.values()))

    def notebook(self) -> str:
        """The cells run, as a notebook (nbformat 4) whose cells carry the numbers their runs got:
        graded as a notebook, they run one by one as in the kernel, and messages name them."""
        cells = []
        for key, source in self.sources.items():
            number = re.fullmatch(r"In \[(\d+)\]", self.labels[key])
            count = int(number[1]) if number else None
            cells.append({"cell_type": "code", "execution_count": count, "metadata": {}, "outputs": [], "source": source})
        return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})

    def spans(self) -> list:
        """Where each cell landed in the code (see grader.reading.notebooks.CellSpan), named as the
        front end numbers its runs, so that a message can name the cell."""
        return join_code_cells_with_spans(list(self.sources.values()), [self.labels[key] for key in self.sources])[1]


_log: _CellLog | None = None
_seed: int | None = None
_cache: dict[str, dict] = {}


def start() -> None:
    """Start recording the cells this kernel runs (the setup cell calls it; twice is harmless)."""
    global _log, _seed
    if _log is not None:
        return
    shell = _shell()
    if shell is None:
        print("These checks need a Jupyter (IPython) kernel; elsewhere, run `pytest grader`.")
        return
    log = _CellLog(shell)
    log.add_history(list(shell.history_manager.input_hist_raw[1:]))  # cells run before this one
    shell.events.register("pre_run_cell", log.pre_run_cell)
    shell.events.register("post_run_cell", log.post_run_cell)
    _log = log
    seed = os.environ.get(SEED_VARIABLE, "").strip()
    _seed = int(seed) if seed.isdigit() else None  # read now, before any student code runs


def check() -> None:
    """Grade the code run so far and print the points per group and what to fix."""
    try:
        result = _result()
    except GradingFailed as failure:
        print(f"The check could not run: {failure}")
        return
    _print_result(result)


def points(group: str, out_of: int) -> int:
    """The points earned on ``group`` (nbgrader: a test cell's value is its partial credit).

    Raises when the grader cannot give them, or when the course's points are not the
    grader's (``out_of``): nbgrader then scores the cell 0 and shows the error to the
    instructor, rather than a wrong mark passing silently.
    """
    with contextlib.redirect_stderr(sys.stdout):  # a stray warning on stderr would score the cell 0
        result = _result()
        title = GROUP_TITLES.get(group, group)
        if result["import_error"]:
            print(f"{title}: 0/{out_of}: your code could not be imported, so no check ran:")
            print(_indent(result["import_error"]))
            return 0
        if group not in result["groups"]:
            raise GradingFailed(
                f"the grader at {REPO_ROOT} ran no checks of the group {group!r} "
                "(are its hidden tests, grader/hidden/, missing?)"
            )
        earned, total = result["groups"][group]["earned"], result["groups"][group]["max"]
        if total != out_of:
            raise GradingFailed(
                f"this notebook gives {group!r} {out_of} points but the grader gives it {total}: "
                "regenerate the course with `python -m grader nbgrader`"
            )
        print(f"{title}: {earned}/{total}")
        failed = [test for test in result["tests"] if test["group"] == group and test["outcome"] != "passed"]
        _print_problems(failed, result.get("diagnoses", []))
        return earned


def submission_code() -> str:
    """The code the checks grade: the cells run so far, as one file (see grader.reading.notebooks)."""
    if _log is None:
        raise GradingFailed("run the setup cell at the top of the notebook first")
    return _log.code()


# --- running the grader --------------------------------------------------------------


def _result() -> dict:
    code = submission_code()
    if not code.strip():
        raise GradingFailed("there is no code to check yet: run the cells above first")
    key = hashlib.sha256(f"{_seed}\0{code}".encode("utf-8")).hexdigest()
    if key not in _cache:
        _cache.clear()  # only the latest code is ever asked for again
        cells = _log.notebook()
        try:
            result = run_grader(code, _seed, notebook=cells)
        except GraderDied:  # the code ended the grader's process: grade it as the batch does
            result = run_grader(code, _seed, isolate=True, notebook=cells)
        _cache[key] = in_notebook_terms(result, _log.spans() if _log is not None else [])
    return _cache[key]


def in_notebook_terms(result: dict, spans: list) -> dict:
    """The result with every ``multi_head_attention.py:75`` (a file the student never saw)
    replaced by the cell it points into: ``In [7] (the cell starting `...`), line 12``."""
    tests = [test | {"message": in_cell_terms(test.get("message") or "", spans)} for test in result["tests"]]
    return result | {"tests": tests, "import_error": in_cell_terms(result.get("import_error") or "", spans)}


def run_grader(code: str, seed: int | None = None, isolate: bool = False, notebook: str | None = None) -> dict:
    """Grade ``code`` with ``pytest grader`` in a fresh process; that submission's result.
    With ``notebook`` (the cells run, as a notebook's JSON), that notebook is graded, cell
    by cell as its kernel ran it, as the batch grades a notebook handed in.

    By default the student's code runs in the grader's process, as ``pytest grader`` runs it at
    a student's desk. ``isolate`` runs it in the grader's worker (``--isolate --sandbox
    process``), as the batch does: code that ends its process (``os._exit``) or never returns
    then fails the checks that reach it, not the whole run. Both give the same scores (the
    grader's own tests check that); isolation costs a second more, so it is the fallback.
    """
    if not (REPO_ROOT / "grader" / "conftest.py").is_file():
        raise GradingFailed(f"the grader is not at {REPO_ROOT / 'grader'}")
    with tempfile.TemporaryDirectory(prefix="notebook-check-") as folder:
        source = Path(folder) / (MODULE_FILE_NAME if notebook is None else NOTEBOOK_FILE_NAME)
        source.write_text(code if notebook is None else notebook, encoding="utf-8")
        results_path = Path(folder) / "results.json"
        command = [
            sys.executable, "-m", "pytest", "grader", "-q", "-p", "no:cacheprovider", "-p", "pytest_timeout",
            "--submission", str(source), "--results-json", str(results_path),
            "--exercise", scoring.EXERCISE.name,  # the exercise this kernel's checks are of, whatever its environment says now
        ]
        if isolate:
            command += ["--isolate", "--sandbox", "process"]
        if seed is not None:
            command += ["--grading-seed", str(seed)]
        try:
            finished = subprocess.run(
                command, cwd=REPO_ROOT, capture_output=True, text=True, encoding="utf-8", errors="replace",
                timeout=TIMEOUT_SECONDS[isolate], stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **ON_THE_CPU},
            )
        except subprocess.TimeoutExpired:
            raise GraderDied(f"the grader did not finish within {TIMEOUT_SECONDS[isolate]} s") from None
        if not results_path.is_file():
            tail = (finished.stdout + finished.stderr)[-2000:]
            raise GraderDied(
                f"the grader stopped (exit {finished.returncode}) before writing results; did your code end "
                f"the process (os._exit, a crash)? Its last output:\n{tail}"
            )
        document = json.loads(results_path.read_text(encoding="utf-8"))
    (result,) = document["submissions"].values()
    return result | {"grading_seed": document["grading_seed"]}


# --- showing a result ----------------------------------------------------------------


def _print_result(result: dict) -> None:
    print("Checked by the pytest grader, in a fresh process:")
    for line in result.get("notebook", []):  # cells skipped or that raised, definitions in several cells
        print(f"  {line}")
    if result["import_error"]:
        print("Your code could not be imported, so no check ran:")
        print(_indent(result["import_error"]))
        return
    width = max(len(title) for title in GROUP_TITLES.values())
    for group, points_of_group in result["groups"].items():
        mark = "✓" if points_of_group["earned"] == points_of_group["max"] else " "
        title = GROUP_TITLES.get(group, group)
        print(f"  {mark} {title:<{width}}  {points_of_group['earned']:>3}/{points_of_group['max']}")
    if HIDDEN_GROUP not in result["groups"]:
        print(f"    {GROUP_TITLES[HIDDEN_GROUP]:<{width}}  checked when your work is graded")
    print(f"Score so far: {result['score']}/{result['max_score']}")
    failed = [test for test in result["tests"] if test["outcome"] != "passed"]
    if failed:
        print()
        _print_problems(failed, result.get("diagnoses", []))
    else:
        print("Every check passes.")


def _print_problems(failed: list[dict], diagnoses: list[dict]) -> None:
    """The diagnosis of these failures first (graded with grader/hidden/ only), then the
    failures it does not explain, grouped by message: most share one cause."""
    names = {test["name"] for test in failed}
    relevant = [
        entry for entry in diagnoses
        if names & set(entry.get("explains", [])) or entry.get("first_failing_check") in names
    ]
    explained = diagnosis_text.explained_checks(relevant) & names
    for line in diagnosis_text.text_lines(relevant):
        print(line)
    if explained:
        lost = sum(test["max_points"] for test in failed if test["name"] in explained)
        print(f"✗ explained above: {diagnosis_text.checks_in_short([_short_name(n) for n in explained])} (-{lost} points)")
    failed = [test for test in failed if test["name"] not in explained]
    messages = [(test["message"] or test["outcome"]).strip() for test in failed]
    not_written = scoring.not_written(messages)
    not_defined: dict[str, int] = {}
    by_message: dict[str, list[dict]] = {}
    for test, message in zip(failed, messages):
        if NOT_WRITTEN.match(message):
            continue  # counted above
        if match := NOT_DEFINED.search(message):
            not_defined[match["name"]] = not_defined.get(match["name"], 0) + 1
        else:
            by_message.setdefault(message, []).append(test)
    if not_written:
        print("✗ not written yet: " + ", ".join(f"{name} ({_needing(count)})" for name, count in not_written.items()))
        print(f"  Start with {next(iter(not_written))} (listed in the order the functions build on each other).")
    if not_defined:
        names = ", ".join(f"{name} ({_checks(count)})" for name, count in not_defined.items())
        print(f"✗ not defined yet (their cells are further down, or have not run): {names}")
    for message, tests in list(by_message.items())[:SHOWN_PROBLEMS]:
        points_lost = sum(test["max_points"] for test in tests)
        others = f" and {len(tests) - 1} more" if len(tests) > 1 else ""
        print(f"✗ {_short_name(tests[0]['name'])}{others} (-{points_lost} points)")
        print(_indent(_clip(message)))
    hidden = len(by_message) - SHOWN_PROBLEMS
    if hidden > 0:
        print(f"... and {hidden} more kinds of failure: fix these first, or run `pytest grader` to see them all.")


def _checks(count: int) -> str:
    return f"{count} check" + ("s" if count != 1 else "")


def _needing(count: int) -> str:
    return "1 check needs it" if count == 1 else f"{count} checks need it"


def _short_name(name: str) -> str:
    """``test_x[multi_head_attention-b1-s4]`` -> ``test_x[b1-s4]`` (the submission's name says nothing)."""
    return diagnosis_text.check_name(name, MODULE_FILE_NAME.removesuffix(".py"))


def _clip(message: str, lines: int = 8) -> str:
    kept = message.splitlines()
    return "\n".join(kept[:lines] + (["..."] if len(kept) > lines else []))


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()
