"""numpy.linalg's functions that are composites of the dense primitives (dense_linalg.py)
and of elementwise ops and reductions: every rule comes from theirs.

inv solves against the identity; det is a primitive (`determinant.py`); pinv and lstsq go through
the svd (singular values under rcond times the largest are cut, as numpy does); norm is
sums, abs, sqrt and maxima, or singular values for the spectral and nuclear norms;
matrix_power squares repeatedly.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from ..tensor import as_operands, as_tensor, is_float
from .broadcasting import broadcast_to, reshape, sum
from ._matrix import check_square, mT, result_dtype
from .dense_linalg import inverse, svd_p
from .eigenvalues import eigvalsh, svdvals_p
from .determinant import det_p
from .elementwise import abs, cast, greater, not_equal, power, sqrt, where
from .elementwise import stop_gradient
from .complex_parts import abs_squared
from .linalg import matmul
from .pseudo_inverse import pinv_p
from .reductions import max, min
from .shape import expand_dims, transpose

__all__ = ["inv", "det", "pinv", "norm", "matrix_power", "lstsq", "multi_dot", "eigvalsh",
           "matrix_rank"]


def inv(a):
    """The inverse of a square matrix (stack), as `np.linalg.inv`; a singular matrix raises
    numpy's LinAlgError."""
    a = as_tensor(a)
    check_square("inv", a)
    return inverse(a)


def det(a):
    """The determinant of a square matrix (stack), as `np.linalg.det`; its derivatives (the
    cofactors and theirs, from an SVD) are exact at singular matrices too."""
    a = as_tensor(a)
    check_square("det", a)
    return det_p.bind(a)


def _reciprocal_above(s, cutoff):
    """1/s where s > cutoff, else 0 (the double where keeps 1/0 out of the gradient)."""
    keep = greater(s, cutoff)
    return where(keep, 1.0 / where(keep, s, 1.0), 0.0), keep


def pinv(a, rcond=None, hermitian: bool = False, *, rtol=np._NoValue):
    """The Moore-Penrose pseudo-inverse, as `np.linalg.pinv`: singular values at most rcond
    (default 1e-15; `rtol=None`: max(m, n) * eps) times the largest count as zero, one
    cutoff or one per matrix of a stack. Its derivative, a pseudo-inverse's of constant
    rank, holds at repeated singular values. (`hermitian` changes nothing here.)"""
    a = as_tensor(a)
    if rcond is None:
        rcond = 1e-15 if rtol is np._NoValue else _eps_rank(a) if rtol is None else rtol
    elif rtol is not np._NoValue:
        raise ValueError("pinv: rtol and rcond can't both be set")
    return pinv_p.bind(a, rcond=_nested_tuples(np.asarray(rcond, float)))


def _nested_tuples(values: np.ndarray):
    """A float, or nested tuples of them: an array as a hashable param."""
    return float(values) if values.ndim == 0 else tuple(_nested_tuples(v) for v in values)


def _eps_rank(a) -> float:
    """max(m, n) * eps: numpy's default relative cut of singular values."""
    return builtins.max(a.shape[-2:]) * float(np.finfo(result_dtype("linalg", a.dtype)).eps)


def matrix_rank(A, tol=None, hermitian: bool = False, *, rtol=None):
    """The number of singular values above tol (default: the largest times rtol, default
    max(m, n) * eps), as `np.linalg.matrix_rank`: an integer, with no derivative."""
    A = stop_gradient(as_tensor(A))
    if A.ndim < 2:
        return cast(greater(sum(cast(not_equal(A, 0), np.int64)), 0), np.int64)
    s = svd_p.bind(A)[1]
    if tol is None:
        rel = _eps_rank(A) if rtol is None else np.asarray(rtol)[..., None]
        tol = max(s, axis=-1, keepdims=True) * rel
    else:
        tol = np.asarray(tol)[..., None]
    return sum(cast(greater(s, tol), np.int64), axis=-1)


def matrix_power(a, n):
    """a raised to the integer power n (a stack of square matrices), as
    `np.linalg.matrix_power`: repeated squaring; n < 0 inverts first, n == 0 is the identity."""
    a = as_tensor(a)
    check_square("matrix_power", a)
    n = operator.index(n)
    if n == 0:
        return broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if n < 0:
        a, n = inverse(a), -n
    result, square = None, a
    while n:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if n:
            square = matmul(square, square)
    return result


# -- norm ------------------------------------------------------------------------------------
def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector or matrix norm, as `np.linalg.norm`. Vector ords (an int `axis`, or a 1-D x):
    None/2, 1, inf, -inf, 0 (the count of nonzeros) and any other p; matrix ords (a pair
    of axes, or a 2-D x): 'fro', 'nuc', 2, -2, 1, -1, inf, -inf. With ord and axis both
    None, the 2-norm of x flattened. The spectral and nuclear norms go through the svd."""
    x = as_tensor(x)
    if not is_float(x.dtype):
        x = cast(x, np.float64)
    if axis is None:
        if ord is None or (ord in ("f", "fro") and x.ndim == 2) or (ord == 2 and x.ndim == 1):
            out = sqrt(sum(abs_squared(x)))
            return reshape(out, (1,) * x.ndim) if keepdims else out
        axis = tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(operator.index(k) % x.ndim if x.ndim else k for k in axes)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2 and axes[0] != axes[1]:
        out = _matrix_norm(x, ord, axes)
        if keepdims:
            out = reshape(out, tuple(1 if k in axes else d for k, d in enumerate(x.shape)))
        return out
    raise ValueError(f"norm: axis must be an int or a pair of distinct axes of a "
                     f"{x.ndim}-D array, got {axis!r}")


def _vector_norm(x, ord, axis: int, keepdims: bool):
    if ord is None or ord == 2:
        return sqrt(sum(abs_squared(x), axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    if ord == np.inf:
        return max(abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return min(abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return sum(cast(not_equal(x, 0), abs(x).dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return sum(abs(x), axis=axis, keepdims=keepdims)
    return power(sum(power(abs(x), float(ord)), axis=axis, keepdims=keepdims), 1.0 / ord)


def _matrix_norm(x, ord, axes):
    row, col = axes
    if ord in (2, -2, "nuc"):
        rest = [k for k in range(x.ndim) if k not in axes]
        s = svdvals_p.bind(transpose(x, tuple(rest) + (row, col)))
        return {2: max, -2: min, "nuc": sum}[ord](s, axis=-1)
    if ord in (None, "fro", "f"):
        return sqrt(sum(abs_squared(x), axis=axes))
    if ord in (1, -1):          # the largest (smallest) column sum
        return (max if ord == 1 else min)(sum(abs(x), axis=row), axis=col - (col > row))
    if ord in (np.inf, -np.inf):   # the largest (smallest) row sum
        return (max if ord > 0 else min)(sum(abs(x), axis=col), axis=row - (row > col))
    raise ValueError(f"norm: invalid norm order {ord!r} for matrices")


# -- lstsq ----------------------------------------------------------------------------------
def lstsq(a, b, rcond=None):
    """Least squares, as `np.linalg.lstsq`: (x, residuals, rank, s) for a 2-D a and a 1-D
    or 2-D b, x = pinv(a) b with singular values at most rcond (default eps * max(m, n))
    times the largest cut. residuals are the squared norms of b - a x when m > n (an empty
    array otherwise, and, eagerly, when a is rank-deficient, as numpy); rank is an integer
    tensor. x's derivative is the pseudo-inverse's (of constant rank: repeated singular
    values are fine); s's needs distinct ones."""
    a, b = as_operands([a, b])                   # (Python numbers are weak: never float32)
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise np.linalg.LinAlgError(f"lstsq: needs a 2-D a and a b with as many rows; got "
                                    f"shapes {tuple(a.shape)} and {tuple(b.shape)}")
    (m, n), dtype = a.shape, result_dtype("lstsq", a.dtype, b.dtype)
    if rcond is None:
        rcond = float(np.finfo(dtype).eps) * builtins.max(m, n)
    s = svdvals_p.bind(a)
    rank = sum(cast(greater(s, rcond * max(s)), np.int64))
    column = reshape(b, (m, 1)) if b.ndim == 1 else b
    x = matmul(pinv_p.bind(a, rcond=float(rcond)), column)   # (its derivative: see pinv)
    residuals = np.zeros((0,), dtype)
    if m > n and (rank._trace is not None or int(rank.numpy()) == n):
        r = column - matmul(a, x)
        residuals = sum(r * r, axis=0)
    return (reshape(x, (n,)) if b.ndim == 1 else x), as_tensor(residuals), rank, s


# -- multi_dot -----------------------------------------------------------------------------
def multi_dot(arrays):
    """The product of a chain of matrices, as `np.linalg.multi_dot`: the first may be a
    vector (a row), the last a vector (a column); multiplied in the order of fewest flops."""
    arrays = as_operands(list(arrays))
    if len(arrays) < 2:
        raise ValueError("multi_dot: needs at least two arrays")
    first, last = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first:
        arrays[0] = reshape(arrays[0], (1, arrays[0].shape[0]))
    if last:
        arrays[-1] = reshape(arrays[-1], (arrays[-1].shape[0], 1))
    for k, x in enumerate(arrays):
        if x.ndim != 2:
            raise ValueError(f"multi_dot: array {k} has shape {tuple(x.shape)}; all but the "
                             f"first and last must be 2-D")
    out = _chain(arrays, _chain_splits([x.shape[0] for x in arrays] + [arrays[-1].shape[1]]),
                 0, len(arrays) - 1)
    shape = tuple(out.shape)
    return reshape(out, shape[1 if first else 0:len(shape) - (1 if last else 0)])


def _chain_splits(dims: list) -> dict:
    """The matrix-chain order: splits[(i, j)] = k, the last product being (i..k)(k+1..j)."""
    n = len(dims) - 1
    cost, splits = {(i, i): 0 for i in range(n)}, {}
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            cost[i, j], splits[i, j] = builtins.min(
                (cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                for k in range(i, j))
    return splits


def _chain(arrays, splits, i: int, j: int):
    if i == j:
        return arrays[i]
    k = splits[i, j]
    return matmul(_chain(arrays, splits, i, k), _chain(arrays, splits, k + 1, j))
