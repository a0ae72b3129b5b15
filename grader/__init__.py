"""The pytest grader for the multi-head self-attention exercise.

Layout (the trust boundary is visible in it):

* ``operations.py``  — the only code that touches student objects; runs beside student code.
* ``loading.py``     — imports a submission file as a module (beside student code only).
* ``submission.py``  — the grader-side proxy: plain data in, plain data out, types checked.
* ``checks.py``      — comparisons on returned tensors with messages written for students.
* ``scoring.py``     — points, groups and the score table.
* ``test_*.py``      — the visible tests; ``hidden/`` holds the ones students never see.
"""

__version__ = "0.1.0"
