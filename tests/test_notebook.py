"""The notebook version of the exercise (exercises/multi_head_attention.ipynb).

Generated from the solution like the stubs; executed here with nbclient, filled in and as
committed; and, completed, a valid submission for `pytest grader` and for the batch.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbclient import NotebookClient

from grader import notebook_checks
from grader.reading import notebooks
from grader.batch import intake
from grader.handout import notebook, release, stubs
from grading import REPO_ROOT
import tiers

NOTEBOOK = REPO_ROOT / "exercises" / "multi_head_attention.ipynb"
SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
STUDENT_FUNCTIONS = ("head_dimension", "causal_mask", "AttentionHead.__init__", "AttentionHead.forward",
                     "concatenate_heads", "MultiHeadSelfAttention.__init__", "MultiHeadSelfAttention.forward")
# What the stubs' checks reach: the forward passes wait behind their constructors.
REACHED = ("head_dimension", "causal_mask", "AttentionHead.__init__", "concatenate_heads", "MultiHeadSelfAttention.__init__")


def solution_source() -> str:
    return SOLUTION.read_text(encoding="utf-8")


def telling_solution_lines() -> list[str]:
    """Lines from inside the solution regions that could not appear anywhere by chance."""
    return [line.strip() for line in stubs.solution_lines(solution_source()) if re.search(r"\w", line)]


def code_cells(nb) -> list:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def text_of(cell) -> str:
    return "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")


def run_python(*arguments: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *arguments], cwd=cwd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )


# --- generated, deterministic, current ---------------------------------------------------


def test_committed_notebook_is_what_the_generator_makes_from_the_solution():
    assert NOTEBOOK.read_text(encoding="utf-8") == notebook.notebook_text(), (
        "exercises/multi_head_attention.ipynb is stale: run `python -m grader notebook`"
    )


def test_generating_twice_gives_the_same_bytes_with_fixed_unique_ids_and_no_outputs():
    first, second = notebook.notebook_text(), notebook.notebook_text()
    assert first == second
    nb = nbformat.reads(first, as_version=4)
    nbformat.validate(nb)
    ids = [cell.id for cell in nb.cells]
    assert len(ids) == len(set(ids)), f"cell ids repeat: {ids}"
    assert all(cell.execution_count is None and cell.outputs == [] for cell in code_cells(nb))


def test_notebook_is_current_tells_a_stale_copy_from_a_fresh_one(tmp_path):
    solution, copy = tmp_path / "solution.py", tmp_path / "exercise.ipynb"
    shutil.copy(SOLUTION, solution)
    assert not notebook.notebook_is_current(solution, copy), "a missing notebook counts as current"
    copy.write_text(notebook.notebook_text(solution), encoding="utf-8")
    assert notebook.notebook_is_current(solution, copy), "a freshly written notebook counts as stale"
    solution.write_text(solution_source().replace("heads' outputs", "heads's outputs"), encoding="utf-8")
    assert not notebook.notebook_is_current(solution, copy), "a notebook of an older solution counts as current"


@pytest.mark.slow
def test_notebook_check_command_exits_one_on_a_stale_copy_and_the_command_rewrites_it(tmp_path):
    # A copy of the repository (the generator finds files beside grader/) with a stale notebook.
    shutil.copytree(REPO_ROOT / "grader", tmp_path / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "solutions").mkdir()
    shutil.copy(SOLUTION, tmp_path / "solutions" / SOLUTION.name)
    (tmp_path / "exercises").mkdir()
    stale = NOTEBOOK.read_text(encoding="utf-8").replace("Part 1: how wide", "Part 1: how broad")
    (tmp_path / "exercises" / NOTEBOOK.name).write_text(stale, encoding="utf-8")
    script = "from grader.__main__ import main; print(main(['notebook', '--check']), main(['notebook']), main(['notebook', '--check']))"
    finished = run_python("-c", script, cwd=tmp_path)
    assert finished.stdout.split()[-3:] == ["1", "0", "0"], finished.stdout + finished.stderr
    assert "stale" in finished.stderr
    assert (tmp_path / "exercises" / NOTEBOOK.name).read_text(encoding="utf-8") == NOTEBOOK.read_text(encoding="utf-8")


# --- what the notebook holds --------------------------------------------------------------


def test_the_notebook_holds_the_lesson_and_every_stub(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    lesson = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    for idea in ("head_dim = model_dim / num_heads", "causal", "sqrt(head_dim)", "output projection",
                 "specialis", "one head"):
        assert idea in lesson, f"the lesson never mentions {idea!r}"
    code = "\n".join(cell.source for cell in code_cells(nb))
    for function in STUDENT_FUNCTIONS:
        assert f'raise NotImplementedError("{function} is not written yet")' in code, function


def test_no_cell_of_the_notebook_holds_a_line_of_the_solution(tmp_path):
    # The release's own check (grader/handout/release.py), on a folder holding just the notebook.
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    assert release.leaked_solution_lines(tmp_path) == []
    (tmp_path / "filled.ipynb").write_text(notebook.notebook_text(filled=True), encoding="utf-8")
    assert release.leaked_solution_lines(tmp_path), "the check finds nothing even in the filled-in notebook"


def test_setup_and_check_cells_are_marked_and_tagged_and_no_other_cell_is():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    kinds = {}
    for cell in code_cells(nb):
        tags = cell.metadata.get("tags", [])
        marked = cell.source.startswith(notebooks.GRADER_CELL_MARKER)
        assert marked == bool(set(tags) & notebooks.GRADER_CELL_TAGS), f"cell {cell.id}: marker and tags disagree"
        kinds[cell.id] = tags[0] if tags else "exercise"
    assert list(kinds.values())[0] == notebook.SETUP_TAG, "the setup cell must come before any code"
    assert list(kinds.values())[-1] == notebook.CHECK_TAG, "the notebook must end with a check"
    parts_with_code_to_write = [part for part in notebook.lesson_parts().PARTS if part.names != (notebook.IMPORTS,)]
    assert list(kinds.values()).count(notebook.CHECK_TAG) == len(parts_with_code_to_write) + 1, kinds
    assert "import torch" in nb.cells[[c.id for c in nb.cells].index("setup")].source


def test_intake_turns_the_filled_notebook_into_the_solutions_code_without_grader_cells(tmp_path):
    path = tmp_path / "filled.ipynb"
    path.write_text(notebook.notebook_text(filled=True), encoding="utf-8")
    entry = intake.stage_entry(path, tmp_path / "staging")
    assert entry.problem == ""
    staged = entry.source_path.read_text(encoding="utf-8")
    assert "notebook_checks" not in staged and notebooks.GRADER_CELL_MARKER not in staged
    compile(staged, "staged", "exec")
    expected = notebook.definitions(notebook.exercise_source(solution_source(), filled=True))
    for name, text in expected.items():
        assert text in staged, f"{name} is missing from the staged submission"


def test_intake_drops_a_cell_tagged_as_a_check_or_marked_as_one_but_keeps_a_plain_comment(tmp_path):
    cells = [
        nbformat.v4.new_code_cell("x = 1", id="kept"),
        nbformat.v4.new_code_cell("notebook_checks.check()", id="tagged", metadata={"tags": ["grader-check"]}),
        nbformat.v4.new_code_cell("\n#| grader: check\nnotebook_checks.check()", id="marked"),
        nbformat.v4.new_code_cell("# grader: a comment of the student's\ny = 2", id="comment"),
    ]
    path = tmp_path / "work.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    entry = intake.stage_entry(path, tmp_path / "staging")
    assert entry.source_path.read_text(encoding="utf-8") == "x = 1\n\n# grader: a comment of the student's\ny = 2\n"


def test_the_checks_grade_the_latest_run_of_each_cell_and_skip_grader_cells_and_magics():
    log = notebook_checks._CellLog()
    log.add_history(["", "#| grader: setup\nimport torch", "x = 1"])
    for cell_id, source in [("a", "def f():\n    return 1"), ("check", "#| grader: check\nnotebook_checks.check()"),
                            ("b", "%matplotlib inline\ny = 2"), ("a", "def f():\n    return 2"), (None, "z = 3")]:
        log.pre_run_cell(SimpleNamespace(cell_id=cell_id, raw_cell=source))
    assert log.code() == "x = 1\n\ndef f():\n    return 2\n\ny = 2\n\nz = 3\n"


def test_definitions_refuse_a_solution_whose_definitions_the_parts_do_not_place():
    with pytest.raises(notebook.NotebookLayoutError, match="extra_helper"):
        notebook.definitions(solution_source() + "\n\ndef extra_helper():\n    return 1\n")


# --- executed with nbclient ----------------------------------------------------------------


def execute(nb) -> tuple[object, BaseException | None]:
    """Run every cell as Jupyter would, from exercises/ (where the notebook lives)."""
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    try:
        client.execute()
    except Exception as error:  # noqa: BLE001 - the tests report it
        return nb, error
    return nb, None


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # both notebooks executed in kernels, every check cell grading
def executed():
    """Both versions, executed side by side (each check runs the grader: seconds apiece)."""
    filled = nbformat.reads(notebook.notebook_text(filled=True), as_version=4)
    committed = nbformat.read(NOTEBOOK, as_version=4)
    with ThreadPoolExecutor(max_workers=2) as pool:
        solution, stubs_run = pool.map(execute, [filled, committed])
    return {"solution": solution, "stubs": stubs_run}


def problems_in(nb) -> list[str]:
    found = []
    for cell in code_cells(nb):
        for output in cell.outputs:
            if output.output_type == "error":
                found.append(f"{cell.id}: {output.ename}: {output.evalue}")
            elif output.output_type == "stream" and output.name == "stderr":
                found.append(f"{cell.id}: stderr: {output.text[:300]}")
    return found


def check_outputs(nb) -> dict[str, str]:
    return {cell.id: text_of(cell) for cell in code_cells(nb) if notebook.CHECK_TAG in cell.metadata.get("tags", [])}


def test_the_filled_in_notebook_runs_clean_and_its_last_check_shows_full_marks(executed):
    nb, error = executed["solution"]
    assert error is None, f"the filled-in notebook stopped: {error}"
    assert not problems_in(nb), problems_in(nb)
    last = list(check_outputs(nb).values())[-1]
    assert "Score so far: 100/100" in last and "Every check passes." in last, last


def test_the_stub_notebook_runs_to_the_end_and_its_checks_name_what_is_not_written(executed):
    nb, error = executed["stubs"]
    assert error is None, f"the stub notebook stopped before its end: {error}"
    assert not problems_in(nb), problems_in(nb)
    outputs = check_outputs(nb)
    assert all(outputs.values()), f"a check cell printed nothing: {outputs}"
    last = list(outputs.values())[-1]
    assert "Score so far: 0/100" in last, last
    # The forward passes are never reached: building a module calls its constructor first.
    listed = re.search(r"not written yet: (.*)", last)[1]
    assert re.findall(r"([\w.]+) \(\d+ checks? needs? it\)", listed) == list(REACHED), last
    assert "Start with head_dimension" in last, last


def test_the_training_section_shows_two_heads_specialising_and_one_losing_a_pattern_inline(executed):
    nb, _ = executed["solution"]
    cell = next(cell for cell in code_cells(nb) if cell.id == "experiment-training")
    text = text_of(cell)
    assert "The heads specialised" in text and "One head lost a retrieval pattern" in text, text
    assert any("image/png" in output.get("data", {}) for output in cell.outputs), "the picture is not shown inline"


def test_the_training_section_on_the_stubs_points_to_the_grader_and_trains_nothing(executed):
    nb, _ = executed["stubs"]
    cell = next(cell for cell in code_cells(nb) if cell.id == "experiment-training")
    text = text_of(cell)
    assert "is not ready to train" in text and "pytest grader" in text and "Training the" not in text, text
    assert not any("image/png" in output.get("data", {}) for output in cell.outputs)


def test_the_training_cell_of_a_notebook_alone_says_it_needs_the_exercise_folder(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    source = next(cell.source for cell in nb.cells if cell.id == "experiment-training")
    finished = run_python("-c", source, cwd=tmp_path)  # no exercises/ here, as in Colab
    assert finished.returncode == 0 and finished.stderr == "", finished.stderr
    assert "runs from the exercise's folder" in finished.stdout and "no points" in finished.stdout, finished.stdout


def test_an_early_check_names_the_definitions_whose_cells_have_not_run_yet(executed):
    nb, _ = executed["stubs"]
    first = check_outputs(nb)["check-head-width"]
    assert "not written yet: head_dimension" in first, first
    assert re.search(r"not defined yet \(their cells are further down, or have not run\): .*MultiHeadSelfAttention", first), first


def write_executed(executed, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, (nb, _) in executed.items():
        paths[name] = folder / f"{name}.ipynb"
        nbformat.write(nb, paths[name])
    return paths


@pytest.mark.slow
def test_completed_notebooks_are_submissions_for_pytest_grader_and_for_the_batch(executed, tmp_path):
    paths = write_executed(executed, tmp_path / "class")
    results_json = tmp_path / "results.json"
    pytest_run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "grader", "-q", "-p", "no:cacheprovider", "--results-json", str(results_json),
         "--submission", str(paths["solution"]), "--submission", str(paths["stubs"])],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
    )
    batch = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(tmp_path / "class"), "--out", str(tmp_path / "out"),
         "--quiet", "--jobs", "1", "--sandbox", "process"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    pytest_output, _ = pytest_run.communicate(timeout=300)
    assert results_json.is_file(), pytest_output[-3000:]
    scores = {name: result["score"] for name, result in json.loads(results_json.read_text())["submissions"].items()}
    assert scores == {"solution": 100, "stubs": 0}, pytest_output[-3000:]
    assert batch.returncode == 0, batch.stdout + batch.stderr
    with open(tmp_path / "out" / "gradebook.csv", newline="") as handle:
        gradebook = {row["submission"]: row["score"] for row in csv.DictReader(handle)}
    assert gradebook == {"solution": "100", "stubs": "0"}, gradebook


def test_a_check_says_so_when_the_grader_is_not_beside_the_notebook(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(notebook_checks, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(notebook_checks, "_log", notebook_checks._CellLog())
    notebook_checks._log.add_history(["x = 1"])
    notebook_checks.check()
    assert "The check could not run: the grader is not at" in capsys.readouterr().out
    with pytest.raises(notebook_checks.GradingFailed):
        notebook_checks.points("shapes", out_of=15)


@pytest.mark.slow
def test_code_that_ends_the_graders_process_is_graded_again_in_the_worker(monkeypatch, capsys):
    filled = notebook.exercise_source(solution_source(), filled=True)
    fatal = "outputs = [result.output for result in head_results]"
    assert fatal in filled
    log = notebook_checks._CellLog()
    log.add_history([filled.replace(fatal, "import os; os._exit(3)")])
    monkeypatch.setattr(notebook_checks, "_log", log)
    monkeypatch.setattr(notebook_checks, "_cache", {})
    earned = notebook_checks.points("configuration", out_of=10)  # never calls concatenate_heads
    assert earned == 10, capsys.readouterr().out
    notebook_checks.check()  # the same result, from the cache
    shown = capsys.readouterr().out
    score = int(re.search(r"Score so far: (\d+)/100", shown)[1])
    assert 0 < score < 100, shown


def test_setup_cell_finds_the_grader_from_the_notebooks_folder(tmp_path):
    # The setup cell's search, run without Jupyter from exercises/ (a kernel's working folder).
    setup = next(cell.source for cell in nbformat.read(NOTEBOOK, as_version=4).cells if cell.id == "setup")
    probe = setup.replace("import torch", "").replace("notebook_checks.start()", "print(GRADER_ROOT)")
    finished = subprocess.run([sys.executable, "-c", probe], cwd=NOTEBOOK.parent, capture_output=True, text=True,
                              timeout=60, env={**os.environ, "PYTHONPATH": ""})
    assert finished.stdout.strip() == str(REPO_ROOT), finished.stdout + finished.stderr
    lost = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert lost.returncode == 0 and lost.stderr == "", lost.stdout + lost.stderr
    assert lost.stdout.startswith("No grader/ folder beside this notebook: open the notebook from the exercise's folder"), lost.stdout


# --- the lesson for the .py file, and cells named in messages -------------------------------


def test_lesson_md_is_the_notebooks_lesson_and_is_current():
    lesson = (REPO_ROOT / "exercises" / "LESSON.md").read_text(encoding="utf-8")
    assert lesson == notebook.lesson_text(), "exercises/LESSON.md is stale: run `python -m grader notebook`"
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cells = [cell.source for cell in nb.cells  # every lesson cell but the one about the notebook's import cell
             if cell.cell_type == "markdown" and cell.id.startswith("lesson-") and cell.id != "lesson-imports"]
    # The score cell tells a notebook's student to look at the cell below; LESSON.md gives the command.
    cells = [
        source.replace(notebook.SCORE_IN_THE_NOTEBOOK, notebook.SCORE_IN_THE_PY_FILE)
        .replace(notebook.training("TRAINING_IN_THE_NOTEBOOK"), notebook.training("TRAINING_FROM_THE_PY_FILE"))
        for source in cells
    ]
    assert len(cells) == 7 and all(source in lesson for source in cells)
    assert "LESSON.md" in (REPO_ROOT / "exercises" / "multi_head_attention.py").read_text(encoding="utf-8")


@pytest.mark.slow
def test_notebook_check_fails_when_lesson_md_is_stale(tmp_path):
    for folder in ("grader", "solutions", "exercises"):
        shutil.copytree(REPO_ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__", "scaffolding.txt"))
    lesson = tmp_path / "exercises" / "LESSON.md"
    lesson.write_text(lesson.read_text(encoding="utf-8").replace("Part 1", "Part one"), encoding="utf-8")
    finished = subprocess.run([sys.executable, "-m", "grader", "notebook", "--check"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == 1 and "LESSON.md is stale" in finished.stderr, finished.stdout + finished.stderr


def test_the_guided_notebook_gives_the_constructors_and_asks_for_the_forward_passes():
    guided = notebook.notebook_text(level="guided")
    assert "AttentionHead.__init__ is not written yet" not in guided
    assert "Write `AttentionHead.forward`." in guided
    assert "Write `AttentionHead`: its constructor" in NOTEBOOK.read_text(encoding="utf-8")


def test_check_cells_name_the_cell_a_line_comes_from():
    class Shell:
        execution_count = 1

    class Run:
        def __init__(self, source, cell_id):
            self.raw_cell, self.cell_id = source, cell_id

    log = notebook_checks._CellLog(Shell())
    for count, (source, cell_id) in enumerate(
        [("#| grader: setup\nimport sys", "a"), ("import torch", "b"), ("def head_dimension(d, h):\n    return d // 0", "c")],
        start=3,
    ):
        Shell.execution_count = count + 1  # IPython 9 advances its counter before pre_run_cell
        log.pre_run_cell(Run(source, cell_id))
        log.post_run_cell(SimpleNamespace(execution_count=count))
    code = log.code()
    line = code.splitlines().index("    return d // 0") + 1
    result = {"tests": [{"message": f"at multi_head_attention.py:{line} in head_dimension: return d // 0"}], "import_error": ""}
    shown = notebook_checks.in_notebook_terms(result, log.spans())["tests"][0]["message"]
    assert shown == "at In [5] (the cell starting `def head_dimension(d, h):`), line 2 in head_dimension: return d // 0"


def test_an_exercise_without_lesson_parts_gets_one_part_of_every_definition_and_is_told_so(monkeypatch):
    """The notebook's parts, its training experiment and its last lesson are the exercise's
    (its declaration's ``lesson_parts``); one that declares none still gets a notebook and a
    LESSON.md: its imports, then one part holding every definition, which says why."""
    import dataclasses

    first = notebook.EXERCISE
    monkeypatch.setattr(notebook, "EXERCISE", dataclasses.replace(first, lesson_parts=None))
    solution = SOLUTION.read_text(encoding="utf-8")
    imports, one = notebook.parts(solution)
    assert imports.names == (notebook.IMPORTS,)
    assert set(one.names) == set(notebook.definitions(solution)) - {notebook.IMPORTS}
    nb = notebook.build_notebook(solution)
    ids = [cell.id for cell in nb.cells]
    assert "experiment-training" not in ids and "lesson-exercise" in ids and ids.count("check-exercise") == 1
    assert "declaration names no `lesson_parts`" in nb.cells[ids.index("lesson-exercise")].source
    assert "Group 7" not in notebook.lesson_markdown(solution)
