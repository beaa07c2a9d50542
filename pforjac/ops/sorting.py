"""Sorting and searching. sort (numpy's forward) and take_along_axis are primitives whose
gradients go back through a permutation: put_along_axis_add, take_along_axis's transpose,
scatters the cotangent where the entries came from. argsort, argpartition and searchsorted
give integers and are not differentiable; partition is a take_along_axis by argpartition.
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..core import defjvp, defvjp
from ..memory import pooled_zeros
from ..tensor import as_tensor
from ._family import axis_index, int_tuple
from .broadcasting import broadcast_to, reshape
from .indexing import _indices, gather

__all__ = ["argsort", "sort", "argpartition", "partition", "take_along_axis", "searchsorted",
           "put_along_axis_add"]

_KINDS = ("quicksort", "mergesort", "heapsort", "stable")


def _same_shape_ints(x, axis, **params):
    return tuple(x.shape), np.dtype(np.int64)


def _ints(a):
    return a.astype(np.int64, copy=False)


argsort_p = core.new_primitive(
    "argsort", lambda x, axis, kind: _ints(np.argsort(x, axis=axis, kind=kind)), _same_shape_ints,
    differentiable=False)


def _argpartition_shape(x, axis, kth):
    for k in kth:
        if not -x.shape[axis] <= k < x.shape[axis]:
            raise ValueError(f"kth {k} is out of bounds for an axis of size {x.shape[axis]}")
    return tuple(x.shape), np.dtype(np.int64)


argpartition_p = core.new_primitive(
    "argpartition", lambda x, axis, kth: _ints(np.argpartition(x, kth, axis=axis)),
    _argpartition_shape, differentiable=False)


def _searchsorted_shape(a, v, side):
    if a.ndim != 1:
        raise ValueError(f"searchsorted: the sorted array must be 1-D, got shape {tuple(a.shape)}")
    return tuple(v.shape), np.dtype(np.int64)


searchsorted_p = core.new_primitive(
    "searchsorted", lambda a, v, side: np.asarray(np.searchsorted(a, v, side), np.int64),
    _searchsorted_shape, differentiable=False)


def _flat(x, axis, op: str):
    """x and a non-negative axis (None: x flattened, axis 0); errors name `op`."""
    x = as_tensor(x)
    if axis is None:
        return reshape(x, (-1,)), 0
    return x, axis_index(axis, x.ndim, op)


def _kind(kind, stable) -> str:
    kind = "stable" if stable else kind or "quicksort"
    if kind not in _KINDS:
        raise ValueError(f"sort: kind must be one of {_KINDS}, got {kind!r}")
    return kind


def argsort(x, axis=-1, kind=None, stable=None):
    """np.argsort: the permutation that sorts `x` along `axis` (None: flattened), int64.
    `stable=True` or `kind="stable"` keeps ties in their order (numpy's default quicksort
    need not)."""
    x, axis = _flat(x, axis, "argsort")
    return argsort_p.bind(x, axis=axis, kind=_kind(kind, stable))


# -- take_along_axis and its transpose ------------------------------------------------------
def _along_shape(x, indices, axis, **params):
    if x.ndim != indices.ndim or any(a != b for k, (a, b) in enumerate(zip(x.shape, indices.shape))
                                     if k != axis):
        raise ValueError(f"take_along_axis: indices of shape {tuple(indices.shape)} for an array "
                         f"of shape {tuple(x.shape)}: they must agree off axis {axis}")
    if not np.issubdtype(indices.dtype, np.integer):
        raise TypeError(f"take_along_axis: indices must be integers, got {indices.dtype.name}")
    return tuple(indices.shape), x.dtype


take_along_axis_p = core.new_primitive(
    "take_along_axis", lambda x, indices, axis: np.take_along_axis(x, indices, axis), _along_shape,
    layout="free")


def _put_along_axis_add_impl(g, indices, axis, size, unique=None):
    """Zeros of length `size` along `axis` with g added at `indices` (0 + g, as np.add.at
    adds). `unique=True`: no index repeats in a slice (a permutation), which is then not
    checked."""
    shape = g.shape[:axis] + (size,) + g.shape[axis + 1:]
    out = pooled_zeros(shape, g.dtype)
    indices = np.where(indices < 0, indices + size, indices)
    if unique is None:
        ordered = np.sort(indices, axis=axis)
        unique = not (np.diff(ordered, axis=axis) == 0).any()
    if unique:
        np.put_along_axis(out, indices, g + 0 if g.dtype.kind in "fc" else g, axis)
        return out
    grid = list(np.ix_(*(np.arange(d) for d in g.shape)))
    grid[axis] = indices
    np.add.at(out, tuple(grid), g)
    return out


def _put_shape(g, indices, axis, size, unique=None):
    _along_shape(g, indices, axis)
    return tuple(g.shape[:axis]) + (size,) + tuple(g.shape[axis + 1:]), g.dtype


put_along_axis_add_p = core.new_primitive("put_along_axis_add", _put_along_axis_add_impl,
                                          _put_shape, layout="free")
defvjp(take_along_axis_p, lambda g, ans, x, indices, axis:
       put_along_axis_add_p.bind(g, indices, axis=axis, size=x.shape[axis]), None)
defjvp(take_along_axis_p, lambda t, ans, x, indices, axis:
       take_along_axis_p.bind(t, indices, axis=axis), None)
defvjp(put_along_axis_add_p, lambda g, ans, x, indices, axis, size, unique=None:
       take_along_axis_p.bind(g, indices, axis=axis), None)
defjvp(put_along_axis_add_p, lambda t, ans, x, indices, axis, size, unique=None:
       put_along_axis_add_p.bind(t, indices, axis=axis, size=size, unique=unique), None)


def _common_shape(x_shape, i_shape, axis):
    """numpy's broadcast of x and indices off `axis` (along it: the indices' length)."""
    if len(x_shape) != len(i_shape):
        raise ValueError(f"take_along_axis: indices of rank {len(i_shape)} for an array of "
                         f"rank {len(x_shape)}; give them the same rank (size-1 axes broadcast)")
    off = [tuple(1 if k == axis else d for k, d in enumerate(s)) for s in (x_shape, i_shape)]
    try:
        out = list(np.broadcast_shapes(*off))
    except ValueError:
        raise ValueError(f"take_along_axis: indices of shape {tuple(i_shape)} do not broadcast "
                         f"against an array of shape {tuple(x_shape)} off axis {axis}") from None
    return out


def _to_shape(t, shape):
    return t if tuple(t.shape) == tuple(shape) else broadcast_to(t, tuple(shape))


def take_along_axis(x, indices, axis=-1):
    """np.take_along_axis: out[..., j, ...] = x[..., indices[..., j, ...], ...] along `axis`
    (None: of the flattened x, with 1-D indices); the other axes broadcast, negative indices
    count from the end, and one out of range raises IndexError. Its gradient puts the
    cotangent back where each entry came from (`put_along_axis_add`)."""
    x, indices = as_tensor(x), _indices(indices)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = axis_index(axis, x.ndim, "take_along_axis")
    shape = _common_shape(x.shape, indices.shape, axis)
    x = _to_shape(x, shape[:axis] + [x.shape[axis]] + shape[axis + 1:])
    indices = _to_shape(indices, shape[:axis] + [indices.shape[axis]] + shape[axis + 1:])
    return take_along_axis_p.bind(x, indices, axis=axis)


def put_along_axis_add(g, indices, axis, size):
    """Zeros of length `size` along `axis`, with the entries of `g` added at `indices`
    (`g` and `indices` of one shape): the transpose of take_along_axis."""
    g, indices = as_tensor(g), _indices(indices)
    axis = axis_index(axis, g.ndim, "put_along_axis_add")
    return put_along_axis_add_p.bind(g, indices, axis=axis, size=int(size))


# -- sort, partition -------------------------------------------------------------------------
sort_p = core.new_primitive("sort", lambda x, axis, kind: np.sort(x, axis=axis, kind=kind),
                            lambda x, axis, kind: (tuple(x.shape), x.dtype), layout="free")


def _sort_permutation(x, axis):
    return argsort_p.bind(x, axis=axis, kind="stable")


defvjp(sort_p, lambda g, ans, x, axis, kind: put_along_axis_add_p.bind(
    g, _sort_permutation(x, axis), axis=axis, size=x.shape[axis], unique=True))
defjvp(sort_p, lambda t, ans, x, axis, kind:
       take_along_axis_p.bind(t, _sort_permutation(x, axis), axis=axis))


def sort(x, axis=-1, kind=None, stable=None):
    """np.sort: `x` sorted along `axis` (None: flattened), NaNs last: numpy's forward. Its
    gradient goes back through the sorting permutation (found only when differentiating),
    ties in numpy's stable order: the first of equal entries takes the first sorted slot."""
    x, axis = _flat(x, axis, "sort")
    return sort_p.bind(x, axis=axis, kind=_kind(kind, stable))


def _kth(kth) -> tuple:
    return int_tuple(kth, "partition: kth")


def argpartition(x, kth, axis=-1):
    """np.argpartition: an order putting the `kth` entries (an int or a sequence) where a
    sort would, smaller ones before and larger ones after, int64."""
    x, axis = _flat(x, axis, "argpartition")
    return argpartition_p.bind(x, axis=axis, kth=_kth(kth))


def partition(x, kth, axis=-1):
    """np.partition: `x` gathered by its argpartition (numpy's values: the same introselect
    orders both); the gradient goes back through that permutation."""
    x, axis = _flat(x, axis, "partition")
    return take_along_axis_p.bind(x, argpartition_p.bind(x, axis=axis, kth=_kth(kth)), axis=axis)


def searchsorted(a, v, side="left", sorter=None):
    """np.searchsorted: where each of `v` would go in the sorted 1-D `a` to keep it sorted
    (`side` "left": before equal entries, "right": after), int64; not differentiable.
    `sorter`: the permutation that sorts `a` (its argsort)."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    a = as_tensor(a)
    if sorter is not None:
        a = gather(a, sorter, 0)
    return searchsorted_p.bind(a, v, side=side)


# -- examples for the generated checks ------------------------------------------------------
def _ties(rng, *shape):
    """Values with ties (and a NaN-free spread), which sorting must order stably."""
    return rng.integers(-2, 3, shape).astype(np.float64) * 0.5


core.defexamples(argsort_p)(lambda rng: [
    core.Example(rng.uniform(-1.5, 1.5, (2, 3, 4)), axis=a, kind="quicksort") for a in (0, 2)]
    + [core.Example(_ties(rng, 3, 5), axis=1, kind="stable")])
core.defexamples(sort_p)(lambda rng: [
    core.Example(rng.uniform(-1.5, 1.5, (2, 3, 4)), axis=a, kind="quicksort") for a in (0, 2)])
core.defexamples(take_along_axis_p)(lambda rng: [
    core.Example(rng.uniform(-1.5, 1.5, (3, 4)), rng.integers(-4, 4, (3, 5)), axis=1),
    core.Example(rng.uniform(-1.5, 1.5, (4, 2)), rng.integers(0, 4, (2, 2)), axis=0)])
core.defexamples(put_along_axis_add_p)(lambda rng: [
    core.Example(rng.uniform(-1.5, 1.5, (3, 5)), rng.integers(-4, 4, (3, 5)), axis=1, size=4),
    core.Example(rng.uniform(-1.5, 1.5, (2, 2)), np.array([[1, 0], [3, 1]]), axis=0, size=4,
                 unique=True)])
core.defexamples(argpartition_p)(lambda rng: [
    core.Example(rng.uniform(-1.5, 1.5, (3, 5)), axis=1, kth=(2,)),
    core.Example(rng.uniform(-1.5, 1.5, (4, 2)), axis=0, kth=(0, -1))])
core.defexamples(searchsorted_p)(lambda rng: [
    core.Example(np.sort(rng.uniform(-1.5, 1.5, 5)), rng.uniform(-2, 2, (2, 3)), side=s,
                 stackable=(False, True)) for s in ("left", "right")] + [
    core.Example(np.array([0.0, 0.5, 0.5, 1.0, np.nan]), np.array([0.5, np.nan, -1.0]),
                 side="left", stackable=(False, True))])
# (a stacked sorted array: tests/test_array_functions.py, whose iterations stay sorted)
