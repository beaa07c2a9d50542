"""`pforjac.scipy.linalg`: scipy.linalg's triangular and Cholesky solvers, and its matrix
functions of symmetric matrices (`expm`, `logm`, `sqrtm`, `funm`,
`fractional_matrix_power`) and `polar`, with scipy's names, signatures and defaults, on pforjac Tensors. They are composites of pforjac's ops (numpy's
LAPACK underneath), so they need no scipy; `overwrite_a`/`overwrite_b` change nothing
(tensors are immutable), `check_finite` checks concrete values (not symbolic ones).

Example:
    >>> import numpy as np, pforjac as pj
    >>> from pforjac.scipy.linalg import cho_factor, cho_solve
    >>> a = pj.constant(np.array([[4.0, 2.0], [2.0, 3.0]]))
    >>> cho_solve(cho_factor(a), np.array([1.0, 2.0])).numpy().round(4).tolist()
    [-0.125, 0.75]
"""
from __future__ import annotations

import numpy as np

from .. import ops as pj
from ..matrix_function import sym_matrix_function
from ..ops.dense_linalg import mT
from ..tensor import as_tensor

__all__ = ["solve_triangular", "cholesky", "cho_factor", "cho_solve", "expm", "logm", "sqrtm",
           "funm", "fractional_matrix_power", "polar"]


def _finite(check: bool, *xs) -> None:
    for x in map(as_tensor, xs) if check else ():
        if x._trace is None and not np.all(np.isfinite(x.numpy())):
            raise ValueError("array must not contain infs or NaNs (pass check_finite=False "
                             "to skip this check)")


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """x with T x = b for T the lower (`lower=True`) or upper triangle of a, as
    `scipy.linalg.solve_triangular` (`trans` 1/'T' solves T^T x = b)."""
    _finite(check_finite, a, b)
    return pj.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor, as `scipy.linalg.cholesky`: upper U with a = U^T U, reading a's
    upper triangle, by default; lower L reading its lower triangle with `lower=True`."""
    _finite(check_finite, a)
    return pj.cholesky(a, upper=not lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(c, lower) for `cho_solve`, as `scipy.linalg.cho_factor`; c's other triangle is zero
    (scipy leaves arbitrary values there)."""
    return cholesky(a, lower, overwrite_a, check_finite), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """x with a x = b from a's Cholesky factor (c, lower), as `scipy.linalg.cho_solve`."""
    c, lower = c_and_lower
    _finite(check_finite, c, b)
    if lower:                                   # a = L L^T
        return pj.solve_triangular(mT(c), pj.solve_triangular(c, b, lower=True), lower=False)
    return pj.solve_triangular(c, pj.solve_triangular(mT(c), b, lower=True), lower=False)


# -- matrix functions: symmetric matrices only (scipy's take general ones) ---------------------
def expm(A):
    """The matrix exponential of a symmetric matrix (stack), as `scipy.linalg.expm` there;
    derivatives of every order exact, at repeated eigenvalues too (`pj.sym_matrix_function`).
    A matrix that is not symmetric raises ValueError."""
    return sym_matrix_function(A, "exp")


def logm(A, disp=True):
    """The principal logarithm of a symmetric positive definite matrix, as
    `scipy.linalg.logm` (with `disp=False`, `(logm, 0.0)`: the error estimate is 0 here)."""
    out = sym_matrix_function(A, "log")
    return out if disp else (out, 0.0)


def sqrtm(A, disp=True, blocksize=64):
    """The principal square root of a symmetric positive semidefinite matrix, as
    `scipy.linalg.sqrtm` (`disp=False`: `(sqrtm, 0.0)`). Its derivative is infinite
    where an eigenvalue is 0."""
    out = sym_matrix_function(A, "sqrt")
    return out if disp else (out, 0.0)


def fractional_matrix_power(A, t):
    """A**t for a symmetric positive definite matrix A and a real t, as
    `scipy.linalg.fractional_matrix_power`."""
    return sym_matrix_function(A, f"power:{float(t)!r}")


def funm(A, func, disp=True):
    """func(A) = V func(W) V^T for a symmetric matrix A, as `scipy.linalg.funm`: `func` is
    an elementwise callable written with differentiable operations (np.exp, np.sin, pj.tanh
    on Tensors), or one of the names of `pj.sym_matrix_function`. `disp=False`: `(F, 0.0)`."""
    out = sym_matrix_function(A, func)
    return out if disp else (out, 0.0)


def polar(a, side="right"):
    """The polar decomposition, as `scipy.linalg.polar`: (u, p) with a = u p (`side="right"`,
    p = (a^T a)^(1/2)) or a = p u ("left", p = (a a^T)^(1/2)), u with orthonormal columns
    (rows). u = a (a^T a)^(-1/2) through the symmetric matrix functions, so its derivative is
    exact where singular values repeat (an orthogonal a); it is infinite (NaN) where a is
    rank-deficient, as u's is."""
    a = as_tensor(a)
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    gram = pj.matmul(mT(a), a) if side == "right" else pj.matmul(a, mT(a))
    gram = 0.5 * (gram + mT(gram))              # exactly symmetric
    p = sym_matrix_function(gram, "sqrt")
    root = sym_matrix_function(gram, "power:-0.5")
    return (pj.matmul(a, root), p) if side == "right" else (pj.matmul(root, a), p)
