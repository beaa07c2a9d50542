"""Converters of the elementwise family: one broadcasting converter serves them all."""
from __future__ import annotations

from .. import core, ops
from ..ops.elementwise import BINARY, UNARY
from ..pfor import register_converter
from ._helpers import align, iter_ndim


def convert_elementwise(prim: core.Primitive):
    """Stacked operands get size-1 axes after the loop axis; unstacked ones broadcast as is."""
    def convert(n, args, stacked, **params):
        rank = max(iter_ndim(a, s) for a, s in zip(args, stacked))
        return prim.bind(*[align(a, s, rank) for a, s in zip(args, stacked)], **params), True
    convert.__name__ = f"_convert_{prim.name}"
    return convert


for _prim in [*UNARY.values(), *BINARY.values(), ops.elementwise.where_p, ops.elementwise.cast_p,
              ops.elementwise.stop_gradient_p]:
    register_converter(_prim.name)(convert_elementwise(_prim))


@register_converter("zeros_like")
def _convert_zeros_like(n, args, stacked):
    (x,) = args
    return ops.zeros(x.shape[1:], x.dtype), False


@register_converter("ones_like")
def _convert_ones_like(n, args, stacked):
    (x,) = args
    return ops.ones(x.shape[1:], x.dtype), False
