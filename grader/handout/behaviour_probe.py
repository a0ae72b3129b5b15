"""Run by behaviour_scan in its own interpreter: ``python -I behaviour_probe.py ROOT CASE [SECONDS]``.

Imports every module of ROOT/grader, calls every function found there with arguments chosen
from CASE's candidates (by the parameter's name where it says what it takes, any candidate
otherwise), and prints one JSON line: how many calls were made, and which calls returned a
tensor equal to one of CASE's expected results, and which functions its time limit stopped
before they had their calls. Nothing of the instructor's repository is importable here (``-I``
leaves the working directory and PYTHONPATH out; ROOT comes first).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import io
import itertools
import json
import signal
import sys
from pathlib import Path

CALLS_PER_FUNCTION = 2000
# Seconds (of the clock: a call may wait, on a network probe's thread, say) that one function's
# calls may take; a function stopped by it is reported.
SECONDS_PER_FUNCTION = 5
# A parameter whose name says what it takes gets those candidates only.
BY_NAME = (
    (("mask", "allowed"), ("causal mask", "custom mask")),
    (("input", "x"), ("inputs", "inputs (float64)")),
    (("param", "state"), ("module parameters", "head parameters")),
    (("model_dim",), ("model_dim",)),
    (("num_heads", "heads"), ("num_heads",)),
    (("head_dim",), ("head_dim",)),
    (("seq",), ("seq",)),
    (("batch",), ("batch",)),
)


def candidates_for(parameter: inspect.Parameter, pool: dict) -> list:
    name = parameter.name.lower()
    default = [] if parameter.default is inspect.Parameter.empty else [parameter.default]
    for words, keys in BY_NAME:
        if any(word == name or (len(word) > 2 and word in name) for word in words):
            return default + [pool[key] for key in keys]
    if parameter.default is not inspect.Parameter.empty:
        # an option: its default, then everything else
        return [parameter.default, *pool.values()] if parameter.kind is not parameter.KEYWORD_ONLY else [parameter.default]
    return list(pool.values())


def functions_of(module) -> list[tuple[str, object]]:
    found = []

    def visit(value, name: str, depth: int) -> None:
        if inspect.isfunction(value) and getattr(value, "__module__", None) == module.__name__:
            found.append((name, value))
        elif isinstance(value, dict) and depth < 3:
            for key, item in value.items():
                visit(item, f"{name}[{key!r}]", depth + 1)
        elif isinstance(value, (list, tuple)) and depth < 3:
            for index, item in enumerate(value):
                visit(item, f"{name}[{index}]", depth + 1)
        elif inspect.isclass(value) and getattr(value, "__module__", None) == module.__name__ and depth == 0:
            for key, item in vars(value).items():
                if isinstance(item, (staticmethod, classmethod)):
                    visit(item.__func__, f"{name}.{key}", depth + 1)

    for name, value in vars(module).items():
        visit(value, f"{module.__name__}.{name}", 0)
    return found


def tensors_in(value, depth: int = 0):
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif depth > 3:
        return
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors_in(item, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from tensors_in(getattr(value, field.name), depth + 1)


def matches(result, expected: dict) -> list[str]:
    import torch

    found = []
    for tensor in tensors_in(result):
        if not tensor.is_floating_point():
            continue
        for what, reference in expected.items():
            if tuple(tensor.shape) == tuple(reference.shape) and bool(
                torch.allclose(tensor.detach().double(), reference.double(), atol=1e-4, rtol=1e-3)
            ):
                found.append(what)
    return found


def cheap_tensor_text() -> None:
    """Print a tensor as its shape only. The scan reads the tensors a call returns, never its
    text, and the grader's message builders (``checks.fail`` and its callers, the premises'
    hints) put their arguments in f-strings: given a tensor where a sentence goes, torch's
    printing of its numbers took some 5 ms a call, and six of them ran out of time after a few
    hundred of their calls (with this, each makes its 2,000 in under a second)."""
    import torch._tensor_str

    torch._tensor_str._str = lambda self, *, tensor_contents=None: f"tensor(shape={tuple(self.shape)})"


class OutOfTime(Exception):
    pass


def _out_of_time(signum, frame):
    raise OutOfTime


class Refused(Exception):
    """What a call that would end the probe, or wait, raises instead."""


def _refuse(*args, **kwargs):
    raise Refused


def main(root: str, case_path: str, seconds_per_function: float = SECONDS_PER_FUNCTION) -> None:
    sys.path.insert(0, root)
    import os
    import time

    import torch

    report, leave = sys.stdout, os._exit
    os._exit = time.sleep = _refuse  # a function that ends the process or sleeps is not computing

    cheap_tensor_text()
    case = torch.load(case_path, weights_only=True)
    pool, expected = case["candidates"], case["expected"]
    modules = []
    package = Path(root) / "grader"
    for path in sorted(package.rglob("*.py")):  # what was shipped: the student's folders alone
        parts = path.relative_to(Path(root)).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        with contextlib.redirect_stdout(io.StringIO()):
            modules.append(importlib.import_module(name))
    called, found, unfinished = 0, [], []
    signal.signal(signal.SIGALRM, _out_of_time)
    for module in modules:
        for name, function in functions_of(module):
            if function.__name__.startswith("pytest_"):
                continue  # pytest's hooks, called by pytest with its own objects
            try:
                signature = inspect.signature(function)
            except (TypeError, ValueError):
                continue
            parameters = [p for p in signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            choices = [candidates_for(p, pool) for p in parameters]
            signal.setitimer(signal.ITIMER_REAL, seconds_per_function)
            made = 0
            try:
                for arguments in itertools.islice(itertools.product(*choices), CALLS_PER_FUNCTION):
                    called, made = called + 1, made + 1
                    positional = [a for p, a in zip(parameters, arguments) if p.kind is not p.KEYWORD_ONLY]
                    keywords = {p.name: a for p, a in zip(parameters, arguments) if p.kind is p.KEYWORD_ONLY}
                    try:
                        with contextlib.redirect_stdout(io.StringIO()):
                            result = function(*positional, **keywords)
                    except (OutOfTime, KeyboardInterrupt):
                        raise
                    except BaseException:  # noqa: BLE001 - a call that fails computes nothing
                        continue
                    for what in matches(result, expected):
                        found.append(f"{name}({', '.join(p.name for p in parameters)}) -> the reference's {what}")
            except OutOfTime:
                unfinished.append(f"{name}: stopped by the time limit after {made} of its calls")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    print(json.dumps({"called": called, "found": sorted(set(found)), "unfinished": unfinished}), file=report, flush=True)
    # Leave at once: the functions called may have left the interpreter's streams in any state
    # (a notebook's reader closes stdin as a kernel's would), and the report is written.
    leave(0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(float(seconds) for seconds in sys.argv[3:4]))
