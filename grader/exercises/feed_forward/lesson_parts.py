"""The position-wise feed-forward network's lesson, as the notebook (grader/handout/notebook.py)
cuts it: its parts, what each asks for per scaffolding level, an experiment that shows the
lesson's three ideas on the student's own module (each position on its own, the widening, the
nonlinearity), and the last lesson before the score. Named by the declaration's
``lesson_parts``; plain text, nothing of the solution's code. The longer lesson, for those who
work in the .py file, is exercises/FEED_FORWARD.md, written by hand (the notebook command leaves
it as it is).
"""

from __future__ import annotations

from grader.reading.notebooks import GRADER_CELL_MARKER
from grader.seam.lesson_parts import IMPORTS_PART, Part

PARTS = (
    IMPORTS_PART,
    Part(
        "feed-forward",
        """\
## The network: widen, bend, narrow

Attention lets positions exchange information, but what it does to the values is a weighted sum:
apart from the softmax that picks the weights, it is linear. The feed-forward network is where
each position *computes* on what it gathered. It is a two-layer perceptron that looks at one
position at a time:

```
model_dim features -> expand (Linear) -> GELU -> project (Linear) -> model_dim features
       (8)             (8 -> 32)                   (32 -> 8)               (8)
```

* **Each position on its own.** The same weights serve every position, and no position sees
  another. `nn.Linear` acts on the last axis of any tensor, so the whole `(batch, seq, model_dim)`
  input goes through in one call, and output position `t` depends on input position `t` alone.
* **Wider in the middle.** The hidden layer has `hidden_dim` features, usually four times
  `model_dim` (GPT-2: 768 widened to 3072): room for many units, each detecting one pattern and
  switching on or off. The caller chooses the width; the way back returns to `model_dim`, the
  width the next layer (and the residual connection around this one) expects.
* **The nonlinearity between the layers.** Without it, two linear layers are one:
  `W2 (W1 x + b1) + b2` is `(W2 W1) x + (W2 b1 + b2)`, and the width in between buys nothing.
  The contract uses the exact GELU, `nn.GELU()`. Both layers have a bias: the first one's sets
  where each hidden unit switches.
* **Dropout on the output**, only in training: `nn.Dropout` knows the mode, and `module.eval()`
  makes the network deterministic.

**Write {module_work}.** The groups check the shapes, that each position is computed on its
own, that the nonlinearity is really there, that gradients reach every weight, the
configuration, and dropout in both modes.
""",
        ("FeedForward",),
    ),
)

# What the part asks for, by level: at the standard level the constructor is the student's too.
WORK = {
    "standard": {
        "module_work": "`FeedForward`: its constructor (the two layers, the GELU and the dropout, named as its "
        "docstring lays them out: the grader loads its weights into them by name) and `forward`",
    },
    "guided": {"module_work": "`FeedForward.forward`"},
}


# After the exercise, before the score: the lesson's three ideas seen on the student's own module,
# never graded. (The notebook reads these names as an exercise's "training" section.)
TRAINING_LESSON = """\
## See it on your network

The cell below builds your `FeedForward(8, 32)` and shows the lesson's three ideas on its
numbers: the hidden layer is wider than the model and the output comes back to the model's
width; changing one position of the input moves that position of the output and no other; and
the network is not one linear map, while the same two layers without the GELU between them are.

{how_to_run} It counts for no points.
"""
TRAINING_IN_THE_NOTEBOOK = "Run it once your network passes its checks (it says so when it cannot run yet)."
TRAINING_FROM_THE_PY_FILE = (
    "Run the notebook's cell, or its code below your class in `feed_forward.py` under "
    "`if __name__ == \"__main__\":`, once your network passes its checks."
)
TRAINING_SOURCE = f"""\
{GRADER_CELL_MARKER} experiment (not part of your submission, never graded): the lesson's ideas on your network
try:
    torch.manual_seed(0)
    network = FeedForward(model_dim=8, hidden_dim=32).eval()
    inputs = torch.randn(1, 5, 8)  # (batch, seq, model_dim)
    with torch.no_grad():
        hidden = network.expand(inputs)
        output = network(inputs)
        print(f"Widened: {{tuple(inputs.shape)}} -> hidden {{tuple(hidden.shape)}} -> output {{tuple(output.shape)}}")

        changed = inputs.clone()
        changed[0, 2] += 1.0  # position 2 only
        moved = (network(changed) - output).abs().amax(dim=-1)[0]
        print("Each position on its own: changing input position 2 moved output positions",
              [position for position, change in enumerate(moved.tolist()) if change > 1e-6])

        x, y, zero = torch.randn(1, 5, 8), torch.randn(1, 5, 8), torch.zeros(1, 5, 8)
        def linear_gap(f):  # zero for a linear map plus a constant: f(x) + f(y) = f(x + y) + f(0)
            return (f(x) + f(y) - f(x + y) - f(zero)).abs().max().item()
        straight = lambda v: network.project(network.expand(v))  # the same layers, no GELU between
        print(f"The nonlinearity: your network is {{linear_gap(network):.3f}} away from one linear map; "
              f"the same two layers without the GELU, {{linear_gap(straight):.1e}}: one linear layer.")
except Exception as error:  # the stubs, or a network the checks still fault
    print(f"Your FeedForward cannot show this yet ({{type(error).__name__}}: {{error}}): run the check above first.")
"""

# The lesson before the score; "{where_the_score_is}" is the engine's (the check cell, or the grader's command).
FINAL_LESSON = """\
## Your score

{where_the_score_is} Group 7 (reference, hidden) compares your network's output with the
reference solution's on sizes and data drawn when your work is graded, with the same weights
loaded into both, so code that passes the visible checks for the right reasons passes it too.

Next: the residual connection and layer normalisation, which wrap attention and this network
into a transformer block.
"""
