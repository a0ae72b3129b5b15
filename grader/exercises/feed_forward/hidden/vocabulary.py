"""What the engine's diagnosis (grader/hidden/diagnosis.py) reads of the feed-forward network: its
known mistakes (hidden/mistakes.py, where each is said once, for the hidden check's hint too),
its probes (hidden/probes.py), and the tables that tie the handle's calls to the function they
run. Named by the declaration's ``mistakes``; never ships (hidden/).

The names are the ones the diagnosis asks an exercise's vocabulary for (the first exercise's
hidden/vocabulary.py lists them). Where one means nothing here it has its empty form: there is
no counterfactual (``REPLACEABLE`` is empty: the network is one function, so a diagnosis says
its mistake without listing the checks it explains), no layout slip hides a function, and no
part of a fix depends on the student's code.
"""

from __future__ import annotations

from grader.exercises.feed_forward.hidden import mistakes, probes
# The mistakes (the function the lesson writes, its reference steps, the library) and the probes
# (drawn from the grading seed, run on the student's code and on each candidate), by their names.
from grader.exercises.feed_forward.hidden.mistakes import BY_ID, FUNCTIONS, REFERENCE_STEPS, of_function  # noqa: F401
from grader.exercises.feed_forward.hidden.probes import DEFAULT_SEED, Unusable, is_crash  # noqa: F401
from grader.exercises.feed_forward.hidden.probes import for_seed as probes_for_seed  # noqa: F401


def contexts(function: str, submission, grading_seed: int, function_probes) -> list:
    """One setting: the grader's weights as the student's module holds them."""
    return [probes.HeldWeights(submission)]


# --- the counterfactual: none (its empty form; the diagnosis then lists no explained checks)

REPLACEABLE: frozenset[str] = frozenset()
Replaced = None


def module_calls(submission, function: str, grading_seed: int) -> bool:
    return False  # one function: a check through it is its own, found before this is asked


def student_code(path) -> str:
    return ""  # no fix here is said only where the code shows its premise


# The function each call of the handle runs. Only the forward pass is probed: the constructor's
# mistakes (a hidden layer of the wrong width, a layer without its bias, the sizes not kept) are
# said by the configuration group's checks, whose premises read the module's parameters.
FUNCTIONS_OF_OPERATION = {"run_feed_forward": (mistakes.FORWARD,)}
# The calls probing a function makes: a function whose calls ran out of time is left alone.
OPERATIONS_OF_FUNCTION = {mistakes.FORWARD: {"run_feed_forward"}}
# The function a check is about, when nothing else explains its failure.
PRIMARY_OPERATION_ORDER = ("run_feed_forward",)
LAYOUT_HIDES: dict[str, set[str]] = {}
