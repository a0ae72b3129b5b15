"""A failed weights check as a picture: the student's attention matrix beside the reference's.

A PNG written with the standard library (zlib), because it is drawn where matplotlib is not
installed: Gradescope's and PrairieLearn's images install the students' requirements only.
Each entry is a square shaded from white (weight 0) to dark blue (weight 1); a masked entry
left at zero is blank, so the causal mask shows as the empty upper triangle; an entry that
differs from the reference is framed in red, in both matrices; a value that is not a number
is orange. The picture holds no text: its caption (HTML, a label) says which side is which.
"""

from __future__ import annotations

import base64
import functools
import struct
import zlib

from grader.feedback.attention_comparison import blank

CELL, GAP, MARGIN, FRAME = 30, 36, 6, 2
WHITE, GRID, RED, ORANGE = (255, 255, 255), (200, 200, 200), (214, 39, 40), (255, 127, 14)
LIGHT, DARK = (239, 243, 255), (8, 48, 107)
# Every colour the picture draws is named (shade, ORANGE, RED below).
CAPTION = ("left: your attention weights; right: the reference's, on the same data (rows are queries, "
           "columns are keys; white to dark blue = weight 0 to 1, blank = masked, orange = NaN or infinite; "
           "red frame = differs)")


def shade(value: float | None) -> tuple[int, int, int]:
    if value is None:
        return ORANGE
    level = min(max(value, 0.0), 1.0)
    return tuple(round(light + (dark - light) * level) for light, dark in zip(LIGHT, DARK))


def png(picture: dict) -> bytes:
    """The two matrices side by side, as PNG bytes. Built a row of bytes at a time (each
    cell's row comes from a small cache), each distinct row once: a feedback page may hold
    several pictures, and a pixel at a time in Python cost tens of milliseconds each.

    A row the same as the one above it is written with PNG's "Up" filter (filter type 2: each
    byte minus the byte above it; PNG specification, section 9.2 "Filter types for filter method
    0"), so all zeros: the 30 rows of a cell's band are mostly the same row, and zlib compresses
    runs of zeros far faster than the repeated pixels (with level 6 rather than 9: the 386 pictures
    of the benchmark's class of 200 in a third of the time, an eighth smaller, the same pixels)."""
    seq = len(picture["student"])
    side = seq * CELL
    width, height = 2 * MARGIN + 2 * side + GAP, 2 * MARGIN + side
    white = bytes(WHITE)
    margin, gap = white * MARGIN, white * GAP
    unchanged = b"\x02" + bytes(3 * width)  # "Up": the row above, again
    margin_rows = [b"\x00" + white * width] + [unchanged] * (MARGIN - 1)  # each PNG row starts with its filter type
    rows = list(margin_rows)
    for query in range(seq):
        cells = [
            (WHITE if blank(picture, name, query, key) else shade(picture[name][query][key]), bool(picture["differs"][query][key]))
            for name in ("student", "reference") for key in range(seq)
        ]
        above = None
        for inner_y in range(CELL):
            line = _line_kind(inner_y)
            if line == above:
                rows.append(unchanged)
                continue
            above = line
            segments = [_cell_row(colour, framed, line) for colour, framed in cells]
            rows.append(b"\x00" + margin + b"".join(segments[:seq]) + gap + b"".join(segments[seq:]) + margin)
    rows += margin_rows
    return encode_png(width, height, b"".join(rows))


def _line_kind(inner_y: int) -> int:
    """Which of a cell's pixel rows ``inner_y`` draws like: rows of one kind are the same bytes in
    every cell (the grid line, the red frame's band, the shade between), so a row of cells is built
    once per kind. Returned as the first ``inner_y`` of its kind, which ``_cell_row`` draws."""
    if inner_y in (0, CELL - 1):
        return 0
    if inner_y <= FRAME:
        return 1
    if inner_y >= CELL - 1 - FRAME:
        return CELL - 1 - FRAME
    return FRAME + 1


@functools.lru_cache(maxsize=4096)
def _cell_row(colour: tuple[int, int, int], framed: bool, inner_y: int) -> bytes:
    """One pixel row of one cell: its grid line, its red frame when it differs, its shade."""
    grid, red, fill = bytes(GRID), bytes(RED), bytes(colour)
    if inner_y in (0, CELL - 1):
        return grid * CELL
    if framed and (inner_y <= FRAME or inner_y >= CELL - 1 - FRAME):
        return grid + red * (CELL - 2) + grid
    if framed:
        return grid + red * FRAME + fill * (CELL - 2 - 2 * FRAME) + red * FRAME + grid
    return grid + fill * (CELL - 2) + grid


def encode_png(width: int, height: int, raw: bytes) -> bytes:
    """8-bit RGB rows (each with its filter byte) as a PNG file: signature, IHDR, IDAT, IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


def data_url(picture: dict) -> str:
    return "data:image/png;base64," + base64.b64encode(png(picture)).decode("ascii")


def label(picture: dict) -> str:
    """A one-line description: what was run, which matrix, and the caption."""
    return f"{picture['what']}, {picture['where']}. {CAPTION}."
