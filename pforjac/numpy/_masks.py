"""numpy's data-dependent selections on Tensors: nonzero, argwhere, flatnonzero, compress,
extract, unique.

Their result's shape depends on values, so those values must be known: a numpy array, an
eager Tensor (under a tape too, where the forward pass runs eagerly), or a value computed
outside a traced function. The positions they find are constants (integer Tensors, not
differentiated); compress, extract and unique return the selected entries as a gather of
their input at those positions, so the derivative flows to the entries selected. A traced
argument (inside `pforjac.function`, a pfor or vmap body) is refused, naming the function
and the `where` rewrite.
"""
from __future__ import annotations

import numpy as np

from .. import ops as pj
from ..numpy_dispatch import _no_extra, implements
from ..ops._family import axis_index
from ..ops.advanced_indexing import concrete_mask
from ..tensor import Tensor, as_tensor, constant, needed_by
from ..warn import warn_wrong_result

__all__ = ["nonzero", "argwhere", "flatnonzero", "compress", "extract", "unique", "ix_"]


def _value(a, name: str) -> np.ndarray:
    """The value of `a`, whose nonzero entries `name` finds (refused for a traced value)."""
    return concrete_mask(a, f"numpy.{name}") if isinstance(a, Tensor) else np.asarray(a)


def _positions(array: np.ndarray) -> Tensor:
    return constant(np.asarray(array, np.int64))


@implements(np.nonzero)
def nonzero(a):
    """numpy.nonzero: a tuple of integer Tensors, one per axis (constants)."""
    return tuple(_positions(p) for p in np.nonzero(_value(a, "nonzero")))


@implements(np.argwhere)
def argwhere(a):
    return _positions(np.argwhere(_value(a, "argwhere")))


@implements(np.flatnonzero)
def flatnonzero(a):
    return _positions(np.flatnonzero(_value(a, "flatnonzero")))


@implements(np.compress)
def compress(condition, a, axis=None, out=None):
    """numpy.compress: the slices of `a` along `axis` where `condition` (1-D, its value
    known) holds; a gather of `a`, differentiable in `a`."""
    _no_extra("compress", out)
    where = np.nonzero(np.ravel(_value(condition, "compress")))[0]
    a = as_tensor(a)
    if axis is None:
        a, axis = pj.reshape(a, (-1,)), 0
    axis = axis_index(axis, a.ndim, "numpy.compress")
    if where.size and where[-1] >= a.shape[axis]:
        raise IndexError(f"numpy.compress: condition selects index {where[-1]}, out of bounds "
                         f"for axis {axis} of size {a.shape[axis]}")
    return pj.gather(a, _positions(where), axis)


@implements(np.extract)
def extract(condition, arr):
    """numpy.extract: the entries of `arr` where `condition` holds, flattened (a gather)."""
    where = np.flatnonzero(_value(condition, "extract"))
    return pj.gather(pj.reshape(as_tensor(arr), (-1,)), _positions(where), 0)


@implements(np.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, sorted=True):
    """numpy.unique: the unique values are a gather of `ar` at the first occurrence of each
    (so the derivative is that entry's); index, inverse and counts are integer constants.
    Where a differentiated `ar` has repeated values, the derivative is not defined (moving
    one copy splits a value in two) and a RuntimeWarning says that the first copy's is used."""
    values = _value(ar, "unique")
    found = np.unique(values, return_index=True, return_inverse=return_inverse,
                      return_counts=return_counts, axis=axis, equal_nan=equal_nan)
    first = found[1]
    ar = as_tensor(ar)
    picked = pj.gather(pj.reshape(ar, (-1,)) if axis is None else ar, _positions(first),
                       0 if axis is None else axis)
    repeated = first.size < (values.size if axis is None else values.shape[axis])
    if repeated and ar.dtype.kind in "fc" and needed_by(ar):
        warn_wrong_result("numpy.unique of a differentiated tensor with repeated values: its "
                          "derivative is not defined there (moving one copy splits the "
                          "value); pforjac uses the first copy's")
    extras = [first] * return_index + [found[k] for k in range(2, len(found))]
    if not extras:
        return picked
    return (picked, *(_positions(e) for e in extras))


@implements(np.ix_)
def ix_(*args):
    """numpy.ix_ on Tensors: each 1-D index (a boolean one as its positions) reshaped to
    broadcast along its own axis; traced integer indices stay traced."""
    out = []
    for k, arg in enumerate(args):
        arg = arg if isinstance(arg, Tensor) else constant(np.asarray(arg))
        if arg.dtype == np.bool_:
            arg = _positions(np.flatnonzero(_value(arg, "ix_")))
        if arg.ndim != 1:
            raise ValueError("numpy.ix_: cross index must be 1 dimensional")
        out.append(pj.reshape(arg, (1,) * k + (-1,) + (1,) * (len(args) - k - 1)))
    return tuple(out)


def _compress_method(self, condition, axis=None, out=None):
    """`t.compress(condition)` is `np.compress(condition, t)`: the tensor is numpy's second
    argument (the generic methods pass it first)."""
    return compress(condition, self, axis, out)


Tensor.compress = _compress_method
