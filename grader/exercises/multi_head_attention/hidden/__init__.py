"""What of multi-head self-attention never ships to students (the release leaves this folder out).

* ``test_reference.py`` — the hidden group: sizes and data drawn at grading time.
* ``mistakes.py``       — the vocabulary of known mistakes (they hold solution code).
* ``probes.py``         — the probes of each function, run on the student's code and on each mistake.
* ``counterfactual.py`` — a failing check run again with one function replaced by the reference's.

The engine's side of the diagnosis (the matching, its pytest wiring, the reference loaded) is
grader/hidden/.
"""
