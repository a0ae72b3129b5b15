"""The term: how an assignment is set up and what the instructor's files say about each student.

* ``course.py``        — the course file (``course.toml``): points, level, seed, deadline, late policy;
  ``course_command.py`` ``python -m grader course init|check``.
* ``instructor_files.py`` — one rule for reading any file an instructor wrote.
* ``roster.py``, ``canvas_names.py`` — what the LMS gives the term: the roster, Canvas's file names.
* ``identity.py``      — who a student is: one person, several names, one resolver.
* ``course_inputs.py`` — every file of an assignment read and resolved together.
* ``late_work.py``, ``overrides.py`` — submission times and the late policy; the instructor's last word.
* ``grade_trail.py``   — raw score, late penalty, override, final score, derived; ``status.py`` — why, in a few words.

Instructor-only: never imported by the student's grader, never in the student release.
"""
