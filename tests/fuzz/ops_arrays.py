"""The fuzzer's entries for numpy's array functions and remaining ufuncs (pforjac.ops.sorting,
.scans, .convolution, .numeric, .ufuncs), appended to `ops.OPS`: references from numpy's /
JAX's own functions."""
from __future__ import annotations

import numpy as np

from .ops import _EDGE, _kinked, _to_int, op

_GRID = np.linspace(-1.0, 1.0, 5)


def _gaps(B, a, axis):
    """The smallest distance between two entries along `axis` (a tie is sort's kink)."""
    s = np.sort(np.asarray(a, np.float64), axis=axis)
    d = np.diff(s, axis=axis)
    return d if d.size else np.inf


def _quotient_gap(B, a, b):
    """How far a / b is from an integer, times |b| (where fmod and remainder jump), over
    (1 + |a|)**2: a large a usually comes with a large derivative (cosh, exp before it),
    which carries finite differences' steps across a jump a plain margin says is far."""
    a, b = np.asarray(a), np.asarray(b)
    return _to_int(a / b) * np.abs(b) / (1.0 + np.abs(a)) ** 2


for _name, _dom in {"exp2": "", "deg2rad": "", "rad2deg": "", "sinc": "", "cbrt": "pos"}.items():
    _ref = (lambda n: lambda B, a: getattr(B.xp, n)(a))(_name)
    op(_name, "unary", _kinked(_ref, _EDGE[_dom]) if _dom else _ref,
       (lambda n: lambda pj, a: getattr(pj, n)(a))(_name), domain=_dom)
op("trunc", "unary", _kinked(lambda B, a: B.xp.trunc(a), lambda B, a: _to_int(a)),
   lambda pj, a: pj.trunc(a), smooth=False, zeroing=True)
op("signbit_abs", "unary", _kinked(lambda B, a: B.xp.where(B.xp.signbit(a), -a, a), lambda B, a: a),
   lambda pj, a: pj.where(pj.signbit(a), -a, a), prims=("signbit", "where"))
op("nan_to_zero", "unary",         # isnan, isinf, isfinite on the special-value programs
   lambda B, a: B.xp.where(B.xp.isnan(a) | B.xp.isinf(a), B.xp.zeros_like(a), a)
   * B.xp.isfinite(a).astype(a.dtype),
   lambda pj, a: pj.where(pj.isnan(a) | pj.isinf(a), pj.zeros_like(a), a)
   * pj.cast(pj.isfinite(a), a.dtype),
   prims=("isnan", "isinf", "isfinite", "logical_or", "where", "cast"))
op("hypot", "binary", lambda B, a, b: B.xp.hypot(a, b), lambda pj, a, b: pj.hypot(a, b))
op("logaddexp2", "binary", lambda B, a, b: B.xp.logaddexp2(a, b),
   lambda pj, a, b: pj.logaddexp2(a, b))
for _name in ("fmax", "fmin"):
    op(_name, "binary", (lambda n: _kinked(lambda B, a, b: getattr(B.xp, n)(a, b),
                                           lambda B, a, b: a - b))(_name),
       (lambda n: lambda pj, a, b: getattr(pj, n)(a, b))(_name), zeroing=True)
for _name in ("fmod", "remainder"):
    op(_name, "binary", (lambda n: _kinked(lambda B, a, b: getattr(B.xp, n)(a, b),
                                           _quotient_gap))(_name),
       (lambda n: lambda pj, a, b: getattr(pj, n)(a, b))(_name), domain="pos")
op("floor_divide", "binary", _kinked(lambda B, a, b: B.xp.floor_divide(a, b), _quotient_gap),
   lambda pj, a, b: a // b, domain="pos", smooth=False, zeroing=True)
op("copysign", "binary", _kinked(lambda B, a, b: B.xp.copysign(a, b),
                                 lambda B, a, b: np.minimum(np.abs(a), np.abs(b))),
   lambda pj, a, b: pj.copysign(a, b))
op("heaviside", "binary", _kinked(lambda B, a, b: B.xp.heaviside(a, b), lambda B, a, b: a),
   lambda pj, a, b: pj.heaviside(a, b), smooth=False, zeroing=True)

# -- sorting and searching (ties are kinks; + 0.0: which of -0.0 and 0.0 sorts first is a tie)
op("sort", "axis", _kinked(lambda B, a, axis: B.xp.sort(a, axis=axis) + 0.0, _gaps),
   lambda pj, a, axis: pj.sort(a, axis=axis) + 0.0, prims=("sort", "add"))
op("take_along_argsort", "axis",       # its gradient is put_along_axis_add
   _kinked(lambda B, a, axis: B.xp.take_along_axis(a, B.xp.argsort(-a, axis=axis, stable=True),
                                                   axis=axis) + 0.0, _gaps),
   lambda pj, a, axis: pj.take_along_axis(a, pj.argsort(-a, axis=axis, stable=True), axis) + 0.0,
   prims=("argsort", "neg", "take_along_axis", "add"))
op("argsort_scaled", "axis",
   _kinked(lambda B, a, axis: a * B.xp.argsort(a, axis=axis, stable=True).astype(a.dtype), _gaps),
   lambda pj, a, axis: a * pj.cast(pj.argsort(a, axis=axis, stable=True), a.dtype),
   prims=("argsort", "cast", "multiply"))
op("partition_min", "axis",
   _kinked(lambda B, a, axis: B.xp.take(B.xp.sort(a, axis=axis), B.xp.asarray([0]), axis=axis)
           + 0.0, _gaps),                           # (the smallest; NaNs sort last)
   lambda pj, a, axis: pj.gather(pj.partition(a, 0, axis=axis), np.zeros(1, np.int64), axis) + 0.0,
   prims=("argpartition", "take_along_axis", "gather"))
op("searchsorted_grid", "unary",
   _kinked(lambda B, a: a * B.xp.searchsorted(B.xp.asarray(_GRID), a).astype(a.dtype),
           lambda B, a: np.min(np.abs(np.asarray(a)[..., None] - _GRID), axis=-1)),
   lambda pj, a: a * pj.cast(pj.searchsorted(_GRID.astype(a.dtype), a), a.dtype),
   prims=("searchsorted", "cast", "multiply"))
op("cumprod", "axis", lambda B, a, axis: B.xp.cumprod(a, axis=axis),
   lambda pj, a, axis: pj.cumprod(a, axis=axis))

INTERNAL_ARRAYS = {"put_along_axis_add": "the gradient of sort and take_along_axis: every program "
                                        "with a sort, partition_min or take_along_argsort line"}

# -- convolution, row by row (vectorized_map: the converter's stacked-operand paths) -----------
_KERNEL, _SIGNAL = np.array([0.5, -1.0, 0.25]), np.array([1.0, -0.5, 2.0, 0.75, -1.5])


def _flat_rows(B, fn, a):
    return B.xp.stack([fn(B, B.xp.reshape(a[k], (-1,))) for k in range(a.shape[0])])


op("vmap_convolve_same", "rows",
   lambda B, a: _flat_rows(B, lambda B, r: B.xp.convolve(r, B.xp.asarray(_KERNEL, a.dtype), "same"), a),
   lambda pj, a: pj.vectorized_map(
       lambda r: pj.convolve(pj.reshape(r, (-1,)), _KERNEL.astype(a.dtype), "same"), a),
   prims=())
op("vmap_correlate_full", "rows",
   lambda B, a: _flat_rows(B, lambda B, r: B.xp.correlate(B.xp.asarray(_SIGNAL, a.dtype), r, "full"), a),
   lambda pj, a: pj.vectorized_map(
       lambda r: pj.correlate(_SIGNAL.astype(a.dtype), pj.reshape(r, (-1,)), "full"), a),
   prims=())
op("rows_convolve_valid", "rows",        # a loop over the rows: convolve itself in the program
   lambda B, a: _flat_rows(B, lambda B, r: B.xp.convolve(B.xp.asarray(_SIGNAL, a.dtype), r, "valid"), a),
   lambda pj, a: pj.stack([pj.convolve(_SIGNAL.astype(a.dtype), pj.reshape(a[k], (-1,)), "valid")
                           for k in range(a.shape[0])]),
   prims=("convolve",))
