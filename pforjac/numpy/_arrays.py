"""numpy's array functions (sorting, scans, differences, convolution, interpolation,
polynomials, the nan-ignoring reductions) and its remaining differentiable ufuncs, with
numpy's signatures and defaults, on pforjac's ops (`pforjac.ops.sorting`, `.numeric`,
`.ufuncs`). Keywords the ops do not take are refused by name.
"""
from __future__ import annotations

import numpy as np

from .. import ops as pj
from ..numpy_dispatch import _cast, _castable, _no_extra, implements
from ..tensor import as_tensor

_NO = np._NoValue

# -- ufuncs: the op itself (numpy's ufunc keywords are checked by numpy_dispatch) ------------
for _ufunc, _op in [(np.exp2, pj.exp2), (np.deg2rad, pj.deg2rad), (np.radians, pj.deg2rad),
                    (np.rad2deg, pj.rad2deg), (np.degrees, pj.rad2deg), (np.cbrt, pj.cbrt),
                    (np.trunc, pj.trunc), (np.fabs, pj.fabs), (np.hypot, pj.hypot),
                    (np.logaddexp2, pj.logaddexp2), (np.fmax, pj.fmax), (np.fmin, pj.fmin),
                    (np.fmod, pj.fmod), (np.remainder, pj.remainder),
                    (np.floor_divide, pj.floor_divide), (np.copysign, pj.copysign),
                    (np.heaviside, pj.heaviside), (np.float_power, pj.float_power),
                    (np.isnan, pj.isnan), (np.isinf, pj.isinf), (np.isfinite, pj.isfinite),
                    (np.signbit, pj.signbit)]:
    implements(_ufunc)(_op)


@implements(np.sinc)
def sinc(x):
    return pj.sinc(x)


@implements(np.fix)
def fix(x, out=None):
    _no_extra("fix", out)
    return pj.trunc(x)


def _isinf_signed(name, compare):
    def isinf_signed(x, out=None):
        _no_extra(name, out)
        if as_tensor(x).dtype.kind == "c":
            raise TypeError(f"numpy.{name}: complex input has no sign to test (numpy refuses "
                            f"it too); test pforjac.real(x) or pforjac.imag(x)")
        return pj.logical_and(pj.isinf(x), compare(x, 0.0))
    isinf_signed.__name__ = name
    return isinf_signed


implements(np.isposinf)(_isinf_signed("isposinf", pj.greater))
implements(np.isneginf)(_isinf_signed("isneginf", pj.less))


# -- sorting and searching -----------------------------------------------------------------
@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    _no_extra("sort", order=order)
    return pj.sort(a, axis, kind, stable)


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    _no_extra("argsort", order=order)
    return pj.argsort(a, axis, kind, stable)


def _introselect(name, kind, order):
    _no_extra(name, order=order, kind=None if kind == "introselect" else kind)


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    _introselect("partition", kind, order)
    return pj.partition(a, kth, axis)


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    _introselect("argpartition", kind, order)
    return pj.argpartition(a, kth, axis)


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    return pj.take_along_axis(arr, indices, axis)


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    return pj.searchsorted(a, v, side, sorter)


# -- scans, differences, convolution, interpolation, polynomials ---------------------------
@implements(np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    _no_extra("cumprod", out)
    return pj.cumprod(_cast(a, dtype), axis)


@implements(np.cumulative_prod)
def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    _no_extra("cumulative_prod", out)
    x = _cast(as_tensor(x), dtype)
    if axis is None and x.ndim > 1:
        raise ValueError(f"numpy.cumulative_prod: axis must be given for a tensor of rank "
                         f"{x.ndim} (numpy refuses it too)")
    axis = 0 if axis is None else axis
    out = pj.cumprod(x, axis)
    if not include_initial:
        return out
    shape = list(x.shape)
    shape[axis] = 1
    return pj.concat([pj.ones(tuple(shape), out.dtype), out], axis)


@implements(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """`overwrite_input` is accepted and ignored (tensors are immutable)."""
    _no_extra("median", out)
    return pj.median(a, axis, keepdims)


def _order_statistic(name, fn):
    def statistic(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
        _no_extra(name, out, method=None if method == "linear" else method, weights=weights)
        if as_tensor(a).dtype == np.bool_:
            raise TypeError(f"numpy.{name}: bool input can't be interpolated between (numpy "
                            f"refuses it too); cast it to a number type first")
        if isinstance(q, (list, tuple, np.ndarray)):      # q an array: it takes part in the
            wide = np.result_type(as_tensor(a).dtype, np.asarray(q).dtype)   # dtype, as numpy's
            a = pj.cast(a, wide) if wide.kind in "fc" and as_tensor(a).dtype != np.bool_ else a
        return fn(a, q, axis, keepdims)
    statistic.__name__ = name
    return statistic


implements(np.quantile)(_order_statistic("quantile", pj.quantile))
implements(np.percentile)(_order_statistic("percentile", pj.percentile))


@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=_NO, append=_NO):
    return pj.diff(a, n, axis, None if prepend is _NO else prepend,
                   None if append is _NO else append)


@implements(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    return pj.ediff1d(ary, to_end, to_begin)


@implements(np.convolve)
def convolve(a, v, mode="full"):
    return pj.convolve(a, v, mode)


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    return pj.correlate(a, v, mode)


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    _no_extra("interp", period=period)
    return pj.interp(x, xp, fp, left, right)


@implements(np.polyval)
def polyval(p, x):
    return pj.polyval(p, x)


# -- nan-ignoring reductions ---------------------------------------------------------------
def _keep(keepdims) -> bool:
    return False if keepdims is _NO else bool(keepdims)


def _nan_reduction(name, fn):
    """np.nansum, np.nanprod: `initial` and `where` are refused by name."""
    def reduce(a, axis=None, dtype=None, out=None, keepdims=_NO, initial=_NO, where=_NO):
        _no_extra(name, out, initial=initial, where=where)
        return fn(_cast(a, dtype), axis, _keep(keepdims))
    reduce.__name__ = name
    return reduce


def _nan_extremum(name, fn):
    def reduce(a, axis=None, out=None, keepdims=_NO, initial=_NO, where=_NO):
        _no_extra(name, out, initial=initial, where=where)
        return fn(a, axis, _keep(keepdims))
    reduce.__name__ = name
    return reduce


implements(np.nansum)(_nan_reduction("nansum", pj.nansum))
implements(np.nanprod)(_nan_reduction("nanprod", pj.nanprod))
implements(np.nanmax)(_nan_extremum("nanmax", pj.nanmax))
implements(np.nanmin)(_nan_extremum("nanmin", pj.nanmin))


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=_NO, *, where=_NO):
    _no_extra("nanmean", out, where=where)
    return pj.nanmean(_cast(a, dtype), axis, _keep(keepdims))


def _nan_spread(name, fn):
    def spread(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NO, *, where=_NO,
               mean=_NO, correction=_NO):
        _no_extra(name, out, where=where, mean=mean)
        ddof = ddof if correction is _NO else correction
        if dtype is not None:
            a = _castable(a, dtype, name)
        return fn(_cast(a, dtype), axis, _keep(keepdims), ddof)
    spread.__name__ = name
    return spread


implements(np.nanvar)(_nan_spread("nanvar", pj.nanvar))
implements(np.nanstd)(_nan_spread("nanstd", pj.nanstd))


def _nan_scan(name, fn):
    def scan(a, axis=None, dtype=None, out=None):
        _no_extra(name, out)
        return fn(_cast(a, dtype), axis)
    scan.__name__ = name
    return scan


implements(np.nancumsum)(_nan_scan("nancumsum", pj.nancumsum))
implements(np.nancumprod)(_nan_scan("nancumprod", pj.nancumprod))


def _nan_arg(name, fn):
    def arg(a, axis=None, out=None, *, keepdims=_NO):
        _no_extra(name, out, keepdims=True if _keep(keepdims) else None)
        return fn(a, axis)
    arg.__name__ = name
    return arg


implements(np.nanargmax)(_nan_arg("nanargmax", pj.nanargmax))
implements(np.nanargmin)(_nan_arg("nanargmin", pj.nanargmin))


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """`copy` is accepted and ignored: pforjac tensors are immutable, a new one comes back."""
    return pj.nan_to_num(x, nan, posinf, neginf)
