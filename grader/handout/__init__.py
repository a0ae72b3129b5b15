"""What students receive, generated from the reference solution.

* ``stubs.py``           — exercises/multi_head_attention.py: the solution's regions stubbed out.
* ``notebook.py``        — the exercise notebook: lesson, stub cells, check cells.
* ``release.py``         — what students receive (the folders they need, copied whole).
* ``reference_examples.py`` — grader/exercises/multi_head_attention/reference_examples.json, the visible reference group's data.
* ``wheel.py``           — the student grader as one wheel, for notebooks alone (Colab, a hosted Jupyter).
* ``kernel_install.py``  — what such a notebook's setup cell runs to install that wheel into its kernel.
* ``behaviour_scan.py``  — does any function a hand-out ships compute the reference's numbers?
  ``behaviour_probe.py`` runs in the scan's own interpreter.

The platforms that hand these out and grade them are in grader/platforms/. Instructor-only:
never in the student release.
"""
