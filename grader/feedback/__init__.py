"""What the grader says: every sentence a student or an instructor reads about the student's code.

The rule of this folder: **every sentence carries the evidence that licenses it.** A hint is said
only when its premise was reproduced on the student's own numbers (``premises.py``: the known slip,
recomputed, gives the values the student's code returned); a diagnosis "explains" a failing check
only when that check passes with the one function it blames replaced by the reference's
(``grader/exercises/multi_head_attention/hidden/counterfactual.py`` asks, ``diagnosis_text.py`` says); a root cause is named only
when its own probe shows it (``root_causes.py``); two heads are "the same" only when their finite
matrices agree (``attention_comparison.py``; NaN is never the same); an error names the place in
the student's file, or notebook cell, where it was raised (``errors.py``). What no evidence licenses
keeps the plain expected / got of its check. ``markdown.py`` lays the result out for a page.

These modules are part of the student's grader (shipped in the release and the wheel): they import
what lies below them (reading/, operations, data, scoring, untrusted), never the modules that use
them (submission.py, checks.py, results.py, session/: what a failed call leaves as evidence is
``evidence.py``'s), the hidden tests, the sandbox, the batch or the hand-outs.
"""
