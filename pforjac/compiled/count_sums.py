"""Sums of booleans cast to floats, in generated numpy code, by np.einsum.

The derivative of a max divides a seed among the entries equal to the max:
`mask / sum(mask)`, with `mask = cast(x == top, float)` of 0s and 1s. Every partial sum of
such a row is a small whole number, exact in float32 up to 2**24 and in float64 up to
2**53, so any order of the additions gives the same bits (zeros are +0: a cast from bool
makes no -0). np.einsum's C function (`'ab->a'`) runs that reduction with less set-up than
np.add.reduce: (64, 3) float32 with keepdims 1.8 -> 1.2 us (2-core AMD EPYC, 2026-12-07);
the per-example gradients of an MLP with a max-shifted log-sum-exp have one per call.
"""
from __future__ import annotations

import math
import string

import numpy as np

from ..program import Program

__all__ = ["count_sums", "COUNT_LIMIT"]

# the largest count a float dtype holds exactly (every whole number up to it)
COUNT_LIMIT = {np.dtype(np.float32): 2 ** 24, np.dtype(np.float64): 2 ** 53}


def count_sums(program: Program) -> dict[int, str]:
    """{equation index: numpy expression in `x`, its input} for the sums generated code
    computes by np.einsum: sums over some axes of a cast of a bool array to float32 or
    float64, of fewer than COUNT_LIMIT elements a result entry."""
    made = {id(e.outputs[0]): e for e in program.equations}
    chosen = {}
    for k, eqn in enumerate(program.equations):
        if eqn.prim.name != "sum" or not 0 < len(eqn.params["axes"]) < eqn.inputs[0].ndim:
            continue                        # (a full sum: numpy's scalar result kept)
        x, out = eqn.inputs[0], eqn.outputs[0]
        cast = made.get(id(x))
        limit = COUNT_LIMIT.get(np.dtype(out.dtype))
        axes = tuple(eqn.params["axes"])
        if cast is None or cast.prim.name != "cast" or limit is None or \
                np.dtype(cast.inputs[0].dtype) != np.bool_ or np.dtype(x.dtype) != out.dtype or \
                math.prod(x.shape[a] for a in axes) >= limit:
            continue
        chosen[k] = _einsum_sum(x.ndim, axes, tuple(out.shape))
    return chosen


def _einsum_sum(ndim: int, axes: tuple, shape: tuple) -> str:
    """`c_einsum('abc->ac', x)` (np.einsum's C function), reshaped to `shape` where the
    reduction keeps its axes. A result of two axes or more is asked in C order: einsum
    lays it out as `x` is (a cast of a transposed mask: F-ordered), and codegen counts a
    sum's result as C-ordered (a lean entry hands it out unchecked, np.dot reads it)."""
    letters = string.ascii_letters[:ndim]
    kept = "".join(c for a, c in enumerate(letters) if a not in axes)
    order = ", order='C'" if len(kept) > 1 else ""
    call = f"c_einsum({letters + '->' + kept!r}, x{order})"
    return call if len(kept) == len(shape) else f"{call}.reshape({shape!r})"
