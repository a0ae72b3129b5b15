"""Multi-head self-attention, as the engine knows it: the one place its facts live."""

from grader.seam.declaration import Declaration, Group, Script

DECLARATION = Declaration(
    name="multi_head_attention",
    title="Multi-head self-attention",
    student_file="multi_head_attention.py",
    notebook="multi_head_attention.ipynb",
    lesson="LESSON.md",
    solution="multi_head_attention.py",
    functions=(
        "head_dimension",
        "causal_mask",
        "AttentionHead.__init__",
        "AttentionHead.forward",
        "concatenate_heads",
        "MultiHeadSelfAttention.__init__",
        "MultiHeadSelfAttention.forward",
    ),
    groups=(
        Group("shapes", "1. shapes"),
        Group("probabilities", "2. probabilities"),
        Group("causal_masking", "3. causal masking"),
        Group("head_distinctness", "4. head distinctness"),
        Group("gradient_flow", "5. gradient flow"),
        Group("configuration", "6. configuration"),
        Group("reference_examples", "7. reference examples"),
        Group("reference", "8. reference (hidden)", hidden=True),
    ),
    operations="operations",
    handle="handle.AttentionSubmission",
    data="data",
    mistakes="hidden.vocabulary",
    causes="causes",
    examples="hidden.handouts",
    scan="hidden.handouts",
    lesson_parts="lesson_parts",
    conventions="names, shapes, `True` = may attend, heads in order",
    example=Script(
        "example.py",
        shows="a check mark or a cross for each of its six checks",
        options="`--heads 1` runs the one-head experiment, `--heads 3` shows the configuration error",
    ),
    also_ships=(Script("train.py", shows="train your module and watch each head take a pattern"),),
    topic="Attention",
)
