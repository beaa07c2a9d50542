"""numpy array functions as composites of pforjac's primitives (every rule comes with them):
diff, ediff1d, interp, polyval, the nan-ignoring reductions
and nan_to_num.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor, as_operands, as_tensor, constant, is_float
from ._family import axis_index, int_arg, normalize_axes
from .broadcasting import broadcast_to, reshape, sum
from .elementwise import (cast, clip, equal, floor, greater, greater_equal, less, logical_and,
                          logical_not, minimum, not_equal, sqrt, square, subtract, where, zeros_like)
from .indexing import gather
from .reductions import argmax, argmin, cumsum, max, min, prod
from .scans import cumprod
from .shape import concat, transpose
from .sorting import searchsorted, sort
from .ufuncs import isinf, isnan
from .complex_parts import abs_squared

__all__ = ["diff", "ediff1d", "interp", "polyval", "median", "quantile",
           "percentile",
           "nansum", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nanprod",
           "nancumsum", "nancumprod", "nanargmax", "nanargmin", "nan_to_num"]


def _slice(x, axis: int, start=None, stop=None):
    return x[(slice(None),) * axis + (slice(start, stop),)]


def diff(x, n=1, axis=-1, prepend=None, append=None):
    """np.diff: the n-th differences along `axis`, after joining `prepend` and `append`
    (scalars broadcast to one slice) to its ends."""
    x = as_tensor(x)
    n = int_arg(n, "diff: n")
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    if n == 0:
        return x
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = axis_index(axis, x.ndim, "diff")
    parts = [_end(prepend, x, axis), x, _end(append, x, axis)]
    x = concat([p for p in parts if p is not None], axis)
    for _ in range(n):
        later, earlier = _slice(x, axis, 1), _slice(x, axis, None, -1)
        x = not_equal(later, earlier) if x.dtype == np.bool_ else subtract(later, earlier)
    return x


def _end(value, x, axis):
    if value is None:
        return None
    value = as_operands([x, value])[1]          # (Python numbers are weak: x's precision)
    if value.ndim == 0:
        shape = list(x.shape)
        shape[axis] = 1
        value = broadcast_to(value, tuple(shape))
    return value if value.dtype == x.dtype else cast(value, np.result_type(value.dtype, x.dtype))


def ediff1d(x, to_end=None, to_begin=None):
    """np.ediff1d: differences of the flattened `x`, with `to_begin` and `to_end` (flattened,
    in x's dtype) joined to their ends."""
    x = reshape(as_tensor(x), (-1,))
    parts = [x[1:] - x[:-1]]
    if to_begin is not None:
        parts.insert(0, reshape(cast(as_operands([x, to_begin])[1], x.dtype), (-1,)))
    if to_end is not None:
        parts.append(reshape(cast(as_operands([x, to_end])[1], x.dtype), (-1,)))
    return parts[0] if len(parts) == 1 else concat(parts, 0)


def interp(x, xp, fp, left=None, right=None):
    """np.interp: the piecewise-linear interpolant through (xp, fp) at x, numpy's formula
    (slope * (x - xp[j]) + fp[j]) and values; fp[0] (`left`) below xp[0] and fp[-1]
    (`right`) above xp[-1]. Differentiable in x (the segment's slope; at a knot, the
    right-hand segment's) and in fp; xp must be increasing."""
    x, xp, fp = as_operands([x, xp, fp])
    if x.dtype.kind == "c" or xp.dtype.kind == "c":
        raise TypeError(f"interp: x and xp must be real (got {x.dtype.name} and "
                        f"{xp.dtype.name}), as numpy's; only fp may be complex")
    x, xp, fp = (cast(t, _interp_dtype(t)) for t in (x, xp, fp))
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape != fp.shape:
        raise ValueError(f"interp: xp and fp must be 1-D of the same length, got shapes "
                         f"{tuple(xp.shape)} and {tuple(fp.shape)}")
    if xp.shape[0] == 0:
        raise ValueError("interp: xp and fp are empty")
    last = xp.shape[0] - 1
    if last == 0:
        out = broadcast_to(fp[0], x.shape)
    else:
        j = clip(searchsorted(xp, x, "right") - 1, 0, last - 1)
        x0, f0 = gather(xp, j, 0), gather(fp, j, 0)
        slope = (gather(fp, j + 1, 0) - f0) / (gather(xp, j + 1, 0) - x0)
        out = where(equal(x, xp[last]), broadcast_to(fp[last], x.shape), slope * (x - x0) + f0)
    out = where(less(x, xp[0]), fp[0] if left is None else left, out)
    return where(greater(x, xp[last]), fp[last] if right is None else right, out)


def _interp_dtype(t):
    dtype = t.dtype
    return np.complex128 if dtype.kind == "c" else np.float64


def polyval(p, x):
    """np.polyval: p[0] x**(n-1) + ... + p[n-1] by Horner's rule, numpy's operations in
    numpy's order (so numpy's values), differentiable in both."""
    p, x = as_operands([p, x])                   # (Python numbers are weak: never float32)
    y = zeros_like(x)
    for k in range(p.shape[0] if p.ndim else 1):
        y = y * x + (p[k] if p.ndim else p)
    return y


# -- order statistics ------------------------------------------------------------------------
def _sorted_last(x, axis, op: str):
    """x (as a float) sorted along `axis` (None: all, a tuple: merged), those axes moved last
    and merged into one; and the normalized axes."""
    x = as_tensor(x)
    x = x if is_float(x.dtype) else cast(x, np.float64)
    axes = normalize_axes(axis, x.ndim, op)
    keep = tuple(a for a in range(x.ndim) if a not in axes)
    if keep + axes != tuple(range(x.ndim)):
        x = transpose(x, keep + axes)
    return sort(reshape(x, tuple(x.shape[:len(keep)]) + (-1,)), -1), axes


def _reduced_shape(shape, axes, keepdims):
    return tuple(1 if k in axes else d for k, d in enumerate(shape) if keepdims or k not in axes)


def _nan_if_any(out, ordered):
    """NaN where the slice holds one (sorted last), as numpy's median and quantile give."""
    last = ordered[..., -1:]
    return where(isnan(last) if out.ndim == last.ndim else isnan(ordered[..., -1]), np.nan, out)


def median(x, axis=None, keepdims=False):
    """np.median: the middle of the sorted entries over `axis` (the mean of the two middle
    ones for an even count), numpy's values; NaN if the slice holds one. The gradient goes to
    the middle entries (halved between two)."""
    shape = as_tensor(x).shape
    ordered, axes = _sorted_last(x, axis, "median")
    n = ordered.shape[-1]
    if n == 0:
        raise ValueError("median of an empty slice: numpy gives NaN with a warning; check sizes")
    middle = ordered[..., (n - 1) // 2:n // 2 + 1]
    out = _nan_if_any(sum(middle, -1) / middle.shape[-1], ordered)
    return reshape(out, _reduced_shape(shape, axes, keepdims))


def quantile(x, q, axis=None, keepdims=False):
    """np.quantile, numpy's default method ("linear": q (n - 1) between the sorted entries):
    its shape is q's followed by x's reduced one. Differentiable in x (through the sort) and
    in q (the slope between the two entries); NaN where the slice holds one."""
    shape = as_tensor(x).shape
    ordered, axes = _sorted_last(x, axis, "quantile")
    n, lead = ordered.shape[-1], ordered.ndim - 1
    q = cast(q, ordered.dtype) if isinstance(q, Tensor) else constant(np.asarray(q, ordered.dtype))
    virtual = q * float(n - 1)
    below = clip(floor(virtual), 0.0, float(n - 1))
    index = cast(below, np.int64)
    a = gather(ordered, index, lead)
    b = gather(ordered, minimum(index + 1, n - 1), lead)
    gamma, step = virtual - below, b - a
    out = where(greater_equal(gamma, 0.5), b - step * (1.0 - gamma), a + step * gamma)
    out = where(reshape(isnan(ordered[..., -1]), tuple(ordered.shape[:-1]) + (1,) * q.ndim),
                np.nan, out)
    out = transpose(out, tuple(range(lead, out.ndim)) + tuple(range(lead))) if q.ndim else out
    return reshape(out, tuple(q.shape) + _reduced_shape(shape, axes, keepdims))


def percentile(x, q, axis=None, keepdims=False):
    """np.percentile: quantile at q / 100."""
    return quantile(x, q / 100.0 if isinstance(q, Tensor) else np.asarray(q, np.float64) / 100,
                    axis, keepdims)


# -- nan-ignoring reductions ---------------------------------------------------------------
def _nan_as(x, value):
    """x with its NaNs replaced by `value` (no NaN in integers: x itself)."""
    x = as_tensor(x)
    return where(isnan(x), value, x) if is_float(x.dtype) else x


def nansum(x, axis=None, keepdims=False):
    """np.nansum: the sum over `axis` with NaNs counted as zero (their gradient is 0)."""
    return sum(_nan_as(x, 0.0), axis, keepdims)


def nanprod(x, axis=None, keepdims=False):
    """np.nanprod: the product with NaNs counted as one (exact at zeros, as prod)."""
    return prod(_nan_as(x, 1.0), axis, keepdims)


def _count(x, axis, keepdims, dtype=None):
    return sum(cast(logical_not(isnan(x)), dtype or x.dtype), axis, keepdims)


def nanmean(x, axis=None, keepdims=False):
    """np.nanmean: the mean of the entries that are not NaN (NaN for an all-NaN slice)."""
    x = as_tensor(x)
    if not is_float(x.dtype):
        return sum(cast(x, np.float64), axis, keepdims) / _count(cast(x, np.float64), axis, keepdims)
    return nansum(x, axis, keepdims) / _count(x, axis, keepdims)


def nanvar(x, axis=None, keepdims=False, ddof=0):
    """np.nanvar: the variance of the entries that are not NaN, over `count - ddof`."""
    x = as_tensor(x)
    x = x if is_float(x.dtype) else cast(x, np.float64)
    centered = where(isnan(x), 0.0, x - nanmean(x, axis, keepdims=True))  # (0, not NaN, to
    # square)
    squares = abs_squared(centered)                  # (real, for complex x too)
    return sum(squares, axis, keepdims) / (_count(x, axis, keepdims, squares.dtype) - ddof)


def nanstd(x, axis=None, keepdims=False, ddof=0):
    """np.nanstd: the square root of nanvar."""
    return sqrt(nanvar(x, axis, keepdims, ddof))


def _nan_extremum(reduce, fill):
    def nan_reduce(x, axis=None, keepdims=False):
        x = as_tensor(x)
        if not is_float(x.dtype):
            return reduce(x, axis, keepdims)
        out = reduce(_nan_as(x, fill), axis, keepdims)
        all_nan = logical_not(max(cast(logical_not(isnan(x)), np.int8), axis, keepdims) > 0)
        return where(all_nan, np.nan, out)           # (numpy: NaN, with a warning)
    return nan_reduce


nanmax = _nan_extremum(max, -np.inf)
nanmax.__name__ = nanmax.__qualname__ = "nanmax"
nanmax.__doc__ = "np.nanmax: the maximum of the entries that are not NaN (NaN if all are)."
nanmin = _nan_extremum(min, np.inf)
nanmin.__name__ = nanmin.__qualname__ = "nanmin"
nanmin.__doc__ = "np.nanmin: the minimum of the entries that are not NaN (NaN if all are)."


def nancumsum(x, axis=None):
    """np.nancumsum: running sums with NaNs counted as zero."""
    return cumsum(_nan_as(x, 0.0), axis)


def nancumprod(x, axis=None):
    """np.nancumprod: running products with NaNs counted as one."""
    return cumprod(_nan_as(x, 1.0), axis)


def _nan_arg(arg, fill, name):
    def nan_arg(x, axis=None):
        x = as_tensor(x)
        if is_float(x.dtype) and x._trace is None and \
                np.all(np.isnan(x.numpy()), axis=axis).any():     # (numpy raises too)
            raise ValueError(f"{name}: an all-NaN slice has no answer")
        return arg(_nan_as(x, fill), axis)
    nan_arg.__name__ = nan_arg.__qualname__ = name
    return nan_arg


nanargmax = _nan_arg(argmax, -np.inf, "nanargmax")
nanargmax.__doc__ = "np.nanargmax: the position of the maximum ignoring NaNs (int64)."
nanargmin = _nan_arg(argmin, np.inf, "nanargmin")
nanargmin.__doc__ = "np.nanargmin: the position of the minimum ignoring NaNs (int64)."


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """np.nan_to_num: NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default
    0 and the dtype's largest and smallest finite values); the gradient is 1 where x is
    finite and 0 where it was replaced."""
    x = as_tensor(x)
    if not is_float(x.dtype) or x.dtype.kind == "c":
        return x
    big = np.finfo(x.dtype).max
    out = where(isnan(x), nan, x)
    out = where(logical_and(isinf(x), greater(x, 0.0)), big if posinf is None else posinf, out)
    return where(logical_and(isinf(x), less(x, 0.0)), -big if neginf is None else neginf, out)

