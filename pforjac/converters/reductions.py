"""Converters of the reductions: reduce the same axes, one further along."""
from __future__ import annotations

from ..ops.reductions import REDUCTIONS, all_finite_p, argmax_p, argmin_p, cumsum_p
from ..pfor import register_converter
from ._helpers import shift_axes


def convert_reduction(prim):
    def convert(n, args, stacked, axes, keepdims):
        (x,) = args
        return prim.bind(x, axes=shift_axes(axes), keepdims=keepdims), True
    convert.__name__ = f"_convert_{prim.name}"
    return convert


for _prim in REDUCTIONS.values():
    register_converter(_prim)(convert_reduction(_prim))


def _convert_along_axis(prim):
    def convert(n, args, stacked, axis):
        return prim.bind(args[0], axis=axis + 1), True
    convert.__name__ = f"_convert_{prim.name}"
    return convert


for _prim in (cumsum_p, argmax_p, argmin_p):
    register_converter(_prim)(_convert_along_axis(_prim))


@register_converter(all_finite_p)
def _convert_all_finite(n, args, stacked, axes, nonzero):
    return all_finite_p.bind(args[0], axes=tuple(a + 1 for a in axes), nonzero=nonzero), True
