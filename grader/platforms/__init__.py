"""The platforms: each a thin adapter over one grading path (``autograder.py``).

* ``gradescope.py``      — a Gradescope autograder zip, and the grading it runs there;
  ``gradescope_late.py`` the course's late policy carried into it.
* ``prairielearn.py``    — a PrairieLearn externally graded question, its image, its grading.
* ``classroom50.py``     — a Classroom 50 (GitHub Actions) autograder bundle and template, and its grading;
  ``classroom50_autograder.py`` is the bundle's entrypoint (standard library only).
* ``nbgrader_course.py`` — an nbgrader course.
* ``autograder.py``      — what the platforms' autograders share: one submission graded in a container.

A new platform goes here. Instructor-only: never in the student release.
"""
