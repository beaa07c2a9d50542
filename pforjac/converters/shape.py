"""Converters of the shape family: the loop axis stays first."""
from __future__ import annotations

from .. import ops
from ..ops import shape as sh
from ..pfor import register_converter
from ._helpers import align, shift_axes, to_stacked


@register_converter(sh.reshape_p)
def _convert_reshape(n, args, stacked, shape):
    return sh.reshape_p.bind(args[0], shape=(n,) + tuple(shape)), True


@register_converter(sh.transpose_p)
def _convert_transpose(n, args, stacked, perm):
    return sh.transpose_p.bind(args[0], perm=(0,) + shift_axes(perm)), True


@register_converter(sh.broadcast_to_p)
def _convert_broadcast_to(n, args, stacked, shape):
    x = align(args[0], True, len(shape))
    return sh.broadcast_to_p.bind(x, shape=(n,) + tuple(shape)), True


@register_converter(sh.concat_p)
def _convert_concat(n, args, stacked, axis):
    return sh.concat_p.bind(*[to_stacked(n, a, s) for a, s in zip(args, stacked)], axis=axis + 1), True


@register_converter(sh.split_p)
def _convert_split(n, args, stacked, indices, axis):
    return sh.split_p.bind(args[0], indices=indices, axis=axis + 1), True


@register_converter(sh.tile_p)
def _convert_tile(n, args, stacked, reps):
    return sh.tile_p.bind(args[0], reps=(1,) + tuple(reps)), True


@register_converter(sh.pad_p)
def _convert_pad(n, args, stacked, pad_width, value):
    return sh.pad_p.bind(args[0], pad_width=((0, 0),) + tuple(pad_width), value=value), True


__all__ = ["ops"]
