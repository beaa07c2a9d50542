"""Converters of the reductions: reduce the same axes, one further along."""
from __future__ import annotations

from ..ops.reductions import REDUCTIONS
from ..pfor import register_converter
from ._helpers import shift_axes


def convert_reduction(prim):
    def convert(n, args, stacked, axes, keepdims):
        (x,) = args
        return prim.bind(x, axes=shift_axes(axes), keepdims=keepdims), True
    convert.__name__ = f"_convert_{prim.name}"
    return convert


for _prim in REDUCTIONS.values():
    register_converter(_prim.name)(convert_reduction(_prim))
