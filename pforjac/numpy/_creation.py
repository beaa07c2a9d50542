"""Creation functions with numpy's signatures and defaults (float64 where numpy makes it),
and `array`/`asarray`, which stack lists holding Tensors differentiably (numpy's own
`np.array([t, ...])` would convert them: the protocols can't reach it).

`linspace`, `logspace`, `full_like` and `empty_like` also serve numpy's own names on Tensors
(`np.linspace(t0, t1, 5)` is differentiable in t0 and t1).
"""
from __future__ import annotations

from itertools import repeat

import numpy as np

from .. import ops as pj
from ..numpy_dispatch import _no_extra, implements
from .. import tensor
from ..tensor import Tensor, constant

__all__ = ["array", "asarray", "arange", "linspace", "logspace", "eye", "identity", "full",
           "zeros", "ones", "empty", "full_like", "empty_like", "tri", "copy"]


def _no_options(name: str, order=None, like=None, device=None, **others) -> None:
    """numpy's memory-layout and array-type options: refused by name unless their defaults
    (a Tensor is C-ordered, on the CPU, a Tensor)."""
    _no_extra(name, order=None if order in (None, "C", "K", "A") else order, like=like,
              device=None if device in (None, "cpu") else device, **others)


def _constant(array: np.ndarray) -> Tensor:
    return constant(array)              # a copy: numpy's own array is never made read-only


_NESTS = (Tensor, list, tuple)


def _has_tensor(obj) -> bool:
    """Whether a (nested) list holds a Tensor; a list of numbers is scanned in C (as_tensor
    asks this of every list an op is given)."""
    if isinstance(obj, Tensor):
        return True
    if not isinstance(obj, (list, tuple)) or not any(map(isinstance, obj, repeat(_NESTS))):
        return False
    return any(_has_tensor(o) for o in obj if isinstance(o, _NESTS))


def _stacked(obj):
    """A nest of lists holding Tensors as one Tensor, stacked level by level (Python numbers
    and arrays beside the Tensors are constants, weakly typed as in arithmetic)."""
    if isinstance(obj, (list, tuple)) and _has_tensor(obj):
        return pj.stack([_stacked(o) for o in obj])
    return obj


tensor._ops.stack_list = _stacked          # (a list without Tensors comes back as it is)


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    """numpy.array: a Tensor of `object`; lists holding Tensors are stacked (differentiable).
    Tensors are immutable, so `copy` never matters for a Tensor; numpy values are copied."""
    _no_options("array", order, like)
    if not _has_tensor(object):
        return _constant(np.array(object, dtype=dtype, ndmin=ndmin))
    result = _stacked(object)
    if result is object and copy:           # a new tensor, as numpy's copy (to assign into)
        result = pj.indexing.fresh(result)
    if dtype is not None:
        result = pj.cast(result, dtype)
    if result.ndim < ndmin:
        result = pj.reshape(result, (1,) * (ndmin - result.ndim) + tuple(result.shape))
    return result


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """numpy.asarray: a Tensor as it is (cast to `dtype` if given; a new one for copy=True),
    anything else as `array` makes it. `copy=False` with a numpy value raises: a Tensor never shares memory with an
    array that could change under it."""
    _no_options("asarray", order, like, device)
    if isinstance(a, Tensor):
        if dtype is None or np.dtype(dtype) == a.dtype:     # copy=True: a new tensor, which
            return pj.indexing.fresh(a) if copy else a      # an assignment rebinds alone
        if copy is False:
            raise ValueError(f"asarray: casting a {a.dtype.name} tensor to {np.dtype(dtype).name} "
                             f"makes a new tensor, but copy=False was asked for")
        return pj.cast(a, dtype)
    if copy is False and not _has_tensor(a):
        raise ValueError("asarray(copy=False): a pforjac Tensor never shares memory with a numpy "
                         "value (it could change under the tensor); pass copy=None")
    return array(a, dtype)


def arange(start, stop=None, step=None, dtype=None, *, device=None, like=None):
    """numpy.arange (a constant: its values are not differentiated)."""
    _no_options("arange", like=like, device=device)
    return _constant(np.arange(start, stop, step, dtype=dtype))


def _fractions(num: int, endpoint: bool, ndim: int):
    """The positions 0 .. 1 of linspace's points, shaped (num, 1, ..., 1), and its step's
    divisor."""
    div = (num - 1) if endpoint else num
    steps = np.arange(num, dtype=np.float64) / div if div > 0 else np.zeros(num)
    return steps.reshape((num,) + (1,) * ndim), div


@implements(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """numpy.linspace, differentiable in `start` and `stop` when they are Tensors."""
    _no_options("linspace", device=device)
    if not _has_tensor([start, stop]):
        values = np.linspace(start, stop, num, endpoint, retstep, dtype, axis)
        return (_constant(values[0]), values[1]) if retstep else _constant(values)
    start, stop = pj.coerce(start, stop)
    inexact = np.result_type(start.dtype, stop.dtype, 1.0)    # (numpy's: ints give float64)
    start, stop = pj.cast(start, inexact), pj.cast(stop, inexact)
    shape = np.broadcast_shapes(tuple(start.shape), tuple(stop.shape))
    fractions, div = _fractions(int(num), endpoint, len(shape))
    span = stop - start
    points = start + pj.cast(fractions, span.dtype) * span
    if endpoint and num > 1:       # the last point is `stop` itself, as numpy's is
        points = pj.concat([points[:-1], pj.expand_dims(pj.broadcast_to(stop, shape), 0)], 0)
    points = pj.moveaxis(points, 0, axis) if axis != 0 else points
    points = points if dtype is None else pj.cast(points, dtype)
    return (points, span / div if div > 0 else span * np.nan) if retstep else points


@implements(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """numpy.logspace, differentiable in `start`, `stop` and `base` when they are Tensors."""
    if not _has_tensor([start, stop, base]):
        return _constant(np.logspace(start, stop, num, endpoint, base, dtype, axis))
    exponents = linspace(start, stop, num, endpoint, axis=0)
    if _has_tensor(base) or np.ndim(base):
        base = pj.expand_dims(base, 0) if np.ndim(base) else base
    points = pj.power(base, exponents)
    points = pj.moveaxis(points, 0, axis) if axis != 0 else points
    return points if dtype is None else pj.cast(points, dtype)


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    _no_options("eye", order, like, device)
    return _constant(np.eye(N, M, k, dtype))


def identity(n, dtype=None, *, like=None):
    _no_options("identity", like=like)
    return _constant(np.identity(n, dtype))


def tri(N, M=None, k=0, dtype=float, *, like=None):
    _no_options("tri", like=like)
    return _constant(np.tri(N, M, k, dtype))


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """numpy.full; a Tensor `fill_value` is broadcast (differentiable)."""
    _no_options("full", order, like, device)
    if not _has_tensor(fill_value):
        return _constant(np.full(shape, fill_value, dtype))
    fill = fill_value if dtype is None else pj.cast(fill_value, dtype)
    return pj.broadcast_to(fill, shape)


def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    _no_options("zeros", order, like, device)
    return _constant(np.zeros(shape, dtype))


def ones(shape, dtype=float, order="C", *, device=None, like=None):
    _no_options("ones", order, like, device)
    return _constant(np.ones(shape, dtype))


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """numpy.empty: zeros (a Tensor can't be filled in later, so its entries are defined)."""
    return zeros(shape, dtype, order, device=device, like=like)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """numpy.full_like; a Tensor `fill_value` is broadcast (differentiable), `a` only gives
    the shape and dtype."""
    _no_options("full_like", order, device=device)
    shape = tuple(np.shape(a) if not isinstance(a, Tensor) else a.shape) if shape is None \
        else shape
    dtype = dtype if dtype is not None else (a.dtype if isinstance(a, Tensor) else
                                             np.result_type(a))
    return full(shape, pj.cast(fill_value, dtype) if _has_tensor(fill_value) else fill_value,
                dtype)


@implements(np.empty_like)
def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """numpy.empty_like: zeros (see `empty`)."""
    return full_like(prototype, 0, dtype, order, subok, shape, device=device)


@implements(np.copy)
def copy(a, order="K", subok=False):
    """numpy.copy: a Tensor of `a`'s value now (of a Variable: its value, which a later
    assign does not change), differentiable."""
    _no_options("copy", order)
    return pj.indexing.fresh(a) if isinstance(a, Tensor) else array(a)   # (a new tensor to assign into)
