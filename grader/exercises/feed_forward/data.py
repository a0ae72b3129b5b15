"""Configurations, inputs and weights, all chosen on the grader's side.

Every tensor comes from a ``torch.Generator`` owned by the grader, so a submission cannot
predict or influence the data it is graded on. Every random choice derives its generator here:
from a check's fixed seed (``generator``), or from the grading seed and the choice's purpose
(``sizes``, ``tensors``), one stream per purpose, so that one purpose's draws never move
another's; no other module of this exercise seeds a generator (tests/test_data.py reads them all).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Config:
    batch: int
    seq: int
    model_dim: int
    hidden_dim: int

    @property
    def id(self) -> str:
        return f"b{self.batch}-s{self.seq}-d{self.model_dim}-f{self.hidden_dim}"

    def describe(self) -> str:
        return f"batch={self.batch}, seq={self.seq}, model_dim={self.model_dim}, hidden_dim={self.hidden_dim}"


# The lesson's example, uneven sizes, a single position, a hidden layer narrower than the model.
LESSON = Config(batch=1, seq=4, model_dim=8, hidden_dim=32)
SHAPE_CONFIGS = (
    LESSON,
    Config(batch=3, seq=5, model_dim=6, hidden_dim=20),
    Config(batch=2, seq=1, model_dim=4, hidden_dim=16),
    Config(batch=2, seq=3, model_dim=10, hidden_dim=7),
)
# Several positions and a batch, no two sizes alike: an axis mixed up cannot hide.
PROPERTY_CONFIG = Config(batch=3, seq=5, model_dim=6, hidden_dim=14)


def sizes_alike(config: Config) -> bool:
    """Two axes of one length: a mistake that confuses them would give the right shape."""
    lengths = (config.batch, config.seq, config.model_dim, config.hidden_dim)
    return len(set(lengths)) < len(lengths)


def generator(seed: int) -> torch.Generator:
    """The tensors of a fixed seed: a visible check's own data."""
    return torch.Generator().manual_seed(seed)


def random_inputs(config: Config, rng: torch.Generator, dtype: torch.dtype = torch.float32, scale: float = 1.5) -> torch.Tensor:
    """(batch, seq, model_dim), spread over GELU's bend (|x| up to a few units)."""
    return (torch.randn(config.batch, config.seq, config.model_dim, generator=rng, dtype=torch.float64) * scale).to(dtype)


def parameters(config: Config, rng: torch.Generator, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """The contract's weights (solutions/feed_forward.py's layout), drawn so that the hidden
    units fall on both sides of zero and every bias is far from zero (a bias left out shows)."""
    def drawn(*shape: int, fan_in: int = 1) -> torch.Tensor:
        return (torch.randn(*shape, generator=rng, dtype=torch.float64) / fan_in**0.5).to(dtype)

    return {
        "expand.weight": drawn(config.hidden_dim, config.model_dim, fan_in=config.model_dim) * 1.5,
        "expand.bias": drawn(config.hidden_dim) * 0.5 + 0.25,
        "project.weight": drawn(config.model_dim, config.hidden_dim, fan_in=config.hidden_dim),
        "project.bias": drawn(config.model_dim) * 0.5 - 0.25,
    }


def output_gradient(config: Config, rng: torch.Generator) -> torch.Tensor:
    return torch.randn(config.batch, config.seq, config.model_dim, generator=rng)


# --- the draw service: the grading seed's streams, one per purpose ------------------------------


@dataclass(frozen=True)
class Purpose:
    """What a stream is for, and how its generator's seed derives from (grading seed, draw)."""

    name: str
    seed_of: Callable[[int, int], int]


HIDDEN_SIZES = Purpose("the hidden checks' sizes", lambda seed, draw: seed * 7919 + draw + 17)
HIDDEN_DATA = Purpose("the hidden checks' data", lambda seed, draw: seed * 7919 + draw + 1000)
HIDDEN_GRADIENT_DATA = Purpose("the hidden gradient check's data", lambda seed, draw: seed * 7919 + draw + 2000)
# The diagnosis's probes (hidden/probes.py): drawn from the grading seed like the hidden checks'
# data, so that a submission cannot recognise them, on streams of their own.
PROBE_SIZES = Purpose("the diagnosis's probe sizes", lambda seed, draw: seed * 7919 + draw + 3000)
PROBE_DATA = Purpose("the diagnosis's probe data", lambda seed, draw: seed * 7919 + draw + 4000)
PURPOSES = (HIDDEN_SIZES, HIDDEN_DATA, HIDDEN_GRADIENT_DATA, PROBE_SIZES, PROBE_DATA)


def sizes(purpose: Purpose, grading_seed: int, draw: int = 0) -> random.Random:
    """The stream of whole numbers (sizes) for ``purpose`` under ``grading_seed``."""
    return random.Random(purpose.seed_of(grading_seed, draw))


def tensors(purpose: Purpose, grading_seed: int, draw: int = 0) -> torch.Generator:
    """The stream of tensors for ``purpose`` under ``grading_seed``."""
    return generator(purpose.seed_of(grading_seed, draw))
