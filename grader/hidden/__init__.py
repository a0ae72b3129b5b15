"""What never ships to students: the hidden tests and what they compare against.

* ``reference.py``      — the exercise's solution (its declaration names it), imported into the grader's process.
* ``diagnosis.py``      — the diagnosis: the student's functions probed against the exercise's known mistakes.
* ``plugin.py``, ``conftest.py`` — its pytest wiring, switched on where this folder exists.

Each exercise keeps its own hidden part (its hidden checks, mistakes, probes) in its package's
``hidden/`` folder, which never ships either.

The student release leaves this folder out; ``pytest grader`` then shows the group as run
when the work is graded.
"""
