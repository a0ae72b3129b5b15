"""The lesson's focused example: four positions, eight features, two heads of four.

    python exercises/example.py              # your code: exercises/multi_head_attention.py
    python exercises/example.py --heads 1    # the lesson's experiment: one head against two
    python exercises/example.py --heads 3    # a width that does not divide: the ValueError is expected
    python exercises/example.py --plot attention.png  # each head's attention matrix as a picture
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
STUDENT_FILE = REPO / "exercises" / "multi_head_attention.py"
SOLUTION_FILE = REPO / "solutions" / "multi_head_attention.py"
SEED = 0
BATCH, SEQ, WIDTH = 1, 4, 8  # one sequence of four positions, eight features each


def shown(path: Path) -> str:
    """``path`` as the student would type it: relative to the repository when possible."""
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def load(path: Path):
    """Import the file at ``path`` itself (never another multi_head_attention on sys.path)."""
    spec = importlib.util.spec_from_file_location("lesson_multi_head_attention", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


def explain(error: BaseException, code: Path) -> str:
    """One short line for an exception from the code under test, instead of a traceback."""
    message = (str(error).strip().splitlines() or [""])[0][:160]
    if isinstance(error, NotImplementedError) and message.endswith(" is not written yet"):
        function = message.removesuffix(" is not written yet")
        return f"not written yet: {function} — fill it in {shown(code)}"
    if isinstance(error, SyntaxError) and error.lineno:
        return f"SyntaxError: {error.msg} ({shown(code)}:{error.lineno})"
    frames = traceback.extract_tb(error.__traceback__)
    in_code = [frame for frame in frames if Path(frame.filename).resolve() == code.resolve()]
    in_here = [frame for frame in frames if Path(frame.filename).resolve() == THIS_FILE]
    if in_code:  # the deepest line of the code under test
        return f"{type(error).__name__}: {message} ({shown(code)}:{in_code[-1].lineno})"
    if in_here:  # the code under test returned something this example could not use
        return f"{type(error).__name__}: {message} (at `{in_here[-1].line.split('  #')[0]}`)"
    return f"{type(error).__name__}: {message}"


def shape(value) -> str:
    return str(tuple(value.shape)) if isinstance(value, torch.Tensor) else type(value).__name__


def expect_configuration_error(mha, heads: int, code: Path) -> int:
    """The lesson: a width that does not divide by the head count fails when the model is
    built, with a ValueError. Here that error is the expected result (✓), its absence a ✗."""
    print(f"{WIDTH} features do not split into {heads} head{'s' * (heads != 1)}: the lesson expects a"
          " ValueError when the model is built, not a shape error later.")
    failures = 0
    for label, build in [
        (f"head_dimension({WIDTH}, {heads})", lambda: mha.head_dimension(WIDTH, heads)),
        (f"MultiHeadSelfAttention({WIDTH}, {heads})", lambda: mha.MultiHeadSelfAttention(WIDTH, heads)),
    ]:
        try:
            build()
        except ValueError as error:
            message = (str(error).strip().splitlines() or ["(no message)"])[0][:160]
            print(f"✓ {label} raises the expected ValueError: {message}")
            continue
        except Exception as error:
            print(f"✗ {label}: {explain(error, code)}")
        else:
            print(f"✗ {label} raised no ValueError: the mistake would only show up in a forward pass")
        failures += 1
    print("\nThe configuration is refused, as it should be." if not failures else f"\n{failures} of the checks fail.")
    return 1 if failures else 0


def run(mha, heads: int):
    """Build the layer with a fixed seed and send the example through it, step by step."""
    torch.manual_seed(SEED)
    model = mha.MultiHeadSelfAttention(WIDTH, heads)  # ValueError unless 8 % heads == 0
    inputs = torch.randn(BATCH, SEQ, WIDTH)  # (1, 4, 8)
    allowed_mask = mha.causal_mask(SEQ)  # (4, 4): True where key <= query
    head_results = [head(inputs, allowed_mask) for head in model.heads]  # each (1, 4, 8 / heads)
    concatenated = mha.concatenate_heads(head_results)  # (1, 4, 8): head 0's features first
    combined = model.output_projection(concatenated)  # (1, 4, 8): the heads mixed together
    print(f"  inputs {shape(inputs)} -> {heads} x head output {shape(head_results[0].output)}"
          f" -> concatenated {shape(concatenated)} -> combined {shape(combined)}")
    return model, model(inputs)  # the same steps inside forward; the mask defaults to causal


def print_weights(weights) -> None:
    """Each head's attention matrix side by side: rows are queries, columns are keys."""
    if not (isinstance(weights, torch.Tensor) and weights.dim() == 4):
        return
    matrices = weights[0].detach()  # (heads, seq, seq)
    print("  attention weights (row = query position, column = key position):")
    print("    " + "".join(f"head {h:<19}" for h in range(matrices.shape[0])).rstrip())
    for query in range(matrices.shape[1]):
        rows = [" ".join(f"{w:.2f}" for w in matrix[query].tolist()) for matrix in matrices]
        print("    " + "   ".join(f"{row:<21}" for row in rows).rstrip())


# The students' requirements leave matplotlib out (the instructor's pin it): --plot says so.
MATPLOTLIB_MISSING = (
    "--plot needs matplotlib, which the exercise's requirements do not install:"
    " `.venv/bin/python -m pip install matplotlib` (or leave --plot out: the matrices are printed as text)."
)


def can_plot() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def write_plot(path: Path, weights) -> None:
    """Each head's attention matrix as a heatmap; the future, which the mask hides, is left blank."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    matrices = weights[0].detach()  # (heads, seq, seq)
    heads, seq = matrices.shape[0], matrices.shape[-1]
    future = ~torch.tril(torch.ones(seq, seq, dtype=torch.bool))
    figure = Figure(figsize=(3 * heads + 1, 3), layout="constrained")
    axes = figure.subplots(1, heads, squeeze=False)[0]
    for head, ax in enumerate(axes):
        # Only a masked entry that really is zero is blank: weight that leaks into the future shows.
        shown_weights = matrices[head].masked_fill(future & (matrices[head] == 0), float("nan"))
        image = ax.imshow(shown_weights, vmin=0, vmax=1, cmap="viridis")
        for (query, key), value in zip(torch.cartesian_prod(torch.arange(seq), torch.arange(seq)).tolist(), shown_weights.flatten().tolist()):
            if value == value:  # not NaN
                ax.text(key, query, f"{value:.2f}", ha="center", va="center", fontsize=8, color="white" if value < 0.6 else "black")
        ax.set_title(f"head {head}")
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
        ax.set_xticks(range(seq))
        ax.set_yticks(range(seq))
    figure.colorbar(image, ax=list(axes), shrink=0.8, label="attention weight")
    figure.savefig(path, dpi=100)


# Each check returns None when it passes, or a few words on what came back instead.
def output_shape(model, result, heads):
    if tuple(result.output.shape) != (BATCH, SEQ, WIDTH):
        return f"got {shape(result.output)}"


def weights_shape(model, result, heads):
    if tuple(result.weights.shape) != (BATCH, heads, SEQ, SEQ):
        return f"got {shape(result.weights)}"


def rows_sum_to_one(model, result, heads):
    sums = result.weights.detach().sum(dim=-1)  # (batch, heads, seq)
    bad = (~((sums - 1).abs() <= 1e-5)).nonzero()  # written so that a NaN row counts as wrong
    if len(bad):
        *_, head, query = bad[0].tolist()
        return f"head {head}, query {query} sums to {sums[tuple(bad[0])]:.4f}"


def future_is_zero(model, result, heads):
    future = ~torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool))  # True where key > query
    bad = ((result.weights.detach() != 0) & future).nonzero()
    if len(bad):
        *_, head, query, key = bad[0].tolist()
        weight = result.weights[tuple(bad[0])]
        return f"head {head}: query {query} gives future key {key} weight {weight:.2f}"


def heads_differ(model, result, heads):
    if heads == 1:
        return "not applicable"
    if tuple(result.weights.shape[:2]) != (BATCH, heads):
        return f"cannot compare: the weights are shaped {shape(result.weights)}"
    weights = result.weights.detach()[0]  # (heads, seq, seq)
    if not torch.isfinite(weights).all():
        return "cannot compare: the weights hold NaN or infinite values"
    for first in range(heads):
        for second in range(first + 1, heads):
            if torch.allclose(weights[first], weights[second]):
                return f"heads {first} and {second} have the same matrix"


def gradients_reach(model, result, heads):
    if not result.output.requires_grad:
        return "the output is cut off from the parameters (requires_grad is False)"
    (result.output ** 2).mean().backward()
    parts = [(f"head {h} {name}", getattr(head, name).weight)
             for h, head in enumerate(model.heads) for name in ("query", "key", "value")]
    for name, parameter in parts + [("output projection", model.output_projection.weight)]:
        if parameter.grad is None or not parameter.grad.abs().sum() > 0:
            return f"no gradient reaches {name}"


CHECKS = [
    (f"output shape is ({BATCH}, {SEQ}, {WIDTH})", output_shape),
    ("attention weights are shaped (1, {heads}, 4, 4)", weights_shape),
    ("every probability row sums to one", rows_sum_to_one),
    ("every future weight is zero", future_is_zero),
    ("the seeded heads produce different matrices", heads_differ),
    ("gradients reach every head (query, key, value) and the output projection", gradients_reach),
]


def compare_with_two_heads(mha, model, result, code: Path) -> None:
    """The lesson's experiment: one head against two, at the same width of eight."""
    print("\nExperiment: one head against two, both at width 8")
    try:
        model_2, result_2 = run(mha, 2)
    except Exception as error:
        print(f"  two heads could not run: {explain(error, code)}")
        return
    for label, one, two in [
        ("features per head", model.head_dim, model_2.head_dim),
        ("output shape", shape(result.output), shape(result_2.output)),
        ("attention matrices", result.weights.shape[1], result_2.weights.shape[1]),
    ]:
        print(f"  {label:<20} 1 head: {str(one):<12} 2 heads: {two}")
    print("  The width passed to the next layer is unchanged; with one attention matrix instead\n"
          "  of two, the layer has one retrieval pattern fewer per position.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # An instructor's option: the student release has no solutions/, so there it is not offered.
    parser.add_argument("--solution", action="store_true",
                        help="run on solutions/ instead" if SOLUTION_FILE.exists() else argparse.SUPPRESS)
    parser.add_argument("--heads", type=int, default=2, help="number of heads (default 2)")
    parser.add_argument("--plot", type=Path, metavar="PATH", help="save each head's attention matrix as a PNG")
    arguments = parser.parse_args(argv)
    heads, code = arguments.heads, SOLUTION_FILE if arguments.solution else STUDENT_FILE
    if not code.exists():
        print(f"✗ {shown(code)} is absent: this copy has no solutions/ folder (the student"
              " release ships without it); run without --solution to try your own code.")
        return 1
    if arguments.plot and not can_plot():
        print(f"✗ {MATPLOTLIB_MISSING}")
        return 2
    print(f"The lesson's focused example on {shown(code)}: {SEQ} positions, {WIDTH} features,"
          f" {heads} head{'s' * (heads != 1)}")

    try:
        mha = load(code)
        if heads < 1 or WIDTH % heads:
            return expect_configuration_error(mha, heads, code)
        print(f"  head dimension = {WIDTH} features / {heads} = {mha.head_dimension(WIDTH, heads)}")
        model, result = run(mha, heads)
    except Exception as error:
        print(f"✗ {explain(error, code)}")
        return 1
    print_weights(getattr(result, "weights", None))
    if arguments.plot:
        try:
            write_plot(arguments.plot, result.weights)
            print(f"  picture: {arguments.plot}")
        except Exception as error:
            print(f"✗ --plot: the weights could not be drawn: {explain(error, code)}")

    failures = 0
    for description, check in CHECKS:
        description = description.format(heads=heads)
        try:
            problem = check(model, result, heads)
        except Exception as error:
            problem = explain(error, code)
        if problem == "not applicable":
            print(f"– {description}: not applicable with one head")
        elif problem is None:
            print(f"✓ {description}")
        else:
            failures += 1
            print(f"✗ {description} — {problem}")
    if heads == 1 and failures == 0:
        compare_with_two_heads(mha, model, result, code)
    if failures:
        print(f"\n{failures} of the checks fail.")
    else:
        print("\nAll checks pass. These are the lesson's six checks only: the grader (`make grade`,"
              "\nor `python -m pytest grader`) checks more, such as exact numbers against the reference,"
              "\ncustom masks, gradients and configuration errors.")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
