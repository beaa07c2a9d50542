"""The ops every broadcasting rule needs: reshape, broadcast_to, sum, and unbroadcast.

They come first because their rules need each other (sum's gradient is a broadcast,
a broadcast's is a sum) and every other family's rules need them: the elementwise
ops' gradients reduce a broadcast operand back with `unbroadcast`. Also here: the
declaration of the reduction family (`reduction`), which sum opens and reductions.py
continues. The op modules build on this one in the order broadcasting, elementwise,
indexing, shape, reductions, linalg, nn, so none imports another in a cycle.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import core
from ..core import defjvp, defvjp
from ..tensor import Tensor, as_tensor, unchanged
from ._family import int_tuple, normalize_axes
from ._kernels import sum_is_plain, sum_short_axis

__all__ = ["reshape", "broadcast_to", "sum", "unbroadcast", "restore_reduced", "REDUCTIONS"]


def _resolve_shape(shape, size: int) -> tuple:
    shape = int_tuple(shape, "reshape: shape")
    if shape.count(-1) > 1:
        raise ValueError(f"only one dimension of the new shape {shape} can be -1")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape {size} elements into shape {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if math.prod(shape) != size:
        raise ValueError(f"cannot reshape {size} elements into shape {shape}")
    return shape


# -- reshape -----------------------------------------------------------------------
def _reshape_impl(x, shape):
    """np.reshape, through the method of a numpy array or scalar: 0.15 us against
    np.reshape's 0.7, which generated code pays per reshape."""
    return x.reshape(shape) if isinstance(x, _NUMPY_VALUES) else np.reshape(x, shape)


_NUMPY_VALUES = (np.ndarray, np.generic)


reshape_p = core.new_primitive("reshape", _reshape_impl,
                               lambda x, shape: (_resolve_shape(shape, _size(x)), x.dtype),
                               layout="following", may_alias=True)
reshape_p.plain_forward = lambda x, c_ordered, shape: f"x.reshape({tuple(shape)!r})"
defvjp(reshape_p, lambda g, ans, x, shape: reshape(g, x.shape))
defjvp(reshape_p, lambda t, ans, x, shape: reshape(t, shape))


def _size(x) -> int:
    return math.prod(x.shape)


def reshape(x, shape):
    """Reshapes `x` (one dimension may be -1), as `np.reshape`."""
    x = as_tensor(x)
    shape = _resolve_shape(shape, x.size)
    if shape == tuple(x.shape) and unchanged(x):
        return x
    return reshape_p.bind(x, shape=shape)


# -- broadcast_to ----------------------------------------------------------------------
def _broadcast_to_shape(x, shape):
    if np.broadcast_shapes(x.shape, shape) != tuple(shape):
        raise ValueError(f"cannot broadcast shape {x.shape} to {shape}")
    return tuple(shape), x.dtype


broadcast_to_p = core.new_primitive("broadcast_to", lambda x, shape: np.broadcast_to(x, shape),
                                    _broadcast_to_shape, layout="following", may_alias=True)
defvjp(broadcast_to_p, lambda g, ans, x, shape: unbroadcast(g, x.shape))
defjvp(broadcast_to_p, lambda t, ans, x, shape: broadcast_to(t, shape))


def broadcast_to(x, shape):
    x = as_tensor(x)
    shape = int_tuple(shape, "broadcast_to: shape")
    if shape == tuple(x.shape) and unchanged(x):
        return x
    return broadcast_to_p.bind(x, shape=shape)


REDUCTIONS: dict[str, core.Primitive] = {}


def _reduction_shape(shape: tuple, axes, keepdims) -> tuple:
    if keepdims:
        return tuple(1 if k in axes else d for k, d in enumerate(shape))
    return tuple(d for k, d in enumerate(shape) if k not in axes)


@functools.lru_cache(maxsize=None)
def _result_dtype(impl, dtype: np.dtype) -> np.dtype:
    """numpy's own result dtype (sum of int32 or bool is int64, max of bool is bool)."""
    return impl(np.zeros(1, dtype)).dtype


def _in_c_order(impl):
    """numpy's summation order follows the memory layout (pairwise along a contiguous axis,
    one by one along a strided one), so a transposed view rounds differently from its
    contiguous copy. Reducing C-ordered data makes the order a function of the shape
    alone, so a chunk of one iteration rounds as the whole batch does (parallel_iterations
    never changes a result's bits). Structured pfor can still differ from the while-loop in
    the last bits: it sums a one-hot block without the zeros around it."""
    def reduce(x, axis=None, keepdims=False):
        x = np.asarray(x)
        return impl(x if x.flags.c_contiguous else x.copy(order="C"), axis=axis, keepdims=keepdims)
    return reduce


def reduction(name: str, impl, layout: str, identity: bool = True) -> core.Primitive:
    """A reduction over `axes` (sorted non-negative ints) with `keepdims`; without an
    `identity` (max, min) an empty axis is refused."""
    def shape_rule(x, axes, keepdims):
        for a in axes:
            if not 0 <= a < x.ndim:
                raise ValueError(f"axis {a} is out of range for rank {x.ndim}")
        if not identity and any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"{name} of an empty axis has no identity")
        return _reduction_shape(x.shape, axes, keepdims), _result_dtype(impl, np.dtype(x.dtype))
    prim = core.new_primitive(name, lambda x, axes, keepdims: impl(x, axis=axes, keepdims=keepdims),
                              shape_rule, layout=layout)
    REDUCTIONS[name] = prim
    return prim


def reduce_source(reduce: str, axes: tuple, keepdims: bool) -> str:
    """A `plain_forward` call of `reduce` (np.add.reduce, ...) on `x`: one axis as an int (a
    tuple costs numpy 0.9 us more), keepdims only when true."""
    axis = axes[0] if len(axes) == 1 else tuple(axes)
    return f"{reduce}(x, {axis!r}{', keepdims=True' if keepdims else ''})"


def restore_reduced(g, x_shape, axes, keepdims):
    """Broadcasts a reduction's cotangent `g` back to the input's shape (no reshape needed
    when the reduced axes lead: broadcasting adds them, as for a full reduction)."""
    if not keepdims and tuple(axes) != tuple(range(len(axes))):
        g = reshape(g, _reduction_shape(x_shape, axes, True))
    return broadcast_to(g, x_shape)


_sum = sum_short_axis          # np.sum, bit for bit; faster over one short axis (see there)


sum_p = reduction("sum", _in_c_order(_sum), layout="free")
sum_p.plain_forward = lambda x, c_ordered, axes, keepdims: (
    reduce_source("np.add.reduce", axes, keepdims)
    if c_ordered and x.ndim and sum_is_plain(x.shape, x.dtype, axes) else None)
defvjp(sum_p, lambda g, ans, x, axes, keepdims: restore_reduced(g, x.shape, axes, keepdims))
defjvp(sum_p, lambda t, ans, x, axes, keepdims: sum_p.bind(t, axes=axes, keepdims=keepdims))


def _reduce(prim, x, axis, keepdims):
    x = as_tensor(x)
    return prim.bind(x, axes=normalize_axes(axis, x.ndim, prim.name), keepdims=bool(keepdims))


def sum(x, axis=None, keepdims=False):
    """Sum over `axis` (None, an int or a tuple), as `np.sum`."""
    return _reduce(sum_p, x, axis, keepdims)


def unbroadcast(g: Tensor, shape: tuple) -> Tensor:
    """Sums `g` over the axes along which an operand of `shape` was broadcast."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + k for k, d in enumerate(shape)
                                      if d == 1 and g.shape[lead + k] != 1)
    return reshape(sum(g, axis=axes), shape) if axes else reshape(g, shape)
