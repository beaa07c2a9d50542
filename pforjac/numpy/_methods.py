"""The numpy methods of a Tensor that are numpy functions too (`t.clip(0, 1)` is
`np.clip(t, 0, 1)`, `t.cumsum()`, `t.argsort()`, ...): each is looked up in the dispatch
tables when read, so a method exists exactly when pforjac implements the function
(`hasattr(t, "cumprod")` says whether it does; reading one pforjac lacks raises the
namespace's AttributeError). Methods the ops define already (sum, reshape, transpose, ...)
are kept as they are.

`t.sort()` and `t.partition(k)` RETURN the new tensor, as a JAX array's do (numpy's work
in place and return None); `resize`, `itemset` and `setflags` refuse; `fill` and `put`
write into the tensor (pforjac.mutation_numpy replaces their refusal).
"""
from __future__ import annotations

import numpy as np

from .. import numpy_dispatch, ops as pj
from ..tensor import Tensor
from . import _namespace

_ATTRIBUTES = ("real", "imag")            # properties on ndarray, functions in numpy
_MUTATING = ("fill", "put", "resize", "itemset", "setflags", "setfield")


class _NumpyMethod:
    """`Tensor.<name>`: numpy's `np.<name>` as a method (or, for real/imag, a property)."""

    __slots__ = ("name", "attribute")

    def __init__(self, name: str):
        self.name, self.attribute = name, name in _ATTRIBUTES

    def __get__(self, t, owner=None):
        if t is None:
            return self
        fn = _namespace.implementation(getattr(np, self.name))
        if fn is None and self.attribute and t.dtype.kind != "c":   # a real tensor's parts
            return t if self.name == "real" else pj.zeros_like(t)
        if fn is None:
            raise AttributeError(f"Tensor.{self.name}: numpy.{self.name} is not implemented in "
                                 f"pforjac yet, so Tensors have no .{self.name}() method")
        return fn(t) if self.attribute else (lambda *args, **kwargs: fn(t, *args, **kwargs))


def _refuse(name: str):
    def method(self, *args, **kwargs):
        raise TypeError(f"Tensor.{name} would change the tensor in place, and pforjac tensors "
                        f"are immutable; build the new tensor with pforjac ops (pj.where, "
                        f"pforjac.numpy's functions) and use it instead")
    method.__name__ = name
    return method


def _take(self, indices, axis=None, out=None, mode="raise"):
    """ndarray.take: from the flattened tensor when `axis` is None, as numpy's."""
    return numpy_dispatch.FUNCTIONS[np.take](self, indices, axis, out, mode)


def _dot(self, b, out=None):
    """ndarray.dot: numpy's dot (for N-D operands a sum over self's last and b's
    second-to-last axis, not matmul)."""
    return numpy_dispatch.FUNCTIONS[np.dot](self, b, out)


def _flatten(self, order="C"):
    """ndarray.flatten: a 1-D tensor of the entries in `order` ("C", "F", "A", "K")."""
    return numpy_dispatch.reshaped(self, (-1,), order, "flatten")


def _reshape(self, *shape, order="C", copy=None):
    """ndarray.reshape: `t.reshape(2, 3)` or `t.reshape((2, 3))`, in `order`."""
    numpy_dispatch._no_extra("reshape", copy=copy)
    shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)) else shape
    return numpy_dispatch.reshaped(self, shape, order, "reshape")


_NUMPY_SIGNATURES = {"take": _take, "dot": _dot, "flatten": _flatten, "reshape": _reshape}


def install() -> None:
    for name, method in _NUMPY_SIGNATURES.items():   # the ops' own (pforjac's signatures)
        method.__name__ = method.__qualname__ = name   # give way to ndarray's
        setattr(Tensor, name, method)
    for name in dir(np.ndarray):
        if name.startswith("_") or hasattr(Tensor, name):
            continue
        if name in _MUTATING:
            setattr(Tensor, name, _refuse(name))
        elif callable(getattr(np, name, None)):
            setattr(Tensor, name, _NumpyMethod(name))
    Tensor.mT = property(lambda self: pj.swapaxes(self, -1, -2),
                         doc="The matrix transpose of the last two axes.")
    Tensor.itemsize = property(lambda self: self.dtype.itemsize)
    Tensor.nbytes = property(lambda self: self.dtype.itemsize * self.size)


install()
