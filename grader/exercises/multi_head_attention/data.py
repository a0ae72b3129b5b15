"""Configurations, inputs, weights and masks, all chosen on the grader's side.

Every tensor comes from a ``torch.Generator`` owned by the grader, so a submission
cannot predict or influence the data it is graded on. Every random choice derives its
generator here (the draw service below): from a check's fixed seed (``generator``), or from
the grading seed and the choice's purpose (``sizes``, ``tensors``); no other module of
the grader seeds a generator (tests/test_data.py reads them all).
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

# The visible reference group's fixed examples, generated from the solution by
# `python -m grader examples` (grader/handout/reference_examples.py).
REFERENCE_EXAMPLES_PATH = Path(__file__).resolve().parent / "reference_examples.json"


@dataclass(frozen=True)
class Config:
    batch: int
    seq: int
    model_dim: int
    num_heads: int

    @property
    def head_dim(self) -> int:
        return self.model_dim // self.num_heads

    @property
    def id(self) -> str:
        return f"b{self.batch}-s{self.seq}-d{self.model_dim}-h{self.num_heads}"

    def describe(self) -> str:
        return (
            f"batch={self.batch}, seq={self.seq}, model_dim={self.model_dim}, "
            f"num_heads={self.num_heads} (head_dim={self.head_dim})"
        )


LESSON = Config(batch=1, seq=4, model_dim=8, num_heads=2)
# The lesson's example, uneven sizes (no two alike, see confusions_hidden_by), a single
# position with a single head, batch > 1.
SHAPE_CONFIGS = (
    LESSON,
    Config(batch=3, seq=5, model_dim=24, num_heads=4),
    Config(batch=2, seq=1, model_dim=6, num_heads=1),
    Config(batch=2, seq=6, model_dim=28, num_heads=4),
)
# Several heads, batch > 1, and sizes at which the confusions students make give other
# numbers (see confusions_hidden_by): misplaced axes and wrong scales cannot hide.
PROPERTY_CONFIGS = (
    Config(batch=2, seq=5, model_dim=18, num_heads=3),
    Config(batch=3, seq=7, model_dim=20, num_heads=4),
)


def confusions_hidden_by(config: Config) -> list[str]:
    """The confusions that give the right numbers (or the right shapes) at ``config``'s sizes.

    At head_dim 4, head_dim / 2 is sqrt(head_dim): ``head_dim ** 1/2`` passes every check run
    there. A visible check that is to catch a confusion runs at sizes where this list is empty
    (tests/test_visible_sizes.py pins it for the visible configurations)."""
    hd, md, seq, batch, heads = config.head_dim, config.model_dim, config.seq, config.batch, config.num_heads
    # The scales students use instead of sqrt(head_dim), by what they wrote.
    scales = {
        "math.sqrt(head_dim)": math.sqrt(hd), "no scale": 1.0, "head_dim": hd, "head_dim ** 1/2 (head_dim / 2)": hd / 2,
        "scores / head_dim ** 1/2 (2 * head_dim)": 2 * hd, "math.sqrt(model_dim)": math.sqrt(md), "model_dim": md,
        "math.sqrt(seq)": math.sqrt(seq),
    }
    found = [f"{a} equals {b}" for i, (a, x) in enumerate(scales.items()) for b, y in list(scales.items())[i + 1:]
             if math.isclose(x, y)]
    # Sizes that, equal, let one axis pass for another (a transpose or a misplaced axis hides).
    sizes = {"batch": batch, "seq": seq, "head_dim": hd, "model_dim": md, "num_heads": heads}
    found += [f"{a} equals {b}" for i, (a, x) in enumerate(sizes.items()) for b, y in list(sizes.items())[i + 1:] if x == y]
    found += ["batch 1 hides the batch axis"] if batch == 1 else []
    return found


def generator(seed: int) -> torch.Generator:
    """The tensors of a fixed seed: a visible check's own data, or a seed drawn from a stream below."""
    return torch.Generator().manual_seed(seed)


# --- the draw service: the grading seed's streams, one per purpose ------------------------------
# What a grading draws from its seed (the hidden checks' sizes and data, the diagnosis's probes,
# the randomness question) comes from one stream per purpose: a purpose's draws never move
# another's, and one seed gives one grade. Each purpose keeps the derivation it was born with,
# so that no grade moves (tests/test_data.py pins the first numbers of every stream).


@dataclass(frozen=True)
class Purpose:
    """What a stream is for, and how its generator's seed derives from (grading seed, draw)."""

    name: str
    seed_of: Callable[[int, int], int | str]


HIDDEN_SIZES = Purpose("the hidden checks' sizes", lambda seed, draw: seed * 7919 + draw)
HIDDEN_HEAD_DATA = Purpose("the hidden head checks' data", lambda seed, draw: seed + 100 + draw)
HIDDEN_MODULE_DATA = Purpose("the hidden module checks' data", lambda seed, draw: seed + 200 + draw)
HIDDEN_GRADIENT_DATA = Purpose("the hidden gradient check's data", lambda seed, draw: seed + 300 + draw)
DIAGNOSIS_PROBES = Purpose("the diagnosis's probes", lambda seed, draw: f"diagnosis probes {seed}")
RANDOMNESS_QUESTION = Purpose("the randomness question", lambda seed, draw: f"randomness question {seed}")
PURPOSES = (HIDDEN_SIZES, HIDDEN_HEAD_DATA, HIDDEN_MODULE_DATA, HIDDEN_GRADIENT_DATA, DIAGNOSIS_PROBES, RANDOMNESS_QUESTION)


def sizes(purpose: Purpose, grading_seed: int, draw: int = 0) -> random.Random:
    """The stream of whole numbers (sizes, seeds, choices) for ``purpose`` under ``grading_seed``."""
    return random.Random(purpose.seed_of(grading_seed, draw))


def tensors(purpose: Purpose, grading_seed: int, draw: int = 0) -> torch.Generator:
    """The stream of tensors for ``purpose`` under ``grading_seed``."""
    seed = purpose.seed_of(grading_seed, draw)
    if not isinstance(seed, int):
        raise TypeError(f"{purpose.name}: a torch generator takes a whole number as its seed, not {seed!r}")
    return generator(seed)


# Draws remembered per process, at most this many (a batch shard asks the same few hundred
# again for every student of the class: one seed, the same configurations).
DRAWS_REMEMBERED = 4096


def drawn_once(draw):
    """``draw(config, rng, ...)`` drawn once per generator state and arguments: the same call
    again gets fresh copies of the same tensors and leaves ``rng`` where drawing would have, so
    nothing downstream can tell (tests/test_data.py). A shard grading a class asks for the
    same weights once per student; drawing them was 3 % of its time."""
    remembered: dict[tuple, tuple] = {}

    @functools.wraps(draw)
    def remembering(config: Config, rng: torch.Generator, *arguments, **named):
        key = (config, arguments, tuple(sorted(named.items())), rng.get_state().numpy().tobytes())
        if key in remembered:
            value, state_after = remembered[key]
            rng.set_state(state_after)
        else:
            if len(remembered) >= DRAWS_REMEMBERED:
                remembered.clear()
            value = draw(config, rng, *arguments, **named)
            remembered[key] = (_fresh(value), rng.get_state())
        return _fresh(value)

    return remembering


def _fresh(value):
    if isinstance(value, dict):
        return {name: tensor.clone() for name, tensor in value.items()}
    return value.clone()


@drawn_once
def random_inputs(config: Config, rng: torch.Generator, scale: float = 1.0, dtype=torch.float32):
    """(batch, seq, model_dim) standard-normal inputs times ``scale``."""
    shape = (config.batch, config.seq, config.model_dim)
    return (torch.randn(shape, generator=rng, dtype=torch.float64) * scale).to(dtype)


def _linear_weight(out_features: int, in_features: int, rng: torch.Generator, dtype) -> torch.Tensor:
    bound = 1.0 / math.sqrt(in_features)
    weight = torch.rand((out_features, in_features), generator=rng, dtype=torch.float64)
    return ((weight * 2 - 1) * bound * 2).to(dtype)  # a little wider than nn.Linear's init


@drawn_once
def head_parameters(config: Config, rng: torch.Generator, dtype=torch.float32) -> dict:
    """State dict of one AttentionHead: query, key, value weights (head_dim, model_dim)."""
    return {
        f"{name}.weight": _linear_weight(config.head_dim, config.model_dim, rng, dtype)
        for name in ("query", "key", "value")
    }


@drawn_once
def attention_parameters(config: Config, rng: torch.Generator, dtype=torch.float32) -> dict:
    """State dict of MultiHeadSelfAttention, every head with weights of its own."""
    parameters = {}
    for index in range(config.num_heads):
        for name, value in head_parameters(config, rng, dtype).items():
            parameters[f"heads.{index}.{name}"] = value
    parameters["output_projection.weight"] = _linear_weight(config.model_dim, config.model_dim, rng, dtype)
    parameters["output_projection.bias"] = _linear_weight(1, config.model_dim, rng, dtype)[0]
    return parameters


@dataclass(frozen=True)
class ReferenceExample:
    """One fixed example of grader/exercises/multi_head_attention/reference_examples.json, as tensors."""

    name: str
    runs: str  # "head" or "module"
    config: Config
    mask: str  # "causal" or "custom"
    inputs: torch.Tensor
    parameters: dict
    allowed_mask: torch.Tensor
    expected_output: torch.Tensor  # float64
    expected_weights: torch.Tensor  # float64


def _tensor(encoded: dict, dtype) -> torch.Tensor:
    return torch.tensor(encoded["values"], dtype=dtype).reshape(encoded["shape"])


def reference_examples(path: Path = REFERENCE_EXAMPLES_PATH) -> dict[str, ReferenceExample]:
    document = _document(path)
    return {
        name: ReferenceExample(
            name=name,
            runs=example["runs"],
            config=Config(**example["config"]),
            mask=example["mask"],
            inputs=_tensor(example["inputs"], torch.float32),
            parameters={key: _tensor(value, torch.float32) for key, value in example["parameters"].items()},
            allowed_mask=_tensor(example["allowed_mask"], torch.bool),
            expected_output=_tensor(example["expected_output"], torch.float64),
            expected_weights=_tensor(example["expected_weights"], torch.float64),
        )
        for name, example in document["examples"].items()
    }


def causal_allowed(seq: int) -> torch.Tensor:
    """The grader's own causal mask: True where key <= query."""
    positions = torch.arange(seq)
    return positions[None, :] <= positions[:, None]


def scattered_allowed(config: Config, rng: torch.Generator) -> torch.Tensor:
    """A (batch, seq, seq) mask that is not causal: future keys allowed, past ones hidden.

    Each row allows at least one position, and some rows allow only a later one, so
    code that applies its own causal mask instead of this one cannot pass by luck.
    """
    allowed = torch.rand((config.batch, config.seq, config.seq), generator=rng) < 0.5
    only_future = torch.zeros((config.seq, config.seq), dtype=torch.bool)
    for query in range(config.seq - 1):
        only_future[query, query + 1] = True  # the row allows exactly the next position
    for query in range(0, config.seq - 1, 2):
        allowed[:, query] = only_future[query]
    empty_rows = ~allowed.any(dim=-1)  # (batch, seq)
    allowed[..., 0] |= empty_rows  # every row allows at least one key
    if not (allowed.sum(dim=-1) >= 2).any():
        # Not one row weighs two keys (two positions can draw that): every weight is then 1,
        # whatever the scores, and a missing scale or a softmax over the wrong axis gives the
        # reference's numbers. The last row then sees its own position and the first. No
        # further draw, so the generator, and all that is drawn after, stay as they were.
        allowed[:, -1, 0] = allowed[:, -1, -1] = True
    return allowed


# --- the visible checks' own data, and the reference's weights on it -------------------------
# The student's grader holds no function that computes the reference's numbers (a callable
# solution, handed out): the weights a visible check compares with, shows beside the student's
# or checks a hint's premise against are computed from the solution by `python -m grader
# examples` and shipped in reference_examples.json ("draws"), for the data each check draws.


@dataclass(frozen=True)
class Draw:
    """One visible check's data: drawn from ``seed``, for a head or a module, under a mask."""

    seed: int
    runs: str  # "head" or "module"
    mask: str  # "causal" or "custom"
    scale: float = 1.0


DRAWS = {
    "probabilities-module": Draw(21, "module", "causal"),
    "probabilities-head-custom-mask": Draw(22, "head", "custom"),
    "probabilities-head-scaled-inputs": Draw(24, "head", "causal", scale=2.0),
    "masking-module-future": Draw(31, "module", "causal"),
    "masking-module-later-inputs": Draw(32, "module", "causal"),
    "masking-head-custom-mask": Draw(33, "head", "custom"),
    "masking-module-custom-mask": Draw(34, "module", "custom"),
}


def drawn(draw: Draw, config: Config) -> dict:
    """``inputs``, ``parameters`` and ``allowed`` (the mask the check applies), in this order
    from ``draw.seed``, and the ``rng`` for what a check draws after them."""
    rng = generator(draw.seed)
    inputs = random_inputs(config, rng, scale=draw.scale)
    parameters = head_parameters(config, rng) if draw.runs == "head" else attention_parameters(config, rng)
    allowed = causal_allowed(config.seq) if draw.mask == "causal" else scattered_allowed(config, rng)
    return {"inputs": inputs, "parameters": parameters, "allowed": allowed, "rng": rng}


@functools.cache
def _document(path: Path = REFERENCE_EXAMPLES_PATH) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def expected_weights(name: str, config: Config) -> torch.Tensor | None:
    """The reference's weights (float64) on ``drawn(DRAWS[name], config)``; None where the file
    holds none (a stale file: `python -m grader examples --check` says so)."""
    encoded = _document().get("draws", {}).get(name, {}).get(config.id)
    return None if encoded is None else _tensor(encoded, torch.float64)
