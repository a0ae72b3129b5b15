"""What the engine's diagnosis (grader/hidden/diagnosis.py) reads of multi-head self-attention:
its known mistakes, its probes, its counterfactual, and the tables that tie the handle's calls
to the functions they run. Named by the declaration's ``mistakes``; never ships (hidden/).

Every name below is one the diagnosis asks an exercise's vocabulary for; an exercise with a
vocabulary of its own defines the same names (docs/development.md, "Add a known mistake", says where).
"""

from __future__ import annotations

from grader.exercises.multi_head_attention import source_premises
from grader.exercises.multi_head_attention.hidden import counterfactual, mistakes, probes

# --- the mistakes: the functions in the lesson's order, each one's reference steps, the library

FUNCTIONS = mistakes.FUNCTIONS
REFERENCE_STEPS = mistakes.REFERENCE_STEPS
BY_ID = mistakes.BY_ID
of_function = mistakes.of_function

# --- the probes: drawn from the grading seed, run on the student's code and on each candidate

DEFAULT_SEED = probes.DEFAULT_SEED
probes_for_seed = probes.for_seed
Unusable = probes.Unusable  # raised by a probe that cannot be run on this submission
is_crash = probes.is_crash

# --- the counterfactual: a failing check run again with one function the reference's

REPLACEABLE = counterfactual.REPLACEABLE
Replaced = counterfactual.Replaced
module_calls = counterfactual.module_calls

# The student's source as text, for the parts of a fix said only where the code shows their premise.
student_code = source_premises.student_code

# The functions each call of the handle runs: a check that ran the module exercised every
# function the module uses; one that only built it, the constructor and head_dimension.
FUNCTIONS_OF_OPERATION = {
    "head_dimension": (mistakes.HEAD_DIMENSION,),
    "causal_mask": (mistakes.CAUSAL_MASK,),
    "run_head": (mistakes.HEAD,),
    "concatenate_heads": (mistakes.CONCATENATE,),
    "run_attention": (mistakes.MODULE, mistakes.HEAD, mistakes.CONCATENATE, mistakes.CAUSAL_MASK, mistakes.HEAD_DIMENSION),
    **{operation: (mistakes.MODULE, mistakes.HEAD_DIMENSION) for operation in ("construct_attention", "initial_parameters")},
}
# The calls probing a function makes (the module's include its parts): a function none of
# whose calls ever ran out of time is safe to probe; one that looped is left alone.
OPERATIONS_OF_FUNCTION = {
    mistakes.HEAD_DIMENSION: {"head_dimension"},
    mistakes.CAUSAL_MASK: {"causal_mask"},
    mistakes.HEAD: {"run_head"},
    mistakes.CONCATENATE: {"concatenate_heads"},
    mistakes.MODULE: {"run_attention", "initial_parameters", "head_dimension", "run_head", "concatenate_heads", "causal_mask"},
}
# The function a check is about, when nothing else explains its failure.
PRIMARY_OPERATION_ORDER = (
    "run_attention", "construct_attention", "initial_parameters", "run_head", "concatenate_heads", "causal_mask", "head_dimension",
)
# The functions a layout slip keeps the grader from probing: their probes load its weights.
LAYOUT_HIDES = {
    "AttentionHead.__init__": {mistakes.HEAD, mistakes.MODULE},
    "MultiHeadSelfAttention.__init__": {mistakes.MODULE},
}


def contexts(function: str, submission, grading_seed: int, function_probes) -> list[dict]:
    """The settings each candidate of ``function`` is tried in, each a dict from probe to what
    it runs on ([{}]: the probes alone). The module is tried on the student's own parts, and
    failing that on their heads with the reference's mask and concatenation (a module need not
    call the student's helpers); it is judged only when head_dimension gives it the right head
    width (raises Unusable otherwise)."""
    if function != mistakes.MODULE:
        return [{}]
    if not probes.module_is_isolable(submission, grading_seed):
        raise probes.Unusable("head_dimension")
    own = {probe: probe.parts(submission) for probe in function_probes if hasattr(probe, "parts")}
    return [own, {probe: parts.with_reference_helpers() for probe, parts in own.items()}]
