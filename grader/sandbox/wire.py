"""Messages between the grader and the worker: plain data only, length-prefixed, bounded.

A message is a JSON header followed by the raw bytes of its tensors. Decoding rebuilds
dicts, lists, strings, numbers, booleans, None and plain ``torch.Tensor`` values, and
nothing else: there is no pickle anywhere, so a reply crafted by student code cannot run
code in the grader, and a tensor subclass cannot even be sent. A message larger than
``MAX_MESSAGE_BYTES`` is refused before it is read.

(``torch.save``/``torch.load(weights_only=True)`` would be safe too, but costs about a
millisecond per message in zip-file bookkeeping; the grader sends thousands.)
"""

from __future__ import annotations

import json
import math
import socket
import struct
import time

import torch

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_HEADER = struct.Struct("!QQ")  # JSON length, tensor bytes length
_DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64,
        torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool,
    )
}


class ChannelClosed(Exception):
    """The other side went away (it exited, crashed or was killed)."""


class BadMessage(Exception):
    """The other side sent something that is not a well-formed, plain-data message."""


def encode(message: object) -> bytes:
    blobs: list[bytes] = []
    header = json.dumps(_flatten(message, blobs), allow_nan=True).encode("utf-8")
    payload = b"".join(blobs)
    return _HEADER.pack(len(header), len(payload)) + header + payload


def _flatten(value: object, blobs: list[bytes]) -> object:
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if type(value) in (list, tuple):
        return [_flatten(item, blobs) for item in value]
    if type(value) is dict:
        if not all(type(key) is str for key in value):
            raise TypeError("only dicts with string keys can be sent")
        return {key: _flatten(item, blobs) for key, item in value.items()}
    if type(value) is torch.Tensor:
        tensor = value.detach().cpu().contiguous()
        dtype = str(tensor.dtype).removeprefix("torch.")
        if dtype not in _DTYPES:
            raise TypeError(f"tensors of dtype {dtype} cannot be sent")
        raw = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
        blobs.append(raw)
        return {"__tensor__": dtype, "shape": list(tensor.shape), "bytes": len(raw)}
    raise TypeError(f"a {type(value).__name__} is not plain data")


def _rebuild(value: object, payload: memoryview, offset: list[int]) -> object:
    if isinstance(value, list):
        return [_rebuild(item, payload, offset) for item in value]
    if isinstance(value, dict):
        if "__float__" in value:
            return float(value["__float__"])
        if "__tensor__" in value:
            dtype = _DTYPES[value["__tensor__"]]
            shape = [int(size) for size in value["shape"]]
            size = int(value["bytes"])
            raw = payload[offset[0] : offset[0] + size]
            offset[0] += size
            if len(raw) != size:
                raise ValueError("tensor bytes missing")
            if not size:
                return torch.empty(shape, dtype=dtype)
            return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)
        return {str(key): _rebuild(item, payload, offset) for key, item in value.items()}
    return value


def send(channel: socket.socket, message: object) -> None:
    try:
        channel.sendall(encode(message))
    except OSError as error:
        raise ChannelClosed(str(error)) from None


def receive(channel: socket.socket, deadline: float | None = None) -> object:
    """The next message; ``TimeoutError`` once ``deadline`` (time.monotonic()) has passed."""
    header_length, payload_length = _HEADER.unpack(_receive_exactly(channel, _HEADER.size, deadline))
    if header_length + payload_length > MAX_MESSAGE_BYTES:
        raise BadMessage(f"a reply of {header_length + payload_length} bytes exceeds the {MAX_MESSAGE_BYTES}-byte limit")
    header = _receive_exactly(channel, header_length, deadline)
    payload = _receive_exactly(channel, payload_length, deadline)
    try:
        return _rebuild(json.loads(header), memoryview(payload), [0])
    except Exception as error:  # any failure to parse means the sender is not speaking the protocol
        raise BadMessage(f"a reply could not be read as plain data ({type(error).__name__})") from None


def _receive_exactly(channel: socket.socket, size: int, deadline: float | None = None) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the reply did not arrive in time")
            channel.settimeout(remaining)
        try:
            chunk = channel.recv(min(size - len(chunks), 1 << 20))
        except TimeoutError:
            raise  # the caller's time limit, not a closed channel
        except OSError as error:
            raise ChannelClosed(str(error)) from None
        if not chunk:
            raise ChannelClosed("the other side closed the connection")
        chunks.extend(chunk)
    return bytes(chunks)
