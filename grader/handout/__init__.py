"""Everything generated from the reference solution for students and platforms.

* ``stubs.py``           — exercises/multi_head_attention.py: the solution's regions stubbed out.
* ``notebook.py``        — the exercise notebook: lesson, stub cells, check cells.
* ``release.py``         — what students receive (the folders they need, copied whole).
* ``nbgrader_course.py`` — an nbgrader course.
* ``reference_examples.py`` — grader/reference_examples.json, the visible reference group's data.
* ``gradescope.py``      — a Gradescope autograder zip, and the grading it runs there.
* ``prairielearn.py``    — a PrairieLearn externally graded question, its image, its grading.
* ``classroom50.py``     — a Classroom 50 (GitHub Actions) autograder bundle and template, and its grading;
  ``classroom50_autograder.py`` is the bundle's entrypoint (standard library only).
* ``wheel.py``           — the student grader as one wheel, for notebooks alone (Colab, a hosted Jupyter).
* ``kernel_install.py``  — what such a notebook's setup cell runs to install that wheel into its kernel.
* ``autograder.py``      — what the platforms' autograders share: one submission graded in a container.

A new platform goes here. Instructor-only: never in the student release.
"""
