"""np.gradient on Tensors: numpy's finite differences (second-order central differences in
the interior, one-sided ones of `edge_order` 1 or 2 at the ends) as a composite of slices,
subtractions and one concatenation per axis, so every derivative rule comes with it.

Spacings are scalars (one for every axis, or one per axis; a Tensor scalar is differentiated
too); numpy's coordinate arrays (non-uniform spacing) are refused by name.
"""
from __future__ import annotations

import numpy as np

from .. import ops as pj
from ..numpy_dispatch import implements
from ..ops._family import axis_index
from ..tensor import Tensor, as_tensor

__all__ = ["gradient"]


@implements(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """np.gradient: a Tensor for one axis, a tuple of Tensors (one per axis, in `axis`'s
    order) for several."""
    f = as_tensor(f)
    if f.dtype == np.bool_:
        raise TypeError("numpy.gradient: bool input has no differences (numpy refuses it too); "
                        "cast it to a number type first")
    if f.dtype.kind in "biu":                   # as numpy: integers differentiate in float64
        f = pj.cast(f, np.float64)
    axes = _axes(axis, f.ndim)
    spacings = _spacings(varargs, len(axes))
    if edge_order not in (1, 2):
        raise ValueError(f"numpy.gradient: edge_order must be 1 or 2, got {edge_order!r}")
    for a in axes:
        if f.shape[a] < edge_order + 1:
            raise ValueError(f"numpy.gradient: axis {a} of the array of shape {tuple(f.shape)} "
                             f"has {f.shape[a]} entries; edge_order={edge_order} needs at "
                             f"least {edge_order + 1}")
    out = tuple(_along(f, a, h, edge_order) for a, h in zip(axes, spacings))
    return out[0] if len(out) == 1 else out


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis_index(a, ndim, "numpy.gradient") for a in
                 (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes):
        raise ValueError(f"numpy.gradient: axis {axis!r} repeats an axis")
    return axes


def _spacings(varargs, n: int) -> list:
    if len(varargs) not in (0, 1, n):
        raise TypeError(f"numpy.gradient: {len(varargs)} spacings for {n} axes; give none, "
                        f"one for all, or one per axis")
    spacings = list(varargs) * (n if len(varargs) == 1 else 1) if varargs else [1.0] * n
    for h in spacings:
        if (h.ndim if isinstance(h, Tensor) else np.ndim(h)) != 0:
            raise TypeError("numpy.gradient on pforjac Tensors takes scalar spacings only, "
                            "not coordinate arrays (non-uniform spacing); resample onto a "
                            "uniform grid, or write the differences with pforjac ops")
    return spacings


def _along(f, axis: int, h, edge_order: int):
    def part(start, stop):
        return f[(slice(None),) * axis + (slice(start, stop),)]
    interior = (part(2, None) - part(None, -2)) / (2.0 * h)
    if edge_order == 1:
        first = (part(1, 2) - part(0, 1)) / h
        last = (part(-1, None) - part(-2, -1)) / h
    else:
        first = (-1.5 * part(0, 1) + 2.0 * part(1, 2) - 0.5 * part(2, 3)) / h
        last = (0.5 * part(-3, -2) - 2.0 * part(-2, -1) + 1.5 * part(-1, None)) / h
    return pj.concat([first, interior, last], axis=axis)
