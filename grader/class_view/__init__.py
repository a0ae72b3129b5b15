"""The class view: what an instructor looks at after a batch.

* ``class_results.py``  — a class's results.json read back and checked.
* ``class_statistics.py`` — the class in numbers; ``report_plots.py`` its charts.
* ``report.py``         — ``python -m grader report OUT``: OUT/report.html.
* ``feedback_pages.py`` — each student's feedback page as HTML; ``attention_picture.py`` a failed
  weights check as a PNG (also drawn by the platforms).
* ``similarity.py``     — pairs of near-identical submissions; ``code_comparison.py`` how they are compared.

Instructor-only: never imported by the student's grader, never in the student release.
"""
