"""The lesson's experiment, trained: heads specialise only through training, and one head loses a pattern.

    python exercises/train.py              # train your MultiHeadSelfAttention: two heads of 8 features
    python exercises/train.py --heads 1    # one head of 16 features, the same width: beside two heads
    python exercises/train.py --solution   # the reference (the instructor's copy only)
    python exercises/train.py --plot attention.png --json figures.json

The task needs two ways of retrieving at once. Every position of a sequence of tokens must
report, in two separate outputs, the token one position back and the token at position 0.
A head has one attention matrix: one distribution over the earlier positions for each query.
Two heads can give one pattern each. One head must split its weight between the two
positions, and then its output holds the two tokens added together: which came from where is
largely lost, and no read-out after it can recover it. The layer's width is the same in both
runs; what changes is the number of attention matrices.

The model is your MultiHeadSelfAttention with a tiny given embedding (a vector per token plus
a vector per position) and a linear read-out. Training is seeded, so a run repeats exactly.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import torch
from torch import nn
from tqdm import tqdm

THIS_FILE = Path(__file__).resolve()
REPO = THIS_FILE.parent.parent
STUDENT_FILE = REPO / "exercises" / "multi_head_attention.py"
SOLUTION_FILE = REPO / "solutions" / "multi_head_attention.py"
VOCABULARY, SEQ, WIDTH = 16, 8, 16  # tokens 0..15, sequences of 8 positions, a model 16 features wide
STEPS, BATCH, LEARNING_RATE, SEED = 600, 64, 0.01, 0
PATTERNS = ("previous token", "first token")  # what each of the two outputs must retrieve
# Where the patterns differ: at query 0 and 1 the previous position is the first one.
JUDGED_QUERIES = torch.arange(2, SEQ)
SPECIALISED_SHARE = 0.8  # a head "takes" a pattern when its mean weight on it is at least this


def _sibling(name: str):
    """example.py, beside this file: its loading, error lines and the lesson's checks are reused."""
    spec = importlib.util.spec_from_file_location(f"lesson_{Path(name).stem}", THIS_FILE.parent / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _sibling("example.py")


class StudentModuleIsWrong(Exception):
    """The module under test fails a quick check: training it would only produce noise."""


def sanity_check(mha, code: Path) -> list[str]:
    """The lesson's checks from example.py on the example's sizes. Raises StudentModuleIsWrong
    on the first that fails; returns warnings (heads that start out identical are trained all
    the same: what training does to them is part of the lesson)."""
    checks = [example.output_shape, example.weights_shape, example.rows_sum_to_one, example.future_is_zero,
              example.gradients_reach]
    try:
        torch.manual_seed(SEED)
        model = mha.MultiHeadSelfAttention(example.WIDTH, 2)
        result = model(torch.randn(example.BATCH, example.SEQ, example.WIDTH))
        for check in checks:
            if (problem := check(model, result, 2)) is not None:
                raise StudentModuleIsWrong(f"{check.__name__.replace('_', ' ')}: {problem}")
        same = example.heads_differ(model, result, 2)
    except StudentModuleIsWrong:
        raise
    except Exception as error:
        raise StudentModuleIsWrong(example.explain(error, code)) from error
    return [f"{same}: heads that start out the same can only learn the same thing"] if same else []


class RetrievalModel(nn.Module):
    """Embedding -> the MultiHeadSelfAttention under test -> one read-out per pattern."""

    def __init__(self, mha, heads: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCABULARY, WIDTH)
        self.positions = nn.Embedding(SEQ, WIDTH)
        self.attention = mha.MultiHeadSelfAttention(WIDTH, heads)
        self.read_out = nn.Linear(WIDTH, len(PATTERNS) * VOCABULARY)

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        inputs = self.tokens(tokens) + self.positions(torch.arange(SEQ))  # (batch, seq, width)
        result = self.attention(inputs)  # causal by default
        logits = self.read_out(result.output)  # (batch, seq, patterns * vocabulary)
        return logits.view(*tokens.shape, len(PATTERNS), VOCABULARY), result.weights  # weights (batch, heads, seq, seq)


def draw_batch(size: int, rng: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token sequences and, per position, the two tokens to report: (batch, seq, 2)."""
    tokens = torch.randint(0, VOCABULARY, (size, SEQ), generator=rng)  # (batch, seq)
    previous = torch.cat([tokens[:, :1], tokens[:, :-1]], dim=1)  # position 0 has no previous: itself
    first = tokens[:, :1].expand(-1, SEQ)
    return tokens, torch.stack([previous, first], dim=-1)


def loss_of(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of both outputs, from position 1 on (position 0 has nothing earlier)."""
    return nn.functional.cross_entropy(logits[:, 1:].reshape(-1, VOCABULARY), targets[:, 1:].reshape(-1))


@dataclass
class Run:
    heads: int
    losses: list[float] = field(default_factory=list)
    before: torch.Tensor | None = None  # (heads, seq, seq): each head's mean attention, before training
    after: torch.Tensor | None = None
    final_loss: float = float("nan")
    seconds: float = 0.0

    def shares(self, weights: torch.Tensor) -> list[dict]:
        """Each head's mean weight on each pattern, over the queries where the patterns differ."""
        rows = []
        for head, matrix in enumerate(weights):
            on = {
                "previous token": matrix[JUDGED_QUERIES, JUDGED_QUERIES - 1].mean().item(),
                "first token": matrix[JUDGED_QUERIES, 0].mean().item(),
            }
            attends = max(on, key=on.get)
            rows.append({"head": head, "attends": attends, "share": round(on[attends], 4)})
        return rows

    def specialised(self) -> bool:
        heads = self.shares(self.after)
        return {h["attends"] for h in heads} == set(PATTERNS) and all(h["share"] >= SPECIALISED_SHARE for h in heads)


def mean_attention(model: RetrievalModel, tokens: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(tokens)[1].mean(dim=0)  # (heads, seq, seq)


def train(mha, heads: int, steps: int = STEPS, seed: int = SEED, progress: bool = True) -> Run:
    """Train a RetrievalModel around ``mha.MultiHeadSelfAttention`` with ``heads`` heads of
    WIDTH // heads features. Seeded: the same module, seed and steps give the same numbers."""
    torch.manual_seed(seed)
    model = RetrievalModel(mha, heads)
    optimiser = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    rng = torch.Generator().manual_seed(seed + 1)
    held_out, held_out_targets = draw_batch(512, torch.Generator().manual_seed(seed + 2))
    run = Run(heads, before=mean_attention(model, held_out))
    started = time.perf_counter()
    # A progress line on a terminal (tqdm leaves none in a log or a notebook that is not
    # interactive); the losses are kept either way.
    bar = tqdm(range(steps), desc=f"training {heads} head{'s' * (heads != 1)}", unit="step", leave=False,
               disable=None if progress else True, file=sys.stdout)
    for step in bar:
        tokens, targets = draw_batch(BATCH, rng)
        loss = loss_of(model(tokens)[0], targets)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        run.losses.append(loss.item())
        if step % 20 == 0:
            bar.set_postfix(loss=f"{loss.item():.4f}")
    run.seconds = time.perf_counter() - started
    with torch.no_grad():
        run.final_loss = loss_of(model(held_out)[0], held_out_targets).item()
    run.after = mean_attention(model, held_out)
    return run


def matrix_lines(matrices: torch.Tensor, title: str) -> list[str]:
    """Each head's (seq, seq) matrix side by side; the future (blank) is what the mask hides."""
    seq = matrices.shape[-1]
    width = 5 * seq
    lines = [f"  {title} (row = query position, column = key position, mean over 512 sequences):",
             "    " + "   ".join(f"{f'head {h}':<{width}}" for h in range(len(matrices))).rstrip()]
    for query in range(seq):
        cells = [" ".join(f"{w:4.2f}" if key <= query else "   ." for key, w in enumerate(m[query].tolist()))
                 for m in matrices]
        lines.append("    " + "   ".join(f"{c:<{width}}" for c in cells).rstrip())
    return lines


def describe(run: Run) -> list[str]:
    lines = matrix_lines(run.before, "before training") + matrix_lines(run.after, "after training")
    for row in run.shares(run.after):
        lines.append(f"  head {row['head']} puts {row['share']:.0%} of its weight on the {row['attends']}")
    return lines


def verdict(run: Run) -> str:
    if run.heads == 1:
        return ("One head has one attention matrix: it splits its weight between the two positions, and the"
                " two tokens it retrieves arrive added together.")
    if run.specialised():
        taken = {row["attends"]: row["head"] for row in run.shares(run.after)}
        return (f"The heads specialised: head {taken['previous token']} retrieves the previous token, head"
                f" {taken['first token']} the first token. Before training nothing assigned them a job.")
    if torch.allclose(run.after[0], run.after[1]):
        return ("The heads did not specialise: they have the same attention matrix, before training and after."
                " Heads that share their weights are one way of retrieving, not several (pytest grader,"
                " group 4, head distinctness).")
    return "The heads did not specialise: no head puts most of its weight on one pattern each."


def picture_png(runs: list[Run]) -> bytes:
    """Each head's mean attention before and after training, a row per head, as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    heads = sum(run.heads for run in runs)
    figure = Figure(figsize=(6, 2.9 * heads), layout="constrained")
    axes = figure.subplots(heads, 2, squeeze=False)
    future = ~torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool))
    row = 0
    for run in runs:
        for head in range(run.heads):
            for column, (label, weights) in enumerate([("before", run.before), ("after", run.after)]):
                ax = axes[row][column]
                shown_weights = weights[head].masked_fill(future, float("nan"))  # the mask: blank upper triangle
                image = ax.imshow(shown_weights, vmin=0, vmax=1, cmap="viridis")
                ax.set_title(f"{run.heads} head{'s' * (run.heads != 1)}: head {head}, {label} training", fontsize=9)
                ax.set_xlabel("key position")
                ax.set_ylabel("query position")
            row += 1
    figure.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def figures(run: Run, other: Run | None) -> dict:
    document = {"final_loss": run.final_loss, "heads": run.shares(run.after), "num_heads": run.heads,
                "steps": len(run.losses), "seed": SEED}
    if other is not None:
        document["compared_with"] = {"num_heads": other.heads, "final_loss": other.final_loss,
                                     "heads": other.shares(other.after)}
    return document


def experiment(mha, code: Path, one_head_too: bool, label: str | None = None) -> list[Run] | None:
    """Check the module, train it with two heads (and first with one, ``one_head_too``), and
    print what happened to the heads; None, with the reason printed, when it could not run.
    ``label``: how the code is named (its path, by default)."""
    label = label or example.shown(code)
    torch.set_num_threads(1)  # tiny tensors: one thread is fastest, and the numbers repeat exactly
    try:
        warnings = sanity_check(mha, code)
    except StudentModuleIsWrong as error:
        print(f"✗ {label} is not ready to train: {error}")
        print("  Training would only produce noise. Run `pytest grader` (or `make grade`) to see what to fix.")
        return None
    for warning in warnings:
        print(f"! {warning}")
    print(f"Training {label} to report, at every position, the previous token and the first token"
          f"\n  ({VOCABULARY} tokens, {SEQ} positions, width {WIDTH}, {STEPS} steps of {BATCH} sequences, seed {SEED})")
    runs = []
    try:
        for heads in ([1, 2] if one_head_too else [2]):
            run = train(mha, heads)
            runs.append(run)
            print(f"\n{heads} head{'s' * (heads != 1)} of {WIDTH // heads} features: loss {run.losses[0]:.3f} ->"
                  f" {run.final_loss:.5f} in {run.seconds:.1f} s ({1000 * run.seconds / STEPS:.1f} ms a step)")
            print("\n".join(describe(run)))
            print(verdict(run))
    except Exception as error:
        print(f"✗ training stopped: {example.explain(error, code)}")
        print("  Run `pytest grader` (or `make grade`) to see what to fix.")
        return None
    if len(runs) == 2:
        one, two = runs
        print(f"\nThe same width, {WIDTH} features: one head ends at loss {one.final_loss:.4f}, two heads at"
              f" {two.final_loss:.5f} ({one.final_loss / max(two.final_loss, 1e-12):.0f} times lower)."
              "\nOne head lost a retrieval pattern; the width passed on to the read-out did not change.")
    elif runs[0].specialised():
        print("\nTry `--heads 1`: one head of the same width, and the loss it cannot get below.")
    return runs


def in_notebook(namespace: dict) -> None:
    """The notebook's section "what training does to the heads": the experiment on the classes
    defined in the notebook (``namespace``: its globals()), both head counts, the picture inline."""
    runs = experiment(SimpleNamespace(**namespace), Path("notebook"), one_head_too=True, label="the notebook's code")
    if runs is None:
        return
    if not example.can_plot():
        print(f"(no picture: {example.MATPLOTLIB_MISSING})")
        return
    from IPython.display import Image, display

    display(Image(data=picture_png(runs)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solution", action="store_true", help="train the reference instead (instructors)")
    parser.add_argument("--heads", type=int, choices=(1, 2), default=2,
                        help="2 (default): two heads of 8 features; 1: one head of 16, then two heads beside it")
    parser.add_argument("--plot", type=Path, metavar="PATH", help="save each head's attention before/after as a PNG")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the final loss and each head's pattern")
    arguments = parser.parse_args(argv)
    code = SOLUTION_FILE if arguments.solution else STUDENT_FILE
    if not code.exists():
        print(f"✗ {example.shown(code)} is absent: this copy has no solutions/ folder (the student"
              " release ships without it); run without --solution to train your own code.")
        return 1
    if arguments.plot and not example.can_plot():  # said before training, not after
        print(f"✗ {example.MATPLOTLIB_MISSING}")
        return 2
    try:
        mha = example.load(code)
    except Exception as error:
        print(f"✗ {example.shown(code)} is not ready to train: {example.explain(error, code)}")
        print("  Run `pytest grader` (or `make grade`) to see what to fix.")
        return 1
    runs = experiment(mha, code, one_head_too=arguments.heads == 1)
    if runs is None:
        return 1
    if arguments.json:
        arguments.json.write_text(json.dumps(figures(runs[0], runs[1] if len(runs) == 2 else None), indent=2) + "\n",
                                  encoding="utf-8")
        print(f"figures: {arguments.json}")
    if arguments.plot:
        arguments.plot.write_bytes(picture_png(runs))
        print(f"picture: {arguments.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
