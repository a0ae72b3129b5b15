"""The grader's handle on one submission of multi-head self-attention: one method per call the
checks make, each checking the kinds of what comes back, never the values (the engine's
``Submission`` asks, remembers and compares; grader/submission.py)."""

from __future__ import annotations

from typing import Any

import torch

from grader.submission import Submission, checked_tensor, contract_error


class AttentionSubmission(Submission):
    """A submission of the exercise: the calls its checks make."""

    def head_dimension(self, model_dim: int, num_heads: int) -> Any:
        return self._call("head_dimension", model_dim=model_dim, num_heads=num_heads)

    def causal_mask(self, seq_len: int) -> torch.Tensor:
        return checked_tensor(self._call("causal_mask", seq_len=seq_len), "causal_mask(...)")

    def construct_attention(self, model_dim: int, num_heads: int) -> None:
        self._call("construct_attention", model_dim=model_dim, num_heads=num_heads)

    def run_head(self, **arguments: Any) -> dict[str, Any]:
        return self._held("run_head", checked_run(self._call("run_head", **arguments), "AttentionHead.forward"), arguments)

    def concatenate_heads(self, head_outputs: list, head_weights: list) -> torch.Tensor:
        result = self._call("concatenate_heads", head_outputs=head_outputs, head_weights=head_weights)
        return checked_tensor(result, "concatenate_heads(...)")

    def concatenate_heads_backward(self, head_outputs: list, head_weights: list, output_gradient: torch.Tensor) -> list:
        """The gradient each head's output receives through the student's concatenate_heads
        (None where none does)."""
        result = self._call("concatenate_heads", head_outputs=head_outputs, head_weights=head_weights, output_gradient=output_gradient)
        gradients = result.get("output_gradients") if isinstance(result, dict) else None
        if not isinstance(gradients, list) or len(gradients) != len(head_outputs):
            raise contract_error("concatenate_heads", "concatenate_heads(...) gave no gradient for each head's output")
        return [None if gradient is None else checked_tensor(gradient, "concatenate_heads(...) (gradient)") for gradient in gradients]

    def run_attention(self, **arguments: Any) -> dict[str, Any]:
        result = self._call("run_attention", **arguments)
        return self._held("run_attention", checked_run(result, "MultiHeadSelfAttention.forward"), arguments)

    def initial_parameters(self, model_dim: int, num_heads: int, seed: int) -> dict[str, Any]:
        result = self._call("initial_parameters", model_dim=model_dim, num_heads=num_heads, seed=seed)
        if not isinstance(result, dict) or not isinstance(result.get("parameters"), dict):
            raise contract_error("initial_parameters", "the module's parameters could not be read")
        for name, value in result["parameters"].items():
            checked_tensor(value, f"parameter {name}")
        return result


def checked_run(result: Any, function: str) -> dict[str, Any]:
    checked_tensor(result["output"], f"{function} (.output)")
    checked_tensor(result["weights"], f"{function} (.weights)")
    if result.get("input_gradient") is not None:
        checked_tensor(result["input_gradient"], f"{function} (gradient of the inputs)")
    for name, gradient in result.get("parameter_gradients", {}).items():
        if gradient is not None:
            checked_tensor(gradient, f"{function} (gradient of {name})")
    return result
