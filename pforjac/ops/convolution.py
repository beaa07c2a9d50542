"""1-D convolution and correlation: np.convolve's forward, bit for bit, in each mode.

Every mode is a slice of the full convolution, so both cotangents are "valid" convolutions
of the cotangent (zero-padded to the full length) with the other operand reversed: the
rules are the same primitive again, and differentiate to any order.
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..core import defjvp, defvjp
from ..tensor import as_operands
from .shape import flip, pad

__all__ = ["convolve", "correlate"]

MODES = ("full", "same", "valid")


def output_span(n: int, m: int, mode: str) -> tuple:
    """(start, length) of a mode's output within the full convolution of lengths n and m
    (numpy's: the longer operand sets the 'same' length and is what 'valid' slides over)."""
    big, small = max(n, m), min(n, m)
    return {"full": (0, n + m - 1), "same": ((small - 1) // 2, big),
            "valid": (small - 1, big - small + 1)}[mode]


def _convolve_shape(a, v, mode):
    if a.ndim != 1 or v.ndim != 1 or a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"convolve: both operands must be 1-D and non-empty, got shapes "
                         f"{tuple(a.shape)} and {tuple(v.shape)}")
    if mode not in MODES:
        raise ValueError(f"convolve: mode must be one of {MODES}, got {mode!r}")
    return (output_span(a.shape[0], v.shape[0], mode)[1],), np.result_type(a.dtype, v.dtype)


convolve_p = core.new_primitive("convolve", lambda a, v, mode: np.convolve(a, v, mode),
                                _convolve_shape)


def _full_cotangent(g, a, v, mode):
    """g placed in the full convolution's length, zeros around it."""
    n, m = a.shape[0], v.shape[0]
    start, length = output_span(n, m, mode)
    return g if mode == "full" else pad(g, [(start, n + m - 1 - start - length)])


defvjp(convolve_p,
       lambda g, ans, a, v, mode: convolve_p.bind(_full_cotangent(g, a, v, mode), flip(v, 0),
                                                  mode="valid"),
       lambda g, ans, a, v, mode: convolve_p.bind(_full_cotangent(g, a, v, mode), flip(a, 0),
                                                  mode="valid"))
defjvp(convolve_p, lambda t, ans, a, v, mode: convolve_p.bind(t, v, mode=mode),
       lambda t, ans, a, v, mode: convolve_p.bind(a, t, mode=mode))


def convolve(a, v, mode="full"):
    """np.convolve of two 1-D operands (`mode` "full", "same" or "valid"): numpy's values;
    differentiable in both."""
    a, v = as_operands([a, v])                   # (Python numbers are weak: never float32)
    _convolve_shape(a, v, mode)                   # (numpy's errors don't say what to do)
    return convolve_p.bind(a, v, mode=mode)


def correlate(a, v, mode="valid"):
    """np.correlate of two real 1-D operands, sum_n a[n + k] v[n]: numpy's values (a
    convolution with v reversed, itself reversed when v is the longer, as numpy's)."""
    a, v = as_operands([a, v])
    if a.dtype.kind == "c" or v.dtype.kind == "c":
        raise TypeError("correlate: complex operands are not supported yet (numpy conjugates "
                        "v); split real and imaginary parts")
    if a.ndim != 1 or v.ndim != 1:
        return convolve(a, v, mode)               # (the shape rule's error)
    if v.shape[0] > a.shape[0]:
        return flip(convolve(v, flip(a, 0), mode), 0)
    return convolve(a, flip(v, 0), mode)


def _examples(rng):
    def x(n):
        return rng.uniform(-1.5, 1.5, n)
    long = 33            # both operands past the converter's SHIFT_SUM_MAX: its matrix paths
    return [core.Example(x(5), x(3), mode=m) for m in MODES] + \
        [core.Example(x(2), x(4), mode=m) for m in MODES] + [core.Example(x(1), x(1), mode="same")] + \
        [core.Example(x(long + 2), x(long), mode=m) for m in MODES]


core.defexamples(convolve_p)(_examples)
