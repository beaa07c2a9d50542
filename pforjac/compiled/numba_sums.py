"""numpy's pairwise summation, for the numba backend's sums along trailing axes.

numpy sums a contiguous run of floats (a row of `np.sum(x, axis=-1)`, or every element
of `np.sum(x)`) by `pairwise_sum`: fewer than 8 values in order; up to 128 in eight
interleaved partial sums, combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)),
then the rest in order; more, split in two at a multiple of 8 below the half, each half
summed so and the two added. Its rounding error grows as log(n), where a sum in order
grows as n (150 ulps apart at 10**6 float64 values), and the reduction starts from
zero: the result is `0 + pairwise_sum(row)`. `pairwise_sum` here is that algorithm in
the same order, in the row's own dtype, so a row summed by it is numpy's sum of that row
bit for bit (its eight partial sums are also independent of one another, where a sum
in order is one chain of dependent additions).
"""
from __future__ import annotations

import numpy as np

__all__ = ["pairwise_sum", "complex_pairwise_sum"]

_BLOCK = 128
_DEPTH = 64           # levels of halving: enough for any length an int64 holds


def pairwise_sum(a, start, n, zero):
    """The sum of `a[start:start + n]` (1-D, contiguous) in numpy's pairwise order,
    `zero` the dtype's zero (the sum of fewer than eight values starts from it)."""
    return _pairwise(a, start, n, zero, False)


def complex_pairwise_sum(a, start, n, zero):
    """The same for complex values, as numpy's complex loop sums them: each part on its
    own, in four interleaved partial sums (numpy counts a complex value as two of its
    eight), in blocks of 64 values, halves at a multiple of 4 values."""
    return complex(_pairwise(a.real, start, n, zero.real, True), _pairwise(a.imag, start, n, zero.imag, True))


def _pairwise(a, start, n, zero, parts):
    """numpy's recursion (`parts`: its form for a complex part), walked with explicit
    stacks (a recursive numba function cached on disk does not link when another module
    calls it)."""
    block = _BLOCK // 2 if parts else _BLOCK
    if n <= block:
        return _four_sum(a, start, n, zero) if parts else _block_sum(a, start, n, zero)
    spans = np.empty((_DEPTH, 3), np.int64)      # (start, length, halves pushed) per level
    sums = np.empty(_DEPTH, a.dtype)              # the sums of finished halves, in order
    spans[0, 0], spans[0, 1], spans[0, 2] = start, n, 0
    depth, done = 1, 0
    while depth:
        at, length, pushed = spans[depth - 1, 0], spans[depth - 1, 1], spans[depth - 1, 2]
        if length <= block:
            sums[done] = _four_sum(a, at, length, zero) if parts else _block_sum(a, at, length, zero)
            done += 1
            depth -= 1
        elif pushed < 2:
            half = (length - length % 8) // 2 if parts else length // 2 - length // 2 % 8
            spans[depth - 1, 2] = pushed + 1
            spans[depth, 0] = at if pushed == 0 else at + half
            spans[depth, 1] = half if pushed == 0 else length - half
            spans[depth, 2] = 0
            depth += 1
        else:                                     # (both halves summed: their sum)
            sums[done - 2] = sums[done - 2] + sums[done - 1]
            done -= 1
            depth -= 1
    return sums[0]


def _block_sum(a, start, n, zero):
    """numpy's sum of at most 128 values: under 8 in order from zero, else in eight
    interleaved partial sums combined as a tree, then the rest in order."""
    if n < 8:
        total = zero
        for i in range(start, start + n):
            total = total + a[i]
        return total
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    stop = start + n - n % 8
    for i in range(start + 8, stop, 8):
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(stop, start + n):
        total = total + a[i]
    return total


def _four_sum(a, start, n, zero):
    """numpy's sum of a complex part's at most 64 values: under 4 in order from zero, else
    in four interleaved partial sums combined as (r0 + r1) + (r2 + r3), then the rest."""
    if n < 4:
        total = zero
        for i in range(start, start + n):
            total = total + a[i]
        return total
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    stop = start + n - n % 4
    for i in range(start + 4, stop, 4):
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
    total = (r0 + r1) + (r2 + r3)
    for i in range(stop, start + n):
        total = total + a[i]
    return total


try:
    import numba
except ImportError:          # numba is optional: only generated code uses this kernel
    numba = None
if numba is not None:
    _block_sum = numba.njit(cache=True, error_model="numpy", inline="always")(_block_sum)
    _four_sum = numba.njit(cache=True, error_model="numpy", inline="always")(_four_sum)
    _pairwise = numba.njit(cache=True, error_model="numpy")(_pairwise)
    pairwise_sum = numba.njit(cache=True, error_model="numpy")(pairwise_sum)
    complex_pairwise_sum = numba.njit(cache=True, error_model="numpy")(complex_pairwise_sum)
