"""Elementwise kernels the numba backend's generated code calls (as `K.<name>`), for the
primitives whose numpy forward is not a single ufunc. Each is made a `numba.vectorize`
function: it broadcasts like a ufunc, takes scalars, and fuses into the array
expressions around it. Their values are the numpy forwards' (NaN, inf, signed zeros).
"""
from __future__ import annotations

import numpy as np

from .numba_special import *  # noqa: F401,F403  (scalar kernels: sigmoid, erf, digamma, ...)

__all__ = ["multiply_no_nan", "select", "take_axis", "scatter_add_axis", "prod_axis", "max_axis",
           "min_axis", "batched_dot"]


def multiply_no_nan(x, y):
    """x * y, and +0 where y == 0 even where x is inf or NaN (y * y: +0 of y's type)."""
    if y == 0:
        return y * y
    return x * y


def select(c, x, y):
    """np.where(c, x, y), elementwise."""
    return x if c else y


def _position(k, n):
    """Index k of an axis of length n (negative from the end), or np.take's IndexError."""
    if k < 0:
        k += n
    if k < 0 or k >= n:
        raise IndexError("pforjac (numba backend): an index is out of bounds for its axis")
    return k


def take_axis(x, indices):
    """np.take(x, indices, axis=1) of a C-contiguous (pre, n, post) x and 1-D indices."""
    out = np.empty((x.shape[0], indices.size, x.shape[2]), x.dtype)
    for j in range(indices.size):
        out[:, j, :] = x[:, _position(indices[j], x.shape[1]), :]
    return out


def scatter_add_axis(g, indices, size):
    """Zeros of shape (pre, size, post) with the (pre, m, post) g added at `indices` along
    axis 1, in order (as np.add.at adds; 0 + g where they are distinct)."""
    out = np.zeros((g.shape[0], size, g.shape[2]), g.dtype)
    for j in range(indices.size):
        out[:, _position(indices[j], size), :] += g[:, j, :]
    return out


def prod_axis(x):
    """The product over axis 1 of a (pre, n, post) array, in order."""
    out = np.ones((x.shape[0], x.shape[2]), x.dtype)
    for j in range(x.shape[1]):
        out *= x[:, j, :]
    return out


def max_axis(x):
    """The maximum over axis 1 of a (pre, n >= 1, post) array: NaN if any is NaN, the first
    of equal values (np.maximum's reduction)."""
    out = x[:, 0, :].copy()
    for j in range(1, x.shape[1]):
        for i in range(x.shape[0]):
            for k in range(x.shape[2]):
                v = x[i, j, k]
                if v > out[i, k] or v != v:
                    out[i, k] = v
    return out


def min_axis(x):
    """The minimum over axis 1, as `max_axis`."""
    out = x[:, 0, :].copy()
    for j in range(1, x.shape[1]):
        for i in range(x.shape[0]):
            for k in range(x.shape[2]):
                v = x[i, j, k]
                if v < out[i, k] or v != v:
                    out[i, k] = v
    return out


def batched_dot(a, b):
    """np.matmul of (count, m, k) and (count, k, n) C-contiguous stacks: one BLAS product
    per matrix."""
    out = np.empty((a.shape[0], a.shape[1], b.shape[2]), a.dtype)
    for i in range(a.shape[0]):
        out[i] = np.dot(a[i], b[i])
    return out


try:
    import numba
except ImportError:          # numba is optional: only generated code uses these kernels
    numba = None
if numba is not None:
    multiply_no_nan = numba.vectorize(cache=True)(multiply_no_nan)
    select = numba.vectorize(cache=True)(select)
    _position = numba.njit(cache=True)(_position)
    take_axis = numba.njit(cache=True)(take_axis)
    scatter_add_axis = numba.njit(cache=True)(scatter_add_axis)
    prod_axis = numba.njit(cache=True)(prod_axis)
    max_axis = numba.njit(cache=True)(max_axis)
    min_axis = numba.njit(cache=True)(min_axis)
    batched_dot = numba.njit(cache=True)(batched_dot)
