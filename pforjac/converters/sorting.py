"""Converters of sorting and searching: along one axis, one further along (an unstacked
operand of take_along_axis or its transpose is broadcast along the loop, no copy);
searchsorted in per-iteration sorted arrays counts the entries that sort before each value."""
from __future__ import annotations

import numpy as np

from .. import ops
from ..ops.sorting import (argpartition_p, argsort_p, put_along_axis_add_p, searchsorted_p,
                           sort_p, take_along_axis_p)
from ..ops.ufuncs import isnan
from ..pfor import register_converter
from ._helpers import align, to_stacked


@register_converter(argsort_p)
def _convert_argsort(n, args, stacked, axis, kind):
    return argsort_p.bind(args[0], axis=axis + 1, kind=kind), True


@register_converter(sort_p)
def _convert_sort(n, args, stacked, axis, kind):
    return sort_p.bind(args[0], axis=axis + 1, kind=kind), True


@register_converter(take_along_axis_p)
def _convert_take_along_axis(n, args, stacked, axis):
    x, indices = (to_stacked(n, a, s) for a, s in zip(args, stacked))
    return take_along_axis_p.bind(x, indices, axis=axis + 1), True


@register_converter(put_along_axis_add_p)
def _convert_put_along_axis_add(n, args, stacked, axis, size, unique=None):
    g, indices = (to_stacked(n, a, s) for a, s in zip(args, stacked))
    return put_along_axis_add_p.bind(g, indices, axis=axis + 1, size=size, unique=unique), True


@register_converter(argpartition_p)
def _convert_argpartition(n, args, stacked, axis, kth):
    return argpartition_p.bind(args[0], axis=axis + 1, kth=kth), True


def _sorts_before(a, v, side: str):
    """a[j] comes before v in a sorted array (NaN sorts last): a < v for "left", a <= v for
    "right", in numpy's order."""
    if side == "right":
        return ops.logical_or(ops.less_equal(a, v), isnan(v))
    return ops.logical_or(ops.less(a, v), ops.logical_and(isnan(v), ops.logical_not(isnan(a))))


@register_converter(searchsorted_p)
def _convert_searchsorted(n, args, stacked, side):
    (a, v), (a_stacked, v_stacked) = args, stacked
    if not a_stacked:
        return searchsorted_p.bind(a, v, side=side), True
    rank = v.ndim - 1 if v_stacked else v.ndim
    table = ops.reshape(a, (n,) + (1,) * rank + (a.shape[1],))      # [n, 1.., m]
    values = ops.expand_dims(align(v, v_stacked, rank), -1)         # [n or 1.., 1]
    before = ops.cast(_sorts_before(table, values, side), np.int64)
    return ops.sum(before, axis=-1), True
