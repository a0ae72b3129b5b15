"""What the engine's root causes (grader/feedback/root_causes.py) read of multi-head
self-attention: whose layout a slip is, which calls build the module or draw random numbers, the
fixes in this lesson's words, and the randomness question. Named by the declaration's
``causes``; ships with the student's grader (the causes are found at a desk too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.exercises.multi_head_attention import data
from grader.exercises.multi_head_attention.data import Config

LAYOUT_FIX = (
    "keep the layout the constructors' docstrings give: query, key and value = "
    "nn.Linear(model_dim, head_dim, bias=False) in every AttentionHead, the heads in an nn.ModuleList, "
    "output_projection = nn.Linear(model_dim, model_dim)."
)
RANDOMNESS_FIX = (
    "attention is a function of its inputs and weights: no dropout, sampling or random numbers in forward "
    "(this layer has none), and nothing carried from one call to the next."
)
# The operations that build the student's module: a layout the grader cannot load its weights
# into is also the layout every check that builds the module meets.
MODULE_OPERATIONS = {"run_head", "run_attention", "initial_parameters", "construct_attention"}
# The operations whose numbers change when the head, or the module, draws random numbers.
RANDOM_OPERATIONS = {
    "AttentionHead.forward": {"run_head", "run_attention"},
    "MultiHeadSelfAttention.forward": {"run_attention"},
}
# A forward whose answers change is the part's when the part's own call changed what the code
# keeps (the module's answers change with its heads'): forward -> (the part's call, its forward).
STATE_KEPT_BY_A_PART = {"MultiHeadSelfAttention.forward": ("run_head", "AttentionHead.forward")}
# The function a call of the grader runs, for an answer found to change (grader/submission.py).
FUNCTION_OF_OPERATION = {
    "run_head": "AttentionHead.forward", "run_attention": "MultiHeadSelfAttention.forward", "causal_mask": "causal_mask",
    "head_dimension": "head_dimension", "concatenate_heads": "concatenate_heads",
    "initial_parameters": "MultiHeadSelfAttention.__init__", "construct_attention": "MultiHeadSelfAttention.__init__",
}

HEAD_CONSTRUCTOR, MODULE_CONSTRUCTOR = "AttentionHead.__init__", "MultiHeadSelfAttention.__init__"
# The constructor of a part of the module: a layout slip placed there stands, whatever a later
# failure of the whole says (None for an exercise whose module has no parts).
PART_CONSTRUCTOR = HEAD_CONSTRUCTOR
_HEAD_PARAMETER = re.compile(r"heads\.(\d+)\.(.+)")


def layout_of_failed_load(operation: str) -> str:
    """Whose layout the grader's weights did not fit, before the layout check has placed it: the
    head's when they did not fit the head alone (run_head builds one), else the module's."""
    return HEAD_CONSTRUCTOR if operation == "run_head" else MODULE_CONSTRUCTOR


def function_of_layout(found: dict[str, tuple], expected: dict[str, tuple]) -> str:
    """The constructor that has the layout slip, placed by what the student's module has: no
    parameter under ``heads.<h>.`` (no heads list, a fused projection, heads in a plain list) is
    the module's constructor; a head whose own names or shapes are not the contract's (names of
    its own, a bias, another width) is the head's; anything else (how many heads, the output
    projection) is the module's."""
    def per_head(parameters: dict) -> dict[str, dict[str, tuple]]:
        heads: dict[str, dict[str, tuple]] = {}
        for name, shape in parameters.items():
            if match := _HEAD_PARAMETER.fullmatch(name):
                heads.setdefault(match[1], {})[match[2]] = tuple(shape)
        return heads

    found_heads, contract = per_head(found), per_head(expected)
    if not found_heads or not contract:
        return MODULE_CONSTRUCTOR
    one_head = next(iter(contract.values()))  # every head of the contract has the same names and shapes
    return HEAD_CONSTRUCTOR if any(head != one_head for head in found_heads.values()) else MODULE_CONSTRUCTOR


@dataclass(frozen=True)
class RandomnessQuestion:
    """The question asked four times: its sizes, the seed of its data, and the two seeds of
    torch's generator (asked under ``first``, ``second``, then ``first`` twice more)."""

    config: Config
    data_seed: int
    first: int
    second: int


def randomness_question(grading_seed: int) -> RandomnessQuestion:
    """Drawn from the grading seed, as the checks' data and the diagnosis's probes are: a fixed
    question (torch seeded 1, 2, 1 on one set of sizes) is one a deterministic submission could
    recognise and answer differently, to be called random instead of being diagnosed."""
    rng = data.sizes(data.RANDOMNESS_QUESTION, grading_seed)
    # At least 6 positions in 2 sequences: 42 weights a causal mask allows in one head, 84 in the
    # module's two or more. Two draws of a dropout of 0.1 agree on each weight with chance 0.82,
    # so the head's answers agree with chance 0.82 ** 42 (1 in 4000) and then the module's too
    # with 0.82 ** 84 (1 in 17 million): a random module is not taken for a steady one.
    num_heads, head_dim = rng.randint(2, 3), rng.randint(2, 4)
    config = Config(batch=rng.randint(2, 3), seq=rng.randint(6, 8), model_dim=num_heads * head_dim, num_heads=num_heads)
    first, second = rng.sample(range(3, 2**31), 2)
    return RandomnessQuestion(config, rng.randrange(2**31), first, second)


def randomness_calls(handle, question: RandomnessQuestion) -> tuple:
    """The calls the question is put to, the head's then the module's: (the function, the
    handle's call, its arguments), each answer a dict of ``weights`` and ``output``."""
    config = question.config
    rng = data.generator(question.data_seed)
    inputs = data.random_inputs(config, rng)
    return (
        ("AttentionHead.forward", handle.run_head, {
            "model_dim": config.model_dim, "head_dim": config.head_dim, "parameters": data.head_parameters(config, rng),
            "inputs": inputs, "allowed_mask": data.causal_allowed(config.seq),
        }),
        ("MultiHeadSelfAttention.forward", handle.run_attention, {
            "model_dim": config.model_dim, "num_heads": config.num_heads, "inputs": inputs,
            "parameters": data.attention_parameters(config, rng),
        }),
    )
