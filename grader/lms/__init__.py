"""The LMSs: each one module behind one interface (``protocol.py``), chosen by the course file's
``[lms] kind`` or recognised from its roster (``choice.py``, over grader/term/roster.py ``choose``).
Canvas (``canvas.py``: the gradebook import, "Re-Upload Submissions" in ``feedback_zip.py``) and
Moodle (``moodle.py``: the grading worksheet written back, the feedback files' zip in
``moodle_feedback.py``). What the batch and the course's names read of an LMS (its roster, its
times, its download's names) lives below, in grader/term/ (roster.py, canvas_names.py, and
lms_files/ for Moodle's worksheet and names). ``export.py`` is the command that writes an LMS's
grade import and feedback upload; ``cells.py`` the cells every grade file shares.

Instructor-only: never imported by the student's grader, never in the student release.
"""
