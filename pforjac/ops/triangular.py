"""Triangular solves: x with T x = b or T^T x = b, T the lower or upper triangle of a matrix
(stack), the other triangle (and, with a unit diagonal, the diagonal) not read.

One matrix goes to LAPACK's triangular solver through scipy when scipy is installed; stacks
of matrices (or no scipy) to a substitution over the whole stack, one row at a time (numpy
has no triangular solver). Both take O(n^2) per right-hand side. cholesky's and qr's rules
solve with it too.
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..core import defjvp_all, defvjp_all
from ..tensor import as_tensor
from ._matrix import check_square, lapack, mT, solve_shape, tril, triu
from .broadcasting import reshape, unbroadcast
from .linalg import matmul

__all__ = ["solve_triangular"]


def _scipy_solver():
    try:
        from scipy.linalg import solve_triangular
    except ImportError:
        return None
    return solve_triangular


def _triangular_solve_impl(a, b, lower, transpose, unit_diagonal):
    scipy_solve = _scipy_solver() if a.ndim == 2 and b.ndim == 2 else None
    if scipy_solve is not None:
        return scipy_solve(a, b, trans=int(transpose), lower=lower, unit_diagonal=unit_diagonal,
                           check_finite=False)
    if transpose:
        a, lower = np.swapaxes(a, -1, -2), not lower
    return _substitution(a, b, lower, unit_diagonal)


def _substitution(t, b, lower: bool, unit_diagonal: bool) -> np.ndarray:
    """Forward (lower) or back substitution, one row at a time over whole stacks: LAPACK's
    triangular solve, also in where NaNs and signed zeros go, in O(n^2 k) per matrix."""
    n = t.shape[-1]
    batch = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    x = np.empty(batch + b.shape[-2:], np.result_type(t, b))
    if 0 in t.shape[-2:] or not x.size:
        return x
    diagonal = np.diagonal(t, axis1=-2, axis2=-1)
    if not unit_diagonal and (diagonal == 0).any():
        raise np.linalg.LinAlgError("singular matrix: a diagonal entry of the triangle is 0")
    with np.errstate(all="ignore"):            # (LAPACK's solver does not warn either)
        for i in range(n) if lower else range(n - 1, -1, -1):
            done = slice(0, i) if lower else slice(i + 1, n)
            row = b[..., i, :] - (t[..., i:i + 1, done] @ x[..., done, :])[..., 0, :]
            x[..., i, :] = row if unit_diagonal else row / diagonal[..., i, None]
    return x


def _triangular_solve_shape(a, b, lower, transpose, unit_diagonal):
    return solve_shape("solve_triangular", a, b)


triangular_solve_p = core.new_primitive(
    "triangular_solve", lapack(_triangular_solve_impl, "solve_triangular"), _triangular_solve_shape)


def read_part(g, lower: bool, unit_diagonal: bool):
    """The entries of a matrix (stack) a triangular solve reads: its triangle, less the
    diagonal when that is taken as ones."""
    part = tril(g) if lower else triu(g)
    return part - part * np.eye(g.shape[-1], dtype=g.dtype) if unit_diagonal else part


def triangular_solve(a, b, lower: bool, transpose: bool = False, unit_diagonal: bool = False):
    return triangular_solve_p.bind(a, b, lower=bool(lower), transpose=bool(transpose),
                                   unit_diagonal=bool(unit_diagonal))


def _triangular_solve_vjp(g, x, a, b, lower, transpose, unit_diagonal):
    gb = triangular_solve(a, g, lower, not transpose, unit_diagonal)
    ga = -matmul(x, mT(gb)) if transpose else -matmul(gb, mT(x))
    return [unbroadcast(read_part(ga, lower, unit_diagonal), a.shape), unbroadcast(gb, b.shape)]


def _triangular_solve_jvp(ts, x, a, b, lower, transpose, unit_diagonal):
    ta, rhs = ts
    if ta is not None:
        dt = read_part(ta, lower, unit_diagonal)
        term = matmul(mT(dt) if transpose else dt, x)
        rhs = -term if rhs is None else rhs - term
    return triangular_solve(a, rhs, lower, transpose, unit_diagonal)


defvjp_all(triangular_solve_p, _triangular_solve_vjp)
defjvp_all(triangular_solve_p, _triangular_solve_jvp)


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False):
    """x with T x = b (or T^T x = b, `trans` 1/'T' or 2/'C'), T the lower or upper triangle
    of a (the other is not read; with `unit_diagonal`, neither is the diagonal: ones), as
    `scipy.linalg.solve_triangular`; `b` a vector when 1-D, else (..., n, k)."""
    a, b = as_tensor(a), as_tensor(b)
    check_square("solve_triangular", a)
    if trans not in (0, 1, 2, "N", "T", "C"):
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    transpose = trans in (1, 2, "T", "C")
    if b.ndim == 1:
        if b.shape[0] != a.shape[-1]:
            raise ValueError(f"solve_triangular: b of shape {tuple(b.shape)} needs length "
                             f"{a.shape[-1]} for a of shape {tuple(a.shape)}")
        x = triangular_solve(a, reshape(b, (b.shape[0], 1)), lower, transpose, unit_diagonal)
        return reshape(x, tuple(x.shape[:-1]))
    _triangular_solve_shape(a, b, lower, transpose, unit_diagonal)
    return triangular_solve(a, b, lower, transpose, unit_diagonal)


# -- examples for the generated checks: diagonals far from zero in every stacked copy ---------
def _triangular_example(rng, a_shape, b_shape, **params):
    def draw():
        return (rng.uniform(-1, 1, a_shape) + 3 * np.eye(a_shape[-1]), rng.uniform(-1, 1, b_shape))
    a, b = draw()
    copies = [draw() for _ in range(3)]
    return core.Example(a, b, iterations=[[c[0] for c in copies], [c[1] for c in copies]], **params)


core.defexamples(triangular_solve_p)(lambda rng: [
    _triangular_example(rng, (3, 3), (3, 2), lower=True, transpose=False, unit_diagonal=False),
    _triangular_example(rng, (2, 3, 3), (3, 1), lower=False, transpose=True, unit_diagonal=False),
    _triangular_example(rng, (3, 3), (2, 3, 2), lower=True, transpose=True, unit_diagonal=True)])
