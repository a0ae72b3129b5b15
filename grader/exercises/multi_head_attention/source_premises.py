"""Premises read from the student's source: what the code shows it does, as text, never run.

A hint or a fix that names a cause in the student's code ("a torch.manual_seed before each head",
"a copy of one head", "masked_fill's result thrown away") is said only where the code makes that
call: the numbers show *that* two heads start alike, the source shows *how*. Each premise here
parses the code (``ast``, within Python's parser limits: grader/reading/parser_limits.py) and
looks for the call itself, where it can make the cause: a seed at the top of a file, the usual
"seed once, outside", is not a seed before each head.
"""

from __future__ import annotations

import ast
from pathlib import Path

from grader.reading import notebooks, parser_limits

# The classes whose construction builds the heads (the contract's names).
MODEL_CLASSES = ("AttentionHead", "MultiHeadSelfAttention")


def student_code(path) -> str:
    """The Python code of a submission's file, read as text (never run here): a notebook's code
    cells joined; "" when it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        return notebooks.notebook_code(text) if str(path).endswith(".ipynb") else text
    except (OSError, ValueError):
        return ""


def _tree(code: str) -> ast.Module | None:
    try:
        return parser_limits.parse(code, locate=False)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _called_name(call: ast.Call) -> str:
    """``deepcopy`` for ``copy.deepcopy(...)`` and ``deepcopy(...)`` alike: the name called."""
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) else ""


def _model_code(tree: ast.Module) -> list[ast.AST]:
    """The contract's classes and the functions of the file their code calls by name (a helper
    that builds a head): the code that runs when the module is built."""
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name in MODEL_CLASSES]
    called = {_called_name(node) for cls in classes for node in ast.walk(cls) if isinstance(node, ast.Call)}
    helpers = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in called]
    return [*classes, *helpers]


def _calls_in_the_model(code: str, names: set[str]) -> bool:
    tree = _tree(code)
    return tree is not None and any(
        isinstance(node, ast.Call) and _called_name(node) in names for part in _model_code(tree) for node in ast.walk(part)
    )


def seeds_in_the_model(code: str) -> bool:
    """The model's own code calls manual_seed (torch.manual_seed, torch.random.manual_seed): a seed
    before each head, or inside one, gives every head the same starting numbers."""
    return _calls_in_the_model(code, {"manual_seed"})


def copies_a_head(code: str) -> bool:
    """The model's own code deep-copies (copy.deepcopy): a copy of one head starts with that
    head's weights. (copy.copy of a module keeps its very tensors: that is sharing, which the
    numbers show by themselves.)"""
    return _calls_in_the_model(code, {"deepcopy"})


def loads_one_heads_weights(code: str) -> bool:
    """The model's own code loads weights into a head (load_state_dict, a tensor's copy_): one
    head's weights loaded into another make them equal."""
    return _calls_in_the_model(code, {"load_state_dict", "copy_"})


def discards_masked_fill(code: str) -> bool:
    """The code calls .masked_fill(...) as a statement of its own, its result thrown away."""
    tree = _tree(code)
    return tree is not None and any(
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "masked_fill"
        for node in ast.walk(tree)
    )
