"""Helpers shared by op families: declaring elementwise primitives, broadcasting rules."""
from __future__ import annotations

import functools
import operator

import numpy as np

from .. import core

__all__ = ["broadcast_shapes", "elementwise_dtype", "declare_elementwise", "normalize_axes",
           "int_arg", "int_tuple"]


def broadcast_shapes(*shapes) -> tuple:
    full = [s for s in shapes if len(s)]
    if full and all(s == full[0] for s in full[1:]) and type(full[0]) is tuple:
        return full[0]              # (one shape and scalars: what a trace mostly meets)
    if not full:
        return ()
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


def declare_elementwise(name: str, impl, differentiable: bool = True, **facts) -> core.Primitive:
    """A broadcasting elementwise primitive: shape is the broadcast of the inputs (`facts`:
    the other keyword arguments of core.Primitive, `domain` among them)."""
    def shape_rule(*args, **params):
        return broadcast_shapes(*(a.shape for a in args)), elementwise_dtype(impl, args, params)
    return core.new_primitive(name, impl, shape_rule, differentiable=differentiable,
                              elementwise=True, **facts)


def int_arg(value, what: str) -> int:
    """An integer argument (an axis, a size, a dimension) as an int, or a TypeError naming
    `what`: floats, strings and None are refused, never truncated (numpy refuses them too)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} {value!r:.40}") \
            from None


def int_tuple(values, what: str) -> tuple:
    """An int or a sequence of them (a shape, repetitions) as a tuple of ints; see int_arg."""
    if type(values) is tuple:           # the common case, a tuple of ints, as it is
        for v in values:
            if type(v) is not int:
                break
        else:
            return values
    if isinstance(values, (str, bytes)) or values is None:
        raise TypeError(f"{what} must be an integer or a sequence of integers, got {values!r:.40}")
    try:
        return (operator.index(values),)
    except TypeError:
        pass
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{what} must be an integer or a sequence of integers, got "
                        f"{type(values).__name__} {values!r:.40}") from None
    return tuple(int_arg(v, f"{what}[{k}]") for k, v in enumerate(items))


AxisError = np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError   # numpy < 1.25


def axis_index(axis, ndim: int, op: str) -> int:
    """One axis (negative counts from the end) as a non-negative int, or numpy's AxisError
    (a ValueError and an IndexError) naming `op` (never wrapped around)."""
    a = int_arg(axis, f"{op}: axis")
    if not -ndim <= a < ndim:
        raise AxisError(f"{op}: axis {a} is out of range for a tensor of rank {ndim}")
    return a % ndim


def normalize_axes(axis, ndim: int, op: str = "") -> tuple:
    """`axis` (None, int or tuple) as a sorted tuple of non-negative ints; errors name `op`
    and the rank."""
    if axis is None:
        return tuple(range(ndim))
    prefix = f"{op}: " if op else ""
    out = []
    for a in int_tuple(axis, f"{prefix}axis"):
        if not -ndim <= a < ndim:
            raise AxisError(f"{prefix}axis {a} is out of range for a tensor of rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{prefix}repeated axis in {axis!r}")
    return tuple(sorted(out))

