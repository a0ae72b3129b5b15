"""Multi-head self-attention, as the lesson and the solution define it: the first exercise.

Its declaration (``declaration.py``) is all the engine reads of it: the student's file, the
functions in writing order, the groups. The rest is the exercise's own: the contract's calls on
the student's objects (``operations.py``, the only code that touches them), the grader's handle
on a submission, one method per call (``handle.py``), the data and sizes
the checks draw (``data.py`` and the visible reference group's fixed examples,
``reference_examples.json``), the comparisons on attention tensors (``checks.py``), the visible
checks (``visible/test_*.py``, one module per group) and its hints' premises (``premises.py``
reproduced on the student's numbers, ``source_premises.py`` read from the student's source),
under grader/feedback/'s rule: every sentence carries the evidence that licenses it. What
never ships is in ``hidden/``. Shipped to students: part of the student's grader.
"""
