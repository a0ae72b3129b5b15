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
import struct
import zlib

from grader.attention_comparison import blank

CELL, GAP, MARGIN, FRAME = 30, 36, 6, 2
WHITE, GRID, RED, ORANGE = (255, 255, 255), (200, 200, 200), (214, 39, 40), (255, 127, 14)
LIGHT, DARK = (239, 243, 255), (8, 48, 107)
CAPTION = ("left: your attention weights; right: the reference's, on the same data (rows are queries, "
           "columns are keys; dark = weight near 1, blank = masked; red frame = differs)")


def shade(value: float | None) -> tuple[int, int, int]:
    if value is None:
        return ORANGE
    level = min(max(value, 0.0), 1.0)
    return tuple(round(light + (dark - light) * level) for light, dark in zip(LIGHT, DARK))


def png(picture: dict) -> bytes:
    """The two matrices side by side, as PNG bytes."""
    seq = len(picture["student"])
    side = seq * CELL
    width, height = 2 * MARGIN + 2 * side + GAP, 2 * MARGIN + side
    pixels = [[WHITE] * width for _ in range(height)]
    for number, name in enumerate(("student", "reference")):
        left = MARGIN + number * (side + GAP)
        for query in range(seq):
            for key in range(seq):
                top, x0 = MARGIN + query * CELL, left + key * CELL
                colour = WHITE if blank(picture, name, query, key) else shade(picture[name][query][key])
                framed = picture["differs"][query][key]
                for y in range(top, top + CELL):
                    row = pixels[y]
                    for x in range(x0, x0 + CELL):
                        inner_x, inner_y = x - x0, y - top
                        edge = min(inner_x, inner_y, CELL - 1 - inner_x, CELL - 1 - inner_y)
                        if edge == 0:
                            row[x] = GRID
                        elif framed and edge <= FRAME:
                            row[x] = RED
                        else:
                            row[x] = colour
    return encode_png(pixels)


def encode_png(pixels: list[list[tuple[int, int, int]]]) -> bytes:
    """8-bit RGB rows as a PNG file (the format's signature, IHDR, IDAT, IEND chunks)."""
    height, width = len(pixels), len(pixels[0])
    raw = b"".join(b"\x00" + bytes(channel for pixel in row for channel in pixel) for row in pixels)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def data_url(picture: dict) -> str:
    return "data:image/png;base64," + base64.b64encode(png(picture)).decode("ascii")


def label(picture: dict) -> str:
    """A one-line description: what was run, which matrix, and the caption."""
    return f"{picture['what']}, {picture['where']}. {CAPTION}."
