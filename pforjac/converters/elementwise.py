"""Converters of the elementwise family: one broadcasting converter serves them all."""
from __future__ import annotations

import functools

from .. import core, ops
from ..pfor import family_converters, register_converter
from ._helpers import align, iter_ndim


@functools.lru_cache(maxsize=None)
def convert_elementwise(prim: core.Primitive):
    """Stacked operands get size-1 axes after the loop axis; unstacked ones broadcast as is."""
    def convert(n, args, stacked, **params):
        rank = max(iter_ndim(a, s) for a, s in zip(args, stacked))
        return prim.bind(*[align(a, s, rank) for a, s in zip(args, stacked)], **params), True
    convert.__name__ = f"_convert_{prim.name}"
    return convert


family_converters.append(lambda prim: convert_elementwise(prim) if prim.elementwise else None)


@register_converter(ops.elementwise.zeros_like_p)
def _convert_zeros_like(n, args, stacked):
    (x,) = args
    return ops.zeros(x.shape[1:], x.dtype), False


@register_converter(ops.elementwise.ones_like_p)
def _convert_ones_like(n, args, stacked):
    (x,) = args
    return ops.ones(x.shape[1:], x.dtype), False
