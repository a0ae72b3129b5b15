"""Messages between the grader and the worker: length-prefixed, torch-serialised, bounded.

Both directions use ``torch.save`` and ``torch.load(weights_only=True)``: the loader only
rebuilds tensors, numbers, strings, lists and dicts, never arbitrary objects, so a reply
crafted by student code cannot run code in the grader. A message larger than
``MAX_MESSAGE_BYTES`` is refused before it is read.
"""

from __future__ import annotations

import io
import socket
import struct

import torch

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_HEADER = struct.Struct("!Q")


class ChannelClosed(Exception):
    """The other side went away (it exited, crashed or was killed)."""


class BadMessage(Exception):
    """The other side sent something that is not a well-formed, plain-data message."""


def encode(message: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(message, buffer)
    payload = buffer.getvalue()
    return _HEADER.pack(len(payload)) + payload


def send(channel: socket.socket, message: object) -> None:
    try:
        channel.sendall(encode(message))
    except OSError as error:
        raise ChannelClosed(str(error)) from None


def receive(channel: socket.socket) -> object:
    (length,) = _HEADER.unpack(_receive_exactly(channel, _HEADER.size))
    if length > MAX_MESSAGE_BYTES:
        raise BadMessage(f"a reply of {length} bytes exceeds the {MAX_MESSAGE_BYTES}-byte limit")
    payload = _receive_exactly(channel, length)
    try:
        return torch.load(io.BytesIO(payload), weights_only=True)
    except Exception as error:  # any failure to parse means the sender is not speaking the protocol
        raise BadMessage(f"a reply could not be read as plain data ({type(error).__name__})") from None


def _receive_exactly(channel: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
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
