"""The feed-forward exercise's catalogue: known-wrong and known-right submissions, written as
edits to solutions/feed_forward.py (data only; tests/test_feed_forward.py grades them).

Every MUTANT is a realistic student bug: it must fail the check it names (``caught_by``, a
test function of the exercise's groups), lose points in that check's group, carry its
vocabulary id in what the student reads where the vocabulary names it (``mistake``,
grader/exercises/feed_forward/hidden/mistakes.py), and show each of ``must_read``. Every
VARIANT is a valid rewrite and must score full marks. The edits reuse tests/catalogue.py's
``Edit`` and ``apply_edits``: an ``old`` text must occur exactly once when its edit applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from catalogue import Edit, apply_edits

SOLUTION_PATH = Path(__file__).resolve().parent.parent / "solutions" / "feed_forward.py"

_ACTIVATION = "self.activation = nn.GELU()"
_HIDDEN = "hidden = self.activation(hidden)  # (batch, seq, hidden_dim)"
_EXPAND = "hidden = self.expand(inputs)  # (batch, seq, hidden_dim)"
_PROJECT = "output = self.project(hidden)  # (batch, seq, model_dim)"
_RETURN = "return self.dropout(output)  # (batch, seq, model_dim)"


@dataclass(frozen=True)
class Entry:
    name: str  # the submission's file name
    description: str  # what the student did
    edits: tuple[Edit, ...]
    caught_by: str = ""  # mutants: the check that must fail (its test function's name)
    group: str = ""  # ... and its group, which must lose points
    mistake: str = ""  # the vocabulary's id, where it names the mistake
    must_read: tuple[str, ...] = ()
    alone: bool = False  # mutants: loses points in ``group`` only (a slip the rest of the grading goes around)

    def source(self) -> str:
        return apply_edits(SOLUTION_PATH.read_text(encoding="utf-8"), self.edits, self.name)


MUTANTS = (
    Entry("activation_left_out", "left the activation out", (Edit(_HIDDEN, "pass"),),
          "test_the_network_is_not_one_linear_map", "nonlinearity", "activation_left_out", ("two linear layers",)),
    Entry("relu_instead_of_gelu", "used ReLU", (Edit(_ACTIVATION, "self.activation = nn.ReLU()"),),
          "test_between_two_identity_layers_the_network_is_gelu", "nonlinearity", "relu_instead_of_gelu", ("ReLU",)),
    Entry("gelu_tanh_approximation", "used GELU's tanh approximation",
          (Edit(_ACTIVATION, 'self.activation = nn.GELU(approximate="tanh")'),),
          "test_between_two_identity_layers_the_network_is_gelu", "nonlinearity", "gelu_tanh_approximation", ("tanh approximation",)),
    Entry("activation_after_the_second_layer", "applied GELU to the second layer's output",
          (Edit(_HIDDEN, "pass"), Edit(_RETURN, "return self.dropout(self.activation(output))")),
          "test_the_activation_acts_on_the_hidden_features_not_on_the_output", "nonlinearity",
          "activation_after_the_second_layer", ("after the second layer",)),
    Entry("first_bias_not_added", "multiplied by the first layer's weight alone",
          (Edit(_EXPAND, "hidden = inputs @ self.expand.weight.T"),),
          "test_the_first_bias_shifts_before_gelu_and_the_second_after", "nonlinearity", "first_bias_not_added",
          ("first layer's bias left out",)),
    Entry("residual_added_inside", "added the residual connection inside the module",
          (Edit(_RETURN, "return self.dropout(output) + inputs"),),
          "test_between_two_identity_layers_the_network_is_gelu", "nonlinearity", "residual_added_inside", ("residual",)),
    Entry("widened_by_four", "widened by 4 * model_dim instead of hidden_dim",
          (Edit("self.expand = nn.Linear(model_dim, hidden_dim)", "self.expand = nn.Linear(model_dim, 4 * model_dim)"),
           Edit("self.project = nn.Linear(hidden_dim, model_dim)", "self.project = nn.Linear(4 * model_dim, model_dim)")),
          "test_the_layers_widen_to_hidden_dim_and_come_back", "configuration", "", ("4 * model_dim",)),
    Entry("first_layer_without_bias", "built the first layer with bias=False",
          (Edit("self.expand = nn.Linear(model_dim, hidden_dim)", "self.expand = nn.Linear(model_dim, hidden_dim, bias=False)"),),
          "test_both_layers_have_a_bias", "configuration", "", ("bias=False",), alone=True),
    Entry("sizes_not_kept", "did not keep the sizes as attributes",
          (Edit("        self.hidden_dim = hidden_dim\n", ""),),
          "test_the_module_keeps_its_sizes", "configuration", alone=True),
    Entry("positions_mixed_by_a_mean", "centred the hidden features over the sequence",
          (Edit(_HIDDEN, _HIDDEN + "\n        hidden = hidden - hidden.mean(dim=1, keepdim=True)"),),
          "test_changing_one_position_changes_its_output_and_no_other", "positions", "", ("sequence axis",)),
    Entry("positions_mixed_by_a_transpose", "reshaped the output from the wrong axis order",
          (Edit(_RETURN, "return self.dropout(output.transpose(0, 1).reshape(output.shape))"),),
          "test_changing_one_position_changes_its_output_and_no_other", "positions", "", ("batch and position axes",)),
    Entry("dropout_on_in_evaluation", "called F.dropout without training=",
          (Edit("self.dropout = nn.Dropout(dropout)", "self.dropout_probability = dropout"),
           Edit(_RETURN, "return nn.functional.dropout(output, self.dropout_probability)")),
          "test_evaluation_mode_drops_nothing", "dropout", "", ("training= defaults to True",), alone=True),
    Entry("dropout_argument_ignored", "built nn.Dropout() with its default probability",
          (Edit("self.dropout = nn.Dropout(dropout)", "self.dropout = nn.Dropout()"),),
          "test_training_mode_drops_about_p_of_the_outputs_and_scales_the_rest", "dropout"),
    Entry("no_dropout", "left dropout out",
          (Edit(_RETURN, "return output"),),
          "test_training_mode_drops_about_p_of_the_outputs_and_scales_the_rest", "dropout", "", ("nothing was dropped",), alone=True),
    Entry("hidden_detached", "detached the hidden features",
          (Edit(_HIDDEN, "hidden = self.activation(hidden).detach()"),),
          "test_gradients_reach_the_inputs_and_every_weight", "gradient_flow", "", ("graph is cut",)),
    Entry("computed_in_float32", "cast the hidden features to float32",
          (Edit(_EXPAND, "hidden = self.expand(inputs).float()"),),
          "test_the_output_keeps_the_shape_and_dtype_of_the_inputs", "shapes"),
)

VARIANTS = (
    Entry("functional_gelu", "F.gelu in the forward pass", (Edit(_HIDDEN, "hidden = nn.functional.gelu(hidden)"),)),
    Entry("gelu_written_with_erf", "GELU written out with erf",
          (Edit(_HIDDEN, "hidden = 0.5 * hidden * (1 + torch.erf(hidden / 2**0.5))"),)),
    Entry("matmul_by_hand", "the layers as matrix products",
          (Edit(_EXPAND, "hidden = inputs @ self.expand.weight.T + self.expand.bias"),
           Edit(_PROJECT, "output = hidden @ self.project.weight.T + self.project.bias"))),
    Entry("einsum_layers", "the layers with einsum",
          (Edit(_EXPAND, 'hidden = torch.einsum("bsd,hd->bsh", inputs, self.expand.weight) + self.expand.bias'),)),
    Entry("positions_flattened", "every position as one row of a matrix, and back",
          (Edit(_EXPAND, "rows = inputs.reshape(-1, inputs.shape[-1])\n        hidden = self.expand(rows)"),
           Edit(_RETURN, "return self.dropout(output.reshape(inputs.shape))"))),
    Entry("functional_dropout_with_the_mode", "F.dropout given the module's mode",
          (Edit("self.dropout = nn.Dropout(dropout)", "self.dropout_probability = dropout"),
           Edit(_RETURN, "return nn.functional.dropout(output, self.dropout_probability, training=self.training)"))),
)
