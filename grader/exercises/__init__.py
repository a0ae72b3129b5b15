"""The exercises this grader grades, one package each, above the engine.

Each package declares itself in its ``declaration.py`` (grader/seam/declaration.py says what a
declaration holds) and may use the engine; the engine reaches it only through that declaration
(grader/seam/registry.py), never by importing it or naming its functions, groups or files.
"""

# The course's exercises in the order it teaches them: the first is graded when none is chosen.
COURSE_ORDER = ("multi_head_attention", "feed_forward")
