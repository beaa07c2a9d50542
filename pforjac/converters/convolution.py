"""Converter of convolve: with one operand stacked, a product with the other's (Toeplitz)
matrix of shifts; with both, a contraction of the stacked windows of one with the other."""
from __future__ import annotations

import numpy as np

from .. import ops
from ..ops.convolution import convolve_p, output_span
from ..pfor import register_converter


def _shifts(v, n: int, start: int, length: int):
    """The (n, length) matrix T with T[i, k] = v[start + k - i] (0 outside v): x @ T is the
    mode's slice of the full convolution of x (length n) with v."""
    padded = ops.pad(v, [(0, 0)] * (v.ndim - 1) + [(n - 1, n - 1)])
    index = start + np.arange(length)[None, :] - np.arange(n)[:, None] + n - 1
    return ops.gather(padded, index.astype(np.int64), v.ndim - 1)


@register_converter(convolve_p)
def _convert_convolve(n, args, stacked, mode):
    (a, v), (a_stacked, v_stacked) = args, stacked
    size_a, size_v = a.shape[-1], v.shape[-1]
    start, length = output_span(size_a, size_v, mode)
    if a_stacked and v_stacked:               # windows of a: (n, length, size_v) . v
        windows = _shifts(a, size_v, start, length)       # [n, size_v, length]
        return ops.einsum("njl,nj->nl", windows, v), True
    x, other, size = (a, v, size_a) if a_stacked else (v, a, size_v)
    matrix = _shifts(other, size, start, length)
    return ops.matmul(x, matrix), True
