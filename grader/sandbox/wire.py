"""Messages between the grader and the worker: plain data only, length-prefixed, bounded.

A message is a JSON header followed by the raw bytes of its tensors. Decoding rebuilds
dicts, lists, strings, numbers, booleans, None and plain ``torch.Tensor`` values, and
nothing else: there is no pickle anywhere, so a reply crafted by student code cannot run
code in the grader, and a tensor subclass cannot even be sent.

Nothing the sender announces is trusted, the framing included: code in a submission's child
can replace the child's encoder and send any header it likes. So a message is read only
within its ``Bounds`` (total bytes, header bytes, number of tensors, rank, nesting), all
checked before anything is allocated, and a tensor is rebuilt only when its bytes are
exactly its dtype's size times its number of elements, every byte of the payload accounted
for: a tensor is never made of memory the sender did not fill.

(``torch.save``/``torch.load(weights_only=True)`` would be safe too, but costs about a
millisecond per message in zip-file bookkeeping; the grader sends thousands.)
"""

from __future__ import annotations

import json
import math
import socket
import struct
import time
from dataclasses import dataclass

import torch

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MIB = 1024 * 1024


@dataclass(frozen=True)
class Bounds:
    """What one message may announce; a message beyond any of them is refused unread."""

    message_bytes: int  # header and tensor bytes together
    header_bytes: int  # the JSON part: what json.loads turns into Python objects
    tensors: int
    rank: int = 8
    depth: int = 32  # nesting of lists and dicts
    dimension: int = 2**31 - 1  # one size of a shape


# What the grader reads from the worker and a submission's child, whose code may forge it.
# Honest replies are a few kB (the largest, a module's gradients, holds 14 tensors in 5 kB);
# these bounds leave room for a student's oversized tensor and keep the grader's memory near
# its baseline whatever a reply announces.
REPLY = Bounds(message_bytes=16 * MIB, header_bytes=1 * MIB, tensors=1024)
# What the worker and the child read from the grader: the submission's source travels in the
# header (up to 1 MB of text, six bytes a character once escaped as JSON).
FROM_GRADER = Bounds(message_bytes=MAX_MESSAGE_BYTES, header_bytes=MAX_MESSAGE_BYTES, tensors=1024)
_HEADER = struct.Struct("!QQ")  # JSON length, tensor bytes length
_DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64,
        torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool,
    )
}
_DTYPE_NAMES = {dtype: name for name, dtype in _DTYPES.items()}


class ChannelClosed(Exception):
    """The other side went away (it exited, crashed or was killed)."""


class BadMessage(Exception):
    """The other side sent something that is not a well-formed, plain-data message."""


def encode(message: object) -> bytes:
    blobs: list[bytes] = []
    header = json.dumps(_flatten(message, blobs), allow_nan=True, check_circular=False).encode("utf-8")  # a tree: _flatten made it
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
        dtype = _DTYPE_NAMES.get(value.dtype)
        if dtype is None:
            raise TypeError(f"tensors of dtype {str(value.dtype).removeprefix('torch.')} cannot be sent")
        tensor = value.detach() if value.requires_grad else value
        if not tensor.is_cpu:
            tensor = tensor.cpu()
        if not tensor.is_contiguous():
            tensor = tensor.contiguous()
        # numpy's view of a contiguous tensor is its memory in order, as the decoder reads it (joined
        # into the payload at once, not copied before); bfloat16, which numpy lacks, goes through its
        # bytes' uint8 view.
        raw = (tensor.reshape(-1).view(torch.uint8) if tensor.dtype is torch.bfloat16 else tensor).numpy()
        blobs.append(raw.reshape(-1) if raw.ndim else raw.reshape(1))
        return {"__tensor__": dtype, "shape": list(tensor.shape), "bytes": raw.nbytes}
    raise TypeError(f"a {type(value).__name__} is not plain data")


_CONTAINERS = (dict, list)  # what json.loads makes that ``_Decoder.rebuild`` must look into


class _Decoder:
    """Rebuilds one message's header, taking each tensor's bytes from the payload in order."""

    def __init__(self, payload: memoryview, bounds: Bounds) -> None:
        self.payload = payload
        self.bounds = bounds
        self.offset = 0
        self.tensors = 0

    def rebuild(self, value: object, depth: int = 0) -> object:
        # (Called for every list and dict of every message, a tensor's header included: json.loads
        # makes only dicts with str keys, lists, str, int, float, bool and None, so the types are
        # tested with ``is``, and a plain value in a container is taken as it is, without a call.)
        kind = type(value)
        if kind is dict:
            if depth >= self.bounds.depth:
                raise BadMessage(f"its data is nested more than {self.bounds.depth} levels deep")
            if "__float__" in value:
                return float(value["__float__"])
            if "__tensor__" in value:
                return self.tensor(value)
            depth += 1
            return {key: item if type(item) not in _CONTAINERS else self.rebuild(item, depth) for key, item in value.items()}
        if kind is list:
            if depth >= self.bounds.depth:
                raise BadMessage(f"its data is nested more than {self.bounds.depth} levels deep")
            depth += 1
            return [item if type(item) not in _CONTAINERS else self.rebuild(item, depth) for item in value]
        return value

    def tensor(self, header: dict) -> torch.Tensor:
        self.tensors += 1
        bounds = self.bounds
        if self.tensors > bounds.tensors:
            raise BadMessage(f"it announces more than {bounds.tensors} tensors")
        name, shape, size = header["__tensor__"], header.get("shape"), header.get("bytes")
        dtype = _DTYPES.get(name) if type(name) is str else None
        if dtype is None:
            raise BadMessage("a tensor of an unknown dtype")
        count, sizes_read = 1, type(shape) is list and len(shape) <= bounds.rank
        if sizes_read:
            for dim in shape:  # a loop, not all() over a generator: this runs for every tensor received
                if type(dim) is not int or not 0 <= dim <= bounds.dimension:
                    sizes_read = False
                    break
                count *= dim
        if not sizes_read:
            raise BadMessage(f"a tensor's shape is not a list of at most {bounds.rank} sizes")
        expected = count * dtype.itemsize
        if type(size) is not int or size != expected:
            raise BadMessage(f"a {name} tensor of shape {shape} needs {expected} bytes, its header says {size!r}")
        if self.offset + size > len(self.payload):
            raise BadMessage(f"a {name} tensor of shape {shape} announces more bytes than the reply holds")
        raw = self.payload[self.offset : self.offset + size]
        self.offset += size
        if not size:  # no elements: nothing to fill
            return torch.zeros(shape, dtype=dtype)
        if dtype is torch.bool:
            tensor = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
            if int(tensor.max()) > 1:  # any other byte is not a bool torch can hold
                raise BadMessage("a bool tensor holds bytes other than 0 and 1")
            return tensor.view(dtype).reshape(shape)
        flat = torch.frombuffer(bytearray(raw), dtype=dtype)
        return flat.view(*shape) if shape else flat.view(())  # view(*sizes): torch's quickest path

    def finish(self) -> None:
        if self.offset != len(self.payload):
            raise BadMessage(f"{len(self.payload) - self.offset} bytes of it belong to no tensor")


def decode(header: bytes | bytearray, payload: bytes | bytearray, bounds: Bounds = REPLY) -> object:
    """The message a header and its payload describe, or ``BadMessage`` saying what is wrong."""
    if len(header) > bounds.header_bytes:
        raise BadMessage(f"its header of {len(header)} bytes exceeds the {bounds.header_bytes}-byte limit")
    decoder = _Decoder(memoryview(payload), bounds)
    try:
        message = decoder.rebuild(json.loads(header))
        decoder.finish()
    except BadMessage:
        raise
    except Exception as error:  # any failure to parse means the sender is not speaking the protocol
        raise BadMessage(f"it could not be read as plain data ({type(error).__name__})") from None
    return message


# --- the student's clock (grader/student_clock.py) -----------------------------------------------------
# A tick says who runs from now on, the student's function (its name) or the grader's own work (no
# name), and since when: the machine's monotonic clock (CLOCK_MONOTONIC, which the sandbox shares
# with the grader: it makes no time namespace). Ticks travel
# on a channel of their own, which the grader reads only when it needs them (a call's limit reached,
# or its reply in): a call's ticks cost the child a send each and wake nobody.
_TICK = struct.Struct("!dH")  # when (time.monotonic()), the name's length
CLOCK_NAME_BYTES = 256


@dataclass(frozen=True)
class ClockTick:
    """The child says who runs from ``at`` (time.monotonic()) on: the student's ``function``, or
    the grader's own work ("")."""

    function: str
    at: float


def clock_frame(function: str, at: float) -> bytes:
    """The bytes of a tick: the student's ``function`` starts (or, "", the grader's work resumes) ``at``."""
    name = function.encode("utf-8")[:CLOCK_NAME_BYTES]
    return _TICK.pack(at, len(name)) + name


def read_ticks(buffer: bytearray) -> list[ClockTick]:
    """The complete ticks at the start of ``buffer``, taken out of it (a partial one stays for the
    next read). ``BadMessage`` for a tick no child of ours sends (a name past its bound)."""
    ticks = []
    while len(buffer) >= _TICK.size:
        at, length = _TICK.unpack_from(buffer)
        if length > CLOCK_NAME_BYTES:
            raise BadMessage(f"a clock tick names {length} bytes, over the {CLOCK_NAME_BYTES}-byte limit")
        if len(buffer) < _TICK.size + length:
            break
        name = bytes(buffer[_TICK.size:_TICK.size + length]).decode("utf-8", errors="replace")
        del buffer[:_TICK.size + length]
        ticks.append(ClockTick(name, at))
    return ticks


def send(channel: socket.socket, message: object) -> None:
    try:
        channel.sendall(encode(message))
    except OSError as error:
        raise ChannelClosed(str(error)) from None


def receive(channel: socket.socket, deadline: float | None = None, bounds: Bounds = REPLY) -> object:
    """The next message; ``TimeoutError`` once ``deadline`` (time.monotonic()) has passed.

    ``BadMessage`` for one beyond ``bounds`` (refused before its body is read) or whose bytes do
    not match its header: the caller must not read the channel again, its framing is lost.
    """
    header_length, payload_length = _HEADER.unpack(_receive_exactly(channel, _HEADER.size, deadline))
    if header_length + payload_length > bounds.message_bytes:
        raise BadMessage(f"it announces {header_length + payload_length} bytes, over the {bounds.message_bytes}-byte limit")
    if header_length > bounds.header_bytes:
        raise BadMessage(f"its header of {header_length} bytes exceeds the {bounds.header_bytes}-byte limit")
    header = _receive_exactly(channel, header_length, deadline)
    payload = _receive_exactly(channel, payload_length, deadline)
    return decode(header, payload, bounds)


def _receive_exactly(channel: socket.socket, size: int, deadline: float | None = None) -> bytearray:
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
    return chunks
