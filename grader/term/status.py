"""Why a student has the score they have, in a few words: the ``status`` of a result.

The gradebook, the report's table and the batch's summary show it, so that no 0 is bare:
``graded`` (the tests ran), ``not written`` (the stub: every failing test stopped at the
stub's NotImplementedError), ``syntax error``, ``import error``, ``timed out`` (the import
or the submission's budget), ``refused at intake`` (no gradable file), ``no result``
(the grader failed: see batch.log), and ``not graded in this run`` (``--only`` named others,
and no earlier run graded this one: not a failure, a student still to grade). Read from the result's recorded fields, never from
the student's text alone: an exception message is the student's to write.
"""

from __future__ import annotations

from grader.reading import parser_limits
from grader.scoring import not_written

GRADED = "graded"
NOT_WRITTEN = "not written"
SYNTAX_ERROR = "syntax error"
IMPORT_ERROR = "import error"
TIMED_OUT = "timed out"
REFUSED = "refused at intake"
NO_RESULT = "no result"
NOT_GRADED_IN_THIS_RUN = "not graded in this run"


def status_of(result: dict) -> str:
    if result.get("intake_problem"):
        return REFUSED
    if (result.get("time_budget") or {}).get("ran_out", {}).get("submission"):
        return TIMED_OUT
    import_error = str(result.get("import_error") or "")
    if import_error:
        # The first words are the error's type, as grader/feedback/errors.py's for_student writes it
        # ("Timeout" is the sandbox's own, grader/sandbox/isolated.py). A student who raises
        # an exception of such a name gets that status: a label, never a point.
        first_line = import_error.strip().splitlines()[0] if import_error.strip() else ""
        if first_line.startswith(("SyntaxError", "IndentationError", "TabError")):
            return SYNTAX_ERROR
        # Code nested too deeply: Python raises MemoryError or RecursionError, but the file no
        # more parses than one with a syntax error (grader/reading/parser_limits.py).
        if first_line.startswith(("MemoryError", "RecursionError")) and parser_limits.TOO_DEEP in first_line:
            return SYNTAX_ERROR
        if first_line.startswith("Timeout: timed out after"):
            return TIMED_OUT
        return IMPORT_ERROR
    tests = [test for test in result.get("tests") or [] if isinstance(test, dict)]
    failing = [str(test.get("message", "")) for test in tests if test.get("outcome") != "passed"]
    if tests and len(failing) == len(tests) and sum(not_written(failing).values()) == len(failing):
        return NOT_WRITTEN
    return GRADED
