"""Operators and numpy-named methods on Tensor, delegating to the ops."""
from __future__ import annotations

import numpy as np

from .. import tensor
from ..tensor import Tensor


def _swap(fn):
    return lambda self, other: fn(other, self)


def install() -> None:
    from . import elementwise as ew, indexing, linalg, reductions as red, shape as sh
    from .elementwise import coerce
    from .ufuncs import floor_divide, remainder
    binary = {
        "add": ew.add, "sub": ew.subtract, "mul": ew.multiply, "truediv": ew.divide,
        "pow": ew.power, "matmul": linalg.matmul, "mod": remainder,
        "floordiv": floor_divide,
    }
    for name, fn in binary.items():
        setattr(Tensor, f"__{name}__", fn)
        setattr(Tensor, f"__r{name}__", _swap(fn))
    comparisons = {"lt": ew.less, "le": ew.less_equal, "gt": ew.greater, "ge": ew.greater_equal,
                   "eq": ew.equal, "ne": ew.not_equal}
    for name, fn in comparisons.items():
        setattr(Tensor, f"__{name}__", fn)
    Tensor.__and__ = _logical(ew.logical_and, "&")
    Tensor.__or__ = _logical(ew.logical_or, "|")
    Tensor.__invert__ = _logical(ew.logical_not, "~")
    Tensor.__neg__ = ew.neg
    Tensor.__pos__ = lambda self: self
    Tensor.__abs__ = ew.abs
    Tensor.__getitem__ = indexing.getitem
    tensor._ops.cast, tensor._ops.stop_gradient = ew.cast, ew.stop_gradient
    methods = {
        "exp": ew.exp, "log": ew.log, "log1p": ew.log1p, "expm1": ew.expm1, "sin": ew.sin,
        "cos": ew.cos, "tan": ew.tan, "tanh": ew.tanh, "sqrt": ew.sqrt, "square": ew.square,
        "abs": ew.abs, "sign": ew.sign, "sigmoid": ew.sigmoid, "relu": ew.relu,
        "sum": _reduction(red.sum, ew.cast), "mean": _reduction(red.mean, ew.cast),
        "max": _reduction(red.max), "min": _reduction(red.min), "prod": _reduction(red.prod, ew.cast),
        "logsumexp": red.logsumexp, "transpose": _transpose_method, "swapaxes": sh.swapaxes,
        "squeeze": sh.squeeze, "flatten": sh.flatten, "dot": linalg.matmul, "take": indexing.gather,
        "astype": ew.cast, "reshape": _reshape_method, "expand_dims": sh.expand_dims,
    }
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    Tensor.T = property(lambda self: sh.transpose(self))
    Tensor._coerce = coerce


def _logical(fn, symbol: str):
    """`&`, `|`, `~` on bool tensors: the logical op. numpy's operators are bitwise on
    integers (`~1 == -2`) and refuse floats; pforjac has no bitwise ops, so any operand
    that is not bool is refused rather than read as a truth value."""
    def operator(*operands):
        for v in operands:
            dtype = v.dtype if isinstance(v, Tensor) else np.asarray(v).dtype
            if dtype != np.bool_:
                raise TypeError(
                    f"`{symbol}` on an operand of dtype {np.dtype(dtype).name}: pforjac's `&`, "
                    f"`|` and `~` are logical and take bool tensors only (numpy's are bitwise "
                    f"on integers; pforjac has no bitwise ops); compare first (`x != 0`), or "
                    f"call pforjac.{fn.__name__}, which reads any dtype as truth values")
        return fn(*operands)
    operator.__name__ = fn.__name__
    return operator


def _reshape_method(self, *shape):
    from .shape import reshape
    return reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)


def _transpose_method(self, *axes):
    from .shape import transpose
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return transpose(self, axes or None)


def _reduction(fn, cast=None):
    """The method of reduction `fn`, as numpy's functions call it too (`np.sum(t)` calls
    `t.sum(axis=None, dtype=None, out=None)`): `dtype` (sum, mean, prod) reduces in that
    dtype, as numpy's does; `out` (np.sum(t, out=o) writes into a Tensor `o`) and numpy's
    other keywords are refused by name."""
    name = fn.__name__

    def method(self, axis=None, keepdims=False, *, out=None, **numpy_keywords):
        dtype = numpy_keywords.pop("dtype", None) if cast is not None else None
        if out is not None or numpy_keywords:
            given = (["out"] if out is not None else []) + sorted(numpy_keywords)
            raise TypeError(f"{name}: the method takes axis and keepdims"
                            f"{', dtype' if cast is not None else ''} only (got "
                            f"{', '.join(given)}); use the tensor it returns, or "
                            f"np.{name}(t, out=<a Tensor>)")
        if dtype is None:
            return fn(self, axis, keepdims)
        return cast(fn(cast(self, dtype), axis, keepdims), dtype)  # (int8 sums: int64)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    return method
