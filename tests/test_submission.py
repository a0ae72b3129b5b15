"""The grader's handle on a submission asks each question once: several checks read one run.

A backend that counts what reaches the student's code stands in for the real ones, so each
test states exactly which requests must run the code again and which are answered from
the first call.
"""

from __future__ import annotations

import pytest
import torch

from grader.errors import ErrorDescription
from grader.submission import StudentCodeError, Submission


class CountingBackend:
    """Answers ``causal_mask`` with a fresh tensor and counts every call that reaches it."""

    def __init__(self, failures: int = 0, mask_type: type = torch.Tensor) -> None:
        self.requests: list[tuple[str, dict]] = []
        self.failures = failures  # the first calls that fail, as a crash in the student's code
        self.mask_type = mask_type  # what kind of tensor causal_mask answers with

    def open(self):
        return None

    def call(self, operation, **arguments):
        self.requests.append((operation, arguments))
        if len(self.requests) <= self.failures:
            return None, ErrorDescription("exception", "RuntimeError", "boom")
        if operation == "run_head":
            inputs = arguments["inputs"]
            return {"output": inputs * 2, "weights": torch.ones(inputs.shape[1], inputs.shape[1])}, None
        mask = torch.tril(torch.ones(arguments["seq_len"], arguments["seq_len"], dtype=torch.bool))
        return mask.as_subclass(self.mask_type), None

    def abort(self):
        pass

    def close(self):
        pass

    def captured_output(self):
        return ""


def submission_with(backend: CountingBackend) -> Submission:
    return Submission("counted", None, backend).open()


def run_head(submission: Submission, inputs: torch.Tensor) -> dict:
    return submission.run_head(model_dim=4, head_dim=2, parameters={"query.weight": torch.zeros(2, 4)},
                               inputs=inputs, allowed_mask=torch.ones(3, 3, dtype=torch.bool))


def test_the_same_request_reaches_the_students_code_once():
    backend = CountingBackend()
    submission = submission_with(backend)
    inputs = torch.arange(12.0).reshape(1, 3, 4)
    first, second = run_head(submission, inputs), run_head(submission, inputs.clone())
    assert len(backend.requests) == 1
    assert torch.equal(first["output"], second["output"]) and torch.equal(first["weights"], second["weights"])


@pytest.mark.parametrize("changed", ["one value", "the dtype", "the shape"])
def test_a_request_that_differs_in_any_tensor_runs_the_code_again(changed):
    backend = CountingBackend()
    submission = submission_with(backend)
    inputs = torch.arange(12.0).reshape(1, 3, 4)
    other = {  # the same bytes, told apart by the dtype or the shape alone
        "one value": inputs.clone().index_put_((torch.tensor(0), torch.tensor(2), torch.tensor(3)), torch.tensor(-1.0)),
        "the dtype": inputs.view(torch.int32),
        "the shape": inputs.reshape(1, 4, 3),
    }[changed]
    run_head(submission, inputs)
    run_head(submission, other)
    assert len(backend.requests) == 2


def test_a_test_that_changes_an_answer_in_place_does_not_change_the_next_one():
    backend = CountingBackend()
    submission = submission_with(backend)
    for _ in range(2):  # the first answer, then one from memory
        submission.causal_mask(4).fill_(False)  # a careless check
    assert submission.causal_mask(4).sum().item() == 10  # the lower triangle, as first answered
    assert len(backend.requests) == 1


def test_a_call_that_failed_is_asked_again():
    backend = CountingBackend(failures=1)
    submission = submission_with(backend)
    with pytest.raises(StudentCodeError, match="boom"):
        submission.causal_mask(3)
    assert submission.causal_mask(3).sum().item() == 6
    assert len(backend.requests) == 2


def test_other_scalar_arguments_are_other_requests():
    backend = CountingBackend()
    submission = submission_with(backend)
    submission.causal_mask(3)
    submission.causal_mask(4)
    submission.causal_mask(3)
    assert [arguments["seq_len"] for _, arguments in backend.requests] == [3, 4]


class RefusesCopies(torch.Tensor):
    """A student's tensor subclass; copying it would run the student's code."""

    def __deepcopy__(self, memo):
        raise AssertionError("the grader copied a student's object")


def test_an_answer_that_is_not_plain_data_is_neither_copied_nor_remembered():
    backend = CountingBackend(mask_type=RefusesCopies)
    submission = submission_with(backend)
    for _ in range(2):
        with pytest.raises(StudentCodeError, match="expected a plain torch.Tensor"):
            submission.causal_mask(3)
    assert len(backend.requests) == 2
