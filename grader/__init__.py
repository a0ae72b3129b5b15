"""The pytest grader for the multi-head self-attention exercise.

The tree shows the trust boundary and the layers (imports go down, never up):

* this package's own modules, with ``feedback/`` (every sentence said, each licensed by its
  evidence), ``reading/`` (which file, which cells, how loaded) and ``session/`` (the pytest
  plugins of a grading session, one job each) — the student's grader: what
  ``pytest grader`` loads and all that a student receives of it. ``operations.py`` is the only code that touches student
  objects; ``submission.py`` the grader-side proxy (plain data in, plain data out, types
  checked); ``checks.py`` comparisons with messages for students; ``scoring.py`` points and
  groups; ``test_*.py`` the visible tests.
* ``hidden/``  — never shipped: the hidden tests and the reference solution they load, and the
  diagnosis (the known mistakes hold solution code too); pytest alone loads it, through its conftest.
* ``sandbox/`` — where student code runs when a score counts (worker, wire, walls).
* ``batch/``   — the class run: intake, shards, the gradebook.
* ``handout/`` — generated for students and platforms: stubs, notebook, release, nbgrader,
  Gradescope, PrairieLearn, Classroom 50.
"""

__version__ = "0.1.0"
# The student's grader's own subfolders: shipped with the package's own modules, unlike every
# other subfolder (an instructor's layer), so a new instructor module stays home unlisted.
STUDENT_SUBPACKAGES = ("feedback", "reading", "session")
# The name of the student grader as an installable package (`python -m grader wheel`); it imports as `grader`.
DISTRIBUTION_NAME = "multi-head-attention-grader"
