"""Back to the LMS: the grades (``export.py``, Canvas's gradebook import or a plain CSV) and the
feedback (``feedback_zip.py``, Canvas's "Re-Upload Submissions"). What comes from the LMS (the
roster, Canvas's file names) is read with the term's files (grader/term/).

Instructor-only: never imported by the student's grader, never in the student release.
"""
