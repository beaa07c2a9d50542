"""numpy's advanced indexing beyond one index array: boolean masks and several index arrays.

A boolean mask is the integer index arrays of its `nonzero()`, as numpy defines it: its
value must be known when the key is read. It is for a numpy mask, a mask computed from
constants, and any mask on an eager Tensor (under a tape too: the forward pass runs eagerly,
so `x[x > 0]` records a gather at those indices, and its derivative is that gather's). A
mask that is a traced value (inside `pforjac.function`, a pfor or vmap body) selects a number
of entries nobody knows until the program runs, and is refused with the `where` rewrite.

Several index arrays (`f[ix, iy]`, `x[np.ix_(rows, cols)]`) broadcast together and index the
axes they stand for jointly: those axes are merged into one and gathered at the flat
positions `(i * n_y + j)`, and the result's broadcast axes go where numpy puts them (in place
of the first indexed axis, or first when a slice separates the advanced indices).
"""
from __future__ import annotations

import math

import numpy as np

from .. import core
from ..conversion import ConcretizationError
from ..tensor import Tensor, as_tensor
from .broadcasting import reshape
from .elementwise import cast, less, where

__all__ = ["is_mask", "mask_indices", "concrete_mask", "broadcast_shape", "merge_axes",
           "flat_positions", "advanced_first"]


def is_mask(k) -> bool:
    """A boolean index of rank >= 1 (numpy array, Tensor or list of bools)."""
    if isinstance(k, (np.ndarray, Tensor)):
        return k.dtype == np.bool_ and k.ndim > 0
    if not isinstance(k, list):
        return False
    while isinstance(k, list) and k:        # a (nested) list of Python or numpy bools
        k = k[0]
    return isinstance(k, (bool, np.bool_))


def concrete_mask(k, what: str) -> np.ndarray:
    """The value of the boolean mask `k`, or the error that says why a traced one has none."""
    if isinstance(k, Tensor):
        if k._trace is not None:
            raise ConcretizationError(      # (a TypeError: entries that can run eagerly do)
                f"{what}: the boolean mask {k.describe()} is a traced value (inside "
                f"pforjac.function, or a pfor/vmap/jacobian body), so how many entries it "
                f"selects, and the result's shape, is unknown until the program runs; write "
                f"np.where(mask, x, 0) instead of x[mask] (np.sum(x[mask]) is "
                f"np.sum(np.where(mask, x, 0))), or compute the mask outside the traced function "
                f"from numpy values (a numpy array passed to pforjac.function is traced too: "
                f"close over it instead)")
        return k.numpy()
    return np.asarray(k)


def mask_indices(k, shape: tuple, start: int = 0) -> tuple:
    """The integer index arrays (one per axis of `shape`, the axes from `start` on that the
    mask covers) of the boolean mask `k`, checked against those axes as numpy checks them."""
    mask = concrete_mask(k, "getitem")
    for axis, (size, length) in enumerate(zip(shape, mask.shape), start):
        if size is not None and size != length:
            raise IndexError(f"boolean index did not match indexed tensor along axis {axis}; "
                             f"size of axis is {size} but size of corresponding boolean axis "
                             f"is {length}")
    if len(mask.shape) > len(shape):
        raise IndexError(f"too many indices: a boolean mask of rank {mask.ndim} for "
                         f"{len(shape)} remaining axes")
    return tuple(np.nonzero(mask))


def advanced_first(key: tuple, positions) -> bool:
    """numpy's rule: advanced indices (integers and index arrays) separated by a slice or
    None (`x[3, 2:, [1, 3]]`, `x[ix, :, iy]`) put the broadcast index axes first."""
    advanced = [q for q, k in enumerate(key) if isinstance(k, int)] + list(positions)
    span = range(min(advanced), max(advanced))
    return any(isinstance(key[q], slice) or key[q] is None for q in span)


def broadcast_shape(indices: list) -> tuple:
    """The shape index arrays broadcast to, or numpy's IndexError."""
    shapes = [tuple(t.shape) for t in indices]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {' '.join(map(str, shapes))}") from None


def merge_axes(y: Tensor, axes: list) -> tuple:
    """`y` with its `axes` moved together to where `axes[0]` was and merged into one (row
    major), and their sizes."""
    first = axes[0]
    rest = [a for a in range(y.ndim) if a not in axes]
    perm = tuple(rest[:first] + list(axes) + rest[first:])
    if perm != tuple(range(y.ndim)):        # (shape.py imports indexing, which imports us)
        y = core.primitive_named("transpose").bind(y, perm=perm)
    sizes = [y.shape[first + q] for q in range(len(axes))]
    merged = tuple(y.shape[:first]) + (math.prod(sizes),) + tuple(y.shape[first + len(axes):])
    return reshape(y, merged), sizes


def flat_positions(indices: list, sizes: list, check_index):
    """The positions in the merged axis of the index arrays `indices` (broadcast together),
    negative indices counted from the end and one out of range refused, as numpy does:
    computed now for known indices, else with pforjac ops (`check_index(t, size)` guards a
    traced one)."""
    if all(not isinstance(t, Tensor) or t._trace is None for t in indices):
        values = [np.asarray(t.numpy() if isinstance(t, Tensor) else t) for t in indices]
        checked = [_checked(v, s) for v, s in zip(values, sizes)]
        return np.ravel_multi_index(np.broadcast_arrays(*checked), sizes) \
            if math.prod(sizes) else np.zeros(np.broadcast_shapes(*(v.shape for v in values)),
                                              np.int64)
    flat = None
    for t, size in zip(indices, sizes):
        t = cast(check_index(as_tensor(t), size), np.int64)
        t = where(less(t, 0), t + np.int64(size), t)
        flat = t if flat is None else flat * np.int64(size) + t
    return flat


def _checked(v: np.ndarray, size: int) -> np.ndarray:
    if v.size and (v.min() < -size or v.max() >= size):
        bad = v[(v < -size) | (v >= size)].flat[0]
        raise IndexError(f"index {bad} is out of bounds for an axis of size {size}")
    return np.where(v < 0, v + size, v).astype(np.int64)
