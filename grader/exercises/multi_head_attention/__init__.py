"""The exercise this grader grades: multi-head self-attention, as the lesson and the solution define it.

What changes with the next exercise of a course, and nothing else: the contract's calls on the
student's objects (``operations.py``), the data and sizes the checks draw (``data.py`` and the
visible reference group's fixed examples, ``reference_examples.json``), the comparisons on
attention tensors (``checks.py``) and the visible checks (``test_*.py``, one module per group).
The engine around it (reading, the sandbox, scoring, results, the batch, the term, the LMS,
the platforms) lives in grader/'s other folders. Shipped to students: part of the student's grader.
"""
