"""Array structure, as numpy's functions: atleast_*d, the stacks and splits, unstack, delete,
resize, block, repeat, the flips and rotations, rollaxis, append, select, broadcast_arrays,
meshgrid, and real / imag / conj for real tensors.

All are composites of reshape, broadcast_to, concat, split, gather, getitem, transpose and
where, so each gets every rule from those primitives.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor, as_operands, as_tensor
from ._family import axis_index, broadcast_shapes, int_arg
from .broadcasting import broadcast_to, reshape
from .elementwise import where, zeros_like
from .indexing import gather
from .shape import concat, flip, moveaxis, split, swapaxes

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "vstack", "hstack", "dstack",
           "column_stack", "row_stack", "array_split", "vsplit", "hsplit", "dsplit", "repeat",
           "fliplr", "flipud", "rot90", "rollaxis", "append", "select", "broadcast_arrays",
           "meshgrid", "unstack", "delete", "resize", "block"]


# -- rank -------------------------------------------------------------------------------
def _at_least(x, shape_of) -> Tensor:
    x = as_tensor(x)
    shape = shape_of(tuple(x.shape))
    return x if shape == tuple(x.shape) else reshape(x, shape)


def _one_or_tuple(results: list):
    return results[0] if len(results) == 1 else tuple(results)


def _1d(s): return s if len(s) >= 1 else (1,)
def _2d(s): return s if len(s) >= 2 else (1,) * (2 - len(s)) + s
def _3d(s): return s if len(s) >= 3 else {0: (1, 1, 1), 1: (1, *s, 1), 2: (*s, 1)}[len(s)]


def atleast_1d(*arys):
    """np.atleast_1d: 0-d tensors become shape (1,); one tensor back for one argument."""
    return _one_or_tuple([_at_least(a, _1d) for a in arys])


def atleast_2d(*arys):
    """np.atleast_2d: (n,) becomes (1, n), 0-d becomes (1, 1)."""
    return _one_or_tuple([_at_least(a, _2d) for a in arys])


def atleast_3d(*arys):
    """np.atleast_3d: (n,) becomes (1, n, 1), (m, n) becomes (m, n, 1), 0-d (1, 1, 1)."""
    return _one_or_tuple([_at_least(a, _3d) for a in arys])


# -- stacks -----------------------------------------------------------------------------
def _tensors(tup, what: str) -> list:
    """The tensors to join: a sequence, or (as numpy) one tensor's entries along axis 0."""
    values = as_operands(list(tup))
    if not values:
        raise ValueError(f"{what} needs at least one tensor")
    return values


def vstack(tup):
    """np.vstack: joined along the first axis, 1-D tensors taken as rows."""
    return concat([_at_least(a, _2d) for a in _tensors(tup, "vstack")], axis=0)


row_stack = vstack


def hstack(tup):
    """np.hstack: joined along the second axis (the first for 1-D tensors)."""
    values = [_at_least(a, _1d) for a in _tensors(tup, "hstack")]
    return concat(values, axis=0 if values[0].ndim == 1 else 1)


def dstack(tup):
    """np.dstack: joined along the third axis, after atleast_3d."""
    return concat([_at_least(a, _3d) for a in _tensors(tup, "dstack")], axis=2)


def column_stack(tup):
    """np.column_stack: 1-D tensors as columns, joined along the second axis."""
    values = _tensors(tup, "column_stack")
    return concat([reshape(v, (-1, 1)) if v.ndim < 2 else v for v in values], axis=1)


# -- splits -----------------------------------------------------------------------------
def array_split(ary, indices_or_sections, axis=0) -> list:
    """np.array_split: as split, but `n` sections need not divide the axis (the first
    `size % n` sections are one longer)."""
    x = as_tensor(ary)
    if isinstance(indices_or_sections, (list, tuple, np.ndarray, Tensor)):
        return split(x, list(np.asarray(indices_or_sections)), axis)
    n = int_arg(indices_or_sections, "array_split: sections")
    if n <= 0:
        raise ValueError(f"array_split: the number of sections must be positive, got {n}")
    size = x.shape[axis_index(axis, x.ndim, "array_split")]
    each, extra = divmod(size, n)
    bounds = np.cumsum([each + 1] * extra + [each] * (n - extra))[:-1]
    return split(x, [int(b) for b in bounds], axis)


def _split_along(name: str, axis: int, least: int):
    def split_it(ary, indices_or_sections) -> list:
        x = as_tensor(ary)
        if x.ndim < least:
            raise ValueError(f"{name} needs a tensor of rank {least} or more, got shape "
                             f"{tuple(x.shape)}")
        return split(x, indices_or_sections, axis if x.ndim > 1 else 0)
    split_it.__name__ = name
    split_it.__doc__ = f"np.{name}: split along axis {axis}."
    return split_it


vsplit = _split_along("vsplit", 0, 2)
hsplit = _split_along("hsplit", 1, 1)
dsplit = _split_along("dsplit", 2, 3)


# -- repeat, flips, rotations, axes --------------------------------------------------------
def _concrete_ints(value, what: str) -> np.ndarray:
    if isinstance(value, Tensor):
        value = value.numpy()       # an integer tensor has no derivative to lose
    value = np.asarray(value)
    if value.size == 0:     # ([] for an empty axis: numpy's too)
        return value.astype(np.int64)
    if value.dtype.kind not in "iub" or (value < 0).any():
        raise TypeError(f"{what} must be non-negative integers, got {value!r:.60}")
    return value.astype(np.int64)


def repeat(a, repeats, axis=None):
    """np.repeat: each entry along `axis` (of the flattened tensor for None) `repeats` times
    (an int, or one count per entry)."""
    x = as_tensor(a)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = axis_index(axis, x.ndim, "repeat")
    counts = _concrete_ints(repeats, "repeat: repeats")
    n = x.shape[axis]
    if counts.size == 1:
        r = int(counts.reshape(()))
        wide = broadcast_to(reshape(x, x.shape[:axis + 1] + (1,) + x.shape[axis + 1:]),
                            x.shape[:axis + 1] + (r,) + x.shape[axis + 1:])
        return reshape(wide, x.shape[:axis] + (n * r,) + x.shape[axis + 1:])
    if counts.shape != (n,):
        raise ValueError(f"repeat: {counts.size} repeats for an axis of length {n}")
    return gather(x, np.repeat(np.arange(n), counts), axis)


def fliplr(m):
    """np.fliplr: reversed along the second axis."""
    m = as_tensor(m)
    if m.ndim < 2:
        raise ValueError(f"fliplr needs a tensor of rank 2 or more, got shape {tuple(m.shape)}")
    return flip(m, 1)


def flipud(m):
    """np.flipud: reversed along the first axis."""
    m = as_tensor(m)
    if m.ndim < 1:
        raise ValueError("flipud needs a tensor of rank 1 or more, got a 0-d one")
    return flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
    """np.rot90: rotated by 90 degrees `k` times, from the first of `axes` towards the
    second."""
    m = as_tensor(m)
    if len(axes) != 2:
        raise ValueError(f"rot90: axes must be two axes, got {axes!r}")
    a, b = (axis_index(x, m.ndim, "rot90") for x in axes)
    if a == b:
        raise ValueError(f"rot90: the two axes {axes!r} are the same")
    k = int_arg(k, "rot90: k") % 4
    if k == 0:
        return m
    if k == 2:
        return flip(m, (a, b))
    return swapaxes(flip(m, b), a, b) if k == 1 else flip(swapaxes(m, a, b), b)


def rollaxis(a, axis, start=0):
    """np.rollaxis: `axis` moved to sit before position `start` (moveaxis is clearer)."""
    x = as_tensor(a)
    axis = axis_index(axis, x.ndim, "rollaxis")
    start = int_arg(start, "rollaxis: start")
    start = start + x.ndim if start < 0 else start
    if not 0 <= start <= x.ndim:
        raise np.exceptions.AxisError(f"rollaxis: start {start} is out of range for a tensor "
                                      f"of rank {x.ndim}")
    if axis < start:
        start -= 1
    return x if axis == start else moveaxis(x, axis, start)


def append(arr, values, axis=None):
    """np.append: `values` joined after `arr` (both flattened when `axis` is None)."""
    arr, values = as_operands((arr, values))
    if axis is None:
        return concat([reshape(arr, (-1,)), reshape(values, (-1,))], 0)
    return concat([arr, values], axis)


def unstack(x, axis=0) -> tuple:
    """np.unstack: the slices of `x` along `axis`, as a tuple."""
    x = as_tensor(x)
    axis = axis_index(axis, x.ndim, "unstack")
    if x.shape[axis] == 0:
        return ()
    shape = tuple(d for k, d in enumerate(x.shape) if k != axis)
    return tuple(reshape(p, shape) for p in split(x, x.shape[axis], axis))


def delete(arr, obj, axis=None):
    """np.delete: `arr` without the entries `obj` (an int, a slice, indices or a boolean
    mask) along `axis` (of the flattened tensor for None)."""
    x = as_tensor(arr)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = axis_index(axis, x.ndim, "delete")
    if isinstance(obj, Tensor):
        obj = obj.numpy()           # indices or a mask: no derivative to lose
    kept = np.delete(np.arange(x.shape[axis]), obj)
    return gather(x, kept, axis)


def resize(a, new_shape):
    """np.resize: the flattened `a` repeated cyclically to fill `new_shape`."""
    x = reshape(as_tensor(a), (-1,))
    shape = tuple(int_arg(d, "resize: new_shape") for d in np.atleast_1d(new_shape))
    if any(d < 0 for d in shape):
        raise ValueError(f"resize: new_shape {shape} has a negative length")
    size = int(np.prod(shape))
    if x.shape[0] == 0 or size == 0:        # (numpy's zeros: nothing to differentiate)
        return as_tensor(np.zeros(shape, x.dtype))
    return reshape(gather(x, np.arange(size) % x.shape[0], 0), shape)


def _block_depth(arrays, where: str) -> int:
    """How deep `arrays`' lists nest (0 for a tensor); they must nest equally everywhere."""
    if isinstance(arrays, tuple):
        raise TypeError(f"block: {where} is a tuple; np.block takes nested lists")
    if not isinstance(arrays, list):
        return 0
    if not arrays:
        raise ValueError(f"block: the list at {where} is empty")
    depths = {_block_depth(a, f"{where}[{k}]") for k, a in enumerate(arrays)}
    if len(depths) != 1:
        raise ValueError(f"block: the lists inside {where} nest to different depths")
    return 1 + depths.pop()


def _block_leaves(arrays):
    if isinstance(arrays, list):
        for a in arrays:
            yield from _block_leaves(a)
    else:
        yield as_tensor(arrays)


def _joined_blocks(arrays, level: int, depth: int, ndim: int):
    if not isinstance(arrays, list):
        t = as_tensor(arrays)
        return reshape(t, (1,) * (ndim - t.ndim) + tuple(t.shape))
    return concat([_joined_blocks(a, level + 1, depth, ndim) for a in arrays],
                  axis=ndim - depth + level)


def block(arrays):
    """np.block: a tensor assembled from nested lists of blocks, the innermost lists joined
    along the last axis, the next ones along the one before, ..."""
    depth = _block_depth(arrays, "arrays")
    ndim = max([depth] + [t.ndim for t in _block_leaves(arrays)])
    return _joined_blocks(arrays, 0, depth, ndim)


# -- choices and broadcasting ---------------------------------------------------------------
def select(condlist, choicelist, default=0):
    """np.select: each entry from the first choice whose condition holds, else `default`."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: {len(condlist)} conditions for {len(choicelist)} choices")
    if not condlist:
        raise ValueError("select needs at least one condition and choice")
    *choices, out = as_operands([*choicelist, default])   # Python numbers: weakly typed
    for c, v in reversed(list(zip(condlist, choices))):
        c = as_tensor(c)
        if c.dtype != np.bool_:
            raise TypeError(f"select: conditions must be boolean, got {c.dtype.name}")
        out = where(c, v, out)
    return out


def broadcast_arrays(*args):
    """np.broadcast_arrays: every argument broadcast to their common shape, as a tuple."""
    values = as_operands(list(args))
    shape = broadcast_shapes(*(v.shape for v in values))
    return tuple(broadcast_to(v, shape) for v in values)


def meshgrid(*xi, sparse=False, indexing="xy"):
    """np.meshgrid: coordinate tensors from 1-D (flattened) coordinate vectors; "xy"
    indexing swaps the first two axes of the result (Cartesian), "ij" does not (matrix)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    values = [reshape(v, (-1,)) for v in as_operands(list(xi))]
    n = len(values)
    shape = [v.shape[0] for v in values]
    axes = list(range(n))
    if indexing == "xy" and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
        axes[0], axes[1] = 1, 0
    grids = [reshape(v, tuple(-1 if k == axes[i] else 1 for k in range(n)))
             for i, v in enumerate(values)]
    return tuple(grids if sparse else (broadcast_to(g, tuple(shape)) for g in grids))
