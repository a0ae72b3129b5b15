"""The diagnosis's probes of the feed-forward network: the forward pass on the grader's weights and
inputs, the student's through the handle's plain-data call, a known mistake's by running its
steps (hidden/mistakes.py) in the grader's process, so that both can be compared.

Probes are in float64, so a valid rewrite agrees with the reference to ~1e-15 while every known
mistake misses by far more (GELU's tanh approximation by ~1e-4 on these inputs); their sizes and
data are drawn from the grading seed (data.py's ``PROBE_SIZES`` and ``PROBE_DATA``), like the
hidden checks', so that a submission cannot recognise them and behave well only for them. No two
sizes are alike and the inputs reach well below zero, so that no two mistakes coincide.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from grader.exercises.feed_forward import data
from grader.exercises.feed_forward.data import Config
from grader.exercises.feed_forward.hidden import mistakes
from grader.feedback.evidence import StudentCodeError

DTYPE = torch.float64
DEFAULT_SEED = 0  # for callers without a grading session (the diagnosis's own tests)
PROBES_PER_FUNCTION = 2


class Unusable(Exception):
    """The student's forward pass cannot be probed (not written yet): no diagnosis for it."""


def is_crash(outcome: tuple) -> bool:
    return bool(outcome) and outcome[0] == "error"


@dataclass(frozen=True)
class ForwardProbe:
    """``FeedForward(model_dim, hidden_dim)`` in evaluation mode, with the grader's weights, on the
    grader's inputs: an outcome ("value", output) or ("error", type name, first line said)."""

    config: Config
    draw: int
    grading_seed: int

    def described(self) -> str:
        return f"FeedForward({self.config.model_dim}, {self.config.hidden_dim}) on inputs of shape ({self.config.batch}, {self.config.seq}, {self.config.model_dim})"

    def data(self) -> dict:
        rng = data.tensors(data.PROBE_DATA, self.grading_seed, self.draw)
        return {"parameters": data.parameters(self.config, rng, DTYPE), "inputs": data.random_inputs(self.config, rng, DTYPE)}

    def student(self, submission) -> tuple:
        try:
            result = submission.run_feed_forward(model_dim=self.config.model_dim, hidden_dim=self.config.hidden_dim, **self.data())
        except StudentCodeError as error:
            if error.error.kind == "not_written":
                raise Unusable(error.operation) from None
            return ("error", error.error.type_name, _first_line(error.error.message))
        return ("value", result["output"])

    def trusted(self, steps: dict, context: HeldWeights) -> tuple:
        drawn = self.data()
        try:
            return ("value", mistakes.forward(steps, context.of(drawn["parameters"]), drawn["inputs"]))
        except Exception as error:  # noqa: BLE001 - a failure is an outcome to compare
            return ("error", type(error).__name__, _first_line(str(error)))


@dataclass(frozen=True)
class HeldWeights:
    """The setting every candidate runs in: the grader's weights as the student's module holds
    them (a bias it has no place for is zero there: Submission.as_held, read when the candidate
    runs, after the student's own runs), so that a layer built without its bias, which the
    configuration group says, is never taken for a bias held but not added."""

    submission: object

    def of(self, parameters: dict) -> dict:
        return self.submission.as_held(parameters)


def _first_line(message: str) -> str:
    first = next((line for line in message.splitlines() if line.strip()), "")
    return " ".join(first.split())


def drawn_config(grading_seed: int, draw: int) -> Config:
    """Sizes drawn from the grading seed: batch and seq >= 2, no two sizes alike."""
    rng = data.sizes(data.PROBE_SIZES, grading_seed, draw)
    while True:
        config = Config(batch=rng.randint(2, 4), seq=rng.randint(2, 7), model_dim=rng.randint(3, 10), hidden_dim=rng.randint(5, 24))
        if not data.sizes_alike(config):
            return config


@functools.cache
def for_seed(grading_seed: int) -> dict[str, list]:
    """Every function's probes under ``grading_seed``."""
    return {mistakes.FORWARD: [ForwardProbe(drawn_config(grading_seed, draw), draw, grading_seed) for draw in range(PROBES_PER_FUNCTION)]}
