"""numpy's product and array-structure functions on Tensors: outer, inner, tensordot, kron,
vdot, cross, trace, diag, diagonal, tril, triu, meshgrid, the stacks and splits, repeat, the
flips, average, cov, corrcoef, ... (pforjac/ops/products.py, arrays.py, statistics.py).

Where pforjac's function already has numpy's signature and defaults it is registered as it
is; the others are wrapped here, refusing numpy's keywords pforjac has no use for by name.
"""
from __future__ import annotations

import numpy as np

from .. import ops as pj
from ..numpy_dispatch import _cast, _castable, _no_extra, implements
from ..ops._family import axis_index
from ..tensor import as_operands, as_tensor

# pforjac's own function has numpy's signature and defaults: registered as it is
for _fn in ("inner", "tensordot", "kron", "vdot", "cross", "diag", "diagonal", "diagflat",
            "tril", "triu", "atleast_1d", "atleast_2d", "atleast_3d", "dstack", "column_stack",
            "array_split", "vsplit", "hsplit", "dsplit", "repeat", "fliplr", "flipud", "rot90",
            "rollaxis", "append", "select", "real", "imag", "allclose", "array_equal", "delete",
            "resize", "block"):
    implements(getattr(np, _fn))(getattr(pj, _fn))
implements(np.conjugate)(pj.conjugate)      # a ufunc (np.conj is the same object)


@implements(np.outer)
def outer(a, b, out=None):
    _no_extra("outer", out)
    return pj.outer(a, b)


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _no_extra("trace", out)
    return pj.trace(_cast(a, dtype), offset, axis1, axis2)


@implements(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """np.meshgrid; `copy` is accepted and ignored (pforjac tensors are immutable)."""
    return pj.meshgrid(*xi, sparse=sparse, indexing=indexing)


def _stacked(name: str, fn):
    def stack(tup, *, dtype=None, casting="same_kind"):
        _no_extra(name, casting=None if casting == "same_kind" else casting)
        return fn([_cast(_castable(a, dtype, name), dtype) for a in tup] if dtype is not None
                  else tup)
    stack.__name__ = name
    return stack


implements(np.vstack)(_stacked("vstack", pj.vstack))
implements(np.hstack)(_stacked("hstack", pj.hstack))
if hasattr(np, "row_stack") and hasattr(np.row_stack, "_implementation"):   # numpy < 2
    implements(np.row_stack)(_stacked("row_stack", pj.vstack))


if hasattr(np, "unstack"):     # numpy >= 2.1
    @implements(np.unstack)
    def unstack(x, /, *, axis=0):
        return pj.unstack(x, axis)


@implements(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    return pj.broadcast_arrays(*args)


@implements(np.angle)
def angle(z, deg=False):
    return pj.angle(z, deg)


@implements(np.real_if_close)
def real_if_close(a, tol=100):
    """np.real_if_close: the real part when every imaginary part is below `tol` (machine
    epsilons when tol > 1, else an absolute bound, as numpy's), else `a`; the choice reads
    the values, so a traced complex `a` is refused."""
    a = as_tensor(a)
    if a.dtype.kind != "c":
        return a
    if a._trace is not None:
        raise TypeError("numpy.real_if_close chooses its result's dtype from the values, which a "
                        "traced tensor does not have; use numpy.real (or pforjac.real) instead")
    bound = tol * np.finfo(a.dtype).eps if tol > 1 else tol
    small = np.all(np.abs(pj.stop_gradient(pj.imag(a)).numpy()) < bound)
    return pj.real(a) if small else a


# -- numpy.linalg's array-API forms: over the last axes -------------------------------------
@implements(np.linalg.outer)
def linalg_outer(x1, x2, /):
    if np.ndim(x1) != 1 or np.ndim(x2) != 1:
        raise ValueError(f"numpy.linalg.outer takes 1-D tensors, got ranks {np.ndim(x1)} and "
                         f"{np.ndim(x2)}; numpy.outer flattens them")
    return pj.outer(x1, x2)


@implements(np.linalg.trace)
def linalg_trace(x, /, *, offset=0, dtype=None):
    return pj.trace(_cast(x, dtype), offset, -2, -1)


@implements(np.linalg.diagonal)
def linalg_diagonal(x, /, *, offset=0):
    return pj.diagonal(x, offset, -2, -1)


@implements(np.linalg.cross)
def linalg_cross(x1, x2, /, *, axis=-1):
    sizes = [np.shape(x)[axis_index(axis, np.ndim(x), "numpy.linalg.cross")] for x in (x1, x2)]
    if sizes != [3, 3]:
        raise ValueError(f"numpy.linalg.cross takes 3-vectors along axis {axis}, got lengths "
                         f"{sizes}; numpy.cross also takes 2-vectors")
    return pj.cross(x1, x2, axis=axis)


@implements(np.linalg.tensordot)
def linalg_tensordot(x1, x2, /, *, axes=2):
    return pj.tensordot(x1, x2, axes)


@implements(np.linalg.vecdot, *([np.vecdot] if hasattr(np, "vecdot") else []))
def vecdot(x1, x2, /, *, axis=-1):
    """The dot products of the vectors along `axis` of each operand (x1 conjugated), the
    other axes broadcast. As numpy's gufunc, `axis` is each operand's own axis and the two
    vectors must have one length (a product broadcast before the sum would pair them
    wrongly for operands of different ranks, and let a length-1 vector through)."""
    x1, x2 = as_operands((x1, x2))
    v1, v2 = (pj.moveaxis(x, axis_index(axis, x.ndim, "numpy.linalg.vecdot"), -1)
              for x in (pj.conj(x1), x2))                 # (numpy conjugates x1)
    if v1.shape[-1] != v2.shape[-1]:
        raise ValueError(f"numpy.linalg.vecdot: the vectors along axis {axis} have lengths "
                         f"{v1.shape[-1]} and {v2.shape[-1]} (shapes {tuple(x1.shape)} and "
                         f"{tuple(x2.shape)}); they must be equal")
    out = pj.sum(pj.multiply(v1, v2), axis=-1)
    return pj.cast(out, np.result_type(x1.dtype, x2.dtype))   # (numpy's: int32 stays int32)


@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=np._NoValue):
    return pj.average(a, axis, weights, returned, _keepdims(keepdims))


@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    if dtype is not None:
        m, y = _cast(m, dtype), None if y is None else _cast(y, dtype)
    return pj.cov(m, y, rowvar, bias, ddof, fweights, aweights)


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    if dtype is not None:
        x, y = _cast(x, dtype), None if y is None else _cast(y, dtype)
    return pj.corrcoef(x, y, rowvar)


@implements(np.ptp)
def ptp(a, axis=None, out=None, keepdims=np._NoValue):
    _no_extra("ptp", out)
    return pj.ptp(a, axis, _keepdims(keepdims))


def _keepdims(keepdims) -> bool:
    """numpy's `keepdims=np._NoValue` default is False; any other value is read as a bool
    (`keepdims=1` keeps the axes, as numpy's does)."""
    return keepdims is not np._NoValue and bool(keepdims)


@implements(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    result = pj.count_nonzero(as_tensor(a), axis, keepdims)
    eager = result._trace is None
    return int(result) if axis is None and not keepdims and eager else result
