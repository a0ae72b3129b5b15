"""What the grader reads of Moodle (Canvas's gradebook and file names are read in grader/term/roster.py
and grader/term/canvas_names.py, where they always were): its grading worksheet
(``moodle_worksheet.py``: the rows, their participant ids, the dates in the course's time zone) and
its download's names (``moodle_names.py``). Plain readers at the bottom of the term: they import
nothing of it; grader/term/roster.py and identity.py map what they read onto the roster's names."""
