"""numpy's dtypes, constants and dtype queries, for Tensors as for arrays (`pnp.float64` is
`np.float64`; `pnp.result_type(t, 1.0)` reads a Tensor's dtype)."""
from __future__ import annotations

import numpy as np

from ..numpy_dispatch import implements
from ..ops import cast
from ..tensor import Tensor

DTYPES = ["bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "intp", "uintp", "int_", "float16", "float32", "float64", "half", "single",
          "double", "longdouble", "complex64", "complex128", "csingle", "cdouble",
          "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact",
          "floating", "complexfloating", "dtype"]
CONSTANTS = ["pi", "e", "euler_gamma", "inf", "nan", "newaxis"]

__all__ = [*DTYPES, *CONSTANTS, "result_type", "can_cast", "finfo", "iinfo", "isdtype",
           "astype", "__array_namespace_info__"]

globals().update({name: getattr(np, name) for name in DTYPES + CONSTANTS})


def _dtype_of(value):
    return value.dtype if isinstance(value, Tensor) else value


@implements(np.result_type)
def result_type(*arrays_and_dtypes):
    return np.result_type(*(_dtype_of(v) for v in arrays_and_dtypes))


@implements(np.can_cast)
def can_cast(from_, to, casting="safe"):
    return np.can_cast(_dtype_of(from_), to, casting)


def finfo(type):
    return np.finfo(_dtype_of(type))


def iinfo(type):
    return np.iinfo(_dtype_of(type))


def isdtype(dtype, kind):
    return np.isdtype(dtype, kind)


class _Info:
    """The array API's inspection object (`xp.__array_namespace_info__()`): numpy's dtypes,
    one device, and no data-dependent output shapes (a traced value has no data)."""

    def capabilities(self):
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 64}

    def default_device(self):
        return "cpu"

    def devices(self):
        return ["cpu"]

    def default_dtypes(self, *, device=None):
        return np.__array_namespace_info__().default_dtypes(device=device)

    def dtypes(self, *, device=None, kind=None):
        return np.__array_namespace_info__().dtypes(device=device, kind=kind)


def __array_namespace_info__():
    return _Info()


@implements(np.astype)
def astype(x, dtype, /, *, copy=True, device=None):
    """numpy.astype (the array API's): `x` cast to `dtype`, differentiable between floats;
    `copy` does not matter for an immutable tensor."""
    if device not in (None, "cpu"):
        raise ValueError(f"astype: pforjac tensors live on 'cpu' only, got device={device!r}")
    if isinstance(dtype, (Tensor, np.ndarray)):       # (np.dtype would read its .dtype)
        raise TypeError(f"astype: dtype must be a dtype, got a {type(dtype).__name__}")
    return cast(x, dtype)
