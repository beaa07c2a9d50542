"""matplotlib.pyplot stand-in: drawing does nothing; imread reads 8-bit PNGs."""
from __future__ import annotations

import struct
import zlib

import numpy as np

from matplotlib import _Dummy, __getattr__  # noqa: F401

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def imread(path):
    """An 8-bit, non-interlaced PNG as float32 in [0, 1], as matplotlib reads it."""
    with open(path, "rb") as f:
        data = f.read()
    header, idat, pos = None, b"", 8
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + size]
        pos += 12 + size
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or interlace:
        raise ValueError(f"{path}: only 8-bit non-interlaced PNGs are read here")
    channels = _CHANNELS[colour]
    rows = _unfilter(zlib.decompress(idat), width * channels, height, channels)
    image = rows.reshape(height, width, channels).astype(np.float32) / 255
    return image[:, :, 0] if channels == 1 else image


def _unfilter(raw: bytes, stride: int, height: int, bpp: int) -> np.ndarray:
    out = np.zeros((height, stride), dtype=np.int64)
    prev = np.zeros(stride, dtype=np.int64)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], np.frombuffer(raw[start + 1:start + 1 + stride], np.uint8)
        row = line.astype(np.int64)
        if kind == 2:
            row = (row + prev) % 256
        elif kind in (1, 3, 4):
            row = _sequential(kind, row, prev, bpp)
        out[y] = prev = row
    return out


def _sequential(kind: int, row, prev, bpp: int):
    row = row.copy()
    for i in range(len(row)):
        a = row[i - bpp] if i >= bpp else 0
        b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
        if kind == 1:
            guess = a
        elif kind == 3:
            guess = (a + b) // 2
        else:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            guess = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
        row[i] = (row[i] + guess) % 256
    return row
