"""Small helpers converters share: per-iteration ranks, aligning for broadcast."""
from __future__ import annotations

from .. import ops

__all__ = ["iter_ndim", "align", "to_stacked", "shift_axes"]


def iter_ndim(x, stacked: bool) -> int:
    """Rank of one iteration's value."""
    return x.ndim - 1 if stacked else x.ndim


def align(x, stacked: bool, rank: int):
    """Makes a stacked `x` broadcast against stacked values of per-iteration `rank`:
    (n, *s) becomes (n, 1, ..., 1, *s). Unstacked values broadcast as they are."""
    if not stacked or x.ndim - 1 == rank:
        return x
    return ops.reshape(x, (x.shape[0],) + (1,) * (rank - x.ndim + 1) + tuple(x.shape[1:]))


def to_stacked(n: int, x, stacked: bool):
    """An unstacked value repeated n times (a broadcast view, no copy)."""
    if stacked:
        return x
    return ops.broadcast_to(ops.expand_dims(x, 0), (n,) + tuple(x.shape))


def shift_axes(axes) -> tuple:
    """Axis numbers of one iteration, as axes of the stacked value."""
    return tuple(a + 1 for a in axes)
