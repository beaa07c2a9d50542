"""Elementwise kernels the numba backend's generated code calls (as `K.<name>`), for the
primitives whose numpy forward is not a single ufunc. Each is made a `numba.vectorize`
function: it broadcasts like a ufunc, takes scalars, and fuses into the array
expressions around it. Their values are the numpy forwards' (NaN, inf, signed zeros).
"""
from __future__ import annotations

__all__ = ["multiply_no_nan", "select"]


def multiply_no_nan(x, y):
    """x * y, and +0 where y == 0 even where x is inf or NaN (y * y: +0 of y's type)."""
    if y == 0:
        return y * y
    return x * y


def select(c, x, y):
    """np.where(c, x, y), elementwise."""
    return x if c else y


try:
    import numba
except ImportError:          # numba is optional: only generated code uses these kernels
    numba = None
if numba is not None:
    multiply_no_nan = numba.vectorize(cache=True)(multiply_no_nan)
    select = numba.vectorize(cache=True)(select)
