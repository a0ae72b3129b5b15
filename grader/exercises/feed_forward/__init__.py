"""The position-wise feed-forward network, as the lesson and the solution define it: the
course's second exercise.

Its declaration (``declaration.py``) is all the engine reads of it. The rest is the exercise's
own: the calls on the student's objects (``operations.py``, the only code that touches them),
the grader's handle on a submission (``handle.py``), the data the checks draw (``data.py``),
the comparisons and their messages (``checks.py``), the hints' premises reproduced on the
student's numbers (``premises.py``), under grader/feedback/'s rule:
every sentence carries the evidence that licenses it; the visible checks (``visible/test_*.py``, one module per group).
What never ships is in ``hidden/``. Shipped to students: part of the student's grader.
"""
