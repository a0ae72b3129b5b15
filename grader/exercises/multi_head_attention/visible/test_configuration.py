"""Group 6 — configuration: a width that does not divide fails at construction."""

from __future__ import annotations

import re

import pytest

from grader.exercises.multi_head_attention import checks
from grader.feedback.evidence import StudentCodeError

# Each hint is chosen by what the call did: returned, raised AssertionError, raised another error.
CHECK_HINT = "check num_heads < 1 or model_dim % num_heads != 0 and raise ValueError(f'... {model_dim} ... {num_heads} ...')."
ASSERT_HINT = (
    "your check is an assert: it raises AssertionError, not ValueError, and vanishes under python -O; "
    "raise ValueError(f'... {model_dim} ... {num_heads} ...') instead."
)
UNCHECKED_HINT = (
    "your code raised {error} before any check of the configuration: check num_heads < 1 or "
    "model_dim % num_heads != 0 first and raise ValueError."
)
# Errors that the arithmetic of an unchecked configuration raises by itself.
UNCHECKED_ERRORS = ("ZeroDivisionError", "RuntimeError", "TypeError")


def expect_value_error(call, what: str, numbers: tuple[int, ...], constructs: bool = False) -> None:
    """``call`` must raise ValueError naming ``numbers``; ``constructs``: it builds a module
    (a constructor returns nothing to show, so the message says it was built)."""
    try:
        returned = call()
    except StudentCodeError as raised:
        error = raised
    else:
        if constructs:
            got = "no error: the module was built, so the mistake would surface later, in a forward pass"
            hint = "MultiHeadSelfAttention.__init__ must check the configuration before it builds anything: " + CHECK_HINT
        else:
            got, hint = f"it returned {returned!r}", CHECK_HINT
        checks.fail(f"{what} did not raise.", "ValueError", got, hint)
    if error.error.kind != "raised" or error.type_name == "NotImplementedError":
        raise error  # not written yet, or a contract problem: reported as such
    if error.type_name != "ValueError":
        hint = ASSERT_HINT if error.type_name == "AssertionError" else (
            UNCHECKED_HINT.format(error=error.type_name) if error.type_name in UNCHECKED_ERRORS else ""
        )
        checks.fail(f"{what} raised the wrong kind of error.", "ValueError", f"{error.type_name}: {error.error.message}", hint)
    missing = [n for n in numbers if not re.search(rf"(?<!\d){n}(?!\d)", error.error.message)]
    if missing:
        checks.fail(
            f"{what} raised ValueError, but its message does not name {', '.join(map(str, missing))}.",
            f"a message naming {' and '.join(map(str, numbers))}, so the user sees which setting is wrong",
            repr(error.error.message),
            "put both numbers in the message, e.g. f'model_dim={model_dim} is not divisible by num_heads={num_heads}'.",
        )


@pytest.mark.points(1)
@pytest.mark.parametrize(("model_dim", "num_heads", "expected"), [(128, 4, 32), (12, 3, 4), (6, 1, 6)])
def test_head_dimension_is_the_width_of_one_head(submission, model_dim, num_heads, expected):
    result = submission.head_dimension(model_dim, num_heads)
    if type(result) is not int or result != expected:
        checks.fail(
            f"head_dimension({model_dim}, {num_heads}) is wrong.",
            f"{expected} (an int)",
            f"{result!r} ({type(result).__name__})",
            "your number is right and a float: model_dim // num_heads is an int, model_dim / num_heads a float."
            if type(result) is float and result == expected else "",
        )


@pytest.mark.points(1)
@pytest.mark.parametrize(("model_dim", "num_heads"), [(10, 3), (8, 3)])
def test_head_dimension_rejects_a_width_that_does_not_divide(submission, model_dim, num_heads):
    expect_value_error(
        lambda: submission.head_dimension(model_dim, num_heads), f"head_dimension({model_dim}, {num_heads})", (model_dim, num_heads)
    )


@pytest.mark.points(1)
def test_head_dimension_rejects_zero_heads(submission):
    expect_value_error(lambda: submission.head_dimension(8, 0), "head_dimension(8, 0)", (8, 0))


@pytest.mark.points(4)
def test_an_indivisible_width_fails_at_construction_before_any_forward(submission):
    submission.construct_attention(12, 3)  # a valid configuration must construct cleanly
    expect_value_error(
        lambda: submission.construct_attention(10, 3), "MultiHeadSelfAttention(10, 3)", (10, 3), constructs=True
    )
