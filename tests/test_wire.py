"""The wire format (grader/sandbox/wire.py) decodes a message only when its bytes match its header.

Code in a submission's child can rewrite the child's encoder, so every header here is one a
hostile child could send: each is refused as ``BadMessage`` before anything it announces is
allocated, and honest messages of every dtype still travel unchanged.
"""

from __future__ import annotations

import json
import socket
import struct
import threading

import pytest
import torch

from grader.sandbox import wire

FRAME = struct.Struct("!QQ")  # the wire's own framing: JSON length, tensor bytes length


def framed(header: object, payload: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return FRAME.pack(len(text), len(payload)) + text + payload


def received(message: bytes, bounds: wire.Bounds = wire.REPLY) -> object:
    grader_end, child_end = socket.socketpair()
    # Sent from a thread: a message larger than the socket's buffer waits for its reader.
    sender = threading.Thread(target=lambda: (child_end.sendall(message), child_end.shutdown(socket.SHUT_WR)))
    with grader_end, child_end:
        sender.start()
        try:
            return wire.receive(grader_end, deadline=None, bounds=bounds)
        finally:
            grader_end.close()  # a sender still writing what was refused unread stops at once
            sender.join()


def tensor_header(dtype: str, shape: list, size: object) -> dict:
    return {"result": {"__tensor__": dtype, "shape": shape, "bytes": size}}


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.uint8, torch.int8,
              torch.int16, torch.int32, torch.int64, torch.bool],
)
def test_honest_tensors_of_every_dtype_travel_unchanged(dtype):
    tensor = (torch.arange(24) % 3).to(dtype).reshape(2, 3, 4)
    # A transposed view (not contiguous) and a single number (no dimension) travel as values too.
    message = {"result": [tensor, tensor[:0], {"nan": float("nan"), "text": "é"}, tensor.transpose(0, 2), tensor[1, 2, 3]]}
    got = received(wire.encode(message))["result"]
    assert got[0].dtype == dtype and torch.equal(got[0], tensor)
    assert got[1].shape == (0, 3, 4) and got[1].dtype == dtype
    assert got[2]["text"] == "é" and got[2]["nan"] != got[2]["nan"]
    assert got[3].shape == (4, 3, 2) and torch.equal(got[3], tensor.transpose(0, 2))
    assert got[4].shape == () and got[4].dtype == dtype and torch.equal(got[4], tensor[1, 2, 3])


@pytest.mark.parametrize(
    ("header", "payload", "said"),
    [
        pytest.param(tensor_header("float32", [2, 3], 0), b"", "needs 24 bytes, its header says 0", id="a-shape-without-bytes"),
        pytest.param(tensor_header("float32", [256, 1024, 1024], 0), b"\0" * 20, "needs 1073741824 bytes", id="a-gibibyte-with-20-bytes"),
        pytest.param(tensor_header("float32", [256, 1024, 1024], 2**30), b"\0" * 20, "more bytes than the reply holds", id="a-gibibyte-it-does-not-send"),
        pytest.param(tensor_header("float64", [2, 3], 24), b"\0" * 24, "needs 48 bytes", id="float32-bytes-under-a-float64-header"),
        pytest.param(tensor_header("int32", [2, 3], 48), b"\0" * 48, "needs 24 bytes", id="int64-bytes-under-an-int32-header"),
        pytest.param(tensor_header("bool", [2], 2), b"\x01\x02", "bytes other than 0 and 1", id="a-bool-byte-of-2"),
        pytest.param(tensor_header("float32", [1], 4), b"\0" * 8, "4 bytes of it belong to no tensor", id="bytes-beyond-its-tensors"),
        pytest.param(tensor_header("complex64", [1], 8), b"\0" * 8, "unknown dtype", id="an-unknown-dtype"),
        pytest.param(tensor_header("float32", [1] * 9, 4), b"\0" * 4, "at most 8 sizes", id="rank-9"),
        pytest.param(tensor_header("float32", [-1, -4], 16), b"\0" * 16, "not a list of", id="negative-sizes"),
        pytest.param(tensor_header("float32", [2.0], 8), b"\0" * 8, "not a list of", id="a-float-size"),
        pytest.param(tensor_header("float32", [2], "8"), b"\0" * 8, "its header says '8'", id="a-text-size"),
        pytest.param({"result": [{"__tensor__": "uint8", "shape": [0], "bytes": 0}] * 1025}, b"", "more than 1024 tensors", id="too-many-tensors"),
        pytest.param({"result": json.loads("[" * 40 + "]" * 40)}, b"", "nested more than 32 levels", id="nested-40-deep"),
        pytest.param({"result": json.loads('{"a": ' * 40 + "1" + "}" * 40)}, b"", "nested more than 32 levels", id="dicts-nested-40-deep"),
        pytest.param(tensor_header("float32", [True, 2], 8), b"\0" * 8, "not a list of", id="a-bool-size"),
    ],
)
def test_a_header_its_bytes_do_not_match_is_refused_saying_why(header, payload, said):
    with pytest.raises(wire.BadMessage, match=said.replace("(", r"\(").replace(")", r"\)")):
        received(framed(header, payload))


def test_a_reply_announcing_more_than_its_bound_is_refused_before_its_body_is_read():
    """Only the 16-byte frame is sent: a receiver that waited for (or allocated) the announced
    gibibyte would block on a channel that never delivers it."""
    grader_end, child_end = socket.socketpair()
    with grader_end, child_end:
        child_end.sendall(FRAME.pack(10, 2**30))
        with pytest.raises(wire.BadMessage, match="over the 16777216-byte limit"):
            wire.receive(grader_end)


def test_a_header_longer_than_its_bound_is_refused_before_it_is_read():
    grader_end, child_end = socket.socketpair()
    with grader_end, child_end:
        child_end.sendall(FRAME.pack(wire.REPLY.header_bytes + 1, 0))
        with pytest.raises(wire.BadMessage, match="header of 1048577 bytes"):
            wire.receive(grader_end)


def test_what_the_grader_sends_a_child_has_room_for_a_megabyte_of_source():
    source = "\u00e9" * 1_000_000  # escaped as JSON: six bytes a character
    assert received(wire.encode({"source": source}), bounds=wire.FROM_GRADER) == {"source": source}
