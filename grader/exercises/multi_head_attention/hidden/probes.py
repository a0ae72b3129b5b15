"""Probe data for the diagnosis, and what a function does with it: the student's or a known mistake's.

Each function of the exercise is probed in isolation, through the ``Submission``'s plain-data
calls only (student code stays behind the boundary): a head with the grader's projection
weights, ``concatenate_heads`` on the grader's head outputs, the module against the
combination of the student's *own* heads, concatenation and causal mask. A probe turns one
behaviour into an *outcome* (plain values and tensors, or the kind of error), for the
student through ``Submission`` and for a known mistake by running its trusted steps
(grader/exercises/multi_head_attention/hidden/mistakes.py) in the grader's process, so that both can be compared.

Probes are small (a few positions, a few features) and in float64, so valid rewrites agree
with the reference to ~1e-15 while every known mistake misses by 1e-2 or more; sizes are
chosen so that no two mistakes coincide (head_dim > 1, sqrt(model_dim) != head_dim,
batch != seq != model_dim, several heads, a mask that allows later positions).

Sizes and data are drawn from the grading seed, like the hidden checks' (``for_seed``): a
submission cannot recognise the probes by their sizes and behave well only for them. The
diagnosis is advice, never a score, but advice a submission could steer is no diagnosis.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass

import torch

from grader.exercises.multi_head_attention import data
from grader.exercises.multi_head_attention.data import Config
from grader.exercises.multi_head_attention.hidden import mistakes
from grader.feedback.evidence import StudentCodeError

DTYPE = torch.float64
NOT_DEFINED = "expected your file to define"  # grader/exercises/multi_head_attention/operations.py: a name not (yet) in the file


class Unusable(Exception):
    """The student's function cannot be probed (not written yet): no diagnosis for it."""


def _failure(error: BaseException) -> tuple:
    """A failure as an outcome: its type and what it says. Two failures are the same only when
    both agree (a dtype error is not a size mismatch, though both are RuntimeErrors)."""
    if isinstance(error, StudentCodeError):
        if error.error.kind == "not_written" or error.error.message.startswith(NOT_DEFINED):
            raise Unusable(error.operation)
        return ("error", error.error.type_name, said(error.error.message))
    return ("error", type(error).__name__, said(str(error)))


def said(message: str) -> str:
    """What an error says, compared between the student's run and a candidate's: its first line
    with spaces collapsed (the grader appends hints on later lines of the student's errors only:
    grader/exercises/multi_head_attention/operations.py), so a mistake reproduces a failure when it raises the same words."""
    first = next((line for line in message.splitlines() if line.strip()), "")
    return " ".join(first.split())


def is_crash(outcome: tuple) -> bool:
    return bool(outcome) and outcome[0] == "error"


def fresh(value):
    """A copy for the student's code: at a desk it runs in this process and could change a
    tensor in place, which must not change the probe data every candidate is run on."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {key: fresh(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(fresh(item) for item in value)
    return value


def student_outcome(call) -> tuple:
    """The student's answer as an outcome: ("value", ...) or ("error", type name, what it says)."""
    try:
        return ("value", *call())
    except StudentCodeError as error:
        return _failure(error)


def trusted_outcome(call) -> tuple:
    """A known mistake's answer on the same data, run here; its errors are outcomes too
    (a mistake such as a mask of the wrong size fails in the student's own head)."""
    try:
        return ("value", *call())
    except (Exception, StudentCodeError) as error:  # noqa: BLE001 - every failure is an outcome to compare
        return _failure(error)


# --- head_dimension ------------------------------------------------------------------------------


def _refusal(error: str, type_name: str, numbers: tuple[int, ...]) -> tuple:
    """An error refusing a configuration, as an outcome: its type, and which of ``numbers`` its
    message names (a message is compared by what it tells)."""
    return ("error", type_name, tuple(bool(re.search(rf"(?<!\d){n}(?!\d)", error)) for n in numbers))


def _student_refusal(call, numbers: tuple[int, ...], answer) -> tuple:
    """``answer(call())`` for the student's code, or the error it raised as a refusal."""
    try:
        return answer(call())
    except StudentCodeError as error:
        if error.error.kind != "raised":
            return _failure(error)
        return _refusal(error.error.message, error.error.type_name, numbers)


@dataclass(frozen=True)
class HeadDimensionProbe:
    model_dim: int
    num_heads: int

    def described(self) -> str:
        return f"head_dimension({self.model_dim}, {self.num_heads})"

    def _outcome(self, value=None, error=None, type_name="") -> tuple:
        if error is None:
            number = value if type(value) in (int, float) else None
            return ("value", type(value).__name__, number)
        return _refusal(error, type_name, (self.model_dim, self.num_heads))

    def student(self, submission) -> tuple:
        return _student_refusal(lambda: submission.head_dimension(self.model_dim, self.num_heads),
                                (self.model_dim, self.num_heads), self._outcome)

    def trusted(self, steps, context) -> tuple:
        try:
            return self._outcome(mistakes.head_dimension(steps, self.model_dim, self.num_heads))
        except Exception as error:  # noqa: BLE001
            return self._outcome(error=str(error), type_name=type(error).__name__)


def _head_dimension_probes(rng: random.Random) -> tuple:
    """Two widths that divide, one head, two that do not, no head and a negative count: every
    width differs from its head count, so a message is read for which number it names."""
    heads = rng.sample(range(2, 6), 2)
    dividing = [(h * rng.randint(2, 5), h) for h in heads]
    odd = rng.choice((3, 4, 5))
    not_dividing = [(odd * rng.randint(2, 4) + rng.randint(1, odd - 1), odd), (2 * rng.randint(3, 7) + 1, 2)]
    single = rng.randint(5, 13)
    return tuple(HeadDimensionProbe(m, h) for m, h in (*dividing, (single, 1), *not_dividing, (rng.randint(6, 13), 0), (rng.randint(6, 13), -1)))


# --- causal_mask ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CausalMaskProbe:
    seq: int

    def described(self) -> str:
        return f"causal_mask({self.seq})"

    def student(self, submission) -> tuple:
        return student_outcome(lambda: _mask_answer(submission.causal_mask(self.seq)))

    def trusted(self, steps, context) -> tuple:
        return trusted_outcome(lambda: _mask_answer(mistakes.causal_mask(steps, self.seq)))


def _mask_answer(mask: torch.Tensor) -> tuple:
    return (str(mask.dtype), mask)


def _causal_mask_probes(rng: random.Random) -> tuple:
    return tuple(CausalMaskProbe(seq) for seq in (2, *rng.sample(range(4, 9), 2)))


# --- AttentionHead.forward -----------------------------------------------------------------------


def _custom_mask(config: Config, rng: torch.Generator, seq_shaped: bool = False) -> torch.Tensor:
    """A mask allowing some later positions, with one row allowing everything and one
    allowing a single key: no causal or inverted pattern can pass for it."""
    allowed = data.scattered_allowed(config, rng)
    allowed[:, -2] = True  # a row that allows every key
    return allowed[0] if seq_shaped else allowed


@dataclass(frozen=True)
class HeadProbe:
    config: Config
    mask: str  # "causal" | "custom" | "custom2d"
    seed: int
    with_gradients: bool = False

    def described(self) -> str:
        config = self.config
        mask = {"causal": "the causal mask", "custom": "a (batch, seq, seq) mask that allows some later positions",
                "custom2d": "a (seq, seq) mask that allows some later positions"}[self.mask]
        return (f"AttentionHead({config.model_dim}, {config.head_dim}) on inputs of shape {(config.batch, config.seq, config.model_dim)} "
                f"with {mask}" + (", and its gradients" if self.with_gradients else ""))

    @functools.cache  # the same data for the student and every candidate (never modified)
    def data(self) -> dict:
        rng = data.generator(self.seed)
        arguments = {
            "parameters": data.head_parameters(self.config, rng, dtype=DTYPE),
            "inputs": data.random_inputs(self.config, rng, scale=1.5, dtype=DTYPE),
        }
        if self.mask == "causal":
            arguments["allowed_mask"] = data.causal_allowed(self.config.seq)
        else:
            arguments["allowed_mask"] = _custom_mask(self.config, rng, seq_shaped=self.mask == "custom2d")
        if self.with_gradients:
            shape = (self.config.batch, self.config.seq, self.config.head_dim)
            arguments["output_gradient"] = torch.randn(shape, generator=rng, dtype=DTYPE)
        return arguments

    def student(self, submission) -> tuple:
        arguments = fresh(self.data())

        def run():
            got = submission.run_head(model_dim=self.config.model_dim, head_dim=self.config.head_dim, **arguments)
            answer = (got["weights"], got["output"])
            if self.with_gradients:
                gradients = got.get("parameter_gradients", {})
                answer += (got.get("input_gradient"), *(gradients.get(f"{n}.weight") for n in ("query", "key", "value")))
            return answer

        return student_outcome(run)

    def trusted(self, steps, context) -> tuple:
        arguments = self.data()
        memo = context.setdefault(self, {})  # this probe's results of earlier candidates
        return trusted_outcome(lambda: self._run_trusted(steps, memo, **arguments))

    def _run_trusted(self, steps, memo, parameters, inputs, allowed_mask, output_gradient=None) -> tuple:
        if output_gradient is None:
            with torch.no_grad():
                return mistakes.attention_head(steps, parameters, inputs, allowed_mask, self.config.head_dim, memo)
        inputs = inputs.clone().requires_grad_()
        parameters = {name: value.clone().requires_grad_() for name, value in parameters.items()}
        weights, output = mistakes.attention_head(steps, parameters, inputs, allowed_mask, self.config.head_dim)
        leaves = [inputs, *(parameters[f"{n}.weight"] for n in ("query", "key", "value"))]
        gradients = (None,) * len(leaves)
        if output.requires_grad:
            gradients = torch.autograd.grad((output * output_gradient).sum(), leaves, allow_unused=True)
        return (weights.detach(), output.detach(), *gradients)


def separating_config(rng: random.Random, small: bool = False) -> Config:
    """Sizes at which no two known mistakes coincide: several heads of several features, and
    batch, seq, model_dim, head_dim and head_dim**2 all different (a scale by the wrong width,
    a mask sized by the wrong number would otherwise pass for the right one)."""
    while True:
        num_heads, head_dim = rng.randint(2, 3), rng.randint(2, 3 if small else 5)
        config = Config(batch=rng.randint(2, 3), seq=rng.randint(4, 5 if small else 7), model_dim=num_heads * head_dim, num_heads=num_heads)
        sizes = (config.batch, config.seq, config.model_dim, head_dim, head_dim**2)
        if len(set(sizes)) == len(sizes):
            return config


def _head_probes(rng: random.Random) -> tuple:
    seed = rng.randrange(2**31)
    while True:
        configs = [separating_config(rng) for _ in range(3)] + [separating_config(rng, small=True)]
        # Not every probe with the same number of heads: with two heads everywhere, model_dim is
        # 2 * head_dim on every probe, and scores / head_dim / 2 passes for scores / model_dim.
        if len({config.num_heads for config in configs}) > 1:
            break
    return (
        HeadProbe(configs[0], "causal", seed=seed + 1),
        HeadProbe(configs[1], "custom", seed=seed + 2),
        HeadProbe(configs[2], "custom2d", seed=seed + 3),
        HeadProbe(configs[3], "causal", seed=seed + 4, with_gradients=True),
    )


# --- concatenate_heads ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ConcatenateProbe:
    batch: int
    seq: int
    head_dim: int
    num_heads: int
    seed: int

    def described(self) -> str:
        return f"concatenate_heads on {self.num_heads} heads' outputs of shape {(self.batch, self.seq, self.head_dim)}"

    @functools.cache  # the same data for the student and every candidate (never modified)
    def data(self) -> tuple[list, list]:
        rng = data.generator(self.seed)
        outputs = [torch.randn((self.batch, self.seq, self.head_dim), generator=rng) for _ in range(self.num_heads)]
        weights = [torch.full((self.batch, self.seq, self.seq), 1 / self.seq) for _ in range(self.num_heads)]
        return outputs, weights

    def student(self, submission) -> tuple:
        outputs, weights = fresh(self.data())
        return student_outcome(lambda: (submission.concatenate_heads(outputs, weights),))

    def trusted(self, steps, context) -> tuple:
        outputs, _ = self.data()
        return trusted_outcome(lambda: (mistakes.concatenate_heads(steps, outputs),))


def _concatenate_probes(rng: random.Random) -> tuple:
    seed = rng.randrange(2**31)
    return tuple(
        ConcatenateProbe(config.batch, config.seq, config.head_dim, config.num_heads, seed=seed + index)
        for index, config in enumerate(separating_config(rng) for _ in range(2))
    )


# --- MultiHeadSelfAttention ----------------------------------------------------------------------


@dataclass
class HeadRun:
    """One of the student's heads, run by the grader: its results and what they came from."""

    key: tuple
    weights: torch.Tensor
    output: torch.Tensor


def _remembered(cache: dict, key, fetch):
    """``fetch()``, asked of the student's code once per key: its answer, or its error raised again."""
    if key not in cache:
        try:
            cache[key] = ("value", fetch())
        except StudentCodeError as error:
            cache[key] = ("error", error)
    kind, value = cache[key]
    if kind == "error":
        raise value
    return value


class StudentParts:
    """The student's own heads, concatenate_heads and causal_mask on one module probe,
    fetched through the Submission when a candidate first needs them and kept for the next
    candidate: the module is judged by what it does with its parts, not by the parts."""

    def __init__(self, submission, probe: ModuleProbe, parameters: dict, inputs: torch.Tensor, cache=None) -> None:
        self.submission = submission
        self.probe = probe
        self.batch, self.seq = probe.config.batch, probe.config.seq
        self.model_dim, self.num_heads = probe.config.model_dim, probe.config.num_heads
        self.head_dim = probe.config.head_dim
        self.parameters = parameters
        self.inputs = inputs
        self._cache: dict = {} if cache is None else cache

    def with_reference_helpers(self) -> StudentParts:
        """The same heads, with the reference's causal mask and concatenation: a module may
        rightly do those itself (torch.tril, torch.cat) instead of calling the student's."""
        return ReferenceHelpers(self.submission, self.probe, self.parameters, self.inputs, self._cache)

    def _remember(self, key, fetch):
        return _remembered(self._cache, key, fetch)

    def causal_mask(self, seq_len: int) -> torch.Tensor:
        return self._remember(("mask", seq_len), lambda: self.submission.causal_mask(seq_len))

    def head(self, index: int, mask: torch.Tensor) -> HeadRun:
        key = ("head", index, tuple(mask.shape), str(mask.dtype), mask.numpy().tobytes())
        prefix = f"heads.{index}."
        parameters = {n.removeprefix(prefix): v for n, v in self.parameters.items() if n.startswith(prefix)}

        def fetch() -> HeadRun:
            got = self.submission.run_head(
                model_dim=self.model_dim, head_dim=self.head_dim, **fresh(
                    {"parameters": parameters, "inputs": self.inputs, "allowed_mask": mask}
                ),
            )
            return HeadRun(key, got["weights"], got["output"])

        return self._remember(key, fetch)

    def concatenate(self, heads: list[HeadRun]) -> torch.Tensor:
        key = ("concatenate", *(head.key for head in heads))
        return self._remember(
            key, lambda: self.submission.concatenate_heads(fresh([h.output for h in heads]), fresh([h.weights for h in heads]))
        )


class ReferenceHelpers(StudentParts):
    def causal_mask(self, seq_len: int) -> torch.Tensor:
        return mistakes.causal_mask(mistakes.CAUSAL_MASK_STEPS, seq_len)

    def concatenate(self, heads: list[HeadRun]) -> torch.Tensor:
        return mistakes.concatenate_heads(mistakes.CONCATENATE_STEPS, [head.output for head in heads])


@dataclass(frozen=True)
class ModuleProbe:
    config: Config
    mask: str  # "default" (allowed_mask=None) | "custom"
    seed: int

    def described(self) -> str:
        config = self.config
        mask = "allowed_mask=None" if self.mask == "default" else "a mask that allows some later positions"
        return f"MultiHeadSelfAttention({config.model_dim}, {config.num_heads}) on inputs of shape {(config.batch, config.seq, config.model_dim)} with {mask}"

    @functools.cache  # the same data for the student and every candidate (never modified)
    def data(self) -> dict:
        rng = data.generator(self.seed)
        arguments = {
            "parameters": data.attention_parameters(self.config, rng, dtype=DTYPE),
            "inputs": data.random_inputs(self.config, rng, scale=1.5, dtype=DTYPE),
        }
        arguments["allowed_mask"] = None if self.mask == "default" else data.scattered_allowed(self.config, rng)
        return arguments

    def student(self, submission) -> tuple:
        arguments = fresh(self.data())
        return student_outcome(
            lambda: _answer(submission.run_attention(model_dim=self.config.model_dim, num_heads=self.config.num_heads, **arguments))
        )

    def trusted(self, steps, context) -> tuple:
        """The module's steps applied to the student's own parts (``context``: this probe's parts),
        with the weights as the student's module held them (a bias it has no place for at zero)."""
        arguments = self.data()
        parts = context[self]
        parameters = parts.submission.as_held(arguments["parameters"])
        return trusted_outcome(lambda: mistakes.module_forward(steps, parts, parameters, arguments["allowed_mask"]))

    def parts(self, submission) -> StudentParts:
        arguments = self.data()
        return StudentParts(submission, self, arguments["parameters"], arguments["inputs"])


def _answer(got: dict) -> tuple:
    return (got["weights"], got["output"])


@dataclass(frozen=True)
class ConstructionProbe:
    """How the module's heads hold their parameters right after construction."""

    config: Config
    seed: int = 3100

    def described(self) -> str:
        return f"the parameters of MultiHeadSelfAttention({self.config.model_dim}, {self.config.num_heads}) as built"

    def student(self, submission) -> tuple:
        def run():
            built = submission.initial_parameters(self.config.model_dim, self.config.num_heads, self.seed)
            heads = [
                [built["parameters"].get(f"heads.{h}.{p}.weight") for p in ("query", "key", "value")]
                for h in range(self.config.num_heads)
            ]
            shared = any(any(n.startswith("heads.") for n in group) for group in built.get("shared", []))
            identical = any(
                all(a is not None and b is not None and a.shape == b.shape and torch.equal(a, b) for a, b in zip(first, second))
                for index, first in enumerate(heads)
                for second in heads[index + 1 :]
            )
            return (shared, identical)

        return student_outcome(run)

    def trusted(self, steps, context) -> tuple:
        return trusted_outcome(lambda: mistakes.module_construction(steps))


@dataclass(frozen=True)
class ConfigurationProbe:
    """What constructing the module with a width that does not divide does before it builds
    anything, judged against what the student's own head_dimension does with those sizes (the
    module checks its configuration by asking head_dimension: grader/exercises/multi_head_attention/hidden/mistakes.py)."""

    model_dim: int
    num_heads: int

    def described(self) -> str:
        return f"MultiHeadSelfAttention({self.model_dim}, {self.num_heads}) built"

    def student(self, submission) -> tuple:
        return _student_refusal(lambda: submission.construct_attention(self.model_dim, self.num_heads),
                                (self.model_dim, self.num_heads), lambda _: ("value", "constructed"))

    def trusted(self, steps, context) -> tuple:
        parts = context[self]
        try:
            return ("value", mistakes.module_configuration(steps, parts.head_dimension, self.model_dim, self.num_heads))
        except StudentCodeError as error:  # the student's head_dimension refused
            if error.error.kind != "raised":
                return _failure(error)
            return _refusal(error.error.message, error.error.type_name, (self.model_dim, self.num_heads))
        except Exception as error:  # noqa: BLE001 - a form's own refusal
            return _refusal(str(error), type(error).__name__, (self.model_dim, self.num_heads))

    def parts(self, submission) -> _HeadDimensionOf:
        return _HeadDimensionOf(submission)


class _HeadDimensionOf:
    """The student's head_dimension for a configuration probe, each answer asked once."""

    def __init__(self, submission) -> None:
        self.submission, self.answers = submission, {}

    def with_reference_helpers(self) -> _HeadDimensionOf:
        return self  # the module's check of its configuration is head_dimension's, the student's in both

    def head_dimension(self, model_dim: int, num_heads: int):
        return _remembered(self.answers, (model_dim, num_heads), lambda: self.submission.head_dimension(model_dim, num_heads))


def _module_probes(rng: random.Random) -> tuple:
    seed = rng.randrange(2**31)
    odd = rng.choice((3, 5, 7))
    return (
        ConstructionProbe(Config(batch=1, seq=1, model_dim=3 * rng.randint(2, 5), num_heads=3), seed=seed),
        ModuleProbe(separating_config(rng), "default", seed=seed + 1),
        ModuleProbe(separating_config(rng), "custom", seed=seed + 2),
        # Last: a candidate that missed an earlier probe never asks the student's head_dimension.
        # A width that divides (the module is built: an answer, so that the refusal of the one
        # that does not divide is evidence, not a crash alone) and one that does not.
        ConfigurationProbe(odd * rng.randint(2, 4), odd),
        ConfigurationProbe(odd * rng.randint(2, 4) + rng.randint(1, odd - 1), odd),
    )


@functools.cache
def for_seed(grading_seed: int) -> dict[str, tuple]:
    """Every function's probes, drawn from the grading seed (one draw per seed: the student's
    and every candidate's outcomes are computed on the same probes)."""
    rng = data.sizes(data.DIAGNOSIS_PROBES, grading_seed)
    return {
        mistakes.HEAD_DIMENSION: _head_dimension_probes(rng),
        mistakes.CAUSAL_MASK: _causal_mask_probes(rng),
        mistakes.HEAD: _head_probes(rng),
        mistakes.CONCATENATE: _concatenate_probes(rng),
        mistakes.MODULE: _module_probes(rng),
    }


DEFAULT_SEED = 0  # for callers without a grading session (the repository's own tests)


def module_is_isolable(submission, grading_seed: int = DEFAULT_SEED) -> bool:
    """The module can be judged on its own only if the student's head_dimension gives it the
    right head width (otherwise its construction fails for head_dimension's reason)."""
    for probe in for_seed(grading_seed)[mistakes.MODULE]:
        if not isinstance(probe, ModuleProbe):
            continue
        config = probe.config
        try:
            width = submission.head_dimension(config.model_dim, config.num_heads)
        except StudentCodeError:
            return False
        if type(width) is not int or width != config.head_dim:
            return False
    return True
