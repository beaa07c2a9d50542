"""Helpers shared by op families: declaring elementwise primitives, broadcasting rules."""
from __future__ import annotations

import functools

import numpy as np

from .. import core

__all__ = ["broadcast_shapes", "elementwise_dtype", "declare_elementwise", "normalize_axes"]


def broadcast_shapes(*shapes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError("shapes " + " and ".join(str(tuple(s)) for s in shapes)
                         + " are not broadcast-compatible") from None


@functools.lru_cache(maxsize=4096)
def _dtype_of(impl, dtypes: tuple, params: tuple):
    dummies = [np.ones((), dtype=d) for d in dtypes]
    with np.errstate(all="ignore"):
        return np.asarray(impl(*dummies, **dict(params))).dtype


def elementwise_dtype(impl, args, params) -> np.dtype:
    """The dtype numpy's forward gives, found by running it on 0-d inputs (cached)."""
    return _dtype_of(impl, tuple(a.dtype for a in args), tuple(sorted(params.items())))


def declare_elementwise(name: str, impl, differentiable: bool = True) -> core.Primitive:
    """A broadcasting elementwise primitive: shape is the broadcast of the inputs."""
    def shape_rule(*args, **params):
        return broadcast_shapes(*(a.shape for a in args)), elementwise_dtype(impl, args, params)
    return core.new_primitive(name, impl, shape_rule, differentiable=differentiable)


def axis_index(axis, ndim: int, op: str) -> int:
    """One axis (negative counts from the end) as a non-negative int, or a ValueError naming
    `op`, as numpy's AxisError does (never wrapped around)."""
    a = int(axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"{op}: axis {a} is out of range for a tensor of rank {ndim}")
    return a % ndim


def normalize_axes(axis, ndim: int) -> tuple:
    """`axis` (None, int or tuple) as a sorted tuple of non-negative ints; errors name the rank."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for a tensor of rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(out))
