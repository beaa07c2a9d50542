"""Converter of cumprod: the same scan, one axis further along."""
from __future__ import annotations

from ..ops.scans import cumprod_p
from ..pfor import register_converter


@register_converter(cumprod_p)
def _convert_cumprod(n, args, stacked, axis):
    return cumprod_p.bind(args[0], axis=axis + 1), True
