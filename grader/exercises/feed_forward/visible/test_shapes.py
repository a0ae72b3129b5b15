"""Group 1 — shapes: the output has the inputs' shape and dtype, whatever the widths."""

from __future__ import annotations

import pytest
import torch

from grader.exercises.feed_forward import checks, data
from grader.exercises.feed_forward.data import SHAPE_CONFIGS


@pytest.mark.points(1)
@pytest.mark.parametrize("config", SHAPE_CONFIGS, ids=[config.id for config in SHAPE_CONFIGS])
def test_the_output_keeps_the_shape_and_dtype_of_the_inputs(submission, config):
    # In float32 and in float64: what comes back keeps the inputs' dtype (the docstring's contract).
    for dtype in (torch.float32, torch.float64):
        rng = data.generator(21)
        output = submission.run_feed_forward(
            model_dim=config.model_dim, hidden_dim=config.hidden_dim,
            parameters=data.parameters(config, rng, dtype=dtype), inputs=data.random_inputs(config, rng, dtype=dtype),
        )["output"]
        width = (config.batch, config.seq, config.hidden_dim)
        checks.expect_shape(
            output, (config.batch, config.seq, config.model_dim), f"FeedForward's output for {config.describe()}",
            # Said only when the output is the hidden layer's shape (and the widths tell them apart).
            "that is the hidden layer's shape: project the hidden_dim features back to model_dim."
            if tuple(output.shape) == width and config.hidden_dim != config.model_dim else "",
        )
        checks.expect_dtype(output, dtype, "FeedForward's output", f"{dtype} inputs")
