"""The class run: ``python -m grader batch SUBMISSIONS --out OUT``.

* ``run.py``    — the command: intake, shards, gradebook, class results, run log.
* ``intake.py`` — each student's entry (file, folder, notebook, zip) to one staged source, or a reason.
* ``shard.py``  — one grading process: pytest sessions over its share of the class, sandboxed.
* ``sandbox_choice.py`` — ``python -m grader sandbox``: which sandbox a batch will use here, and why.

Instructor-only: never imported by the student's grader, never in the student release.
"""
