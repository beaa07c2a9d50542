"""Converters of indexing: static slices, gather/scatter_add with stacked indices, one_hot.

A stacked index is what every Jacobian body starts from, so these never loop:
gathering per-iteration rows from per-iteration tables offsets the indices
into one flattened table instead.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..ops import indexing as ix
from ..pfor import register_converter
from ..tensor import SymbolicTensor, constant
from ._helpers import to_stacked


@register_converter(ix.getitem_p)
def _convert_getitem(n, args, stacked, key):
    return ix.getitem_p.bind(args[0], key=(slice(None),) + tuple(key)), True


@register_converter(ix.setitem_zeros_p)
def _convert_setitem_zeros(n, args, stacked, key, shape):
    return ix.setitem_zeros_p.bind(args[0], key=(slice(None),) + tuple(key), shape=(n,) + tuple(shape)), True


def _positions(n: int, indices, stride: int):
    """indices (n, *s), wrapped, + k * stride for iteration k: positions in n blocks."""
    if np.iinfo(indices.dtype).max < max(n, 1) * stride:  # small int dtypes would overflow
        # (the stride itself too, which _wrap adds to negative indices, even with n = 0)
        indices = ops.cast(indices, np.int64)
    indices = _wrap(indices, stride)
    base = constant(np.arange(n, dtype=indices.dtype) * indices.dtype.type(stride))
    return indices + ops.reshape(base, (n,) + (1,) * (indices.ndim - 1))


@register_converter(ix.gather_p)
def _convert_gather(n, args, stacked, axis):
    (x, indices), (x_stacked, i_stacked) = args, stacked
    if not i_stacked:
        return ix.gather_p.bind(x, indices, axis=axis + 1), True
    if not x_stacked:
        if _whole_axis(indices, x.shape[axis]):    # vmap's slices: x itself, no copy
            return ops.moveaxis(x, axis, 0), True
        return ops.moveaxis(ix.gather_p.bind(x, indices, axis=axis), axis, 0), True
    size = x.shape[axis + 1]
    table = ops.moveaxis(x, 0, axis)                      # [..., n, size, ...]
    shape = tuple(table.shape[:axis]) + (n * size,) + tuple(table.shape[axis + 2:])
    flat = ops.reshape(table, shape)
    picked = ix.gather_p.bind(flat, _positions(n, indices, size), axis=axis)
    return ops.moveaxis(picked, axis, 0), True


def _whole_axis(indices, size: int) -> bool:
    """Whether the stacked (concrete) indices are 0, 1, ..., size - 1: every row in order."""
    if isinstance(indices, SymbolicTensor) or tuple(indices.shape) != (size,):
        return False
    return bool(np.array_equal(indices.numpy(), np.arange(size)))


def _wrap(indices, size: int):
    """Negative indices count from the end, as np.take does, before offsetting; one out
    of range raises IndexError (offset, it would read another iteration's block)."""
    indices = ix.check_index_p.bind(indices, size=size)
    if size == 0:
        return indices
    return ops.where(ops.less(indices, 0), indices + indices.dtype.type(size), indices)


@register_converter(ix.check_index_p)
def _convert_check_index(n, args, stacked, size):
    return ix.check_index_p.bind(args[0], size=size), stacked[0]


@register_converter(ix.scatter_add_p)
def _convert_scatter_add(n, args, stacked, axis, size, unique=None):
    (g, indices), (g_stacked, i_stacked) = args, stacked
    if not i_stacked:
        return ix.scatter_add_p.bind(g, indices, axis=axis + 1, size=size, unique=unique), True
    g = to_stacked(n, g, g_stacked)                        # [n, ..., *s, ...]
    moved = ops.moveaxis(g, 0, axis)                       # [..., n, *s, ...]
    idx = _positions(n, indices, size)          # [n, *s]
    flat = ix.scatter_add_p.bind(moved, idx, axis=axis, size=n * size)
    shape = tuple(flat.shape[:axis]) + (n, size) + tuple(flat.shape[axis + 1:])
    return ops.moveaxis(ops.reshape(flat, shape), axis, 0), True


@register_converter(ix.one_hot_p)
def _convert_one_hot(n, args, stacked, depth, dtype):
    return ix.one_hot_p.bind(args[0], depth=depth, dtype=dtype), True


@register_converter(ix.index_update_p)
def _convert_index_update(n, args, stacked, key):
    x, v = (to_stacked(n, a, s) for a, s in zip(args, stacked))
    return ix.index_update_p.bind(x, v, key=(slice(None),) + tuple(key)), True
