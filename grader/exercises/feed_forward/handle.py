"""The grader's handle on one submission of the feed-forward network: one method per call the
checks make, each checking the kinds of what comes back, never the values (the engine's
``Submission`` asks, remembers and compares; grader/submission.py)."""

from __future__ import annotations

from typing import Any

from grader.submission import Submission, checked_tensor, contract_error

FORWARD = "FeedForward.forward"


class FeedForwardSubmission(Submission):
    """A submission of the exercise: the calls its checks make."""

    def run_feed_forward(self, **arguments: Any) -> dict[str, Any]:
        result = self._call("run_feed_forward", **arguments)
        if type(result) is not dict:
            raise contract_error("run_feed_forward", "the forward pass gave no result")
        checked_tensor(result.get("output"), FORWARD)
        if result.get("input_gradient") is not None:
            checked_tensor(result["input_gradient"], f"{FORWARD} (gradient of the inputs)")
        for name, gradient in result.get("parameter_gradients", {}).items():
            if gradient is not None:
                checked_tensor(gradient, f"{FORWARD} (gradient of {name})")
        return self._held("run_feed_forward", result, arguments)

    def initial_parameters(self, model_dim: int, hidden_dim: int, seed: int = 0) -> dict[str, Any]:
        result = self._call("initial_parameters", model_dim=model_dim, hidden_dim=hidden_dim, seed=seed)
        if type(result) is not dict or type(result.get("parameters")) is not dict:
            raise contract_error("initial_parameters", "the module's parameters could not be read")
        for name, value in result["parameters"].items():
            checked_tensor(value, f"parameter {name}")
        return result
