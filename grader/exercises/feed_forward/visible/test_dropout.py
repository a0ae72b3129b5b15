"""Group 6 — dropout: on the output in training mode, with the probability given, and never
in evaluation mode (module.eval(), as the grader's other checks run it)."""

from __future__ import annotations

import pytest
import torch

from grader.exercises.feed_forward import checks, data, premises
from grader.seam.failing import fail

CONFIG = data.Config(batch=4, seq=16, model_dim=16, hidden_dim=24)  # 1024 outputs: a fraction measured to about 2 %
MARGIN = 0.08


def run(submission, dropout: float, training: bool) -> torch.Tensor:
    rng = data.generator(61)
    output = submission.run_feed_forward(
        model_dim=CONFIG.model_dim, hidden_dim=CONFIG.hidden_dim, parameters=data.parameters(CONFIG, rng),
        inputs=data.random_inputs(CONFIG, rng), dropout=dropout, training=training, rng_seed=62,
    )["output"]
    checks.expect_shape(output, (CONFIG.batch, CONFIG.seq, CONFIG.model_dim), "FeedForward's output")
    return output


@pytest.mark.points(3)
def test_evaluation_mode_drops_nothing(submission):
    plain, evaluated = run(submission, 0.0, False), run(submission, 0.5, False)
    checks.expect_close(
        evaluated, plain, "FeedForward(..., dropout=0.5) in evaluation mode",
        "the output of FeedForward(..., dropout=0) with the same weights: in evaluation mode dropout does nothing",
        premises.dropout_in_evaluation_hint(evaluated, plain, 0.5),
    )


@pytest.mark.points(2)
@pytest.mark.parametrize("probability", [0.25, 0.6])
def test_training_mode_drops_about_p_of_the_outputs_and_scales_the_rest(submission, probability):
    plain, trained = run(submission, 0.0, False), run(submission, probability, True)
    dropped = (trained == 0) & (plain != 0)
    share = float(dropped.double().mean())
    if abs(share - probability) > MARGIN:
        fail(
            f"FeedForward(..., dropout={probability}) in training mode drops the wrong share of its outputs.",
            f"about {probability:.0%} of the outputs exactly 0",
            f"{share:.0%}",
            "nothing was dropped: build nn.Dropout(dropout) with the constructor's argument and apply it to the output."
            if share == 0 else "",
        )
    kept = ~dropped
    checks.expect_close(
        trained[kept], plain[kept] / (1 - probability), f"the outputs FeedForward(..., dropout={probability}) keeps in training",
        "the output without dropout, scaled by 1 / (1 - p), so that its expected value is unchanged",
        "your kept outputs are not scaled: nn.Dropout scales them by 1 / (1 - p)." if checks.close(trained[kept], plain[kept]) else "",
    )
