"""The tree shows the architecture: each layer in its folder, imports going down the layers.

Layers, lowest first: the student's grader (the grader package's own modules, the exercise,
feedback and reading), the sandbox, the term, the class view, the batch and the LMS, the
hand-outs, the platforms; the hidden tests sit beside the student's grader and are imported
by nobody but pytest. A module may import its own layer and those below it, never one above:
the student release ships the first layer alone, so an upward import would break it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader import STUDENT_SUBPACKAGES
from grading import REPO_ROOT

GRADER = REPO_ROOT / "grader"
# Which layers each folder may import (besides its own and the student's grader).
ALLOWED = {
    "": {"sandbox"},  # the student's grader: the sandbox only on --isolate, lazily (conftest.py)
    "hidden": set(),
    "sandbox": set(),
    "term": set(),
    "class_view": {"term"},
    "batch": {"sandbox", "term", "class_view"},
    "lms": {"term", "class_view"},
    "handout": set(),
    "platforms": {"sandbox", "term", "class_view", "batch", "handout"},
}
LAYERS = set(ALLOWED) - {""}


def _layer_of(path: Path) -> str:
    relative = path.relative_to(GRADER)
    if len(relative.parts) == 1 or relative.parts[0] in STUDENT_SUBPACKAGES:
        return ""  # the student's grader: the package's own modules and its student subfolders
    return relative.parts[0]


def _imported_layers(path: Path) -> set[tuple[str, int]]:
    """(layer, line) for every `grader.<layer>` this module imports, at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("grader"):
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "grader" and len(parts) > 1 and parts[1] in LAYERS:
                found.add((parts[1], node.lineno))
    return found


MODULES = sorted(GRADER.rglob("*.py"))
STUDENT_GRADER = [path for path in MODULES if _layer_of(path) == ""]


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.relative_to(GRADER).as_posix())
def test_imports_go_down_the_layers(path):
    layer = _layer_of(path)
    upward = sorted(
        f"line {line}: imports grader.{imported}"
        for imported, line in _imported_layers(path)
        if imported != layer and imported not in ALLOWED[layer]
    )
    assert not upward, f"grader/{path.relative_to(GRADER).as_posix()} ({layer or 'student grader'}) reaches up: {upward}"


def test_the_student_grader_imports_the_sandbox_only_inside_a_function():
    for path in STUDENT_GRADER:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # top-level statements only
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("grader.sandbox"):
                pytest.fail(f"{path.name} imports the sandbox at module level (line {node.lineno})")


def test_the_layout_check_sees_an_upward_import(tmp_path, monkeypatch):
    # The check itself must be able to fail: a student-grader module importing the batch.
    source = "def f():\n    from grader.batch import intake\n    from grader.handout import stubs\n"
    probe = tmp_path / "grader" / "probe.py"
    probe.parent.mkdir()
    probe.write_text(source)
    monkeypatch.setattr(__import__(__name__), "GRADER", tmp_path / "grader")
    assert _imported_layers(probe) == {("batch", 2), ("handout", 3)}
    with pytest.raises(AssertionError, match="reaches up"):
        test_imports_go_down_the_layers(probe)


def test_the_top_of_the_grader_shows_its_layers_at_a_glance():
    # Fifteen modules or fewer beside the folders (the visible tests aside): what speaks and what
    # reads a submission have their own folders, so a new module finds its place, not the top.
    top = sorted(path.name for path in GRADER.glob("*.py") if not path.name.startswith("test_"))
    assert len(top) <= 15, f"{len(top)} modules at the top of grader/: {top}"


def test_every_sentence_module_lives_where_its_rule_is_written():
    # The folder that speaks states its rule; a module that builds hints or diagnoses elsewhere
    # would escape it. A new module that speaks joins these names.
    rule = ast.get_docstring(ast.parse((GRADER / "feedback" / "__init__.py").read_text(encoding="utf-8")))
    assert "every sentence carries the evidence that licenses it" in rule
    speaking = {"premises", "diagnosis_text", "root_causes", "attention_comparison", "errors", "markdown"}
    assert {path.stem for path in (GRADER / "feedback").glob("*.py")} >= speaking
    assert not [path for path in GRADER.glob("*.py") if path.stem in speaking | {"feedback"}]


def test_every_layer_folder_is_a_package_that_says_what_it_holds():
    for layer in [*LAYERS, *STUDENT_SUBPACKAGES]:
        init = GRADER / layer / "__init__.py"
        assert init.is_file(), layer
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), f"grader/{layer}/__init__.py has no docstring"


def test_the_batch_coordinator_and_the_class_report_start_without_torch():
    # torch costs most of a second to import: the batch's own process only stages entries,
    # starts shards and reads their results, and the report and export read plain data.
    import subprocess
    import sys

    code = (
        "import sys; import grader.batch.run, grader.class_view.report, grader.class_view.feedback_pages, grader.lms.export; "
        "print('torch' in sys.modules)"
    )
    completed = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert completed.stdout.strip() == "False", completed.stdout + completed.stderr


def test_a_platforms_script_starts_without_what_only_its_shard_or_a_class_needs():
    # Gradescope and PrairieLearn grade one submission a run, on half a CPU: every second of
    # CPU the script spends before its shard starts is two seconds a student waits. pytest and
    # torch belong to the shard, copydetect (which imports matplotlib.pyplot) to a class of two
    # or more, matplotlib to the class report.
    import subprocess
    import sys

    heavy = ("pytest", "torch", "copydetect", "matplotlib")
    code = (
        "import sys; import grader.batch.run, grader.platforms.gradescope, grader.platforms.prairielearn; "
        f"print([name for name in {heavy!r} if name in sys.modules])"
    )
    completed = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert completed.stdout.strip() == "[]", completed.stdout + completed.stderr
