"""The position-wise feed-forward network, as the engine knows it: the one place its facts live."""

from grader.seam.declaration import Declaration, Group, Script

DECLARATION = Declaration(
    name="feed_forward",
    title="Position-wise feed-forward network",
    student_file="feed_forward.py",
    notebook="feed_forward.ipynb",
    lesson="FEED_FORWARD.md",
    solution="feed_forward.py",
    functions=("FeedForward.__init__", "FeedForward.forward"),
    groups=(
        Group("shapes", "1. shapes"),
        Group("positions", "2. each position on its own"),
        Group("nonlinearity", "3. nonlinearity"),
        Group("gradient_flow", "4. gradient flow"),
        Group("configuration", "5. configuration"),
        Group("dropout", "6. dropout"),
        Group("reference", "7. reference (hidden)", hidden=True),
    ),
    operations="operations",
    handle="handle.FeedForwardSubmission",
    data="data",
    conventions="names, shapes, the layers' names, exact GELU, dropout only in training",
    example=Script(
        "feed_forward_example.py",
        shows="one position's input changed, and which outputs move; a mark for each of six checks",
    ),
    topic="Feed-forward network",
    mistakes="hidden.vocabulary",
    lesson_parts="lesson_parts",
)
