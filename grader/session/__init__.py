"""A grading session's pytest plugins, one job each: what ``pytest grader`` does around the checks.

grader/conftest.py registers them (``pytest_plugins = PLUGINS``), in this order (each after the
modules it imports, which pytest can then still prepare as plugins):

* ``choice.py``      which exercise is graded, chosen before the others are imported (it imports
  only the seam): ``--exercise``, ``GRADER_EXERCISE`` or the file the student works in;
* ``scoreboard.py``  each check's outcome into its record, and the score table;
* ``targets.py``     which files are graded: the options, ``--submission`` and ``--manifest``, a
  notebook's code staged as a file, the tests parametrized and ordered by submission;
* ``sandbox.py``     where the student's code runs: this process, or the sandbox's worker (``--isolate``);
* ``handles.py``     the ``submission`` fixture: one open handle per submission, closed and its
  output recorded after its last check;
* ``persistence.py`` the results files (``--results-dir``, ``--results-json``);
* ``folding.py``     one root cause, one message: a failure a cause explains folded under it, an
  error repeated at one line said once, each failure reported once;
* ``summary.py``     what the terminal shows: the header, a student's exception as a paragraph, how
  a notebook ran and the diagnosis before pytest's failures;
* ``overheads.py``   what pytest does per session and per check that grading need not pay for:
  its reordering of the checks, the hooks of each check looked up afresh at each call.

They share their state through the session's stash, each key kept by the plugin that owns it.
Part of the student's grader (the release and the wheel ship it): these modules import the
student layer below them, and the sandbox only on ``--isolate``, lazily.
"""

PLUGINS = tuple(
    f"grader.session.{name}"
    for name in ("scoreboard", "targets", "sandbox", "handles", "persistence", "folding", "summary", "overheads")
)
