"""A catalogue of known-wrong and known-right submissions, written as edits to the solution.

Data only: no tests live here. The grader's own tests use this catalogue to check that

* every MUTANT (a realistic student mistake) loses points in at least the groups named
  in its ``losing_groups``, and
* every VARIANT (a valid alternative implementation) scores full marks,
* the diagnosis names each mutant's ``mistake`` (its id in grader/exercises/multi_head_attention/hidden/mistakes.py), both
  mistakes of each of the PAIRS, no known id for a mutant without one, nothing for a variant.

Each entry is a list of exact text edits applied to ``solutions/multi_head_attention.py``,
so the repository holds one copy of the solution, not one per entry. Every ``old`` text must
occur exactly once in the source at the moment its edit is applied (edits apply in order);
``apply_edits`` raises ``ValueError`` naming the entry when one does not, which is what
happens when the solution changes under the catalogue.

``losing_groups`` is conservative: it names only the groups that lose points *for certain*
under the grader's checks. A mutant may lose points in further groups too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SOLUTION_PATH = Path(__file__).resolve().parent.parent / "solutions" / "multi_head_attention.py"

# The grader's test groups.
SHAPES = "shapes"
PROBABILITIES = "probabilities"
CAUSAL_MASKING = "causal_masking"
HEAD_DISTINCTNESS = "head_distinctness"
GRADIENT_FLOW = "gradient_flow"
CONFIGURATION = "configuration"
REFERENCE_EXAMPLES = "reference_examples"  # visible: fixed data shipped with the exercise
REFERENCE = "reference"  # hidden
GROUPS = (
    SHAPES,
    PROBABILITIES,
    CAUSAL_MASKING,
    HEAD_DISTINCTNESS,
    GRADIENT_FLOW,
    CONFIGURATION,
    REFERENCE_EXAMPLES,
    REFERENCE,
)


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` (which must occur exactly once) by ``new``."""

    old: str
    new: str


@dataclass(frozen=True)
class Implementation:
    """One submission: the solution with ``edits`` applied."""

    name: str  # short snake_case id, used as the submission file name
    description: str  # one sentence: what the student did
    edits: tuple[Edit, ...]
    losing_groups: tuple[str, ...] = ()  # mutants: groups that MUST lose points; variants: ()
    # Mutants: the id of its misconception in the diagnosis's vocabulary (grader/exercises/multi_head_attention/hidden/mistakes.py,
    # and the grader's own root causes, grader/feedback/root_causes.py), which the diagnosis must name; two
    # ids joined by "+" for one piece of code with two misconceptions; "" for a mistake outside
    # the vocabulary, which must get no known id.
    mistake: str = ""
    # What the student must read for it: texts that must appear in what the grader tells them
    # (the diagnosis and the failing checks' messages).
    must_read: tuple[str, ...] = ()
    # Which family of the catalogue it belongs to, for the report: "" (the first catalogue), "style"
    # (a known mistake or a valid rewrite in a student's own style), "contract" (a layout slip),
    # "randomness", "state" (answers that change from call to call), "in_place" (an in-place operation autograd trips on).
    kind: str = ""

    @property
    def mistakes(self) -> set[str]:
        return set(self.mistake.split("+")) if self.mistake else set()


def _edit(old: str, new: str) -> Edit:
    return Edit(old=old, new=new)


# Lines of the solution that several entries edit, spelled once.
_SCALE_LINE = "scores = scores / math.sqrt(self.head_dim)"
_MASK_LINE = 'scores = scores.masked_fill(~allowed_mask, float("-inf"))'
_SOFTMAX_LINE = "weights = torch.softmax(scores, dim=-1)"
_OUTPUT_LINE = "output = weights @ values  # (batch, seq, head_dim)"
_SCORES_LINE = "scores = queries @ keys.transpose(-2, -1)"
_CONCAT_LINE = "return torch.cat(outputs, dim=-1)"
_STACK_LINE = "weights = torch.stack([result.weights for result in head_results], dim=1)"
_PROJECTION_LINE = "combined = self.output_projection(concatenated)"
_DEFAULT_MASK_LINE = "allowed_mask = causal_mask(inputs.shape[1], device=inputs.device)"
_HEAD_DIM_CHECK = "if num_heads < 1 or model_dim % num_heads != 0:"
_HEAD_DIM_RETURN = "return model_dim // num_heads"
_TRIL_LINE = "return torch.tril(ones)"
_HEADS_LIST = (
    "self.heads = nn.ModuleList(\n"
    "            AttentionHead(model_dim, self.head_dim) for _ in range(num_heads)\n"
    "        )"
)
_HEAD_DIM_ERROR = (
    "        raise ValueError(\n"
    '            f"model_dim={model_dim} must divide exactly by num_heads={num_heads} "\n'
    '            f"(and num_heads must be at least 1)"\n'
    "        )\n"
)


MUTANTS: tuple[Implementation, ...] = (
    # --- Scaling of the scores -------------------------------------------------------------
    Implementation(
        name="missing_scale",
        mistake="missing_scale",
        description="Forgot to divide the scores by sqrt(head_dim).",
        edits=(_edit(_SCALE_LINE, "scores = scores"),),
        losing_groups=(PROBABILITIES, REFERENCE_EXAMPLES, REFERENCE),
    ),
    Implementation(
        name="scale_by_head_dim",
        mistake="scaled_by_head_dim",
        description="Divided the scores by head_dim instead of sqrt(head_dim).",
        edits=(_edit(_SCALE_LINE, "scores = scores / self.head_dim"),),
        losing_groups=(PROBABILITIES, REFERENCE),
    ),
    Implementation(
        name="scale_multiplied",
        mistake="scale_multiplied",
        description="Multiplied the scores by sqrt(head_dim) instead of dividing.",
        edits=(_edit(_SCALE_LINE, "scores = scores * math.sqrt(self.head_dim)"),),
        losing_groups=(PROBABILITIES, REFERENCE),
    ),
    Implementation(
        name="scale_by_model_dim",
        mistake="scaled_by_model_dim",
        description=(
            "Scaled the scores by sqrt(model_dim), the input width, instead of sqrt(head_dim)."
        ),
        edits=(_edit(_SCALE_LINE, "scores = scores / math.sqrt(inputs.shape[-1])"),),
        losing_groups=(PROBABILITIES, REFERENCE),
    ),
    # --- Softmax -------------------------------------------------------------------------------
    Implementation(
        name="softmax_over_queries",
        mistake="softmax_over_queries",
        description="Took the softmax over the query axis (dim=-2) instead of the key axis.",
        edits=(_edit(_SOFTMAX_LINE, "weights = torch.softmax(scores, dim=-2)"),),
        losing_groups=(PROBABILITIES, CAUSAL_MASKING, REFERENCE),
    ),
    Implementation(
        name="scores_returned_as_weights",
        mistake="returns_scores",
        description="Returned the masked, pre-softmax scores as the attention weights.",
        edits=(
            _edit(
                "return HeadResult(output=output, weights=weights)",
                "return HeadResult(output=output, weights=scores)",
            ),
        ),
        losing_groups=(PROBABILITIES, CAUSAL_MASKING, REFERENCE),
    ),
    # --- Masking -------------------------------------------------------------------------------
    Implementation(
        name="mask_after_softmax",
        mistake="mask_after_softmax",
        description=(
            "Applied the mask after the softmax by multiplying, so rows no longer sum to one."
        ),
        edits=(
            _edit(_MASK_LINE, "scores = scores"),
            _edit(_SOFTMAX_LINE, "weights = torch.softmax(scores, dim=-1) * allowed_mask"),
        ),
        losing_groups=(PROBABILITIES, CAUSAL_MASKING, REFERENCE_EXAMPLES, REFERENCE),
    ),
    Implementation(
        name="mask_without_diagonal",
        mistake="mask_without_diagonal",
        description=(
            "Built the causal mask with tril(..., diagonal=-1), so a position cannot see itself."
        ),
        edits=(_edit(_TRIL_LINE, "return torch.tril(ones, diagonal=-1)"),),
        losing_groups=(CAUSAL_MASKING, PROBABILITIES),
    ),
    Implementation(
        name="anti_causal_mask",
        mistake="upper_triangle_mask",
        description=(
            "Built the causal mask with triu instead of tril, letting positions see the future."
        ),
        edits=(_edit(_TRIL_LINE, "return torch.triu(ones)"),),
        losing_groups=(CAUSAL_MASKING,),
    ),
    Implementation(
        name="float_causal_mask",
        mistake="mask_not_boolean",
        description="Returned the causal mask as a float tensor of ones and zeros instead of bool.",
        edits=(
            _edit(
                "ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)",
                "ones = torch.ones(seq_len, seq_len, device=device)",
            ),
        ),
        losing_groups=(CAUSAL_MASKING,),
    ),
    Implementation(
        name="no_mask",
        mistake="mask_not_applied",
        description="Never applied the mask to the scores.",
        edits=(_edit(_MASK_LINE, "scores = scores"),),
        losing_groups=(CAUSAL_MASKING, REFERENCE),
    ),
    Implementation(
        name="masked_fill_result_discarded",
        mistake="mask_not_applied",
        description=(
            "Called scores.masked_fill(...) but threw its result away (it is not in-place)."
        ),
        edits=(_edit(_MASK_LINE, 'scores.masked_fill(~allowed_mask, float("-inf"))'),),
        losing_groups=(CAUSAL_MASKING, REFERENCE),
    ),
    Implementation(
        name="mask_filled_with_zero",
        mistake="mask_filled_with_zero",
        description="Filled disallowed scores with 0 instead of -inf, so they still get weight.",
        edits=(_edit(_MASK_LINE, "scores = scores.masked_fill(~allowed_mask, 0.0)"),),
        losing_groups=(CAUSAL_MASKING, REFERENCE),
    ),
    Implementation(
        name="mask_inverted",
        mistake="mask_polarity_flipped",
        description="Filled -inf where the mask is True (allowed) instead of where it is False.",
        edits=(_edit(_MASK_LINE, 'scores = scores.masked_fill(allowed_mask, float("-inf"))'),),
        losing_groups=(CAUSAL_MASKING, PROBABILITIES, REFERENCE),
    ),
    Implementation(
        name="custom_mask_ignored",
        mistake="head_ignores_given_mask",
        description=(
            "The head always builds its own causal mask and ignores the allowed_mask argument."
        ),
        edits=(
            _edit(
                _MASK_LINE,
                "scores = scores.masked_fill(\n"
                "            ~causal_mask(inputs.shape[1], device=inputs.device), float(\"-inf\")\n"
                "        )",
            ),
        ),
        losing_groups=(CAUSAL_MASKING,),
    ),
    Implementation(
        name="no_default_causal_mask",
        mistake="no_default_mask",
        description=(
            "With allowed_mask=None the module applies no mask at all instead of the causal one."
        ),
        edits=(
            _edit(
                "        if allowed_mask is None:\n"
                "            " + _DEFAULT_MASK_LINE + "  # (seq, seq)\n",
                "",
            ),
            _edit(
                _MASK_LINE,
                "if allowed_mask is not None:\n            " + _MASK_LINE,
            ),
        ),
        losing_groups=(CAUSAL_MASKING,),
    ),
    Implementation(
        name="mask_from_model_dim",
        mistake="default_mask_wrong_size",
        description=(
            "Sized the default causal mask with inputs.shape[-1] (model_dim) instead of the "
            "sequence length."
        ),
        edits=(
            _edit(
                _DEFAULT_MASK_LINE,
                "allowed_mask = causal_mask(inputs.shape[-1], device=inputs.device)",
            ),
        ),
        losing_groups=(CAUSAL_MASKING,),
    ),
    # --- Queries, keys and values --------------------------------------------------------------
    Implementation(
        name="values_from_queries",
        mistake="values_not_weighted",
        description="Multiplied the weights by the queries instead of the values.",
        edits=(_edit(_OUTPUT_LINE, "output = weights @ queries  # (batch, seq, head_dim)"),),
        losing_groups=(GRADIENT_FLOW, REFERENCE),
    ),
    Implementation(
        name="values_from_keys",
        mistake="values_not_weighted",
        description="Multiplied the weights by the keys instead of the values.",
        edits=(_edit(_OUTPUT_LINE, "output = weights @ keys  # (batch, seq, head_dim)"),),
        losing_groups=(GRADIENT_FLOW, REFERENCE),
    ),
    Implementation(
        name="queries_and_keys_swapped",
        mistake="queries_and_keys_swapped",
        description="Computed keys @ queries^T instead of queries @ keys^T.",
        edits=(_edit(_SCORES_LINE, "scores = keys @ queries.transpose(-2, -1)"),),
        losing_groups=(PROBABILITIES, REFERENCE),
    ),
    # --- Concatenating the heads ---------------------------------------------------------------
    Implementation(
        name="concatenated_on_seq_axis",
        mistake="concatenated_on_wrong_axis",
        description=(
            "Concatenated the heads' outputs along the sequence axis (dim=1) instead of the "
            "features."
        ),
        edits=(_edit(_CONCAT_LINE, "return torch.cat(outputs, dim=1)"),),
        losing_groups=(SHAPES, REFERENCE),
    ),
    Implementation(
        name="interleaved_concatenation",
        mistake="heads_interleaved",
        description=(
            "Stacked the heads' outputs on a new last axis and flattened, interleaving their "
            "features."
        ),
        edits=(_edit(_CONCAT_LINE, "return torch.stack(outputs, dim=-1).flatten(start_dim=-2)"),),
        losing_groups=(SHAPES, REFERENCE),
    ),
    Implementation(
        name="heads_concatenated_in_reverse",
        mistake="heads_in_reverse",
        description="Concatenated the heads in reverse order, last head first.",
        edits=(_edit(_CONCAT_LINE, "return torch.cat(outputs[::-1], dim=-1)"),),
        losing_groups=(SHAPES, REFERENCE),
    ),
    # --- Stacking the heads' weights -----------------------------------------------------------
    Implementation(
        name="weights_heads_axis_misplaced",
        mistake="weights_stacked_on_wrong_axis",
        description="Stacked the heads' weights on dim=2, giving (batch, seq, heads, seq).",
        edits=(
            _edit(
                _STACK_LINE,
                "weights = torch.stack([result.weights for result in head_results], dim=2)",
            ),
        ),
        losing_groups=(SHAPES, REFERENCE),
    ),
    Implementation(
        name="weights_stacked_heads_first",
        mistake="weights_stacked_on_wrong_axis",
        description=(
            "Used torch.stack's default dim=0, giving weights of shape (heads, batch, seq, seq)."
        ),
        edits=(
            _edit(
                _STACK_LINE,
                "weights = torch.stack([result.weights for result in head_results])",
            ),
        ),
        losing_groups=(SHAPES, REFERENCE),
    ),
    Implementation(
        name="first_head_weights_repeated",
        mistake="one_head_weights_repeated",
        description="Reported head 0's attention weights for every head.",
        edits=(
            _edit(
                _STACK_LINE,
                "weights = torch.stack([head_results[0].weights] * len(head_results), dim=1)",
            ),
        ),
        losing_groups=(HEAD_DISTINCTNESS, REFERENCE),
    ),
    # --- Batch handling ------------------------------------------------------------------------
    Implementation(
        name="output_for_first_batch_only",
        description=(
            "Projected only the first batch element (concatenated[0]) and unsqueezed, batch 1 only."
        ),
        edits=(
            _edit(
                _PROJECTION_LINE,
                "combined = self.output_projection(concatenated[0]).unsqueeze(0)",
            ),
        ),
        losing_groups=(SHAPES, REFERENCE),
    ),
    Implementation(
        name="weights_squeezed_batch",
        description=(
            "Squeezed the batch axis out of each head's weights and unsqueezed it back, batch 1 "
            "only."
        ),
        edits=(
            _edit(
                _STACK_LINE,
                "weights = torch.stack([result.weights.squeeze(0) for result in head_results])\n"
                "        weights = weights.unsqueeze(0)",
            ),
        ),
        losing_groups=(SHAPES, REFERENCE),
    ),
    # --- Independent heads ---------------------------------------------------------------------
    Implementation(
        name="shared_head_module",
        mistake="shared_head_module",
        description=(
            "Built one head and repeated it with nn.ModuleList([head] * num_heads), so all heads "
            "share weights."
        ),
        edits=(
            _edit(
                _HEADS_LIST,
                "head = AttentionHead(model_dim, self.head_dim)\n"
                "        self.heads = nn.ModuleList([head] * num_heads)",
            ),
        ),
        losing_groups=(HEAD_DISTINCTNESS, REFERENCE),
    ),
    Implementation(
        name="reseeded_heads",
        mistake="identically_initialised_heads",
        description=(
            "Called torch.manual_seed(0) in AttentionHead.__init__, so every head starts "
            "identical."
        ),
        edits=(
            _edit(
                "self.head_dim = head_dim\n        self.query",
                "self.head_dim = head_dim\n        torch.manual_seed(0)\n        self.query",
            ),
        ),
        losing_groups=(HEAD_DISTINCTNESS,),
    ),
    Implementation(
        name="projections_with_bias",
        kind="contract",
        mistake="parameter_layout",
        description="Gave the query, key and value projections a bias (nn.Linear's default).",
        edits=(
            _edit(
                "self.query = nn.Linear(model_dim, head_dim, bias=False)",
                "self.query = nn.Linear(model_dim, head_dim)",
            ),
            _edit(
                "self.key = nn.Linear(model_dim, head_dim, bias=False)",
                "self.key = nn.Linear(model_dim, head_dim)",
            ),
            _edit(
                "self.value = nn.Linear(model_dim, head_dim, bias=False)",
                "self.value = nn.Linear(model_dim, head_dim)",
            ),
        ),
        losing_groups=(HEAD_DISTINCTNESS,),
    ),
    # --- Constructors (student work at the standard level) -------------------------------------
    Implementation(
        name="heads_in_a_plain_list",
        kind="contract",
        mistake="parameter_layout",
        description=(
            "Kept the heads in a plain Python list, so PyTorch never registers their parameters."
        ),
        edits=(
            _edit(
                _HEADS_LIST,
                "self.heads = [AttentionHead(model_dim, self.head_dim) for _ in range(num_heads)]",
            ),
        ),
        losing_groups=(SHAPES, HEAD_DISTINCTNESS, GRADIENT_FLOW, REFERENCE_EXAMPLES, REFERENCE),
    ),
    Implementation(
        name="one_head_module_for_all",
        mistake="shared_head_module",
        description="Created one AttentionHead and put that same object in every slot of the list.",
        edits=(
            _edit(
                _HEADS_LIST,
                "self.heads = nn.ModuleList([AttentionHead(model_dim, self.head_dim)] * num_heads)",
            ),
        ),
        losing_groups=(HEAD_DISTINCTNESS, REFERENCE),
    ),
    Implementation(
        name="reseeded_before_each_head",
        mistake="identically_initialised_heads",
        description=(
            "Called torch.manual_seed(0) before creating each head in MultiHeadSelfAttention, so "
            "every head starts with the same weights."
        ),
        edits=(
            _edit(
                "AttentionHead(model_dim, self.head_dim) for _ in range(num_heads)",
                "(torch.manual_seed(0), AttentionHead(model_dim, self.head_dim))[1]\n"
                "            for _ in range(num_heads)",
            ),
        ),
        losing_groups=(HEAD_DISTINCTNESS,),
    ),
    Implementation(
        name="query_with_bias",
        kind="contract",
        mistake="parameter_layout",
        description="Left out bias=False on the query projection only.",
        edits=(
            _edit(
                "self.query = nn.Linear(model_dim, head_dim, bias=False)",
                "self.query = nn.Linear(model_dim, head_dim)",
            ),
        ),
        losing_groups=(HEAD_DISTINCTNESS,),
    ),
    Implementation(
        name="projections_model_wide",
        kind="contract",
        mistake="parameter_layout",
        description=(
            "Made every head's query, key and value projections model_dim wide instead of head_dim."
        ),
        edits=(
            _edit(
                "self.query = nn.Linear(model_dim, head_dim, bias=False)",
                "self.query = nn.Linear(model_dim, model_dim, bias=False)",
            ),
            _edit(
                "self.key = nn.Linear(model_dim, head_dim, bias=False)",
                "self.key = nn.Linear(model_dim, model_dim, bias=False)",
            ),
            _edit(
                "self.value = nn.Linear(model_dim, head_dim, bias=False)",
                "self.value = nn.Linear(model_dim, model_dim, bias=False)",
            ),
        ),
        losing_groups=(SHAPES, HEAD_DISTINCTNESS, REFERENCE_EXAMPLES, REFERENCE),
    ),
    Implementation(
        name="projections_transposed",
        kind="contract",
        mistake="parameter_layout",
        description="Swapped nn.Linear's arguments: nn.Linear(head_dim, model_dim) for each projection.",
        edits=(
            _edit(
                "self.query = nn.Linear(model_dim, head_dim, bias=False)",
                "self.query = nn.Linear(head_dim, model_dim, bias=False)",
            ),
            _edit(
                "self.key = nn.Linear(model_dim, head_dim, bias=False)",
                "self.key = nn.Linear(head_dim, model_dim, bias=False)",
            ),
            _edit(
                "self.value = nn.Linear(model_dim, head_dim, bias=False)",
                "self.value = nn.Linear(head_dim, model_dim, bias=False)",
            ),
        ),
        losing_groups=(SHAPES, HEAD_DISTINCTNESS, GRADIENT_FLOW, REFERENCE_EXAMPLES, REFERENCE),
    ),
    # --- Output projection and gradients -------------------------------------------------------
    Implementation(
        name="no_output_projection",
        mistake="missing_output_projection",
        description="Returned the concatenated heads without applying the output projection.",
        edits=(_edit(_PROJECTION_LINE, "combined = concatenated"),),
        losing_groups=(GRADIENT_FLOW, REFERENCE_EXAMPLES, REFERENCE),
    ),
    Implementation(
        name="doubled_output_projection",
        mistake="repeated_output_projection",
        description="Applied the output projection twice, to its own result.",
        edits=(_edit(_PROJECTION_LINE, "combined = self.output_projection(self.output_projection(concatenated))"),),
        losing_groups=(REFERENCE_EXAMPLES, REFERENCE),
    ),
    Implementation(
        name="output_projection_without_bias",
        kind="contract",
        mistake="parameter_layout",
        description="Built the output projection with bias=False.",
        edits=(
            _edit(
                "self.output_projection = nn.Linear(model_dim, model_dim)",
                "self.output_projection = nn.Linear(model_dim, model_dim, bias=False)",
            ),
        ),
        losing_groups=(HEAD_DISTINCTNESS,),
        must_read=("output_projection.bias held at zero", "missing output_projection.bias"),
    ),
    Implementation(
        name="keys_detached",
        mistake="projection_detached",
        description=(
            "Called .detach() on the keys, cutting the gradient through the key projection."
        ),
        edits=(_edit("keys = self.key(inputs)", "keys = self.key(inputs).detach()"),),
        losing_groups=(GRADIENT_FLOW, REFERENCE),
    ),
    Implementation(
        name="inputs_detached_for_keys",
        mistake="projection_detached",
        description=(
            "Detached the inputs of the key projection: its weights still get a gradient, "
            "but none flows back to the inputs through the keys (only a finite-difference "
            "check of the input gradient sees it)."
        ),
        edits=(_edit("keys = self.key(inputs)", "keys = self.key(inputs.detach())"),),
        losing_groups=(GRADIENT_FLOW, REFERENCE),
    ),
    Implementation(
        name="values_under_no_grad",
        mistake="projection_detached",
        description=(
            "Computed the values inside torch.no_grad(), so the value projection gets no "
            "gradient."
        ),
        edits=(
            _edit(
                "values = self.value(inputs)",
                "with torch.no_grad():\n            values = self.value(inputs)",
            ),
        ),
        losing_groups=(GRADIENT_FLOW, REFERENCE),
    ),
    # --- head_dimension and configuration ------------------------------------------------------
    Implementation(
        name="no_divisibility_check",
        mistake="no_divisibility_check",
        description="head_dimension returns model_dim // num_heads without checking anything.",
        edits=(_edit("    " + _HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR, ""),),
        losing_groups=(CONFIGURATION,),
    ),
    Implementation(
        name="check_returns_zero",
        mistake="returns_instead_of_raising",
        description="head_dimension returns 0 instead of raising when the width does not divide.",
        edits=(_edit(_HEAD_DIM_ERROR, "        return 0\n"),),
        losing_groups=(CONFIGURATION,),
    ),
    Implementation(
        name="assert_instead_of_raise",
        mistake="assert_instead_of_raise",
        description=(
            "Checked divisibility with assert, raising AssertionError instead of ValueError."
        ),
        edits=(
            _edit(
                _HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR,
                "assert num_heads >= 1 and model_dim % num_heads == 0, (\n"
                '        f"model_dim={model_dim} must divide exactly by num_heads={num_heads}"\n'
                "    )\n",
            ),
        ),
        losing_groups=(CONFIGURATION,),
    ),
    Implementation(
        name="error_message_without_numbers",
        mistake="error_message_without_numbers",
        description="Raised ValueError with a message that does not say which numbers were wrong.",
        edits=(
            _edit(
                _HEAD_DIM_ERROR,
                '        raise ValueError("model_dim must be divisible by num_heads")\n',
            ),
        ),
        losing_groups=(CONFIGURATION,),
    ),
    Implementation(
        name="true_division_head_dim",
        mistake="true_division",
        description=(
            "Returned model_dim / num_heads, a float, so nn.Linear cannot be built with it."
        ),
        edits=(_edit(_HEAD_DIM_RETURN, "return model_dim / num_heads"),),
        losing_groups=(
            SHAPES,
            PROBABILITIES,
            CAUSAL_MASKING,
            HEAD_DISTINCTNESS,
            GRADIENT_FLOW,
            REFERENCE,
        ),
    ),
    Implementation(
        name="softmax_over_batch",
        mistake="softmax_over_batch",
        description="Took the softmax over the batch axis (dim=0).",
        edits=(_edit(_SOFTMAX_LINE, "weights = torch.softmax(scores, dim=0)"),),
        losing_groups=(PROBABILITIES, REFERENCE),
        must_read=("the softmax normalises over the batch axis", "NaN"),
    ),
    # --- Mistakes outside the diagnosis's vocabulary (mistake=""): never given a known id ---------
    Implementation(
        name="scale_by_seq_len",
        description="Scaled the scores by sqrt(seq_len) instead of sqrt(head_dim).",
        edits=(_edit(_SCALE_LINE, "scores = scores / math.sqrt(inputs.shape[1])"),),
        losing_groups=(PROBABILITIES, REFERENCE),
    ),
    Implementation(
        name="sigmoid_instead_of_softmax",
        description="Used a sigmoid on each score instead of a softmax over the keys.",
        edits=(_edit(_SOFTMAX_LINE, "weights = torch.sigmoid(scores)"),),
        losing_groups=(PROBABILITIES, REFERENCE),
    ),
    Implementation(
        name="scale_after_softmax",
        description="Divided the weights by sqrt(head_dim) after the softmax instead of the scores before it.",
        edits=(
            _edit(_SCALE_LINE, "scores = scores"),
            _edit(_SOFTMAX_LINE, "weights = torch.softmax(scores, dim=-1) / math.sqrt(self.head_dim)"),
        ),
        losing_groups=(PROBABILITIES, REFERENCE),
    ),
    Implementation(
        name="scores_from_queries_only",
        description="Compared the queries with themselves: queries @ queries^T.",
        edits=(_edit(_SCORES_LINE, "scores = queries @ queries.transpose(-2, -1)"),),
        losing_groups=(PROBABILITIES, REFERENCE),
    ),
    Implementation(
        name="residual_added",
        description="Added the inputs to the projected output (a residual connection the layer does not have).",
        edits=(_edit(_PROJECTION_LINE, "combined = self.output_projection(concatenated) + inputs"),),
        losing_groups=(REFERENCE,),
    ),
    Implementation(
        name="mask_one_step_ahead",
        description="Built the causal mask with tril(..., diagonal=1), letting each position see the next one.",
        edits=(_edit(_TRIL_LINE, "return torch.tril(ones, diagonal=1)"),),
        losing_groups=(CAUSAL_MASKING,),
    ),
    Implementation(
        name="mask_transposed_for_heads",
        description="Passed the mask transposed ([key, query]) to the heads.",
        edits=(
            _edit(
                "head_results = [head(inputs, allowed_mask) for head in self.heads]",
                "head_results = [head(inputs, allowed_mask.transpose(-2, -1)) for head in self.heads]",
            ),
        ),
        losing_groups=(CAUSAL_MASKING,),
    ),
    Implementation(
        name="single_head_rejected",
        description="head_dimension refuses num_heads=1 (checks num_heads < 2).",
        edits=(_edit(_HEAD_DIM_CHECK, "if num_heads < 2 or model_dim % num_heads != 0:"),),
        losing_groups=(CONFIGURATION,),
    ),
    Implementation(
        name="weights_concatenated",
        description="Concatenated the heads' attention weights instead of their outputs.",
        edits=(_edit("outputs = [result.output for result in head_results]", "outputs = [result.weights for result in head_results]"),),
        losing_groups=(SHAPES, REFERENCE),
    ),
    # --- Known mistakes written in a student's own style (the diagnosis decides by behaviour) ---
    Implementation(
        name="softmax_over_queries_by_hand",
        kind="style",
        mistake="softmax_over_queries",
        description="Wrote a stable softmax by hand, shifting by each row's maximum but summing over dim=1 (the queries).",
        edits=(
            _edit(
                _SOFTMAX_LINE,
                "exponentials = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)\n"
                "        weights = exponentials / exponentials.sum(dim=1, keepdim=True)",
            ),
        ),
        losing_groups=(PROBABILITIES, REFERENCE),
        must_read=("the softmax normalises over the query axis",),
    ),
    Implementation(
        name="softmax_over_queries_with_where",
        kind="style",
        mistake="softmax_over_queries",
        description="Masked with torch.where after exp, and normalised each key's column instead of each query's row.",
        edits=(
            _edit(_MASK_LINE, "scores = scores"),
            _edit(
                _SOFTMAX_LINE,
                "exponentials = torch.where(allowed_mask, torch.exp(scores - scores.amax(-1, keepdim=True)), 0.0)\n"
                "        weights = exponentials / exponentials.sum(-2, keepdim=True)",
            ),
        ),
        losing_groups=(PROBABILITIES, REFERENCE),
        must_read=("the softmax normalises over the query axis",),
    ),
    Implementation(
        name="softmax_over_queries_in_a_loop",
        kind="style",
        mistake="softmax_over_queries",
        description="Looped over the batch and took the softmax of each (seq, seq) matrix over dim=0, its queries.",
        edits=(
            _edit(
                _SOFTMAX_LINE,
                "weights = torch.stack([torch.softmax(matrix, dim=0) for matrix in scores])",
            ),
        ),
        losing_groups=(PROBABILITIES, REFERENCE),
        must_read=("the softmax normalises over the query axis",),
    ),
    Implementation(
        name="missing_scale_with_einsum",
        kind="style",
        mistake="missing_scale",
        description="Wrote the scores with torch.einsum and forgot the 1/sqrt(head_dim) scale.",
        edits=(
            _edit(_SCORES_LINE, 'scores = torch.einsum("bqd,bkd->bqk", queries, keys)'),
            _edit(_SCALE_LINE, "scores = scores"),
        ),
        losing_groups=(PROBABILITIES, REFERENCE),
        must_read=("the scores are not divided by sqrt(head_dim)",),
    ),
    Implementation(
        name="mask_filled_with_zero_by_where",
        kind="style",
        mistake="mask_filled_with_zero",
        description="Masked with torch.where(allowed_mask, scores, 0.0).",
        edits=(_edit(_MASK_LINE, "scores = torch.where(allowed_mask, scores, 0.0)"),),
        losing_groups=(CAUSAL_MASKING, REFERENCE),
        must_read=("masked positions get a score of 0 instead of -inf",),
    ),
    Implementation(
        name="values_from_keys_in_a_loop",
        kind="style",
        mistake="values_not_weighted",
        description="Built the output example by example in a loop, weighting the keys instead of the values.",
        edits=(
            _edit(
                _OUTPUT_LINE,
                "rows = [weights[example] @ keys[example] for example in range(weights.shape[0])]  # each (seq, head_dim)\n"
                "        output = torch.stack(rows)  # (batch, seq, head_dim)",
            ),
        ),
        losing_groups=(GRADIENT_FLOW, REFERENCE),
        must_read=("the head's output is not weights @ values",),
    ),
    Implementation(
        name="default_mask_from_the_attribute",
        kind="style",
        mistake="default_mask_wrong_size",
        description="Sized the default causal mask by self.model_dim instead of the sequence length.",
        edits=(_edit(_DEFAULT_MASK_LINE, "allowed_mask = causal_mask(self.model_dim, device=inputs.device)"),),
        losing_groups=(CAUSAL_MASKING,),
        must_read=("the default causal mask is built with the wrong size", "default causal mask seems sized by model_dim"),
    ),
    Implementation(
        name="assert_naming_one_number",
        kind="style",
        mistake="assert_instead_of_raise+error_message_without_numbers",
        description="Checked the configuration with assert, its message naming num_heads only.",
        edits=(
            _edit(
                _HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR,
                'assert num_heads >= 1 and model_dim % num_heads == 0, f"num_heads={num_heads} does not divide the width"\n',
            ),
        ),
        losing_groups=(CONFIGURATION,),
        must_read=("checked with assert instead of raising ValueError", "does not say which numbers were wrong"),
    ),
    Implementation(
        name="two_asserts_naming_one_number",
        kind="style",
        mistake="assert_instead_of_raise+error_message_without_numbers",
        description="Checked with two asserts (at least one head, then the remainder), each naming num_heads only.",
        edits=(
            _edit(
                _HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR,
                'assert num_heads > 0, f"num_heads={num_heads} must be positive"\n'
                '    assert model_dim % num_heads == 0, f"num_heads={num_heads} does not divide the width"\n',
            ),
        ),
        losing_groups=(CONFIGURATION,),
        must_read=("checked with assert instead of raising ValueError",),
    ),
    Implementation(
        name="message_with_an_extra_check",
        kind="style",
        mistake="error_message_without_numbers",
        description="Rejected a width that does not divide (and a non-integer one, an extra check) with a message naming no number.",
        edits=(
            _edit(
                _HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR,
                "if not isinstance(model_dim, int) or num_heads < 1 or model_dim % num_heads:\n"
                '        raise ValueError("the model width must split evenly into the heads")\n',
            ),
        ),
        losing_groups=(CONFIGURATION,),
        must_read=("does not say which numbers were wrong",),
    ),
    # --- Contract slips: one message about the layout, the attention graded as far as it can be ---
    Implementation(
        name="projections_renamed",
        kind="contract",
        mistake="parameter_layout",
        description="Named the head's projections q, k and v instead of query, key and value.",
        edits=(
            _edit("self.query = nn.Linear(model_dim, head_dim, bias=False)", "self.q = nn.Linear(model_dim, head_dim, bias=False)"),
            _edit("self.key = nn.Linear(model_dim, head_dim, bias=False)", "self.k = nn.Linear(model_dim, head_dim, bias=False)"),
            _edit("self.value = nn.Linear(model_dim, head_dim, bias=False)", "self.v = nn.Linear(model_dim, head_dim, bias=False)"),
            _edit("queries = self.query(inputs)", "queries = self.q(inputs)"),
            _edit("keys = self.key(inputs)", "keys = self.k(inputs)"),
            _edit("values = self.value(inputs)", "values = self.v(inputs)"),
        ),
        losing_groups=(HEAD_DISTINCTNESS, REFERENCE_EXAMPLES, REFERENCE),
        must_read=("do not have the names and shapes of the contract", "missing heads.<h>.query.weight"),
    ),
    Implementation(
        name="value_projection_resized",
        kind="contract",
        mistake="parameter_layout",
        description="Made the value projection model_dim wide (nn.Linear(model_dim, model_dim)), the others head_dim.",
        edits=(
            _edit(
                "self.value = nn.Linear(model_dim, head_dim, bias=False)",
                "self.value = nn.Linear(model_dim, model_dim, bias=False)",
            ),
        ),
        losing_groups=(HEAD_DISTINCTNESS, REFERENCE_EXAMPLES, REFERENCE),
        must_read=("do not have the names and shapes of the contract", "instead of"),
    ),
    Implementation(
        name="key_and_value_with_bias",
        kind="contract",
        mistake="parameter_layout",
        description="Left nn.Linear's default bias on the key and value projections.",
        edits=(
            _edit("self.key = nn.Linear(model_dim, head_dim, bias=False)", "self.key = nn.Linear(model_dim, head_dim)"),
            _edit("self.value = nn.Linear(model_dim, head_dim, bias=False)", "self.value = nn.Linear(model_dim, head_dim)"),
        ),
        losing_groups=(HEAD_DISTINCTNESS,),
        must_read=("held at zero", "unexpected heads.<h>.key.bias"),
    ),
    # --- Randomness: named as such, not as a softmax or mask mistake ----------------------------
    Implementation(
        name="dropout_on_the_weights",
        kind="randomness",
        mistake="nondeterministic",
        description="Applied nn.Dropout(0.1) to the head's attention weights (on in training mode, the default).",
        edits=(
            _edit("self.value = nn.Linear(model_dim, head_dim, bias=False)",
                  "self.value = nn.Linear(model_dim, head_dim, bias=False)\n        self.dropout = nn.Dropout(0.1)"),
            _edit(_SOFTMAX_LINE, _SOFTMAX_LINE + "\n        weights = self.dropout(weights)"),
        ),
        losing_groups=(PROBABILITIES, REFERENCE),
        must_read=("your module gives different answers to the same call", "dropout"),
    ),
    Implementation(
        name="dropout_after_the_output_projection",
        kind="randomness",
        mistake="nondeterministic",
        description="Applied torch.nn.functional.dropout to the module's output (training=True by default).",
        edits=(_edit(_PROJECTION_LINE, _PROJECTION_LINE + "\n        combined = torch.nn.functional.dropout(combined, 0.1)"),),
        losing_groups=(REFERENCE_EXAMPLES, REFERENCE),
        must_read=("your module gives different answers to the same call",),
    ),
    Implementation(
        name="noise_added_to_the_scores",
        kind="randomness",
        mistake="nondeterministic",
        description="Added a little random noise to the scores (sampling), with torch.randn_like.",
        edits=(_edit(_SCALE_LINE, _SCALE_LINE + "\n        scores = scores + 0.1 * torch.randn_like(scores)"),),
        losing_groups=(PROBABILITIES, REFERENCE),
        must_read=("your module gives different answers to the same call",),
    ),
    # --- In-place operations: the error of the backward pass at the student's line ---------------
    Implementation(
        name="softmax_divided_in_place",
        kind="in_place",
        description="Wrote a stable softmax by hand and divided exp's output in place (/=), which autograd needs.",
        edits=(
            _edit(
                _SOFTMAX_LINE,
                "weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))\n"
                "        weights /= weights.sum(dim=-1, keepdim=True)",
            ),
        ),
        losing_groups=(GRADIENT_FLOW, REFERENCE),
        must_read=("changed it in place", "weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))"),
    ),
)

# Two mutants in one submission (their edits applied one after the other): the diagnosis
# must name both ids, whether the mistakes sit in two functions or in the same one.
PAIRS: tuple[tuple[str, str], ...] = (
    # in the same function
    ("missing_scale", "softmax_over_queries"),
    ("scale_by_head_dim", "no_mask"),
    ("values_from_queries", "missing_scale"),
    ("keys_detached", "scale_by_model_dim"),
    ("queries_and_keys_swapped", "mask_filled_with_zero"),
    ("scores_returned_as_weights", "scale_multiplied"),
    ("no_divisibility_check", "true_division_head_dim"),
    ("no_output_projection", "first_head_weights_repeated"),
    ("shared_head_module", "no_output_projection"),
    ("mask_from_model_dim", "weights_stacked_heads_first"),
    # in two functions
    ("missing_scale", "interleaved_concatenation"),
    ("mask_without_diagonal", "values_from_keys"),
    ("anti_causal_mask", "no_output_projection"),
    ("softmax_over_queries", "heads_concatenated_in_reverse"),
    ("error_message_without_numbers", "mask_after_softmax"),
    ("shared_head_module", "scale_by_head_dim"),
    ("custom_mask_ignored", "first_head_weights_repeated"),
    ("keys_detached", "concatenated_on_seq_axis"),
    ("mask_inverted", "reseeded_heads"),
)


VARIANTS: tuple[Implementation, ...] = (
    # --- Scores, softmax and output --------------------------------------------------------------
    Implementation(
        name="einsum_everywhere",
        description="Wrote the projections, the scores and the weighted sum with torch.einsum.",
        edits=(
            _edit(
                "queries = self.query(inputs)",
                'queries = torch.einsum("bsm,hm->bsh", inputs, self.query.weight)',
            ),
            _edit(
                "keys = self.key(inputs)",
                'keys = torch.einsum("bsm,hm->bsh", inputs, self.key.weight)',
            ),
            _edit(
                "values = self.value(inputs)",
                'values = torch.einsum("bsm,hm->bsh", inputs, self.value.weight)',
            ),
            _edit(_SCORES_LINE, 'scores = torch.einsum("bqh,bkh->bqk", queries, keys)'),
            _edit(_OUTPUT_LINE, 'output = torch.einsum("bqk,bkh->bqh", weights, values)'),
        ),
    ),
    Implementation(
        name="keys_transposed_with_mT",
        description="Transposed the keys with .mT instead of .transpose(-2, -1).",
        edits=(_edit(_SCORES_LINE, "scores = queries @ keys.mT"),),
    ),
    Implementation(
        name="queries_scaled_first",
        description=(
            "Scaled the queries by 1/sqrt(head_dim) before the matmul instead of the scores after"
            " it."
        ),
        edits=(
            _edit(
                "queries = self.query(inputs)",
                "queries = self.query(inputs) / math.sqrt(self.head_dim)",
            ),
            _edit(_SCALE_LINE, "scores = scores"),
        ),
    ),
    Implementation(
        name="where_with_finfo_min",
        description=(
            "Masked with torch.where and the dtype's most negative finite value instead of -inf."
        ),
        edits=(
            _edit(
                _MASK_LINE,
                "scores = torch.where(allowed_mask, scores, torch.finfo(scores.dtype).min)",
            ),
        ),
    ),
    Implementation(
        name="masked_fill_minus_1e9",
        description="Masked with masked_fill(..., -1e9) instead of -inf.",
        edits=(_edit(_MASK_LINE, "scores = scores.masked_fill(~allowed_mask, -1e9)"),),
    ),
    Implementation(
        name="softmax_by_hand",
        description=(
            "Wrote a numerically stable softmax by hand: subtract the row max, exp, divide by the"
            " sum."
        ),
        edits=(
            _edit(
                _SOFTMAX_LINE,
                "row_max = scores.amax(dim=-1, keepdim=True)\n"
                "        exponentials = torch.exp(scores - row_max)\n"
                "        weights = exponentials / exponentials.sum(dim=-1, keepdim=True)",
            ),
        ),
    ),
    Implementation(
        name="softmax_in_float64",
        description="Computed the softmax in float64 and cast the weights back to the input dtype.",
        edits=(
            _edit(
                _SOFTMAX_LINE,
                "weights = torch.softmax(scores.double(), dim=-1).to(scores.dtype)",
            ),
        ),
    ),
    Implementation(
        name="scaled_dot_product_attention_output",
        description=(
            "Computed the head output with F.scaled_dot_product_attention, the weights "
            "separately."
        ),
        edits=(
            _edit(
                _OUTPUT_LINE,
                "output = torch.nn.functional.scaled_dot_product_attention(\n"
                "            queries, keys, values, attn_mask=allowed_mask\n"
                "        )",
            ),
        ),
    ),
    # --- Causal mask -----------------------------------------------------------------------------
    Implementation(
        name="triu_complement_mask",
        description="Built the causal mask as ~torch.triu(ones, diagonal=1).",
        edits=(_edit(_TRIL_LINE, "return ~torch.triu(ones, diagonal=1)"),),
    ),
    Implementation(
        name="arange_comparison_mask",
        description=(
            "Built the causal mask by comparing positions: arange[:, None] >= arange[None, :]."
        ),
        edits=(
            _edit(
                "ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)",
                "positions = torch.arange(seq_len, device=device)",
            ),
            _edit(_TRIL_LINE, "return positions[:, None] >= positions[None, :]"),
        ),
    ),
    Implementation(
        name="mask_expanded_to_batch",
        description="Expanded the mask to (batch, seq, seq) before handing it to the heads.",
        edits=(
            _edit(
                "head_results = [head(inputs, allowed_mask) for head in self.heads]",
                "allowed_mask = allowed_mask.expand(inputs.shape[0], -1, -1)\n"
                "        head_results = [head(inputs, allowed_mask) for head in self.heads]",
            ),
        ),
    ),
    # --- Combining the heads ---------------------------------------------------------------------
    Implementation(
        name="concatenated_with_stack_reshape",
        description="Concatenated the heads via torch.stack(..., dim=-2) and a reshape.",
        edits=(
            _edit(
                _CONCAT_LINE,
                "stacked = torch.stack(outputs, dim=-2)  # (batch, seq, heads, head_dim)\n"
                "    return stacked.reshape(*stacked.shape[:-2], -1)",
            ),
        ),
    ),
    Implementation(
        name="concatenated_on_dim_2",
        description="Concatenated the heads with torch.cat(..., dim=2).",
        edits=(_edit(_CONCAT_LINE, "return torch.cat(outputs, dim=2)"),),
    ),
    Implementation(
        name="weights_stacked_then_permuted",
        description="Stacked the heads' weights on dim 0 and permuted to (batch, heads, seq, seq).",
        edits=(
            _edit(
                _STACK_LINE,
                "weights = torch.stack([result.weights for result in head_results])\n"
                "        weights = weights.permute(1, 0, 2, 3)",
            ),
        ),
    ),
    Implementation(
        name="output_projection_by_hand",
        description="Applied the output projection as concatenated @ weight.T + bias.",
        edits=(
            _edit(
                _PROJECTION_LINE,
                "combined = (\n"
                "            concatenated @ self.output_projection.weight.T\n"
                "            + self.output_projection.bias\n"
                "        )",
            ),
        ),
    ),
    # --- Constructors written another way (student work at the standard level) -----------------
    Implementation(
        name="heads_appended_in_a_loop",
        description="Built an empty nn.ModuleList and appended one new AttentionHead per head in a loop.",
        edits=(
            _edit(
                _HEADS_LIST,
                "self.heads = nn.ModuleList()\n"
                "        for _ in range(num_heads):\n"
                "            self.heads.append(AttentionHead(model_dim, self.head_dim))",
            ),
        ),
    ),
    Implementation(
        name="head_keeps_its_scale_and_a_mask_buffer",
        description=(
            "Stored the scale 1/sqrt(head_dim) as an attribute and a causal mask as a registered "
            "buffer in the head's constructor, and used the stored scale."
        ),
        edits=(
            _edit(
                "self.head_dim = head_dim\n",
                "self.head_dim = head_dim\n"
                "        self.scale = head_dim**-0.5\n"
                "        self.register_buffer(\"causal\", torch.tril(torch.ones(16, 16, dtype=torch.bool)))\n",
            ),
            _edit(_SCALE_LINE, "scores = scores * self.scale"),
        ),
    ),
    Implementation(
        name="module_attributes_set_first",
        description=(
            "Set model_dim and num_heads first and computed head_dim with its own check in the "
            "constructor, before building the heads with a list comprehension."
        ),
        edits=(
            _edit(
                "        self.head_dim = head_dimension(model_dim, num_heads)\n"
                "        self.model_dim = model_dim\n"
                "        self.num_heads = num_heads\n",
                "        self.model_dim, self.num_heads = model_dim, num_heads\n"
                "        if num_heads < 1 or model_dim % num_heads:\n"
                "            raise ValueError(f\"{model_dim} features do not split into {num_heads} heads\")\n"
                "        self.head_dim = model_dim // num_heads\n",
            ),
            _edit(
                _HEADS_LIST,
                "self.heads = nn.ModuleList([AttentionHead(model_dim, self.head_dim) for _ in range(num_heads)])",
            ),
        ),
    ),
    Implementation(
        name="head_dimension_with_divmod",
        description="Checked divisibility with divmod after rejecting num_heads < 1.",
        edits=(
            _edit(
                _HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR + "    " + _HEAD_DIM_RETURN + "\n",
                "if num_heads < 1:\n"
                "        raise ValueError(\n"
                '            f"num_heads={num_heads} must be at least 1 (model_dim={model_dim})"\n'
                "        )\n"
                "    quotient, remainder = divmod(model_dim, num_heads)\n"
                "    if remainder:\n"
                "        raise ValueError(\n"
                '            f"model_dim={model_dim} is not divisible by num_heads={num_heads}"\n'
                "        )\n"
                "    return quotient\n",
            ),
        ),
    ),
    # --- Written in other styles: full marks, no diagnosis ----------------------------------
    Implementation(
        name="fused_projection_for_all_heads",
        kind="style",
        description=(
            "Ran every head at once in MultiHeadSelfAttention.forward: the heads' query, key and value "
            "weights concatenated into one projection each, the heads as an axis."
        ),
        edits=(
            _edit(
                "        head_results = [head(inputs, allowed_mask) for head in self.heads]\n"
                "        concatenated = concatenate_heads(head_results)  # (batch, seq, model_dim)\n",
                "        batch, seq, _ = inputs.shape\n"
                "        fused = {name: torch.cat([getattr(head, name).weight for head in self.heads]) for name in ('query', 'key', 'value')}\n"
                "        queries, keys, values = (\n"
                "            (inputs @ fused[name].T).view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)\n"
                "            for name in ('query', 'key', 'value')\n"
                "        )  # each (batch, heads, seq, head_dim)\n"
                "        scores = queries @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)  # (batch, heads, seq, seq)\n"
                "        allowed = allowed_mask if allowed_mask.dim() == 2 else allowed_mask[:, None]\n"
                "        all_weights = torch.softmax(scores.masked_fill(~allowed, float('-inf')), dim=-1)\n"
                "        concatenated = (all_weights @ values).transpose(1, 2).reshape(batch, seq, -1)  # (batch, seq, model_dim)\n",
            ),
            _edit(_STACK_LINE, "weights = all_weights  # every head's matrix, head h at index h"),
        ),
    ),
    Implementation(
        name="head_with_bmm",
        kind="style",
        description="Computed the scores and the weighted sum with torch.bmm.",
        edits=(
            _edit(_SCORES_LINE, "scores = torch.bmm(queries, keys.transpose(1, 2))"),
            _edit(_OUTPUT_LINE, "output = torch.bmm(weights, values)  # (batch, seq, head_dim)"),
        ),
    ),
    Implementation(
        name="softmax_with_logsumexp",
        kind="style",
        description="Normalised the scores as exp(scores - logsumexp(scores)) over the keys.",
        edits=(_edit(_SOFTMAX_LINE, "weights = torch.exp(scores - torch.logsumexp(scores, dim=-1, keepdim=True))"),),
    ),
    Implementation(
        name="head_in_loops",
        kind="style",
        description="Computed each query's scores, weights and output in Python loops over the batch and the positions.",
        edits=(
            _edit(
                "        scores = queries @ keys.transpose(-2, -1)  # (batch, seq, seq)\n"
                "        scores = scores / math.sqrt(self.head_dim)  # (batch, seq, seq)\n"
                '        scores = scores.masked_fill(~allowed_mask, float("-inf"))  # (batch, seq, seq)\n'
                "        weights = torch.softmax(scores, dim=-1)  # (batch, seq, seq)\n"
                "        output = weights @ values  # (batch, seq, head_dim)\n",
                "        allowed = allowed_mask.expand(inputs.shape[0], inputs.shape[1], inputs.shape[1])\n"
                "        weight_rows, output_rows = [], []\n"
                "        for b in range(inputs.shape[0]):\n"
                "            for q in range(inputs.shape[1]):\n"
                "                row = torch.stack([queries[b, q] @ keys[b, k] for k in range(inputs.shape[1])])\n"
                "                row = row / math.sqrt(self.head_dim)\n"
                "                row = row.masked_fill(~allowed[b, q], float('-inf')).softmax(dim=0)\n"
                "                weight_rows.append(row)\n"
                "                output_rows.append(row @ values[b])\n"
                "        weights = torch.stack(weight_rows).view(inputs.shape[0], inputs.shape[1], -1)\n"
                "        output = torch.stack(output_rows).view(inputs.shape[0], inputs.shape[1], -1)\n",
            ),
        ),
    ),
    Implementation(
        name="masked_fill_in_place",
        kind="style",
        description="Masked the scores in place with masked_fill_ (the scaled scores are not needed by the backward pass).",
        edits=(_edit(_MASK_LINE, 'scores.masked_fill_(~allowed_mask, float("-inf"))'),),
    ),
    Implementation(
        name="dropout_with_p_zero",
        kind="style",
        description="Kept an nn.Dropout(p=0.0) on the weights, which changes nothing.",
        edits=(
            _edit("self.value = nn.Linear(model_dim, head_dim, bias=False)",
                  "self.value = nn.Linear(model_dim, head_dim, bias=False)\n        self.dropout = nn.Dropout(0.0)"),
            _edit(_SOFTMAX_LINE, _SOFTMAX_LINE + "\n        weights = self.dropout(weights)"),
        ),
    ),
)


# --- Sizes, dtypes and sharing (issue 26: items 4, 5, 6) ------------------------------------
# Mistakes that show only at some sizes (the visible configurations must be chosen so that
# they show at the desk), a head that drifts to float64, and projections shared inside one head.
SIZES_DTYPES_SHARING: tuple[Implementation, ...] = (
    Implementation(
        name="scale_power_half",
        kind="sizes",
        mistake="scale_power_half",
        description="Scaled by (head_dim ** 1/2), which Python reads as head_dim / 2 (equal to sqrt(head_dim) at head_dim 4 only).",
        edits=(_edit(_SCALE_LINE, "scores = scores / (self.head_dim ** 1/2)"),),
        losing_groups=(PROBABILITIES, REFERENCE_EXAMPLES, REFERENCE),
    ),
    Implementation(
        name="default_mask_sized_by_batch",
        kind="sizes",
        mistake="default_mask_wrong_size",
        description="Sized the default causal mask by inputs.shape[0], the batch, instead of the sequence length.",
        edits=(_edit(_DEFAULT_MASK_LINE, "allowed_mask = causal_mask(inputs.shape[0], device=inputs.device)"),),
        losing_groups=(CAUSAL_MASKING,),
    ),
    Implementation(
        name="softmax_sum_without_keepdim",
        kind="sizes",
        description="A stable softmax by hand that divides by exps.sum(dim=-1) without keepdim (a crash, or wrong numbers "
                    "where batch and seq broadcast).",
        edits=(_edit(_SOFTMAX_LINE, (
            "exps = torch.exp(scores - scores.amax(dim=-1, keepdim=True))\n"
            "        weights = exps / exps.sum(dim=-1)"
        )),),
        losing_groups=(PROBABILITIES, REFERENCE),
    ),
    Implementation(
        name="head_computes_in_float64",
        kind="dtype",
        description="The head takes its softmax in float64 \"for stability\" and returns those float64 weights for float32 "
                    "inputs (its output cast to float32, whatever the inputs' dtype).",
        edits=(
            _edit(_SOFTMAX_LINE, "weights = torch.softmax(scores.double(), dim=-1)"),
            _edit(_OUTPUT_LINE, "output = (weights @ values.double()).float()  # (batch, seq, head_dim)"),
        ),
        losing_groups=(SHAPES,),
    ),
    Implementation(
        name="query_key_value_share_one_linear",
        kind="sharing",
        description="Made query, key and value one nn.Linear inside each head: [nn.Linear(...)] * 3.",
        edits=(_edit(
            "        self.query = nn.Linear(model_dim, head_dim, bias=False)\n"
            "        self.key = nn.Linear(model_dim, head_dim, bias=False)\n"
            "        self.value = nn.Linear(model_dim, head_dim, bias=False)\n",
            "        self.query, self.key, self.value = [nn.Linear(model_dim, head_dim, bias=False)] * 3\n",
        ),),
        losing_groups=(HEAD_DISTINCTNESS, REFERENCE_EXAMPLES, REFERENCE),
    ),
)
MUTANTS = MUTANTS + SIZES_DTYPES_SHARING
# --- end of sizes, dtypes and sharing --------------------------------------------------------


# === Issue 37 (points in proportion): a bias on one side only, in each projection. A layout the
# lesson does not teach: the layout check alone loses its points (LAYOUT_ONLY), and beside
# another mistake (LAYOUT_PAIRS) the file loses what that mistake loses and the layout check.
_OUTPUT_PROJECTION_LINE = "self.output_projection = nn.Linear(model_dim, model_dim)"


def _with_bias(projection: str) -> Edit:
    line = f"self.{projection} = nn.Linear(model_dim, head_dim, bias=False)"
    return _edit(line, f"self.{projection} = nn.Linear(model_dim, head_dim)")


MUTANTS += (
    *(
        Implementation(
            name=f"{projection}_with_bias",
            kind="contract",
            mistake="parameter_layout",
            description=f"Left out bias=False on the {projection} projection only.",
            edits=(_with_bias(projection),),
            losing_groups=(HEAD_DISTINCTNESS,),
            must_read=("held at zero", f"unexpected heads.<h>.{projection}.bias"),
        )
        for projection in ("key", "value")  # query_with_bias is the first catalogue's
    ),
    Implementation(
        name="every_bias_on_the_wrong_side",
        kind="contract",
        mistake="parameter_layout",
        description="Swapped the biases: query, key and value with nn.Linear's default bias, the output projection with bias=False.",
        edits=(
            _with_bias("query"), _with_bias("key"), _with_bias("value"),
            _edit(_OUTPUT_PROJECTION_LINE, "self.output_projection = nn.Linear(model_dim, model_dim, bias=False)"),
        ),
        losing_groups=(HEAD_DISTINCTNESS,),
        must_read=("every extra bias of yours held at zero and the reference's output_projection.bias held at zero",),
    ),
)
# Answers that change from call to call, graded as if every call were asked afresh
# (grader/submission.py): with answers reused or not, the same grade (tests/test_answer_reuse.py).
MUTANTS += (
    Implementation(
        name="calls_counted_on_the_head",
        kind="state",
        mistake="nondeterministic",
        description="Counted the calls on the head (a debugging leftover) and scaled every other call's scores by 1.5.",
        edits=(_edit(
            _SCALE_LINE,
            "self.calls = getattr(self, 'calls', 0) + 1  # how often forward ran\n"
            "        scores = scores / math.sqrt(self.head_dim) * (1.5 if self.calls % 2 == 0 else 1.0)",
        ),),
        # Not the hidden reference group: whether its calls land on an even count depends on the
        # sizes the seed draws (on seed 11 none does, and it keeps its 15 points).
        losing_groups=(PROBABILITIES, REFERENCE_EXAMPLES),
        must_read=("gives different answers to the same call", "had asked, and the answer differed"),
    ),
    Implementation(
        name="scaled_on_first_sight",
        kind="state",
        mistake="nondeterministic",
        description="Kept the inputs each head had seen (a cache of its own) and scaled the scores only the first time.",
        edits=(_edit(
            _SCALE_LINE,
            "seen = self.__dict__.setdefault('seen', set())  # the inputs this head has seen\n"
            "        if hash(inputs.detach().numpy().tobytes()) not in seen:\n"
            "            scores = scores / math.sqrt(self.head_dim)\n"
            "        seen.add(hash(inputs.detach().numpy().tobytes()))",
        ),),
        losing_groups=(GRADIENT_FLOW, REFERENCE_EXAMPLES),
        must_read=("forward keeps state between calls", "had asked, and the answer differed"),
    ),
    # State the first reuses do not show: asked again right after itself, the same question gets
    # the same answer (the last output of its shape is its own), so only the report of a change of
    # what the code keeps (grader/exercises/multi_head_attention/operations.py) stops the reuse. Every check that asks two
    # questions of one shape in a row (the causal-masking checks' before and after a change, the
    # gradient checks, the shipped examples) meets the smoothing, whatever the sizes drawn.
    Implementation(
        name="output_remembered_by_shape",
        kind="state",
        mistake="nondeterministic",
        description="Remembered the module's last output for each input shape in a global dict and averaged each output with it.",
        edits=(
            _edit("class AttentionHead(nn.Module):", "_LAST_OUTPUT = {}  # input shape -> the last output\n\n\nclass AttentionHead(nn.Module):"),
            _edit(_PROJECTION_LINE, _PROJECTION_LINE + "\n        previous = _LAST_OUTPUT.get(tuple(inputs.shape))\n"
                                    "        if previous is not None:\n            combined = 0.5 * (combined + previous)\n"
                                    "        _LAST_OUTPUT[tuple(inputs.shape)] = combined.detach()"),
        ),
        losing_groups=(CAUSAL_MASKING, GRADIENT_FLOW, REFERENCE_EXAMPLES),
        must_read=("forward keeps state between calls", ", and the answer differed"),
    ),
    # Kept on the class: every head, of every module, smooths its keys with the last keys any head
    # made of the same shape, so from the second head of a call on no head computes its own.
    Implementation(
        name="keys_smoothed_with_the_last_call",
        kind="state",
        mistake="nondeterministic",
        description="Smoothed each head's keys with the last keys of the same shape, kept in a class attribute.",
        edits=(_edit(
            "keys = self.key(inputs)  # (batch, seq, head_dim)",
            "keys = self.key(inputs)  # (batch, seq, head_dim)\n"
            "        last = type(self).__dict__.get('last_keys')\n"
            "        if last is not None and last.shape == keys.shape:\n"
            "            keys = 0.5 * (keys + last)\n"
            "        type(self).last_keys = keys.detach()",
        ),),
        losing_groups=(CAUSAL_MASKING, GRADIENT_FLOW, REFERENCE_EXAMPLES, REFERENCE),
        must_read=("gives different answers to the same call", "had asked, and the answer differed"),
    ),
)
# Entries whose only difference from the solution is a bias on one side.
LAYOUT_ONLY = (
    "query_with_bias", "key_with_bias", "value_with_bias", "key_and_value_with_bias", "projections_with_bias",
    "output_projection_without_bias", "every_bias_on_the_wrong_side",
)
# (a bias on one side, another mutant): in each projection, beside a mask mistake (the mask, the
# head's use of it, the causal mask), and an output projection without a bias beside the module's
# own mistakes about that projection, which the diagnosis must still name.
LAYOUT_PAIRS: tuple[tuple[str, str], ...] = (
    ("output_projection_without_bias", "mask_inverted"),
    ("output_projection_without_bias", "mask_without_diagonal"),
    ("output_projection_without_bias", "doubled_output_projection"),
    ("output_projection_without_bias", "no_output_projection"),
    ("query_with_bias", "mask_inverted"),
    ("key_with_bias", "mask_filled_with_zero"),
    ("value_with_bias", "mask_after_softmax"),
    ("projections_with_bias", "no_mask"),
    ("every_bias_on_the_wrong_side", "anti_causal_mask"),
    ("every_bias_on_the_wrong_side", "custom_mask_ignored"),
)
# === end of issue 37's block


# === Issue 26 (the diagnosis): mistakes in other forms, crashes beside mistakes, two mistakes in
# every pair of functions. Kept in one block of its own: other families are appended elsewhere.
MUTANTS += (
    Implementation(
        name="zero_heads_tested_after_the_remainder",
        kind="behaviour",
        mistake="zero_heads_not_rejected",
        description="Tested the remainder first and refused a count below one after it: 0 heads divide by zero.",
        edits=(
            _edit(
                _HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR,
                "if model_dim % num_heads != 0:\n"
                '        raise ValueError(f"model_dim={model_dim} must divide exactly by num_heads={num_heads}")\n'
                "    if num_heads < 1:\n"
                '        raise ValueError(f"num_heads={num_heads} must be at least 1 (model_dim={model_dim})")\n',
            ),
        ),
        losing_groups=(CONFIGURATION,),
        must_read=("checks the remainder but not that there is at least one head",),
    ),
    Implementation(
        name="assert_naming_both_numbers_after_the_remainder",
        kind="behaviour",
        mistake="zero_heads_not_rejected+assert_instead_of_raise",
        description="One assert, the remainder tested before the head count, its message naming both numbers.",
        edits=(
            _edit(
                _HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR,
                'assert model_dim % num_heads == 0 and num_heads > 0, f"model_dim={model_dim} must divide by num_heads={num_heads}"\n',
            ),
        ),
        losing_groups=(CONFIGURATION,),
        must_read=("checked with assert instead of raising ValueError",),
    ),
    # Crashes: a function that raises on every probe is named "unknown", never given a known id
    # because some known mistake raises an error of the same type.
    Implementation(
        name="module_computes_in_float32",
        kind="behaviour",
        description="Cast the concatenated heads to float32 before the output projection: a float64 module raises a dtype error.",
        edits=(_edit(_PROJECTION_LINE, "combined = self.output_projection(concatenated.float())"),),
        losing_groups=(GRADIENT_FLOW,),
    ),
    Implementation(
        name="concatenation_of_results_not_outputs",
        kind="behaviour",
        description="Passed the HeadResult objects themselves to torch.cat, which raises TypeError.",
        edits=(_edit(_CONCAT_LINE, "return torch.cat(head_results, dim=-1)"),),
        losing_groups=(SHAPES, REFERENCE),
    ),
    Implementation(
        name="scale_halved",
        kind="behaviour",
        mistake="scale_power_half",
        description="Wrote the scale as head_dim ** 1/2, which is head_dim / 2 (the square root only where head_dim is 4).",
        edits=(_edit(_SCALE_LINE, "scale = self.head_dim ** 1/2\n        scores = scores / scale"),),
        losing_groups=(REFERENCE,),
    ),
    Implementation(
        name="keys_not_transposed",
        kind="behaviour",
        description="Multiplied the queries by the keys without transposing them: a shape error unless seq == head_dim.",
        edits=(_edit(_SCORES_LINE, "scores = queries @ keys"),),
        losing_groups=(REFERENCE,),
    ),
)

PAIRS += (
    # the pairs of functions the first pairs left out
    ("no_divisibility_check", "anti_causal_mask"),
    ("assert_instead_of_raise", "interleaved_concatenation"),
    ("error_message_without_numbers", "no_output_projection"),
    ("mask_inverted", "heads_concatenated_in_reverse"),
    ("interleaved_concatenation", "first_head_weights_repeated"),
)

# A function that crashes, or holds a mistake outside the vocabulary, beside a known mistake in
# another (first the unknown, then the known): the known one is named, the other function
# "unknown", and no check the unknown one fails is folded under the known one.
UNKNOWN_PAIRS: tuple[tuple[str, str], ...] = (
    ("keys_not_transposed", "output_projection_without_bias"),
    ("concatenation_of_results_not_outputs", "mask_without_diagonal"),
    ("concatenation_of_results_not_outputs", "scale_by_head_dim"),
    ("keys_not_transposed", "error_message_without_numbers"),
    ("module_computes_in_float32", "missing_scale"),
    ("keys_not_transposed", "interleaved_concatenation"),
)
# === end of issue 26's block

# === Issue 37: known forms named, NaN said as NaN, and a fifth class in hands nobody here had used
# (an AI assistant's style, fused projections, einsum for every head at once,
# F.scaled_dot_product_attention with an explicit mask), valid and wrong, alone and in pairs.
_MODULE_HEADS = (
    "        head_results = [head(inputs, allowed_mask) for head in self.heads]\n"
    "        concatenated = concatenate_heads(head_results)  # (batch, seq, model_dim)\n"
)
_CONSTRUCTOR_CHECK = "        self.head_dim = head_dimension(model_dim, num_heads)\n"
_MASK_ONES = "ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)"
# As an AI assistant writes a head: a stored scale, matmul, an equality test for the mask,
# functional softmax, and two checks of the configuration, each naming both numbers.
_AI_STYLE = (
    _edit("        self.head_dim = head_dim\n        self.query", "        self.head_dim = head_dim\n        self.scale = head_dim ** -0.5\n        self.query"),
    _edit(_SCORES_LINE, "scores = torch.matmul(queries, keys.transpose(-2, -1))"),
    _edit(_SCALE_LINE, "scores = scores * self.scale"),
    _edit(_MASK_LINE, 'scores = scores.masked_fill(allowed_mask == 0, float("-inf"))'),
    _edit(_SOFTMAX_LINE, "weights = torch.nn.functional.softmax(scores, dim=-1)"),
    _edit(
        _HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR,
        "if num_heads <= 0:\n"
        '        raise ValueError(f"num_heads must be positive, got num_heads={num_heads} for model_dim={model_dim}")\n'
        "    if model_dim % num_heads != 0:\n"
        '        raise ValueError(f"model_dim ({model_dim}) must be divisible by num_heads ({num_heads})")\n',
    ),
)
_AI_MASK = "return torch.tril(torch.ones(seq_len, seq_len, device=device)).bool()"
# Every head at once, queries, keys and values from one fused projection (one linear map with
# every head's three weights, as a fused QKV layer is), the weights by hand, the output by
# F.scaled_dot_product_attention with the mask given explicitly. A boolean attn_mask there is
# True where a position takes part (the docs' reference code fills -inf where attn_mask is
# False: https://docs.pytorch.org/docs/2.15/generated/torch.nn.functional.scaled_dot_product_attention.html),
# the exercise's own convention.
_FUSED_QKV = (
    "        batch, seq, _ = inputs.shape\n"
    "        qkv_weight = torch.cat([torch.cat([head.query.weight, head.key.weight, head.value.weight]) for head in self.heads])\n"
    "        qkv = torch.nn.functional.linear(inputs, qkv_weight).view(batch, seq, self.num_heads, 3, self.head_dim)\n"
    "        queries, keys, values = qkv.permute(3, 0, 2, 1, 4).unbind(0)  # each (batch, heads, seq, head_dim)\n"
    "        mask = allowed_mask if allowed_mask.dim() == 2 else allowed_mask[:, None]  # over the heads' axis\n"
    "        scores = queries @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)  # (batch, heads, seq, seq)\n"
    "        all_weights = scores.masked_fill(~mask, float('-inf')).softmax(dim=-1)\n"
    "        attended = torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)\n"
    "        concatenated = attended.transpose(1, 2).reshape(batch, seq, self.model_dim)  # (batch, seq, model_dim)\n"
)
_EINSUM_HEADS = (
    "        batch, seq, _ = inputs.shape\n"
    "        stacked = {name: torch.stack([getattr(head, name).weight for head in self.heads]) for name in ('query', 'key', 'value')}\n"
    "        queries, keys, values = (torch.einsum('bsm,hdm->bhsd', inputs, stacked[name]) for name in ('query', 'key', 'value'))\n"
    "        scores = torch.einsum('bhqd,bhkd->bhqk', queries, keys) / math.sqrt(self.head_dim)\n"
    "        mask = allowed_mask if allowed_mask.dim() == 2 else allowed_mask[:, None]\n"
    "        all_weights = torch.softmax(scores.masked_fill(~mask, float('-inf')), dim=-1)  # (batch, heads, seq, seq)\n"
    "        concatenated = torch.einsum('bhqk,bhkd->bqhd', all_weights, values).reshape(batch, seq, self.model_dim)\n"
)

MUTANTS += (
    # Known forms that were "unknown"
    Implementation(
        name="assert_in_the_constructor",
        kind="fifth",
        mistake="assert_instead_of_raise",
        description="Checked the width with an assert in MultiHeadSelfAttention's constructor, its message naming both numbers.",
        edits=(_edit(_CONSTRUCTOR_CHECK, '        assert model_dim % num_heads == 0, f"model_dim ({model_dim}) must be divisible by '
                                         'num_heads ({num_heads})"\n' + _CONSTRUCTOR_CHECK),),
        losing_groups=(CONFIGURATION,),
        must_read=("checked with assert instead of raising ValueError",),
    ),
    Implementation(
        name="softmax_over_the_first_axis",
        kind="fifth",
        mistake="softmax_over_batch",
        description="Took the softmax over dim=-3, the first axis of (batch, seq, seq): the batch.",
        edits=(_edit(_SOFTMAX_LINE, "weights = scores.softmax(dim=-3)"),),
        losing_groups=(PROBABILITIES, REFERENCE),
        must_read=("the softmax normalises over the batch axis",),
    ),
    # The fifth class's mistakes
    Implementation(
        name="ai_style_mask_strictly_below",
        kind="fifth",
        mistake="mask_without_diagonal",
        description="An AI assistant's head, with a causal mask built with tril(..., diagonal=-1): the first row is empty, NaN.",
        edits=(*_AI_STYLE, _edit(_TRIL_LINE, _AI_MASK.replace("device=device))", "device=device), diagonal=-1)"))),
        losing_groups=(PROBABILITIES, CAUSAL_MASKING, GRADIENT_FLOW),
        must_read=("leaves out the diagonal",),
    ),
    Implementation(
        name="ai_style_softmax_over_batch",
        kind="fifth",
        mistake="softmax_over_batch",
        description="An AI assistant's head with F.softmax(scores, dim=0).",
        edits=(*_AI_STYLE[:4], _edit(_SOFTMAX_LINE, "weights = torch.nn.functional.softmax(scores, dim=0)"), *_AI_STYLE[5:]),
        losing_groups=(PROBABILITIES, CAUSAL_MASKING, REFERENCE),
    ),
    Implementation(
        name="einsum_softmax_over_batch",
        kind="fifth",
        mistake="softmax_over_batch",
        description="Scores and output with einsum, the softmax over the batch axis.",
        edits=(
            _edit(_SCORES_LINE, 'scores = torch.einsum("bqd,bkd->bqk", queries, keys)'),
            _edit(_SOFTMAX_LINE, "weights = scores.softmax(0)"),
            _edit(_OUTPUT_LINE, 'output = torch.einsum("bqk,bkd->bqd", weights, values)'),
        ),
        losing_groups=(PROBABILITIES, REFERENCE),
    ),
    Implementation(
        name="sdpa_mask_inverted",
        kind="fifth",
        mistake="mask_polarity_flipped",
        description=(
            "Computed the head's output with F.scaled_dot_product_attention given ~allowed_mask (True read as "
            "'masked out'), the weights right: a row that allows every key gets NaN."
        ),
        edits=(_edit(_OUTPUT_LINE, "output = torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=~allowed_mask)"),),
        losing_groups=(REFERENCE_EXAMPLES, REFERENCE),
    ),
    # The polarity flipped throughout: the hidden positions filled by hand, and the mask handed to
    # F.scaled_dot_product_attention negated to its convention (True = take part, the docs' reference
    # code fills -inf where attn_mask is False). A row the causal mask allows whole is then all
    # -inf: NaN in the weights, and 0 in SDPA's output, which gives a fully masked row zeros
    # (aten/src/ATen/native/transformers/attention.cpp ``_safe_softmax``, pytorch/pytorch#133882).
    Implementation(
        name="sdpa_mask_polarity_flipped",
        kind="fifth",
        mistake="mask_polarity_flipped",
        description=(
            "Filled -inf where allowed_mask is True, and gave F.scaled_dot_product_attention ~allowed_mask for "
            "the output: every head attends where it must not, a row that allows every key is NaN (its output 0)."
        ),
        edits=(
            _edit(_MASK_LINE, 'scores = scores.masked_fill(allowed_mask, float("-inf"))'),
            _edit(_OUTPUT_LINE, "output = torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=~allowed_mask)"),
        ),
        losing_groups=(PROBABILITIES, CAUSAL_MASKING, REFERENCE_EXAMPLES, REFERENCE),
    ),
    Implementation(
        name="key_and_value_shared_across_heads",
        kind="fifth",
        description="Gave every head head 0's key and value projections (as multi-query attention does), each head its own query.",
        edits=(_edit(_HEADS_LIST, _HEADS_LIST + "\n        for head in self.heads[1:]:\n"
                                  "            head.key = self.heads[0].key\n            head.value = self.heads[0].value"),),
        losing_groups=(HEAD_DISTINCTNESS, REFERENCE),
        # The sentence about shared tensors names both (a fix of the keys alone meets the check again).
        must_read=("hold the very same parameter tensors, one as their key.weight and one as their value.weight",),
    ),
    Implementation(
        name="fused_qkv_without_scale",
        kind="fifth",
        description="Every head at once from one fused projection, the scores not scaled (the module's own forward, not the head's).",
        edits=(
            _edit(_MODULE_HEADS, _FUSED_QKV.replace(" / math.sqrt(self.head_dim)", "").replace(
                "attn_mask=mask)", "attn_mask=mask, scale=1.0)")),
            _edit(_STACK_LINE, "weights = all_weights"),
        ),
        losing_groups=(REFERENCE_EXAMPLES, REFERENCE),
    ),
)

PAIRS += (
    ("assert_in_the_constructor", "no_output_projection"),  # both in the module
    ("assert_in_the_constructor", "mask_without_diagonal"),
    ("softmax_over_the_first_axis", "interleaved_concatenation"),
    ("einsum_softmax_over_batch", "missing_scale"),
    ("softmax_over_batch", "first_head_weights_repeated"),
    ("sdpa_mask_polarity_flipped", "interleaved_concatenation"),  # SDPA's form beside another function's mistake
)

VARIANTS += (
    Implementation(
        name="ai_assistant_style",
        kind="fifth",
        description="As an AI assistant writes it: a stored scale, matmul, allowed_mask == 0, F.softmax, two checks each naming both numbers.",
        edits=(*_AI_STYLE, _edit(_TRIL_LINE, _AI_MASK)),
    ),
    Implementation(
        name="fused_qkv_with_sdpa",
        kind="fifth",
        description="Every head at once from one fused QKV projection; the output by F.scaled_dot_product_attention with an explicit mask.",
        edits=(_edit(_MODULE_HEADS, _FUSED_QKV), _edit(_STACK_LINE, "weights = all_weights")),
    ),
    Implementation(
        name="einsum_for_every_head_at_once",
        kind="fifth",
        description="The heads' weights stacked and every step, the output projection included, written with einsum.",
        edits=(
            _edit(_MODULE_HEADS, _EINSUM_HEADS),
            _edit(_STACK_LINE, "weights = all_weights"),
            _edit(_PROJECTION_LINE, "combined = torch.einsum('bsm,om->bso', concatenated, self.output_projection.weight) "
                                    "+ self.output_projection.bias"),
        ),
    ),
    Implementation(
        name="sdpa_with_an_additive_mask",
        kind="fifth",
        description="The head's output by F.scaled_dot_product_attention with a float mask (0 allowed, -inf hidden), the weights by hand.",
        edits=(_edit(_OUTPUT_LINE, "bias = torch.zeros(allowed_mask.shape, dtype=queries.dtype).masked_fill(~allowed_mask, float('-inf'))\n"
                                   "        output = torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=bias)"),),
    ),
)
# === end of issue 37's block

# === Issue 48: a mistake placed in the function that has it, every mask dtype named, every cause of
# identical heads, an assert wherever the contract asks for an error. Forms of this repository's own:
# one fused projection for every head (no heads list), a mask of bytes, heads deep-copied, heads given
# the first head's weights, heads set to one constant, a bare assert.
_FUSED_WITHOUT_HEADS = (
    "        batch, seq, _ = inputs.shape\n"
    "        queries, keys, values = self.qkv(inputs).split(self.model_dim, dim=-1)\n"
    "        head_results = []\n"
    "        for h in range(self.num_heads):\n"
    "            part = slice(h * self.head_dim, (h + 1) * self.head_dim)\n"
    "            scores = queries[..., part] @ keys[..., part].transpose(-2, -1) / math.sqrt(self.head_dim)\n"
    "            weights = torch.softmax(scores.masked_fill(~allowed_mask, float('-inf')), dim=-1)\n"
    "            head_results.append(HeadResult(output=weights @ values[..., part], weights=weights))\n"
    "        concatenated = concatenate_heads(head_results)  # (batch, seq, model_dim)\n"
)
MUTANTS += (
    Implementation(
        name="every_head_in_one_fused_projection",
        kind="contract",
        mistake="parameter_layout",
        description="Kept no heads list: one nn.Linear(model_dim, 3 * model_dim) makes every head's queries, keys and values.",
        edits=(_edit(_HEADS_LIST, "self.qkv = nn.Linear(model_dim, 3 * model_dim, bias=False)"), _edit(_MODULE_HEADS, _FUSED_WITHOUT_HEADS)),
        losing_groups=(HEAD_DISTINCTNESS, REFERENCE_EXAMPLES, REFERENCE),
    ),
    Implementation(
        name="causal_mask_of_bytes",
        mistake="mask_not_boolean",
        description="Built the causal mask from torch.uint8 ones: a mask of bytes, 0 and 1, not bool.",
        edits=(_edit(_MASK_ONES, "ones = torch.ones(seq_len, seq_len, dtype=torch.uint8, device=device)"),),
        losing_groups=(CAUSAL_MASKING,),
        must_read=("Your causal_mask returns a torch.uint8 tensor.",),
    ),
    Implementation(
        name="heads_deep_copied_from_one",
        mistake="identically_initialised_heads",
        description="Built one head and filled the list with copy.deepcopy of it: separate modules, one head's weights.",
        edits=(_edit(_HEADS_LIST, (
            "import copy\n"
            "        template = AttentionHead(model_dim, self.head_dim)\n"
            "        self.heads = nn.ModuleList(copy.deepcopy(template) for _ in range(num_heads))"
        )),),
        losing_groups=(HEAD_DISTINCTNESS,),
        must_read=("copy.deepcopy",),
    ),
    Implementation(
        name="heads_given_the_first_heads_weights",
        mistake="identically_initialised_heads",
        description="Loaded the first head's state dict into every other head after building them.",
        edits=(_edit(_HEADS_LIST, _HEADS_LIST + "\n        for later in self.heads[1:]:\n            later.load_state_dict(self.heads[0].state_dict())"),),
        losing_groups=(HEAD_DISTINCTNESS,),
    ),
    Implementation(
        name="heads_initialised_to_a_constant",
        mistake="identically_initialised_heads",
        description="Set every projection of every head to 0.1 in AttentionHead's constructor: no seed, no copy, the same weights.",
        edits=(_edit("        self.value = nn.Linear(model_dim, head_dim, bias=False)\n",
                     "        self.value = nn.Linear(model_dim, head_dim, bias=False)\n"
                     "        for projection in (self.query, self.key, self.value):\n"
                     "            nn.init.constant_(projection.weight, 0.1)\n"),),
        losing_groups=(HEAD_DISTINCTNESS,),
    ),
    Implementation(
        name="bare_assert_in_head_dimension",
        mistake="assert_instead_of_raise+error_message_without_numbers+zero_heads_not_rejected",
        description="Checked the width with a bare assert model_dim % num_heads == 0: no message, and zero heads divide by zero.",
        edits=(_edit(_HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR, "assert model_dim % num_heads == 0\n"),),
        losing_groups=(CONFIGURATION,),
    ),
    Implementation(
        name="constructor_asserts_in_words",
        mistake="assert_instead_of_raise",
        description="The module's constructor asserts the width divides, its message naming neither number, and divides by itself.",
        edits=(_edit(_CONSTRUCTOR_CHECK, "        assert not model_dim % num_heads, 'the heads must split the width evenly'\n"
                                         "        self.head_dim = model_dim // num_heads\n"),),
        losing_groups=(CONFIGURATION,),
    ),
)
# === end of issue 48's block


def apply_edits(source: str, edits: Iterable[Edit], name: str = "<edits>") -> str:
    """Apply ``edits`` in order; each ``old`` must occur exactly once when it is applied.

    Raises ``ValueError`` naming the entry ``name`` and the offending text otherwise.
    """
    for edit in edits:
        count = source.count(edit.old)
        if count != 1:
            raise ValueError(
                f"catalogue entry {name!r}: expected the text {edit.old!r} exactly once in "
                f"the solution, found it {count} times; update the catalogue to the solution"
            )
        source = source.replace(edit.old, edit.new)
    return source


def implementation_source(impl: Implementation, solution_source: str | None = None) -> str:
    """The solution's source with ``impl``'s edits applied."""
    if solution_source is None:
        solution_source = SOLUTION_PATH.read_text(encoding="utf-8")
    return apply_edits(solution_source, impl.edits, name=impl.name)


def write_implementation(impl: Implementation, folder: Path) -> Path:
    """Write ``folder / f"{impl.name}.py"`` (the edited solution) and return its path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{impl.name}.py"
    path.write_text(implementation_source(impl), encoding="utf-8")
    return path


def paired(first: str, second: str) -> Implementation:
    """One submission with both mutants' mistakes."""
    a, b = (next(m for m in MUTANTS if m.name == name) for name in (first, second))
    return Implementation(
        name=f"{a.name}__and__{b.name}",
        description=f"{a.description} And: {b.description}",
        edits=a.edits + b.edits,
        losing_groups=tuple(sorted(set(a.losing_groups) | set(b.losing_groups))),
    )


def without(name: str, has_it) -> str | None:
    """The catalogue entry that is ``name`` with one cause taken out (a diagnosis's counterfactual):
    for two mutants in one file, the one for which ``has_it(mutant)`` is false; None when that is
    the solution itself, which passes every check."""
    mutants = {m.name: m for m in MUTANTS}
    for first, second in (*PAIRS, *UNKNOWN_PAIRS, *LAYOUT_PAIRS):
        if paired(first, second).name == name:
            kept = [n for n in (first, second) if not has_it(mutants[n])]
            return kept[0] if len(kept) == 1 else None
    return None


ROOT_CAUSES = ("parameter_layout", "nondeterministic")  # grader/feedback/root_causes.py: no counterfactual


def explains_against_the_fix(run, name: str) -> list[str]:
    """Every "explains" list of entry ``name`` in a grading ``run`` against its counterfactual,
    the same file with that diagnosis's cause taken out: for one mutant the solution (which
    passes every check, as every variant of the run does), for two the other mutant (graded in
    the same run, on the same seed). A list must hold exactly the failing checks that pass in
    that file, except those the diagnosis records as ``unreplayable`` (its counterfactual could
    not be run). [] when every list holds; else what is wrong, "explains ... (passed)",
    "explains ..." (still failing without the cause), "leaves out ..." (passing without it)."""
    mutants = {m.name: m for m in MUTANTS}
    failed = {t["name"] for t in run.failed_tests(name)}
    wrong = []
    for entry in run.results[name]["diagnoses"]:
        explains = entry.get("explains", [])
        wrong += [f"{entry['mistake']}: explains {check} (passed)" for check in explains if check not in failed]
        if entry["mistake"] == "unknown" or entry["mistake"] in ROOT_CAUSES:
            continue

        def has_it(mutant) -> bool:
            """The mutant holds this diagnosis's cause: its mistake, or one its own grading finds in the same function."""
            found = {e["function"] for e in run.results[mutant.name]["diagnoses"] if e["mistake"] in mutant.mistakes}
            return entry["mistake"] in mutant.mistakes or entry["function"] in found

        if name in mutants:
            if {e["function"] for e in run.results[name]["diagnoses"]} != {entry["function"]}:
                continue  # a cause elsewhere too: the solution is not this file without this one
            passing_without = failed  # the solution passes everything
        elif (fixed := without(name, has_it)) is not None:
            still_failing = {t["name"] for t in run.failed_tests(fixed)}
            passing_without = {check for check in failed if check.replace(name, fixed) not in still_failing}
        else:
            continue
        wrong += [f"{entry['mistake']}: explains {check}" for check in explains if check not in passing_without]
        left_out = passing_without - set(explains) - set(entry.get("unreplayable", []))
        wrong += [f"{entry['mistake']}: leaves out {check}" for check in sorted(left_out)]
    return wrong


# --- The same misconceptions written differently, and more mistakes outside the vocabulary -----------
# Probed by the diagnosis alone (tests/test_diagnosis.py), not graded. Held-out submissions will not
# be the catalogue's exact edits: each entry is a different way to write a known mistake (or pair),
# or a mistake the vocabulary does not hold (expected: no known id). name -> (ids, edits).
E = Edit
SCALE, MASK, SOFT, OUT = _SCALE_LINE, _MASK_LINE, _SOFTMAX_LINE, _OUTPUT_LINE
CAT, STACK, PROJ = _CONCAT_LINE, _STACK_LINE, _PROJECTION_LINE
DEF, TRIL = _DEFAULT_MASK_LINE, _TRIL_LINE

REWRITTEN = {
 # in vocabulary, written differently
 "scale_hd_recip": ({"scaled_by_head_dim"}, [E(SCALE, "scores = scores * (1.0 / self.head_dim)")]),
 "scale_power_half_unbracketed": ({"scale_power_half"}, [E(SCALE, "scores = scores / self.head_dim ** 1/2")]),
 "scale_power_half_times": ({"scale_power_half"}, [E(SCALE, "scores = scores * (2 / self.head_dim)")]),
 "scale_in_features": ({"scaled_by_model_dim"}, [E(SCALE, "scores = scores / math.sqrt(self.query.in_features)")]),
 "softmax_dim1": ({"softmax_over_queries"}, [E(SOFT, "weights = torch.nn.functional.softmax(scores, dim=1)")]),
 "mask_after_fill0": ({"mask_after_softmax"}, [E(MASK, "scores = scores"), E(SOFT, "weights = torch.softmax(scores, dim=-1).masked_fill(~allowed_mask, 0.0)")]),
 "own_tril": ({"head_ignores_given_mask"}, [E(MASK, "n = inputs.shape[1]\n        scores = scores.masked_fill(torch.tril(torch.ones(n, n)) == 0, float('-inf'))")]),
 "where_flipped": ({"mask_polarity_flipped"}, [E(MASK, "scores = torch.where(allowed_mask, torch.full_like(scores, float('-inf')), scores)")]),
 "returns_unmasked": ({"returns_scores"}, [E(MASK, "masked = scores.masked_fill(~allowed_mask, float('-inf'))"), E(SOFT, "weights = torch.softmax(masked, dim=-1)"), E("return HeadResult(output=output, weights=weights)", "return HeadResult(output=output, weights=scores)")]),
 "value_data": ({"projection_detached"}, [E("values = self.value(inputs)", "values = self.value(inputs).data")]),
 "query_no_grad": ({"projection_detached"}, [E("queries = self.query(inputs)", "with torch.no_grad():\n            queries = self.query(inputs)")]),
 "cat_default": ({"concatenated_on_wrong_axis"}, [E(CAT, "return torch.cat(outputs)")]),
 "interleave_view": ({"heads_interleaved"}, [E(CAT, "stacked = torch.stack(outputs, dim=3)\n    return stacked.reshape(stacked.shape[0], stacked.shape[1], -1)")]),
 "deepcopy_heads": ({"identically_initialised_heads"}, [E(_HEADS_LIST, "import copy\n        head = AttentionHead(model_dim, self.head_dim)\n        self.heads = nn.ModuleList(copy.deepcopy(head) for _ in range(num_heads))")]),
 "append_same": ({"shared_head_module"}, [E(_HEADS_LIST, "head = AttentionHead(model_dim, self.head_dim)\n        self.heads = nn.ModuleList()\n        for _ in range(num_heads):\n            self.heads.append(head)")]),
 "double_proj": ({"repeated_output_projection"}, [E(PROJ, "combined = self.output_projection(self.output_projection(concatenated))")]),
 "stack_last": ({"weights_stacked_on_wrong_axis"}, [E(STACK, "weights = torch.stack([result.weights for result in head_results], dim=-1)")]),
 "cat_weights": ({"weights_stacked_on_wrong_axis"}, [E(STACK, "weights = torch.cat([result.weights for result in head_results], dim=1)")]),
 "last_head_w": ({"one_head_weights_repeated"}, [E(STACK, "weights = torch.stack([head_results[-1].weights for _ in head_results], dim=1)")]),
 "always_causal": ({"module_ignores_given_mask"}, [E("head_results = [head(inputs, allowed_mask) for head in self.heads]", "mask = causal_mask(inputs.shape[1])\n        head_results = [head(inputs, mask) for head in self.heads]")]),
 "mask_batch": ({"default_mask_wrong_size"}, [E(DEF, "allowed_mask = causal_mask(len(inputs), device=inputs.device)")]),
 "only_lt1": ({"no_divisibility_check"}, [E(_HEAD_DIM_CHECK, "if num_heads < 1:")]),
 "one_number": ({"error_message_without_numbers"}, [E(_HEAD_DIM_ERROR, '        raise ValueError(f"num_heads={num_heads} does not divide the width")\n')]),
 "int_mask": ({"mask_not_boolean"}, [E(TRIL, "return torch.tril(ones).long()")]),
 "half_mask_from_comparison": ({"mask_not_boolean"}, [E(TRIL, "return (torch.arange(seq_len)[None, :] <= torch.arange(seq_len)[:, None]).half()")]),
 "byte_mask_by_to": ({"mask_not_boolean"}, [E(TRIL, "return torch.tril(ones).to(torch.uint8)")]),
 "triu_bool": ({"upper_triangle_mask"}, [E("ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)", "ones = torch.ones(seq_len, seq_len, device=device)"), E(TRIL, "return torch.triu(ones).bool()")]),
 "not_tril": ({"inverted_mask"}, [E(TRIL, "return ~torch.tril(ones)")]),
 "gt_mask": ({"mask_without_diagonal"}, [E("ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)", "p = torch.arange(seq_len, device=device)"), E(TRIL, "return p[:, None] > p[None, :]")]),
 # pairs in one function, written differently
 "pair_noscale_sm1": ({"missing_scale", "softmax_over_queries"}, [E(SCALE, "scores = scores"), E(SOFT, "weights = scores.softmax(1)")]),
 "pair_flip_values_keys": ({"mask_polarity_flipped", "values_not_weighted"}, [E(MASK, "scores = scores.masked_fill(allowed_mask, float('-inf'))"), E(OUT, "output = weights @ keys")]),
 "pair_nomask_detach": ({"mask_not_applied", "projection_detached"}, [E(MASK, "scores = scores"), E("values = self.value(inputs)", "values = self.value(inputs).detach()")]),
 "pair_noproj_stack0": ({"missing_output_projection", "weights_stacked_on_wrong_axis"}, [E(PROJ, "combined = concatenated"), E(STACK, "weights = torch.stack([result.weights for result in head_results])")]),
 "pair_ignore_shared": ({"module_ignores_given_mask", "shared_head_module"}, [E("head_results = [head(inputs, allowed_mask) for head in self.heads]", "head_results = [head(inputs, causal_mask(inputs.shape[1])) for head in self.heads]"), E(_HEADS_LIST, "self.heads = nn.ModuleList([AttentionHead(model_dim, self.head_dim)] * num_heads)")]),
 "pair_rev_interleave": ({"heads_in_reverse", "heads_interleaved"}, [E(CAT, "return torch.stack(outputs[::-1], dim=-1).flatten(start_dim=-2)")]),
 "pair_hd_msg_float": ({"error_message_without_numbers", "true_division"}, [E(_HEAD_DIM_ERROR, '        raise ValueError("width does not divide")\n'), E(_HEAD_DIM_RETURN, "return model_dim / num_heads")]),
 # a misconception is a behaviour: the same mistake with its own shift, its own masking, its own words
 "softmax_by_hand_row_max_over_queries": ({"softmax_over_queries"}, [E(SOFT, "e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)\n        weights = e / e.sum(dim=1, keepdim=True)")]),
 "softmax_where_over_queries": ({"softmax_over_queries"}, [E(SOFT, "e = torch.where(allowed_mask, torch.exp(scores - scores.amax(-1, keepdim=True)), 0.0)\n        weights = e / e.sum(-2, keepdim=True)")]),
 "assert_naming_one_number": ({"assert_instead_of_raise", "error_message_without_numbers"}, [E(_HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR, 'assert num_heads > 0, f"num_heads={num_heads} must be positive"\n    assert model_dim % num_heads == 0, f"num_heads={num_heads} does not divide the width"\n')]),
 "assert_without_a_message": ({"assert_instead_of_raise", "error_message_without_numbers"}, [E(_HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR, "assert num_heads >= 1 and model_dim % num_heads == 0\n")]),
 "zero_heads_by_assert": ({"assert_instead_of_raise", "zero_heads_not_rejected"}, [E(_HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR, 'assert model_dim % num_heads == 0, f"model_dim={model_dim} does not split into num_heads={num_heads}"\n')]),
 "softmax_over_batch_by_hand": ({"softmax_over_batch"}, [E(SOFT, "e = torch.exp(scores)\n        weights = e / e.sum(dim=0, keepdim=True)")]),
 "softmax_over_batch_named_dim": ({"softmax_over_batch"}, [E(SOFT, "weights = torch.nn.functional.softmax(scores, 0)")]),
 "assert_in_the_constructor_naming_one_number": ({"assert_instead_of_raise"}, [E("        self.head_dim = head_dimension(model_dim, num_heads)\n", "        assert model_dim % num_heads == 0, f'{num_heads} heads'\n        self.head_dim = head_dimension(model_dim, num_heads)\n")]),
 "assert_remainder_without_words_nor_zero_check": ({"assert_instead_of_raise", "error_message_without_numbers", "zero_heads_not_rejected"}, [E(_HEAD_DIM_CHECK + "\n" + _HEAD_DIM_ERROR, "assert not model_dim % num_heads\n")]),
 "assert_in_the_constructor_with_a_tuple": ({"assert_instead_of_raise"}, [E("        self.head_dim = head_dimension(model_dim, num_heads)\n", "        assert model_dim % num_heads == 0, (model_dim, num_heads)\n        self.head_dim = head_dimension(model_dim, num_heads)\n")]),
 # out of vocabulary
 "oov_weights_T": (set(), [E(OUT, "output = weights.transpose(-2, -1) @ values")]),
 "oov_scale_sqrt_seq_after": (set(), [E(SOFT, "weights = torch.softmax(scores, dim=-1) ** 2")]),
 "oov_avg_heads": (set(), [E(STACK, "weights = torch.stack([result.weights for result in head_results], dim=1).mean(1, keepdim=True).expand(-1, len(head_results), -1, -1)")]),
 "oov_relu": (set(), [E(SOFT, "weights = torch.relu(scores)")]),
 "oov_temp": (set(), [E(SCALE, "scores = scores / (2 * math.sqrt(self.head_dim))")]),
 "oov_mask_neg1e2": (set(), [E(MASK, "scores = scores.masked_fill(~allowed_mask, -1.0)")]),
 "oov_concat_weights_scaled": (set(), [E(CAT, "return torch.cat(outputs, dim=-1) * 2")]),
 "oov_proj_no_bias_used": (set(), [E(PROJ, "combined = concatenated @ self.output_projection.weight.T")]),
 "oov_mask_diag1": (set(), [E(TRIL, "return torch.tril(ones, diagonal=1)")]),
 "oov_hd_ceil": (set(), [E(_HEAD_DIM_CHECK, "if num_heads < 1 or model_dim % num_heads != 0 and False:"), E(_HEAD_DIM_RETURN, "return -(-model_dim // num_heads)")]),
 "oov_dropout": (set(), [E(OUT, "output = torch.nn.functional.dropout(weights, 0.5, training=True) @ values")]),
 "oov_residual_head": (set(), [E(OUT, "output = weights @ values + values")]),
}


# --- What a message may say, and where (tests/test_hints.py) --------------------------------------
# Each hint of the grader's checks names a cause; each entry below names the submissions whose code
# has it: catalogue entries, and STYLES, known mistakes in a student's own style graded beside them.
_HEADS_CALL = "head_results = [head(inputs, allowed_mask) for head in self.heads]"

# In a student's own style: each has one cause, and so one hint.
STYLES = (
    Implementation(
        name="softmax_by_hand_unstable",
        description="A softmax written by hand without subtracting the row maximum (exp overflows).",
        edits=(Edit(_SOFTMAX_LINE, "exps = torch.exp(scores)\n        weights = exps / exps.sum(dim=-1, keepdim=True)"),),
    ),
    Implementation(
        name="softmax_by_hand_over_queries",
        description="A stable softmax written by hand, normalised over the queries (dim=1).",
        edits=(Edit(_SOFTMAX_LINE, (
            "exps = torch.exp(scores - scores.amax(dim=1, keepdim=True))\n"
            "        weights = exps / exps.sum(dim=1, keepdim=True)"
        )),),
    ),
    Implementation(
        name="heads_averaged",
        description="Averaged the heads' outputs instead of concatenating them.",
        edits=(Edit(_CONCAT_LINE, "return torch.stack(outputs).mean(dim=0)"),),
    ),
    Implementation(
        name="head_builds_causal_mask_with_where",
        description="The head builds its own causal mask with torch.where and ignores the one it is given.",
        edits=(Edit(_MASK_LINE, (
            "seq = scores.shape[-1]\n"
            "        scores = torch.where(torch.ones(seq, seq, dtype=torch.bool).tril(), scores, float('-inf'))"
        )),),
    ),
    Implementation(
        name="dropout_left_on",
        description="Dropout on the weights in training mode: every call gives other numbers (no hint may guess why).",
        edits=(Edit(_SOFTMAX_LINE, "weights = torch.nn.functional.dropout(torch.softmax(scores, dim=-1), p=0.1, training=True)"),),
    ),
    Implementation(
        name="module_passes_causal_mask_to_heads",
        description="The module gives its heads the causal mask whatever mask it is given.",
        edits=(Edit(_HEADS_CALL, "head_results = [head(inputs, causal_mask(inputs.shape[1])) for head in self.heads]"),),
    ),
)

# hint phrase -> the submissions whose code has the hint's cause. The hint must appear in each
# of them and in no other submission graded here.
PREMISES = {
    "overflow exp()": {"softmax_by_hand_unstable"},
    "math.sqrt(head_dim)": {"missing_scale", "scale_by_head_dim", "scale_power_half"},
    "head_dim ** 0.5": {"scale_power_half"},
    "multiplying the scores by sqrt(head_dim)": {"scale_multiplied"},
    "dividing by sqrt(model_dim)": {"scale_by_model_dim"},
    "dividing by sqrt(seq_len)": {"scale_by_seq_len"},
    "sequence axis": {"concatenated_on_seq_axis"},
    "that is one head's width": {"heads_averaged"},
    "instead of building a causal mask": {"custom_mask_ignored", "head_builds_causal_mask_with_where"},
    "must pass its allowed_mask to every head": {"module_passes_causal_mask_to_heads"},
    "zeroed afterwards": {"mask_after_softmax"},
    "filling the hidden scores with 0": {"mask_filled_with_zero"},
    "with no mask at all": {"no_mask", "masked_fill_result_discarded", "no_default_causal_mask"},
    "over the query positions": {"softmax_over_queries", "softmax_by_hand_over_queries"},
    "keys @ queries^T": {"queries_and_keys_swapped"},
    # NaN where the student's own mask leaves a row empty reproduces too (0/0 in both).
    "follow your causal_mask": {"anti_causal_mask", "mask_one_step_ahead", "mask_without_diagonal"},
    "give 0/0 under the softmax": {"mask_without_diagonal"},
    "over the batch axis": {"softmax_over_batch"},
    "the scaled scores themselves": {"scores_returned_as_weights"},
    "allows no position": {"mask_without_diagonal"},
    "leaves out the diagonal": {"mask_without_diagonal"},
    "lets each position see the next one": {"mask_one_step_ahead"},
    "dtype=torch.bool": {"float_causal_mask", "causal_mask_of_bytes"},
    "the graph is cut": {"keys_detached", "inputs_detached_for_keys", "values_under_no_grad"},
    "does not use it": {"no_output_projection", "values_from_queries", "values_from_keys", "scores_from_queries_only",
                        "weights_concatenated"},
    "weights @ queries": {"values_from_queries"},
    "weights @ keys": {"values_from_keys"},
    "without output_projection": {"no_output_projection"},
    "applied twice": {"doubled_output_projection"},
    "reverse order": {"heads_concatenated_in_reverse"},
    "interleaved": {"interleaved_concatenation"},
    "no residual connection": {"residual_added"},
    "stacked on axis 0": {"weights_stacked_heads_first"},
    "is not axis 1": {"weights_heads_axis_misplaced"},
    "repeats one module": {"shared_head_module", "one_head_module_for_all"},
    "manual_seed": {"reseeded_heads", "reseeded_before_each_head"},
    # Identical heads told the cause their source shows (issue 48), and none where it shows none.
    "copies of one head: copy.deepcopy": {"heads_deep_copied_from_one"},
    "one head's weights loaded into another": {"heads_given_the_first_heads_weights"},
    "separate modules that start with the same weights": {"heads_initialised_to_a_constant"},
    "yet return the same matrices": {"first_head_weights_repeated"},
    "is an assert": {"assert_instead_of_raise"},
    "right and a float": {"true_division_head_dim"},
    "before any check of the configuration": {"no_divisibility_check"},
    "nn.ModuleList": {"heads_in_a_plain_list"},
    "seems sized by the batch": {"default_mask_sized_by_batch"},
    "three nn.Linear layers": {"query_key_value_share_one_linear"},
    "compute in the inputs' dtype": {"head_computes_in_float64"},
}
# Sentences of the problem line that state a fact about the student's code (which tensors are
# shared and where, which dtype came back, which heads are alike): phrase -> the submissions
# of which it is true. Checked over whole messages, like the hints.
FACTS = {
    "hold the very same parameter tensor": {"shared_head_module", "one_head_module_for_all", "key_and_value_shared_across_heads"},
    "inside each of heads 0, 1 and 2, query, key and value are the very same parameter tensor": {"query_key_value_share_one_linear"},
    # Every shared projection named: the key's and the value's, not the first group only.
    "tensors, one as their key.weight and one as their value.weight": {"key_and_value_shared_across_heads"},
    "one as their query.weight, one as their key.weight and one as their value.weight": {"shared_head_module", "one_head_module_for_all"},
    # NaN weights are never "the same" (mask_without_diagonal gives a row of NaN)
    "return the same attention matrix": {"shared_head_module", "one_head_module_for_all", "reseeded_heads",
                                         "reseeded_before_each_head", "first_head_weights_repeated",
                                         "heads_deep_copied_from_one", "heads_given_the_first_heads_weights",
                                         "heads_initialised_to_a_constant"},
    "came back float64 for float32 inputs": {"head_computes_in_float64"},
}
HINTS_GRADED = sorted(set().union(*PREMISES.values()) - {impl.name for impl in STYLES}) + [
    # Wrong in ways no hint here names: every hint must stay silent on them.
    "scale_after_softmax", "sigmoid_instead_of_softmax", "mask_inverted", "key_and_value_shared_across_heads",
    "mask_transposed_for_heads", "output_for_first_batch_only",
    "softmax_sum_without_keepdim", "scale_power_half",
    # Valid rewrites: no failure, so no hint at all.
    "softmax_by_hand", "einsum_everywhere", "where_with_finfo_min", "softmax_in_float64",
]


def _check_catalogue() -> None:
    """Catch catalogue typos at import: unique names, known groups, mutants that lose."""
    names = [impl.name for impl in MUTANTS + VARIANTS]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"catalogue names are not unique: {duplicates}")
    for impl in MUTANTS:
        if not impl.losing_groups:
            raise ValueError(f"mutant {impl.name!r} names no losing group")
        unknown = set(impl.losing_groups) - set(GROUPS)
        if unknown:
            raise ValueError(f"mutant {impl.name!r} names unknown groups {sorted(unknown)}")
    mutant_names = {impl.name for impl in MUTANTS}
    for pair in (*PAIRS, *UNKNOWN_PAIRS, *LAYOUT_PAIRS):
        unknown = set(pair) - mutant_names
        if unknown:
            raise ValueError(f"pair {pair} names unknown mutants {sorted(unknown)}")
    for name in LAYOUT_ONLY:
        if name not in mutant_names:
            raise ValueError(f"LAYOUT_ONLY names an unknown mutant {name!r}")
    for impl in VARIANTS:
        if impl.mistake or impl.losing_groups:
            raise ValueError(f"variant {impl.name!r} must not name losing groups or a mistake")


_check_catalogue()
