"""Statistics and comparisons, as numpy's functions: average (weighted), cov, corrcoef, ptp,
and the value-only count_nonzero, allclose, array_equal.

average, cov, corrcoef and ptp are composites (sums, products, matmul, max and min), so
they get every rule; the value-only ones have no derivative to give.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor, as_operands, as_tensor
from ._family import axis_index, int_arg, normalize_axes
from .broadcasting import broadcast_to, reshape, sum as _sum
from .elementwise import cast, clip, divide, maximum, multiply, not_equal, sqrt, stop_gradient
from .linalg import matmul
from .products import diagonal
from .reductions import max as _max, mean, min as _min
from .shape import concat, squeeze, transpose
from .arrays import atleast_2d
from .complex_parts import conj, imag, real

__all__ = ["average", "cov", "corrcoef", "ptp", "count_nonzero", "allclose", "array_equal"]


def _weights_along(w: Tensor, a: Tensor, axis) -> Tensor:
    """Weights of `a`'s shape: as given, or a 1-D one laid along the int `axis`."""
    if tuple(w.shape) == tuple(a.shape):
        return w
    if axis is None or w.ndim != 1 or isinstance(axis, tuple) and len(axis) != 1:
        raise ValueError(f"average: weights of shape {tuple(w.shape)} differ from a's "
                         f"{tuple(a.shape)}; then they must be 1-D along one given axis")
    k = normalize_axes(axis, a.ndim, "average")[0]
    if w.shape[0] != a.shape[k]:
        raise ValueError(f"average: {w.shape[0]} weights for axis {k} of length {a.shape[k]}")
    return reshape(w, tuple(-1 if j == k else 1 for j in range(a.ndim)))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """np.average: the mean over `axis`, weighted by `weights` (a's shape, or 1-D along
    `axis`) when given; `returned=True` also gives the sum of the weights."""
    a = as_tensor(a)
    if weights is None:
        avg = mean(a, axis, keepdims)
        scale = np.prod([a.shape[k] for k in normalize_axes(axis, a.ndim, "average")])
        total = broadcast_to(as_tensor(np.asarray(scale, avg.dtype)), avg.shape)
    else:
        w = _weights_along(as_operands([a, weights])[1], a, axis)    # (weak: a's dtype)
        total = _sum(broadcast_to(w, a.shape), axis, keepdims)
        avg = divide(_sum(multiply(a, w), axis, keepdims), total)
        total = broadcast_to(total, avg.shape)
    return (avg, total) if returned else avg


def _observations(m, y, rowvar: bool) -> Tensor:
    """cov's data: one variable a row, y's rows after m's (Python numbers in `y` read in
    m's dtype, and in y's), in float64 or complex128 as numpy computes it."""
    if y is not None:
        m, y = as_operands([m, y])
    x = atleast_2d(m)
    if not rowvar and x.shape[0] != 1:
        x = transpose(x)
    if y is not None:
        y = atleast_2d(y)
        if not rowvar and y.shape[0] != 1:
            y = transpose(y)
        x = concat([x, y], 0)
    return cast(x, np.result_type(x.dtype, np.float64))   # (numpy's: float64 at least)


def _like(value, x: Tensor) -> Tensor:
    """`value` (weights: a tensor, an array or Python numbers) in `x`'s dtype; Python
    numbers are read in that dtype, never rounded to float32 first."""
    return cast(as_operands([x, value])[1], x.dtype)


def _observation_weights(given, x: Tensor, name: str) -> Tensor:
    """cov's `fweights` or `aweights` in x's dtype, checked as numpy checks them: one per
    observation, non-negative, fweights whole numbers (the values where they are known: a
    traced weight's cannot be read)."""
    w = _like(given, x)
    if w.ndim != 1 or w.shape[0] != x.shape[1]:
        raise ValueError(f"cov: {name} must be 1-D, one weight for each of the {x.shape[1]} "
                         f"observations, got shape {tuple(w.shape)}")
    if w._trace is None:
        if name == "fweights" and not np.all(w._value == np.around(w._value)):
            raise TypeError(f"cov: fweights are frequencies, whole numbers, got "
                            f"{w._value!r:.80}; give real weights as aweights")
        if np.any(w._value < 0):
            raise ValueError(f"cov: {name} cannot be negative, got {w._value!r:.80}")
    return w


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """np.cov: the covariance matrix of the variables (rows, or columns if not `rowvar`) of
    `m` (and `y`), normalized by N - 1 (N with `bias`, N - ddof with `ddof`), the
    observations weighted by integer `fweights` and real `aweights` when given."""
    x = _observations(m, y, rowvar)
    if ddof is None:
        ddof = 0 if bias else 1
    ddof = int_arg(ddof, "cov: ddof")
    w = None
    if fweights is not None:
        fweights = _observation_weights(fweights, x, "fweights")
        w = fweights
    if aweights is not None:
        aweights = _observation_weights(aweights, x, "aweights")
        w = aweights if w is None else multiply(w, aweights)
    avg, w_sum = average(x, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = x.shape[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * _sum(multiply(w, aweights)) / w_sum
    centered = x - reshape(avg, (-1, 1))
    weighted = centered if w is None else multiply(centered, w)
    # numpy's: no degrees of freedom left divide by 0 (inf, NaN), not by a negative count
    fact = max(fact, 0) if isinstance(fact, int) else maximum(fact, 0.0)
    return squeeze(divide(matmul(centered, conj(transpose(weighted))), fact))


def corrcoef(x, y=None, rowvar=True):
    """np.corrcoef: the covariance matrix scaled to unit diagonal, clipped to [-1, 1]."""
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return divide(c, c)
    d = sqrt(real(diagonal(c)))
    c = divide(divide(c, reshape(d, (-1, 1))), reshape(d, (1, -1)))
    if c.dtype.kind != "c":
        return clip(c, -1.0, 1.0)
    return clip(real(c), -1.0, 1.0) + clip(imag(c), -1.0, 1.0) * 1j   # (numpy clips each part)


def ptp(a, axis=None, keepdims=False):
    """np.ptp: the range (max - min) over `axis`."""
    a = as_tensor(a)
    return _max(a, axis, keepdims) - _min(a, axis, keepdims)


def count_nonzero(a, axis=None, keepdims=False):
    """np.count_nonzero: how many entries differ from zero over `axis` (an integer tensor,
    with no derivative)."""
    a = as_tensor(a)
    if axis is not None:
        axis = tuple(axis_index(k, a.ndim, "count_nonzero") for k in np.atleast_1d(axis))
    return _sum(cast(not_equal(a, 0), np.int64), axis, keepdims)


def _value(v, name: str) -> np.ndarray:
    """A value to compare: a comparison has no derivative, so reading it drops nothing. A
    traced value (pforjac.function, a pfor or forward-mode body) has none yet, and a Python
    bool can't wait for it: refused, naming `name` and the traced alternative."""
    if not isinstance(v, Tensor):
        return np.asarray(v)
    if v._trace is not None:
        raise TypeError(f"numpy.{name} returns a Python bool, which needs the values, and "
                        f"{v.describe()} is a traced value that has none until the traced code "
                        f"runs (pforjac.function, a pfor or forward-mode body); compare with "
                        f"tensors instead, e.g. np.all(np.abs(a - b) <= atol + rtol * np.abs(b)) "
                        f"(a bool tensor), and choose with pforjac.where; or call {name} outside")
    return stop_gradient(v).numpy()


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """np.allclose on the values (a Python bool: no derivative; refused on traced values)."""
    a, b = as_operands((a, b))
    return bool(np.allclose(_value(a, "allclose"), _value(b, "allclose"), rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False) -> bool:
    """np.array_equal on the values (a Python bool: no derivative; refused on traced
    values)."""
    return bool(np.array_equal(_value(a1, "array_equal"), _value(a2, "array_equal"),
                               equal_nan=equal_nan))
