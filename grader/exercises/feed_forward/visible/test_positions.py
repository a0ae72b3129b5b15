"""Group 2 — each position on its own: the output at a position depends on that position's
inputs alone, through the same weights at every position."""

from __future__ import annotations

import pytest
import torch

from grader.exercises.feed_forward import checks, data, premises
from grader.exercises.feed_forward.data import PROPERTY_CONFIG as CONFIG
from grader.seam.failing import fail


def run(submission, inputs: torch.Tensor, seed: int = 31) -> torch.Tensor:
    output = submission.run_feed_forward(
        model_dim=CONFIG.model_dim, hidden_dim=CONFIG.hidden_dim, parameters=data.parameters(CONFIG, data.generator(seed)), inputs=inputs,
    )["output"]
    checks.expect_shape(output, tuple(inputs.shape), "FeedForward's output")
    return output


@pytest.mark.points(3)
def test_changing_one_position_changes_its_output_and_no_other(submission):
    rng = data.generator(32)
    inputs = data.random_inputs(CONFIG, rng)
    changed = inputs.clone()
    batch, position = 2, 1  # at (1, 2) a transpose of (batch, seq) would put the change back in place: 1 * 5 + 2 = 2 * 3 + 1
    changed[batch, position] = data.random_inputs(CONFIG, rng)[0, 0]
    before, after = run(submission, inputs), run(submission, changed)
    moved = ~torch.isclose(before, after, **checks.FLOAT32_TOLERANCE).all(dim=-1)  # (batch, seq)
    expected = torch.zeros_like(moved)
    expected[batch, position] = True
    if not torch.equal(moved, expected):
        others = [tuple(int(i) for i in index) for index in moved.nonzero() if tuple(int(i) for i in index) != (batch, position)]
        fail(
            f"only inputs[{batch}, {position}] changed, and the outputs that moved are not that one alone.",
            f"output[{batch}, {position}] moved, every other position unchanged",
            (f"output[{batch}, {position}] {'moved' if bool(moved[batch, position]) else 'did not move'}"
             + (f"; other positions moved too: {others[:4]}{' ...' if len(others) > 4 else ''}" if others else "")),
            premises.moved_positions_hint(moved, batch, position),
        )


@pytest.mark.points(2)
def test_the_same_features_give_the_same_output_at_every_position(submission):
    one = data.random_inputs(data.Config(1, 1, CONFIG.model_dim, CONFIG.hidden_dim), data.generator(33))
    inputs = one.expand(CONFIG.batch, CONFIG.seq, CONFIG.model_dim).clone()
    output = run(submission, inputs)
    first = output[:1, :1].expand_as(output)
    if not checks.close(output, first):
        fail(
            "every position held the same features, and the outputs differ between positions.",
            "the same output at every position: one network, the same weights everywhere",
            checks.largest_difference(output, first),
            "",
        )


@pytest.mark.points(2)
def test_a_sequence_gives_what_its_positions_give_alone(submission):
    inputs = data.random_inputs(CONFIG, data.generator(34))
    together = run(submission, inputs)
    alone = run(submission, inputs.reshape(CONFIG.batch * CONFIG.seq, 1, CONFIG.model_dim)).reshape(together.shape)
    checks.expect_close(
        together, alone, "FeedForward's output for whole sequences",
        "what each position gives as a sequence of one, the same position for position", "",
    )
