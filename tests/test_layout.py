"""The tree shows the architecture: each layer in its folder, imports going down the layers.

Layers, lowest first: the student's grader (the grader package's own modules, the seam, the
exercises, feedback, reading and the session), the sandbox, the term, the class view, the batch and the LMS, the
hand-outs, the platforms; the hidden tests sit beside the student's grader and are imported
by nobody but pytest. A module may import its own layer and those below it, never one above:
the student release ships the first layer alone, so an upward import would break it. Inside a
layer, its folders and the package's top-level modules stack the same way: no two import each
other, directly or round a circle (feedback/ sits below submission.py, which imports it). No
module imports itself back through others (an import circle), and no folder holds more than
MAX_MODULES modules: a folder that grows past it does more than one job.
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
    if relative.parts[0] == "exercises" and "hidden" in relative.parts[:-1]:
        return "hidden"  # an exercise's hidden part: never shipped, beside the engine's hidden/
    if len(relative.parts) == 1 or relative.parts[0] in STUDENT_SUBPACKAGES:
        return ""  # the student's grader: the package's own modules and its student subfolders
    return relative.parts[0]


def _imported_names(path: Path) -> list[tuple[list[str], int]]:
    """(name's parts, line) for every ``grader...`` name this module imports, at any depth of its code."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("grader"):
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [(name.split("."), node.lineno) for name in names if name.split(".")[0] == "grader"]
    return found


def _imported_layers(path: Path) -> set[tuple[str, int]]:
    """(layer, line) for every `grader.<layer>` this module imports, at any depth of its code."""
    return {(parts[1], line) for parts, line in _imported_names(path) if len(parts) > 1 and parts[1] in LAYERS}


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


def _unit_of(path: Path, grader: Path) -> str:
    """A module's place in the stack: its folder under grader/, or the module itself at the top.
    An exercise's package is one unit above the engine (the engine imports none of its modules:
    it reaches them through the declaration), its hidden/ folder another."""
    relative = path.relative_to(grader)
    if relative.parts[0] == "exercises" and len(relative.parts) > 2:
        return "/".join(relative.parts[:3] if relative.parts[2] == "hidden" and len(relative.parts) > 3 else relative.parts[:2])
    return relative.parent.as_posix() if len(relative.parts) > 1 else relative.stem


def _imported_units(path: Path, grader: Path) -> dict[str, int]:
    """The units this module imports (at any depth of its code), each with a line that does."""
    found = {}
    for parts, line in _imported_names(path):
        # The longest prefix that is a module or a package of grader/ (``grader.data.Config``: data.py).
        for end in range(len(parts), 1, -1):
            target = grader.joinpath(*parts[1:end])
            module = target.with_suffix(".py") if target.with_suffix(".py").is_file() else target / "__init__.py"
            if module.is_file():
                found.setdefault(_unit_of(module, grader), line)
                break
    return found


def import_circles(grader: Path = GRADER) -> list[list[str]]:
    """Each set of units that import one another round a circle, with a line that closes each step."""
    edges: dict[str, dict[str, str]] = {}
    for path in sorted(grader.rglob("*.py")):
        unit = _unit_of(path, grader)
        for imported, line in _imported_units(path, grader).items():
            if imported != unit:
                edges.setdefault(unit, {}).setdefault(imported, f"{path.relative_to(grader).as_posix()}:{line}")
    # Tarjan's strongly connected components: a component of two or more units is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        for imported in edges.get(unit, {}):
            if imported not in index:
                visit(imported)
                low[unit] = min(low[unit], low[imported])
            elif imported in stack:
                low[unit] = min(low[unit], index[imported])
        if low[unit] == index[unit]:
            component = []
            while not component or component[-1] != unit:
                component.append(stack.pop())
            if len(component) > 1:
                circles.append(sorted(
                    f"{a} -> {b} ({where})" for a in component for b, where in edges.get(a, {}).items() if b in component
                ))

    for unit in sorted(edges):
        if unit not in index:
            visit(unit)
    return circles


def test_no_folder_or_top_level_module_imports_one_that_imports_it_back():
    # A loop between two folders (feedback/ and submission.py once) means neither is below the
    # other: move what both need into the lower one.
    assert not import_circles(), import_circles()


def test_the_circle_check_sees_a_loop_between_a_folder_and_a_module(tmp_path):
    grader = tmp_path / "grader"
    (grader / "feedback").mkdir(parents=True)
    (grader / "feedback" / "__init__.py").write_text("")
    (grader / "feedback" / "causes.py").write_text("from grader.handle import Error\n")
    (grader / "handle.py").write_text("def f():\n    from grader.feedback import causes\n")
    (grader / "data.py").write_text("from grader.feedback.causes import x\n")
    assert import_circles(grader) == [["feedback -> handle (feedback/causes.py:1)", "handle -> feedback (handle.py:2)"]]


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


MAX_MODULES = 12  # .py files of one folder, __init__.py, conftest.py and test modules included


def _crowded_folders(grader: Path) -> list[str]:
    counts = {folder: len(list(folder.glob("*.py"))) for folder in [grader, *grader.rglob("*")] if folder.is_dir()}
    return sorted(f"{folder.relative_to(grader.parent).as_posix()}: {n}" for folder, n in counts.items() if n > MAX_MODULES)


def test_no_folder_of_the_grader_holds_more_than_a_dozen_modules():
    # Each folder one job (running a class, the term, the LMS, the class view, the platforms...):
    # a new module finds its folder, and a folder past a dozen is doing two jobs.
    assert not _crowded_folders(GRADER)


def _module_name(path: Path, grader: Path) -> str:
    parts = path.relative_to(grader.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The grader's modules this one imports, at any depth of its code (a lazy import inside a
    function counts: it closes a circle all the same), ``if TYPE_CHECKING:`` blocks aside."""
    found = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for statement in child.orelse:
                    visit(statement)
                continue
            if isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                for alias in child.names:
                    found.add(f"{child.module}.{alias.name}" if f"{child.module}.{alias.name}" in modules else child.module)
            elif isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found & modules


def _import_circles(grader: Path) -> list[list[str]]:
    """Every set of modules that import one another round in a circle (the strongly connected
    components of the import graph with more than one module), each sorted."""
    paths = {_module_name(path, grader): path for path in grader.rglob("*.py")}
    graph = {name: sorted(_imported_modules(path, set(paths)) - {name}) for name, path in paths.items()}
    order, low, stack, on_stack, circles = {}, {}, [], set(), []

    def connect(name):  # Tarjan's algorithm
        order[name] = low[name] = len(order)
        stack.append(name)
        on_stack.add(name)
        for other in graph[name]:
            if other not in order:
                connect(other)
                low[name] = min(low[name], low[other])
            elif other in on_stack:
                low[name] = min(low[name], order[other])
        if low[name] == order[name]:
            component = []
            while not component or component[-1] != name:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                circles.append(sorted(component))

    for name in sorted(graph):
        if name not in order:
            connect(name)
    return sorted(circles)


def test_no_module_of_the_grader_imports_itself_back_through_others():
    assert not _import_circles(GRADER)


def test_the_layout_checks_see_a_circle_and_a_crowded_folder(tmp_path):
    # Both checks must be able to fail: two modules importing each other (one lazily), and a
    # folder of thirteen.
    package = tmp_path / "grader" / "crowded"
    package.mkdir(parents=True)
    (tmp_path / "grader" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from grader.crowded.b import LIMIT\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from grader.crowded import c\n"
                                  "LIMIT = 1\ndef f():\n    from grader.crowded import a\n")
    (package / "c.py").write_text("from grader.crowded import b\n")
    assert _import_circles(tmp_path / "grader") == [["grader.crowded.a", "grader.crowded.b"]]
    assert _crowded_folders(tmp_path / "grader") == []
    for n in range(9):
        (package / f"m{n}.py").write_text("")
    assert _crowded_folders(tmp_path / "grader") == ["grader/crowded: 13"]


def test_every_sentence_module_lives_where_its_rule_is_written():
    # The folder that speaks states its rule; a module that builds hints or diagnoses elsewhere
    # would escape it. A new module that speaks joins these names.
    rule = ast.get_docstring(ast.parse((GRADER / "feedback" / "__init__.py").read_text(encoding="utf-8")))
    assert "every sentence carries the evidence that licenses it" in rule
    speaking = {"diagnosis_text", "root_causes", "attention_comparison", "errors", "markdown"}
    assert {path.stem for path in (GRADER / "feedback").glob("*.py")} >= speaking
    assert not [path for path in GRADER.glob("*.py") if path.stem in speaking | {"feedback"}]
    # An exercise's hints speak too (their premises): its package states the same rule.
    for package in sorted((GRADER / "exercises").glob("*/premises.py")):
        said = ast.get_docstring(ast.parse((package.parent / "__init__.py").read_text(encoding="utf-8")))
        assert "every sentence carries the evidence that licenses it" in said, package.parent.name


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


# --- the seam: the engine reaches an exercise only through its declaration -----------------------

def exercise_names(declaration) -> tuple[set[str], set[str]]:
    """What names an exercise in code: its student file's stem and each function's name or class
    (words), and each group's name written as a string. A one-word group (``shapes``,
    ``reference``) is left out of the strings: the engine uses such words of its own (a
    comparison's reference side)."""
    words = {declaration.module_name} | {function.split(".")[0] for function in declaration.functions}
    return words, {group.name for group in declaration.groups if "_" in group.name}


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.add(first.lineno)
    return lines


def names_of_an_exercise_in(path: Path, words: set[str], groups: set[str]) -> set[str]:
    """The exercise's names this module's code holds (comments and docstrings, written for
    people, aside), and ``import grader.exercises...`` for each import of an exercise's package."""
    import io
    import re
    import tokenize

    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    prose = _docstring_lines(tree)
    found = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME and token.string in words:
            found.add(token.string)
        elif token.type == tokenize.STRING and token.start[0] not in prose:
            found |= {word for word in words if re.search(rf"\b{re.escape(word)}\b", token.string)}
            with_value = ast.literal_eval(token.string) if not token.string.lstrip("rbuRBU").startswith(("f", "F")) else None
            if with_value in groups:
                found.add(with_value)
    for node in ast.walk(tree):
        imported = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        found |= {f"import {name}" for name in imported if name.startswith("grader.exercises")}
    return found


def engine_modules_naming_an_exercise(grader: Path = GRADER) -> dict[str, set[str]]:
    """Each module outside grader/exercises/ that names an exercise, with the names it uses."""
    from grader.seam import registry

    named = [exercise_names(registry.exercise(name)) for name in registry.names()]
    found = {}
    for path in sorted(grader.rglob("*.py")):
        relative = path.relative_to(grader)
        if relative.parts[0] == "exercises":
            continue
        names = set().union(*(names_of_an_exercise_in(path, words, groups) for words, groups in named))
        if names:
            found[relative.as_posix()] = names
    return found


def test_no_engine_module_names_an_exercise():
    """No module outside grader/exercises/ names an exercise (its student file, a function or
    class it declares, a group, or an import of its package): the engine reaches each one through
    its declaration (grader/seam/registry.py), and an exercise added is a folder added."""
    found = {module: sorted(names) for module, names in engine_modules_naming_an_exercise().items()}
    assert not found, f"engine modules naming an exercise: reach it through its declaration (grader/seam/registry.py): {found}"


def test_the_naming_check_sees_a_file_a_function_a_group_and_an_import_but_not_prose(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""Grades multi_head_attention.py: causal_mask first."""\n'
        "# AttentionHead, in a comment\n"
        "from grader.exercises.multi_head_attention import data\n"
        "STAGED = 'multi_head_attention.py'\n"
        "def f(submission):\n"
        "    return submission.causal_mask(3), 'head_distinctness', 'shapes'\n"
    )
    words, groups = exercise_names(__import__("grader.seam.registry", fromlist=["x"]).exercise("multi_head_attention"))
    assert names_of_an_exercise_in(probe, words, groups) == {
        "import grader.exercises.multi_head_attention", "multi_head_attention", "causal_mask", "head_distinctness",
    }


def test_every_exercise_of_the_grader_declares_itself_and_its_visible_checks_are_its_groups():
    from grader.seam import registry

    assert registry.names(), "grader/exercises/ holds no exercise"
    for name in registry.names():
        declaration = registry.exercise(name)
        assert declaration.name == name and declaration.package == GRADER / "exercises" / name
        visible = {path.stem.removeprefix("test_") for path in declaration.visible_checks.glob("test_*.py")}
        assert visible == {group.name for group in declaration.groups if not group.hidden}, name
