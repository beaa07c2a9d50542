"""Which positions of a tensor a numpy view covers, asked of numpy itself.

Each tensor other views are taken from gets an index proxy: an uninitialised byte array of
its size, shaped like it (one byte an element, so a byte offset is an element position;
its pages are never touched). A view-making call (`t[1:]`, `np.swapaxes`, `np.split`, a
reshape) is repeated on the proxies with the same arguments: numpy then says whether each
result is a view (it is owned by a proxy's buffer) and, through the view's offset and
strides, which flat positions of that tensor it covers, for every view numpy makes,
chains of views included. A copy owns its own buffer and links to nothing.
"""
from __future__ import annotations

import math

import numpy as np

from .tensor import Tensor, Variable

__all__ = ["new_proxy", "memory_order", "c_positions", "owner", "offsets", "bounds", "part_of",
           "index_value", "linkable", "Opaque"]


class Opaque(Exception):
    """An argument whose value a trace has not computed yet: numpy can't be asked."""


_PARTS = np.dtype([("real", np.uint8), ("imag", np.uint8)])


def new_proxy(shape: tuple, dtype, order: tuple | None = None) -> np.ndarray:
    """An index proxy for a tensor of `shape` and `dtype` (its base is the buffer views are
    owned by): a byte an element, two for a complex one, whose real and imaginary parts
    are then views of their own (`proxy["real"]`); laid out in memory with its axes in
    `order`, slowest first (None: C order)."""
    item = _PARTS if np.dtype(dtype).kind == "c" else np.uint8
    buffer = np.empty(math.prod(shape), item)
    if order is None:
        return buffer.reshape(shape)
    inner = buffer.reshape(tuple(shape[a] for a in order))
    return inner.transpose(tuple(np.argsort(order).tolist()))


def memory_order(a: np.ndarray) -> tuple | None:
    """The axes of `a` from the slowest-varying in memory to the fastest, if its elements
    fill their memory in that order and it is not C order; else None."""
    if a.ndim < 2 or a.flags.c_contiguous or min(a.strides) <= 0:
        return None
    order = tuple(int(k) for k in np.argsort([-s for s in a.strides], kind="stable"))
    return order if a.transpose(order).flags.c_contiguous else None


def c_positions(offsets: np.ndarray, shape: tuple, order: tuple | None) -> np.ndarray:
    """Memory offsets in a proxy of memory order `order` as flat C-order positions."""
    if order is None:
        return offsets
    index = np.unravel_index(offsets, tuple(shape[a] for a in order))
    inverse = np.argsort(order)
    return np.ravel_multi_index(tuple(index[k] for k in inverse), shape)


def part_of(view: np.ndarray, buffer: np.ndarray) -> str | None:
    """"real" or "imag" for a view of one part of a complex buffer's elements, else None."""
    if view.dtype == buffer.dtype:
        return None
    return _PARTS.names[_offset(view, buffer) % buffer.itemsize]


def owner(a) -> np.ndarray | None:
    """The array that owns `a`'s memory (None if `a` is not an array)."""
    if not isinstance(a, np.ndarray):
        return None
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _offset(view: np.ndarray, buffer: np.ndarray) -> int:
    return view.ctypes.data - buffer.ctypes.data


def offsets(view: np.ndarray, buffer: np.ndarray) -> np.ndarray:
    """The element offsets in `buffer` of the entries of `view` (a view of it), shaped
    like `view`."""
    pos = np.full((), _offset(view, buffer), np.intp)
    for n, stride in zip(view.shape, view.strides):
        pos = pos[..., None] + np.arange(n, dtype=np.intp) * stride
    return pos // buffer.itemsize


def bounds(view: np.ndarray, buffer: np.ndarray) -> tuple | None:
    """(lowest, highest) position `view` covers, or None if it is empty."""
    if view.size == 0:
        return None
    lo = hi = _offset(view, buffer)
    for n, stride in zip(view.shape, view.strides):
        lo, hi = lo + min(0, (n - 1) * stride), hi + max(0, (n - 1) * stride)
    return lo // buffer.itemsize, hi // buffer.itemsize


def index_value(value):
    """An argument other than the array (a key, split points, an axis) as numpy sees it:
    a Tensor by its value (Opaque if a trace has not computed it)."""
    if type(value) is tuple and all(map(_plain, value)):
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(index_value(v) for v in value)
    if isinstance(value, slice):
        return slice(*(index_value(v) for v in (value.start, value.stop, value.step)))
    if not isinstance(value, Tensor):
        return value
    if value._trace is None:
        return value.numpy()
    raise Opaque(value)


_PLAIN = (int, type(None), type(Ellipsis))


def _plain(k) -> bool:
    """Whether numpy reads index entry `k` as it is (no Tensor in it)."""
    return type(k) in _PLAIN or type(k) is slice and type(k.start) in _PLAIN and \
        type(k.stop) in _PLAIN and type(k.step) in _PLAIN


def linkable(t) -> bool:
    """Whether views of `t` follow it (a Variable assigns a new value instead)."""
    return isinstance(t, Tensor) and not isinstance(t, Variable) and 0 not in t.shape


def base_buffer(proxy: np.ndarray) -> np.ndarray:
    """The buffer a proxy (or a view of one) is owned by."""
    return owner(proxy)
