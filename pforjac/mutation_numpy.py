"""numpy's functions that write into an array, on Tensors: `np.copyto`, `np.put`, `np.place`,
`np.fill_diagonal`, `t.fill`, `t.put`, and `out=` a Tensor (ufuncs and functions). Each
computes the new value and rebinds the tensor written into (pforjac.mutation), so they are
differentiable on every path. Writing a Tensor a derivative needs into a numpy array is
refused by name: an array can't hold it (`np.zeros_like(x, shape=...)` makes a Tensor).
"""
from __future__ import annotations

import numpy as np

from . import mutation, ops, updates
from .numpy_dispatch import WRITERS, _is_default, implements
from .tensor import Tensor, conversion_error, needed_by

__all__ = ["copyto", "put", "place", "fill_diagonal", "with_out", "ufunc_out"]


def _ndarray_target(name: str, values) -> None:
    """Refuses writing a Tensor a derivative needs into a numpy array, naming the fix."""
    for v in values:
        if isinstance(v, Tensor) and needed_by(v):
            raise conversion_error(v, f"numpy.{name} into a numpy array (an array can't hold "
                                      f"a Tensor; make the destination a Tensor: "
                                      f"np.zeros_like(x, shape=...), pforjac.numpy.zeros)")


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):
    if not isinstance(dst, Tensor):
        _ndarray_target("copyto", (src, where))
        return np.copyto(dst, _value(src), casting=casting, where=_value(where))
    if isinstance(src, (int, float, complex)):     # (weak, as in numpy: of its kind only)
        if casting in ("same_kind", "safe", "equiv", "no") and \
                "biufc".index(np.asarray(src).dtype.kind) > "biufc".index(dst.dtype.kind):
            raise TypeError(f"numpy.copyto: cannot cast a Python {type(src).__name__} to "
                            f"{dst.dtype.name} with casting rule {casting!r}")
    else:
        dtype = src.dtype if isinstance(src, Tensor) else np.asarray(src).dtype
        if not np.can_cast(dtype, dst.dtype, casting):
            raise TypeError(f"numpy.copyto: cannot cast {dtype.name} to {dst.dtype.name} "
                            f"with casting rule {casting!r}")
    new = ops.broadcast_to(updates.value_for(dst, src, None), tuple(dst.shape))
    if where is not True:
        new = ops.where(where, new, dst)
    mutation.assign_whole(dst, new, "numpy.copyto", (src,))


def _value(v):
    return v.numpy() if isinstance(v, Tensor) else v


def _put_at(a: Tensor, positions: np.ndarray, values, what: str) -> None:
    """a.flat[positions] = values, the values repeated as numpy repeats them."""
    mutation.check_assignable(a, what)
    v = ops.reshape(updates.value_for(a, values, None), (-1,))
    if positions.size and v.size == 0:
        raise ValueError(f"{what}: cannot write {positions.size} entries from an empty value")
    if v.size != positions.size and positions.size:
        v = ops.gather(v, np.arange(positions.size) % v.size)
    _write_flat(a, positions, v)


def _write_flat(a: Tensor, positions: np.ndarray, v) -> None:
    positions = positions.reshape(-1)
    key = np.unravel_index(positions, tuple(a.shape)) if a.ndim else mutation.views.ALL
    mutation.commit(a, updates.at_positions(a, positions, v), key)


@implements(np.put)
def put(a, ind, v, mode="raise"):
    if not isinstance(a, Tensor):
        _ndarray_target("put", (v,))
        return np.put(a, _value(ind), _value(v), mode=mode)
    positions = np.arange(a.size).take(np.asarray(_value(ind)).ravel(), mode=mode)
    _put_at(a, positions, v, "numpy.put")


@implements(np.place)
def place(arr, mask, vals):
    if not isinstance(arr, Tensor):
        _ndarray_target("place", (vals,))
        return np.place(arr, _value(mask), _value(vals))
    _put_at(arr, np.flatnonzero(np.asarray(_value(mask))), vals, "numpy.place")


@implements(np.fill_diagonal)
def fill_diagonal(a, val, wrap=False):
    if not isinstance(a, Tensor):
        _ndarray_target("fill_diagonal", (val,))
        return np.fill_diagonal(a, _value(val), wrap)
    marker = np.zeros(a.shape, bool)
    np.fill_diagonal(marker, True, wrap)
    _put_at(a, np.flatnonzero(marker), val, "numpy.fill_diagonal")


def _fill(self, value) -> None:
    """ndarray.fill: every entry set to `value` (a scalar, or a 0-d Tensor)."""
    mutation.setitem(self, Ellipsis, value)


def _put_method(self, indices, values, mode="raise") -> None:
    put(self, indices, values, mode)


def ufunc_at(what: str, ufunc, a: Tensor, indices, b=None) -> None:
    """np.add.at / np.subtract.at: unbuffered, so a repeated index adds every time (a
    scatter_add of the values at the flat positions)."""
    if ufunc not in (np.add, np.subtract) or b is None:
        raise TypeError(f"{what} on a Tensor: pforjac has np.add.at and np.subtract.at; "
                        f"write the update as t[idx] = ... with pforjac ops")
    mutation.check_assignable(a, what)
    key = indices if isinstance(indices, tuple) else (indices,)
    positions = np.arange(a.size).reshape(a.shape)[tuple(_value(k) for k in key)]
    v = ops.reshape(updates.value_for(a, b, positions.shape), (-1,))
    added = ops.scatter_add(v, positions.reshape(-1), 0, a.size)
    added = ops.reshape(added, tuple(a.shape))
    mutation.commit(a, a + added if ufunc is np.add else a - added)


# -- out= -------------------------------------------------------------------------------------
def _tensor_outs(out) -> bool:
    outs = out if isinstance(out, tuple) else (out,)
    return any(isinstance(o, Tensor) for o in outs)


def ufunc_out(what: str, fn, inputs, kwargs):
    """A ufunc called with `out=` Tensors: the result computed, then written into them
    (`where=` keeps the destination's value where it is False, as numpy does)."""
    kwargs = dict(kwargs)
    outs, where = kwargs.pop("out"), kwargs.pop("where", True)
    outs = outs if isinstance(outs, tuple) else (outs,)
    extra = sorted(k for k, v in kwargs.items() if not _is_default(k, v))
    if extra:
        raise TypeError(f"{what}(..., out=t): pforjac's {fn.__name__} takes no "
                        f"{', '.join(extra)}")
    result = fn(*inputs)
    results = result if isinstance(result, tuple) else (result,)
    for o, r in zip(outs, results):
        if o is None:
            continue
        if not isinstance(o, Tensor):
            _ndarray_target(what.removeprefix("numpy."), (r,))
            o[...] = _value(r)
            continue
        if where is not True:
            r = ops.where(where, r, o)
        mutation.assign_whole(o, r, f"{what}(..., out=t)", tuple(inputs))
    return outs[0] if len(outs) == 1 else outs


def with_out(fn, args, kwargs):
    """A numpy function called with `out=` a Tensor: its result written into it."""
    out = kwargs.pop("out")
    mutation.assign_whole(out, fn(*args, **kwargs), f"{getattr(fn, '__name__', 'numpy')}"
                          f"(..., out=t)", args)
    return out


def install() -> None:
    Tensor.fill = _fill
    Tensor.put = _put_method
    WRITERS.ufunc_out, WRITERS.with_out, WRITERS.ufunc_at = ufunc_out, with_out, ufunc_at


install()
