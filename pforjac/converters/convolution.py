"""Converter of convolve. A short operand (up to SHIFT_SUM_MAX entries) is applied as a sum
of shifted copies of the other times each of its entries, which multiplies exactly the pairs
numpy's direct sum does (an inf stays an inf). A longer one becomes a matrix: the stacked
operand times the other's matrix of shifts, or the stacked windows of one contracted with
the other, whose structural zeros turn an inf or NaN in the row into NaN (docs: array
functions)."""
from __future__ import annotations

import numpy as np

from .. import ops
from ..ops.convolution import convolve_p, output_span
from ..pfor import register_converter
from ._helpers import to_stacked

SHIFT_SUM_MAX = 32


def _shift_sum(longer, shorter, start: int, length: int):
    """sum_j shorter[:, j] * longer placed j entries along, then the mode's slice."""
    m = shorter.shape[1]
    total = 0.0                  # (numpy's sums start from +0: a lone -0.0 product is +0)
    for j in range(m):
        total = total + ops.pad(longer * shorter[:, j:j + 1], [(0, 0), (j, m - 1 - j)])
    return total[:, start:start + length]


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
    if min(size_a, size_v) <= SHIFT_SUM_MAX:
        a, v = to_stacked(n, a, a_stacked), to_stacked(n, v, v_stacked)
        longer, shorter = (a, v) if size_a >= size_v else (v, a)
        return _shift_sum(longer, shorter, start, length), True
    if a_stacked and v_stacked:               # windows of a: (n, size_v, length) . v
        return ops.einsum("njl,nj->nl", _shifts(a, size_v, start, length), v), True
    x, other, size = (a, v, size_a) if a_stacked else (v, a, size_v)
    return ops.matmul(x, _shifts(other, size, start, length)), True
