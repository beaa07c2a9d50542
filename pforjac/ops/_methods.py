"""Operators and numpy-named methods on Tensor, delegating to the ops."""
from __future__ import annotations

from ..tensor import Tensor


def _swap(fn):
    return lambda self, other: fn(other, self)


def install() -> None:
    from . import elementwise as ew, indexing, linalg, reductions as red, shape as sh
    from .elementwise import coerce
    binary = {
        "add": ew.add, "sub": ew.subtract, "mul": ew.multiply, "truediv": ew.divide,
        "pow": ew.power, "matmul": linalg.matmul,
    }
    for name, fn in binary.items():
        setattr(Tensor, f"__{name}__", fn)
        setattr(Tensor, f"__r{name}__", _swap(fn))
    comparisons = {"lt": ew.less, "le": ew.less_equal, "gt": ew.greater, "ge": ew.greater_equal,
                   "eq": ew.equal, "ne": ew.not_equal}
    for name, fn in comparisons.items():
        setattr(Tensor, f"__{name}__", fn)
    Tensor.__and__ = ew.logical_and
    Tensor.__or__ = ew.logical_or
    Tensor.__invert__ = ew.logical_not
    Tensor.__neg__ = ew.neg
    Tensor.__pos__ = lambda self: self
    Tensor.__abs__ = ew.abs
    Tensor.__getitem__ = indexing.getitem
    methods = {
        "exp": ew.exp, "log": ew.log, "log1p": ew.log1p, "expm1": ew.expm1, "sin": ew.sin,
        "cos": ew.cos, "tan": ew.tan, "tanh": ew.tanh, "sqrt": ew.sqrt, "square": ew.square,
        "abs": ew.abs, "sign": ew.sign, "sigmoid": ew.sigmoid, "relu": ew.relu,
        "sum": red.sum, "mean": red.mean, "max": red.max, "min": red.min, "prod": red.prod,
        "logsumexp": red.logsumexp, "transpose": _transpose_method, "swapaxes": sh.swapaxes,
        "squeeze": sh.squeeze, "flatten": sh.flatten, "dot": linalg.matmul, "take": indexing.gather,
        "astype": ew.cast, "reshape": _reshape_method, "expand_dims": sh.expand_dims,
    }
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    Tensor.T = property(lambda self: sh.transpose(self))
    Tensor._coerce = coerce


def _reshape_method(self, *shape):
    from .shape import reshape
    return reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)


def _transpose_method(self, *axes):
    from .shape import transpose
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return transpose(self, axes or None)
