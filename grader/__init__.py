"""The pytest grader for the multi-head self-attention exercise.

The tree shows the trust boundary, the layers (imports go down, never up) and the seam between
the engine and the exercise it grades:

* this package's own modules, with ``exercises/``, ``seam/``, ``feedback/``, ``reading/`` and ``session/``
  — the student's grader: what ``pytest grader`` loads and all that a student receives of it.
  ``exercises/`` holds one package per exercise, above the engine (its declaration; its contract's
  calls on student objects, ``operations.py``, the only code that touches them; its data; its
  checks; the visible tests, ``test_*.py``); ``seam/`` is how the engine reaches one: through its
  declaration, read by the registry, never by an import; ``feedback/`` every sentence
  said, each licensed by its evidence; ``reading/`` which file, which cells, how loaded;
  ``session/`` the pytest plugins of a grading session, one job each; ``submission.py`` the
  grader-side proxy (plain data in, plain data out, types checked); ``scoring.py`` points and groups.
* ``hidden/``  — never shipped: the hidden tests and the reference solution they load, and the
  diagnosis (the known mistakes hold solution code too); pytest alone loads it, through its conftest.
* ``sandbox/`` — where student code runs when a score counts (worker, wire, walls).
* ``term/``    — the course file and the instructor's files: roster, times, overrides, the grade's trail.
* ``class_view/`` — a class's results read back: statistics, the report, feedback pages, similarity.
* ``batch/``   — running a class: intake, shards, the gradebook.
* ``lms/``     — back to the LMS: the grades' export, the feedback zip.
* ``handout/`` — what students receive: stubs, notebook, release, wheel.
* ``platforms/`` — Gradescope, PrairieLearn, Classroom 50, nbgrader: thin adapters over one grading path.
"""

__version__ = "0.1.0"
# The student's grader's own subfolders: shipped with the package's own modules, unlike every
# other subfolder (an instructor's layer), so a new instructor module stays home unlisted.
# exercises/ holds one package per exercise (each shipped whole but for what it never ships);
# seam/ is the engine's side of them: a declaration, the registry that reads it.
STUDENT_SUBPACKAGES = ("exercises", "feedback", "reading", "seam", "session")
