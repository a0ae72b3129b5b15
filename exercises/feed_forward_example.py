"""The lesson's focused example: four positions, eight features, a hidden layer of sixteen.

    python exercises/feed_forward_example.py    # your code: exercises/feed_forward.py

It sends one sequence through your FeedForward, then changes the input at one position and
shows which outputs moved: only that position's, where attention would have moved every
later one. That is the lesson's point: attention moves information between positions, the
feed-forward network computes on each position alone, with the same weights everywhere.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import traceback
from pathlib import Path

import torch

THIS_FILE = Path(__file__).resolve()
REPO = THIS_FILE.parent.parent
STUDENT_FILE = REPO / "exercises" / "feed_forward.py"
SOLUTION_FILE = REPO / "solutions" / "feed_forward.py"
SEED = 0
BATCH, SEQ, WIDTH, HIDDEN = 1, 4, 8, 16  # one sequence of four positions; the hidden layer twice as wide
CHANGED = 2  # the position whose input the example changes


def shown(path: Path) -> str:
    """``path`` as the student would type it: relative to the repository when possible."""
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def load(path: Path):
    """Import the file at ``path`` itself (never another feed_forward on sys.path)."""
    spec = importlib.util.spec_from_file_location("lesson_feed_forward", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def explain(error: BaseException, code: Path) -> str:
    """One short line for an exception from the code under test, instead of a traceback."""
    message = (str(error).strip().splitlines() or [""])[0][:160]
    if isinstance(error, NotImplementedError) and message.endswith(" is not written yet"):
        return f"not written yet: {message.removesuffix(' is not written yet')} — fill it in {shown(code)}"
    if isinstance(error, SyntaxError) and error.lineno:
        return f"SyntaxError: {error.msg} ({shown(code)}:{error.lineno})"
    in_code = [frame for frame in traceback.extract_tb(error.__traceback__) if Path(frame.filename).resolve() == code.resolve()]
    where = f" ({shown(code)}:{in_code[-1].lineno})" if in_code else ""
    return f"{type(error).__name__}: {message}{where}"


def shape(value) -> str:
    return str(tuple(value.shape)) if isinstance(value, torch.Tensor) else type(value).__name__


def run(ffn):
    """Build the network with a fixed seed and send the example through it, step by step."""
    torch.manual_seed(SEED)
    model = ffn.FeedForward(WIDTH, HIDDEN).eval()
    inputs = torch.randn(BATCH, SEQ, WIDTH)  # (1, 4, 8)
    output = model(inputs)
    try:  # the steps inside forward, by the layers' names in the docstring
        hidden = model.activation(model.expand(inputs))  # (1, 4, 16): each position widened and bent
        steps = f"expanded and through the activation {shape(hidden)} -> projected back {shape(model.project(hidden))}"
    except Exception:  # the checks below say what is wrong
        steps = "..."
    print(f"  inputs {shape(inputs)} -> {steps} -> output {shape(output)}")
    return model, inputs, output


def moved_by_one_change(model, inputs, output) -> torch.Tensor:
    """How far each position's output moves when only position CHANGED's input changes."""
    changed = inputs.clone()
    changed[:, CHANGED] += 1.0
    return (model(changed) - output).detach().abs().amax(dim=-1)[0]  # (seq,)


# Each check returns None when it passes, or a few words on what came back instead.
NOT_FINITE = "cannot tell: the output holds NaN or infinite values"


def finite(*tensors) -> bool:
    return all(bool(torch.isfinite(tensor).all()) for tensor in tensors)


def output_shape(model, inputs, output):
    if tuple(output.shape) != (BATCH, SEQ, WIDTH):
        return f"got {shape(output)}"


def one_position_moves(model, inputs, output):
    moved = moved_by_one_change(model, inputs, output)
    if not finite(moved):
        return NOT_FINITE
    others = [position for position in range(SEQ) if position != CHANGED and moved[position] > 1e-6]
    if others:
        return f"position {others[0]} moved too: positions are mixed"
    if not moved[CHANGED] > 1e-6:
        return f"position {CHANGED} did not move: its output ignores its input"


def same_weights_everywhere(model, inputs, output):
    twice = inputs.clone()
    twice[:, 1] = twice[:, 3]  # the same features at positions 1 and 3
    result = model(twice).detach()
    if not finite(result):
        return NOT_FINITE
    if not torch.allclose(result[:, 1], result[:, 3], atol=1e-6):
        return "the same input at positions 1 and 3 gave different outputs"


def bends(model, inputs, output):
    # Two linear layers without an activation between are one affine map, and an affine map
    # sends the midpoint of two inputs to the midpoint of their outputs.
    other = torch.randn(inputs.shape, generator=torch.Generator().manual_seed(SEED + 1))
    midpoint, far = model((inputs + other) / 2).detach(), model(other).detach()
    if not finite(midpoint, far, output.detach()):
        return NOT_FINITE
    if torch.allclose(midpoint, (output.detach() + far) / 2, atol=1e-5):
        return "the network is affine: the activation between the layers is missing"


def hidden_width(model, inputs, output):
    width = getattr(getattr(model, "expand", None), "out_features", None)
    if width != HIDDEN:
        return f"the expansion is {width} wide"


def evaluation_is_deterministic(model, inputs, output):
    ffn = sys.modules["lesson_feed_forward"]
    with_dropout = ffn.FeedForward(WIDTH, HIDDEN, dropout=0.5).eval()
    first, second = with_dropout(inputs).detach(), with_dropout(inputs).detach()
    if not finite(first, second):
        return NOT_FINITE
    if not torch.equal(first, second):
        return "two calls in evaluation mode differ: dropout is left on"


CHECKS = [
    (f"output shape is ({BATCH}, {SEQ}, {WIDTH}), the input's", output_shape),
    (f"changing position {CHANGED}'s input moves position {CHANGED}'s output only", one_position_moves),
    ("the same input at two positions gives the same output", same_weights_everywhere),
    ("the network is not a linear map: the activation bends it", bends),
    (f"the hidden layer is {HIDDEN} wide", hidden_width),
    ("in evaluation mode, dropout is off: two calls agree", evaluation_is_deterministic),
]


def print_moves(model, inputs, output) -> None:
    """The lesson's point as numbers: which outputs a change at one position reaches."""
    try:
        moved = moved_by_one_change(model, inputs, output)
    except Exception:
        return  # the checks below say why
    print(f"  input changed at position {CHANGED} only; how far each position's output moved:")
    print("    " + "   ".join(f"position {position}: {value:.2f}" for position, value in enumerate(moved.tolist())))
    print("  (causal attention would have moved every position from the changed one on)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # An instructor's option: the student release has no solutions/, so there it is not offered.
    parser.add_argument("--solution", action="store_true",
                        help="run on solutions/ instead" if SOLUTION_FILE.exists() else argparse.SUPPRESS)
    code = SOLUTION_FILE if parser.parse_args(argv).solution else STUDENT_FILE
    if not code.exists():
        print(f"✗ {shown(code)} is absent: run without --solution to try your own code.")
        return 1
    print(f"The lesson's focused example on {shown(code)}: {SEQ} positions, {WIDTH} features, {HIDDEN} hidden")
    try:
        model, inputs, output = run(load(code))
    except Exception as error:
        print(f"✗ {explain(error, code)}")
        return 1
    print_moves(model, inputs, output)
    failures = 0
    for description, check in CHECKS:
        try:
            problem = check(model, inputs, output)
        except Exception as error:
            problem = explain(error, code)
        if problem is None:
            print(f"✓ {description}")
        else:
            failures += 1
            print(f"✗ {description} — {problem}")
    if failures:
        print(f"\n{failures} of the checks fail.")
    else:
        print(f"\nAll checks pass. These are the lesson's {len(CHECKS)} checks only: the grader (`make grade`,"
              "\nor `python -m pytest grader`) checks more, such as exact numbers against the reference,"
              "\ngradients and the configuration.")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
