"""`pnp.r_` and `pnp.c_`: numpy's index-trick concatenators on Tensors.

numpy's `np.r_[t0, t1]` is an object whose `__getitem__` converts every item with
`np.array` (no dispatch reaches it), so Tensors in it lose their derivative; these build the
same result with pforjac's concatenate, differentiably. Supported items: Tensors, arrays,
numbers, slices (`1:4`, `0:1:5j` as numpy's arange/linspace) and a leading directive string
of integers (`'0,2,0'`: axis, minimum rank, where a 1-D item's axis goes), as numpy's.
"""
from __future__ import annotations

import numpy as np

from .. import ops as pj
from ..tensor import Tensor
from ._creation import array

__all__ = ["r_", "c_"]


class _Concatenator:
    def __init__(self, name: str, axis: int, ndmin: int, trans1d: int):
        self.name, self._defaults = name, (axis, ndmin, trans1d)

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self._defaults
        if items and isinstance(items[0], str):
            axis, ndmin, trans1d = _directive(self.name, items[0], (axis, ndmin, trans1d))
            items = items[1:]
        parts = [_raised(_item(self.name, k), ndmin, trans1d) for k in items]
        return pj.concat(parts, axis)

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"pforjac.numpy.{self.name}"


def _directive(name: str, text: str, defaults: tuple) -> tuple:
    try:
        given = [int(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"pforjac.numpy.{name}: the directive {text!r} is not supported; "
                         f"pass up to three integers 'axis,ndmin,trans1d' (numpy's 'r', 'c' "
                         f"matrix directives are not)") from None
    return tuple(given + list(defaults[len(given):]))


def _item(name: str, k) -> Tensor:
    if isinstance(k, slice):
        step = 1 if k.step is None else k.step
        start = 0 if k.start is None else k.start
        if isinstance(step, complex):
            return array(np.linspace(start, k.stop, int(abs(step))))
        return array(np.arange(start, k.stop, step))
    if isinstance(k, str):
        raise ValueError(f"pforjac.numpy.{name}: a directive string may only come first")
    return k if isinstance(k, Tensor) else array(k)


def _raised(t: Tensor, ndmin: int, trans1d: int) -> Tensor:
    """`t` with at least `ndmin` axes, its own axes placed as numpy's `trans1d` says."""
    if t.ndim >= ndmin:
        return t
    k2 = ndmin - t.ndim
    t = pj.reshape(t, (1,) * k2 + tuple(t.shape))
    if trans1d == -1:
        return t
    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
    axes = list(range(ndmin))
    return pj.transpose(t, axes[:k1] + axes[k2:] + axes[k1:k2])


r_ = _Concatenator("r_", 0, 1, -1)
c_ = _Concatenator("c_", -1, 2, 0)
