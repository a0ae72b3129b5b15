"""What never ships to students: the hidden tests and what they compare against.

* ``test_reference.py`` — the reference group: sizes and data drawn at grading time.
* ``reference.py``      — the instructor's solution, imported into the grader's process.

The student release leaves this folder out; ``pytest grader`` then shows the group as run
when the work is graded.
"""
