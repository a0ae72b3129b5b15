"""Multi-head self-attention's lesson, as the notebook (grader/handout/notebook.py) cuts it:
its parts, each with its lesson and the solution's definitions it holds, what each part asks
for per scaffolding level, the training experiment after the exercise, and the last lesson
before the score. Named by the declaration's ``lesson_parts``; plain text, nothing of the
solution's code.
"""

from __future__ import annotations

from grader.reading.notebooks import GRADER_CELL_MARKER
from grader.seam.lesson_parts import IMPORTS_PART, Part

PARTS = (
    IMPORTS_PART,
    Part(
        "head-width",
        """\
## Part 1: how wide is each head?

The layer works with `model_dim` features. Split across `num_heads` heads, each head gets
`head_dim = model_dim / num_heads` of them: with 128 features and 4 heads, every head has 32.
A head still *reads* all 128 input features; what is narrower are its own queries, keys and
values. Putting the heads' outputs side by side then gives back exactly `model_dim` features.

That only works when the division is exact: 10 features cannot be shared fairly by 3 heads.
Such a configuration should fail the moment the model is built, with a message that names
both numbers, instead of as a puzzling shape error halfway through a training run.
That is why `MultiHeadSelfAttention.__init__` calls `head_dimension` before it builds anything.

**Write `head_dimension`.** Group 6 (configuration) checks it, together with the module you
finish in part 4.
""",
        ("head_dimension",),
    ),
    Part(
        "causal-mask",
        """\
## Part 2: who may attend to whom

A model that predicts the next token must not peek at later tokens: position `q` may only
look at positions `k <= q`. The mask says where attention is **allowed** (`True`), indexed
`[query position, key position]`. For four positions:

```
          key 0  key 1  key 2  key 3
query 0     T      .      .      .
query 1     T      T      .      .
query 2     T      T      T      .
query 3     T      T      T      T
```

Every row allows at least its own position, so every query has something to attend to.

**Write `causal_mask`.** It is used by group 3 (causal masking) and as the module's default.
""",
        ("causal_mask",),
    ),
    Part(
        "one-head",
        """\
## Part 3: one attention head

One head, for inputs of shape `(batch, seq, model_dim)`:

1. project the inputs into queries, keys and values, each `(batch, seq, head_dim)`;
2. score every pair of positions: `queries @ keys^T`, divided by `sqrt(head_dim)` (without
   the division, scores grow with the head's width and the softmax saturates);
3. give every position the mask forbids a score of `-inf` **before** the softmax, so that its
   weight comes out exactly zero while each row still sums to one;
4. softmax over the key positions (the last axis): one probability distribution per query;
5. the output is the weights times the values, `(batch, seq, head_dim)`.

What comes back keeps the inputs' dtype and device: float32 inputs give a float32 output and
float32 weights (a step taken in float64 "for stability" is cast back), so that the next
layer and the optimiser get what they were given. `HeadResult` (given) carries the output and
the weights. **Write {head_work}.**
""",
        ("HeadResult", "AttentionHead"),
    ),
    Part(
        "combining",
        """\
## Part 4: combining the heads

Every head reads the same input under the same mask, each through its own projections. Their
outputs are then put side by side, head 0 first, and mixed by one output projection:

```
model_dim-feature input
  -> head 0: head_dim features --+
  -> head 1: head_dim features   +-> concatenate -> output projection -> model_dim features
  -> ...                       --+
```

So the module's forward pass comes down to three steps:

1. run every head on the same `inputs` and the same `allowed_mask` (the causal mask when
   none is given): a list of `HeadResult`s, one per head, in order;
2. concatenate their outputs along the feature axis, head 0 first: `(batch, seq, model_dim)`;
3. apply `output_projection` once, to the concatenation.

It also returns every head's attention matrix, stacked on a new axis 1:
`(batch, heads, seq, seq)`.

Freshly initialised heads already give different attention matrices, simply because their
random projections differ. That is not yet specialisation: nothing in this code gives a head
a job (syntax, say, or who is speaking). If heads specialise, training makes them.

**Write `concatenate_heads` and {module_work}** (`MultiHeadResult` is given).
""",
        ("concatenate_heads", "MultiHeadResult", "MultiHeadSelfAttention"),
    ),
)

# What each part asks for, by level: at the standard level the constructors are the student's too.
WORK = {
    "standard": {
        "head_work": "`AttentionHead`: its constructor (its docstring gives the layout the grader loads "
        "its weights into) and `forward`",
        "module_work": "`MultiHeadSelfAttention`: its constructor (the configuration check, independent "
        "heads, the output projection, as its docstring lays them out) and `forward`",
    },
    "guided": {"head_work": "`AttentionHead.forward`", "module_work": "`MultiHeadSelfAttention.forward`"},
}


# After the exercise, before the score: the lesson's idea seen, never graded (the notebook leaves it
# out where an exercise has none: TRAINING_LESSON = None).
TRAINING_LESSON = """\
## What training does to the heads

Your heads start out different only because their random projections differ: no head has a
job yet. A job comes from training. Here is a task that needs two jobs at once: at every
position, report the token one position back *and* the token at position 0, in two separate
outputs. Your `MultiHeadSelfAttention` is trained on it with a tiny given embedding and
read-out, twice at the same width of 16 features: with two heads of 8, and with one head of 16.

* **Two heads**: each settles on one pattern, one on the previous position, the other on
  position 0. Nothing in the code told them which; training did.
* **One head**: it has one attention matrix, so it splits its weight between the two positions,
  and the two tokens it fetches arrive added together. Its loss stays far above the two heads',
  with the same width passed on: the lesson's lost retrieval pattern.

{how_to_run} It takes a few seconds and counts for no points.
"""
# How to run the experiment: in the notebook, its cell; beside the .py file, the script.
TRAINING_IN_THE_NOTEBOOK = "Run the cell below once your module passes its checks (it says so when it does not)."
TRAINING_FROM_THE_PY_FILE = (
    "Run `python exercises/train.py` once your module passes its checks (it says so when it does not); "
    "`--heads 1` adds the one-head run, `--plot PATH` saves the pictures (it needs matplotlib)."
)
TRAINING_SOURCE = f"""\
{GRADER_CELL_MARKER} experiment (not part of your submission, never graded): what training does to the heads
try:
    from exercises import train
except ImportError:  # a notebook alone (Colab, a hosted Jupyter): the exercise's folder is not beside it
    print("This experiment runs from the exercise's folder (exercises/train.py beside this notebook), "
          "which is not here. It counts for no points: skip it.")
else:
    train.in_notebook(globals())
"""

# The lesson before the score; "{where_the_score_is}" is the engine's (the check cell, or the grader's command).
FINAL_LESSON = """\
## Your score

{where_the_score_is} Group 7
(reference examples) compares your numbers with the reference solution's on fixed examples
shipped with the grader; group 8 (reference, hidden) makes the same comparison on sizes and
data drawn when your work is graded, so code that passes the visible checks for the right
reasons passes it too.

**An experiment.** Keep the width and use one head instead of two, for example
`MultiHeadSelfAttention(8, 1)` against `MultiHeadSelfAttention(8, 2)` on
`torch.randn(1, 4, 8)`. The output keeps its shape `(1, 4, 8)`: the next layer sees no
difference in width. But there is one attention matrix instead of two, so one way of
retrieving information fewer. (Put such an experiment under `if __name__ == "__main__":`.)
"""
