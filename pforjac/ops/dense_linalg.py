"""Dense linear algebra primitives on stacks of matrices: solve, cholesky, eigh, svd, qr and
slogdet, with numpy.linalg's forwards (batched over leading axes, as numpy is).

The rules are the standard matrix-derivative results (M. Giles, "Collected matrix
derivative results for forward and reverse mode algorithmic differentiation", 2008; for
svd J. Townsend, "Differentiating the singular value decomposition", 2016), written in
pforjac's own ops so that they differentiate again (Hessians). The composites on top of
these (inv, det, pinv, norm, lstsq, ...) are in `matrix_functions.py`.

Conventions, numpy's: `cholesky` and `eigh` read one triangle of their input (the lower
by default) and take the matrix as the symmetric one that triangle defines, so their
gradients are zero in the other triangle. `eigh`'s vector derivatives need distinct
eigenvalues, `svd`'s distinct nonzero singular values (where they are used at a tie, the
result is NaN with a warning: `ties.tie_divide`), `qr`'s a full-rank matrix with at
least as many rows as columns (past a rank drop, NaN with a warning: `_rank_drop`).
float16 is computed in float32 and rounded back (LAPACK has no float16), integers and
bools in float64; complex matrices are refused.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import core
from ..core import defjvp_all, defvjp_all
from ..tensor import as_operands, as_tensor
from ._matrix import (check_matrix, check_square, diag_embed, diag_part, eye_like,
                      from_triangle, invertible, lapack, mT, onto_triangle,
                      result_dtype, solve_shape, spd_example, tril, triu)
from .broadcasting import broadcast_to, reshape, sum, unbroadcast
from .elementwise import abs, cast, greater, ones_like
from .reductions import max
from .ties import tie_divide
from .linalg import matmul
from .shape import expand_dims
from .triangular import triangular_solve

__all__ = ["solve", "cholesky", "eigh", "qr", "slogdet"]   # svd: in eigenvalues.py

EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")
SVDResult = namedtuple("SVDResult", "U S Vh")
QRResult = namedtuple("QRResult", "Q R")
SlogdetResult = namedtuple("SlogdetResult", "sign logabsdet")


def inverse(a):
    """inv(a), by solving against the identity (numpy's own way)."""
    return solve_p.bind(a, broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape))


# -- solve: a x = b, b a stack of matrices ------------------------------------------------------
def _solve_shape(a, b):
    return solve_shape("solve", a, b)


solve_p = core.new_primitive("solve", lapack(np.linalg.solve, "solve"), _solve_shape)


def _solve_vjp(g, x, a, b):
    gb = solve_p.bind(mT(a), g)
    return [unbroadcast(-matmul(gb, mT(x)), a.shape), unbroadcast(gb, b.shape)]


def _solve_jvp(ts, x, a, b):
    ta, tb = ts
    if ta is None:
        return solve_p.bind(a, tb)
    rhs = -matmul(ta, x) if tb is None else tb - matmul(ta, x)
    return solve_p.bind(a, rhs)


defvjp_all(solve_p, _solve_vjp)
defjvp_all(solve_p, _solve_jvp)


def solve(a, b):
    """The solution x of a @ x = b, as `np.linalg.solve`: `b` is a vector when it is 1-D,
    else a stack of matrices (..., n, k); batch axes broadcast. A singular `a` raises
    numpy's LinAlgError."""
    a, b = as_operands([a, b])                   # (Python numbers are weak: never float32)
    check_square("solve", a)
    if b.ndim == 1:
        if b.shape[0] != a.shape[-1]:
            raise ValueError(f"solve: b of shape {tuple(b.shape)} needs length {a.shape[-1]} "
                             f"for a of shape {tuple(a.shape)}")
        x = solve_p.bind(a, reshape(b, (b.shape[0], 1)))
        return reshape(x, tuple(x.shape[:-1]))
    _solve_shape(a, b)
    return solve_p.bind(a, b)


# -- cholesky: the lower factor of the matrix a's lower triangle defines -------------------------
cholesky_p = core.new_primitive(
    "cholesky", lapack(np.linalg.cholesky, "cholesky"),
    lambda a: (check_square("cholesky", a), (a.shape, result_dtype("cholesky", a.dtype)))[1])


def _phi(x):
    """The lower triangle with half the diagonal."""
    return tril(x) - 0.5 * (x * eye_like(x))


def _cholesky_vjp(g, L, a):
    p = _phi(matmul(mT(L), tril(g)))
    y = triangular_solve(L, p, lower=True, transpose=True)                  # L^-T p
    return [onto_triangle(mT(triangular_solve(L, mT(y), lower=True, transpose=True)), True)]


def _cholesky_jvp(ts, L, a):
    z = triangular_solve(L, from_triangle(ts[0], lower=True), lower=True)   # L^-1 ds
    return matmul(L, _phi(mT(triangular_solve(L, mT(z), lower=True))))      # L phi(L^-1 ds L^-T)


defvjp_all(cholesky_p, _cholesky_vjp)
defjvp_all(cholesky_p, _cholesky_jvp)


def cholesky(a, upper: bool = False):
    """The Cholesky factor of a symmetric positive definite matrix (stack), as
    `np.linalg.cholesky`: lower L with a = L L^T, reading a's lower triangle; with
    `upper=True`, U = L^T, reading a's upper triangle. A matrix that is not positive
    definite raises numpy's LinAlgError."""
    a = as_tensor(a)
    check_square("cholesky", a)
    return mT(cholesky_p.bind(mT(a))) if upper else cholesky_p.bind(a)


# -- eigh: eigenvalues (ascending) and eigenvectors of a symmetric matrix ------------------------
def _eigh_impl(a, lower):
    return tuple(np.linalg.eigh(a, UPLO="L" if lower else "U"))


def _eigh_shape(a, lower):
    check_square("eigh", a)
    dtype = result_dtype("eigh", a.dtype)
    return [(a.shape[:-1], dtype), (a.shape, dtype)]


eigh_p = core.new_primitive("eigh", lapack(_eigh_impl, "eigh"), _eigh_shape, multiple_results=True)


def _over_gaps(m, values, op: str):
    """m[..., i, j] / (values_j - values_i) off the diagonal, 0 on it; NaN at a tie where m is
    not 0 (`ties.tie_divide`)."""
    eye = eye_like(m)
    gaps = expand_dims(values, -2) - expand_dims(values, -1) + eye     # (no tie on the diagonal)
    scale = expand_dims(max(abs(values), axis=-1, keepdims=True), -1)
    return tie_divide(m - m * eye, gaps, scale, op=op)


def _eigh_vjp(g, ans, a, lower):
    (gw, gv), (w, v) = g, ans
    inner = diag_embed(gw) + _over_gaps(matmul(mT(v), gv), w, "eigh")
    return [onto_triangle(matmul(v, matmul(inner, mT(v))), lower)]


def _eigh_jvp(ts, ans, a, lower):
    w, v = ans
    m = matmul(mT(v), matmul(from_triangle(ts[0], lower), v))
    return [diag_part(m), matmul(v, _over_gaps(m, w, "eigh"))]


defvjp_all(eigh_p, _eigh_vjp)
defjvp_all(eigh_p, _eigh_jvp)


def eigh(a, UPLO: str = "L"):
    """Eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix (stack), as
    `np.linalg.eigh`: reads a's lower triangle (`UPLO="L"`) or upper ("U"). Each vector's
    sign is LAPACK's; the vectors' derivatives are NaN at repeated eigenvalues (use
    `eigvalsh` or `pj.sym_matrix_function` for what has a derivative there)."""
    a = as_tensor(a)
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    check_square("eigh", a)
    return EighResult(*eigh_p.bind(a, lower=UPLO == "L"))


# -- svd: a = U diag(S) Vh, reduced ------------------------------------------------------------
def _svd_impl(a):
    return tuple(np.linalg.svd(a, full_matrices=False))


def _svd_shape(a):
    check_matrix("svd", a)
    (m, n), batch = a.shape[-2:], tuple(a.shape[:-2])
    k, dtype = min(m, n), result_dtype("svd", a.dtype)
    return [(batch + (m, k), dtype), (batch + (k,), dtype), (batch + (k, n), dtype)]


svd_p = core.new_primitive("svd", lapack(_svd_impl, "svd"), _svd_shape, multiple_results=True)


def _over_values(m, s):
    """m / s along the last axis; 0 where s is 0 and m is too (a zero singular value of a
    non-square matrix whose vectors nothing uses), NaN where m is not."""
    scale = max(s, axis=-1, keepdims=True)
    return tie_divide(m, expand_dims(s, -2), expand_dims(scale, -1), op="svd")


def _svd_vjp(g, ans, a):
    (gu, gs, gvh), (u, s, vh) = g, ans
    v, gv = mT(vh), mT(gvh)
    row, col = expand_dims(s, -2), expand_dims(s, -1)
    j, k = matmul(mT(u), gu), matmul(vh, gv)
    inner = (diag_embed(gs) + _over_gaps(j - mT(j), s * s, "svd") * row
             + col * _over_gaps(k - mT(k), s * s, "svd"))
    ga = matmul(u, matmul(inner, vh))
    if u.shape[-2] > u.shape[-1]:             # U not square: the part of gu outside its span
        ga = ga + matmul(_over_values(gu - matmul(u, j), s), vh)
    if v.shape[-2] > v.shape[-1]:
        ga = ga + matmul(u, mT(_over_values(gv - matmul(v, k), s)))
    return [ga]


def _svd_jvp(ts, ans, a):
    (u, s, vh), da = ans, ts[0]
    v = mT(vh)
    row, col = expand_dims(s, -2), expand_dims(s, -1)
    da_v = matmul(da, v)
    dp = matmul(mT(u), da_v)
    du = matmul(u, _over_gaps(dp * row + col * mT(dp), s * s, "svd"))
    dv = matmul(v, _over_gaps(col * dp + mT(dp) * row, s * s, "svd"))
    if u.shape[-2] > u.shape[-1]:
        du = du + _over_values(da_v - matmul(u, dp), s)
    if v.shape[-2] > v.shape[-1]:
        dv = dv + _over_values(matmul(mT(da), u) - matmul(v, mT(dp)), s)
    return [du, diag_part(dp), mT(dv)]


defvjp_all(svd_p, _svd_vjp)
defjvp_all(svd_p, _svd_jvp)


# -- qr: a = Q R, reduced --------------------------------------------------------------------------
def _qr_shape(a):
    check_matrix("qr", a)
    (m, n), batch = a.shape[-2:], tuple(a.shape[:-2])
    k, dtype = min(m, n), result_dtype("qr", a.dtype)
    return [(batch + (m, k), dtype), (batch + (k, n), dtype)]


qr_p = core.new_primitive("qr", lapack(lambda a: tuple(np.linalg.qr(a, mode="reduced")), "qr"),
                          _qr_shape, multiple_results=True)


def _tall(a) -> None:
    if a.shape[-2] < a.shape[-1]:
        raise NotImplementedError(f"qr: its derivative needs at least as many rows as columns; "
                                  f"got shape {tuple(a.shape)} (differentiate the qr of the "
                                  f"transpose instead)")


def _rank_drop(touched, r):
    """0, or NaN (with a warning naming qr) where a zero on R's diagonal (a rank-deficient
    matrix) is reached: from that column k on, Q's columns are LAPACK's arbitrary completion
    and R[k, k] a |.| kink, and the rule divides by R[k, k]. `touched` (..., n) > 0 marks
    the columns of Q and of R a cotangent reaches; those before k are functions of a's
    first k columns alone, full rank, and the rule gives them right."""
    reach = matmul(triu(ones_like(r)), expand_dims(cast(greater(touched, 0.0), r.dtype), -1))
    scale = max(abs(r), axis=(-2, -1))[..., None]
    undefined = 0.0 * tie_divide(reach[..., 0], diag_part(r), scale, op="qr")
    return expand_dims(sum(undefined, axis=-1, keepdims=True), -1)


def _qr_vjp(g, ans, a):
    _tall(a)
    (gq, gr), (q, r) = g, ans
    m = matmul(gr, mT(r)) - matmul(mT(q), gq)
    c = m - tril(m - mT(m), -1)                 # m's lower triangle copied onto its upper
    ga = mT(triangular_solve(r, mT(gq + matmul(q, c)), lower=False))     # (gq + q c) R^-T
    return [ga + _rank_drop(sum(abs(gq), axis=-2) + sum(abs(gr), axis=-2), r)]


def _qr_jvp(ts, ans, a):
    _tall(a)
    (q, r), da = ans, ts[0]
    b = mT(triangular_solve(r, mT(da), lower=False, transpose=True))        # da R^-1
    c = matmul(mT(q), b)
    low = tril(c, -1)
    upper = c - (low - mT(low))                  # dR R^-1: c less its antisymmetric part
    moved = sum(abs(da), axis=(-2, -1))[..., None]      # any tangent moves Q's completion
    drop = _rank_drop(broadcast_to(moved, tuple(r.shape[:-1])), r)
    return [b - matmul(q, upper) + drop, matmul(upper, r) + drop]


defvjp_all(qr_p, _qr_vjp)
defjvp_all(qr_p, _qr_jvp)


def qr(a, mode: str = "reduced"):
    """QR decomposition of a matrix (stack), as `np.linalg.qr`: mode "reduced" gives (Q, R),
    "r" only R ("complete" equals "reduced" when a has no more rows than columns). Signs
    are LAPACK's (R's diagonal may be negative); derivatives need a full-rank a with at
    least as many rows as columns (at a rank-deficient a, those that reach Q's or R's
    columns from the rank drop on are NaN, with a warning)."""
    a = as_tensor(a)
    check_matrix("qr", a)
    if mode == "complete" and a.shape[-2] <= a.shape[-1]:
        mode = "reduced"
    if mode not in ("reduced", "r"):
        raise NotImplementedError(f"qr: mode={mode!r} is not supported on shape "
                                  f"{tuple(a.shape)}; use mode='reduced' or 'r'")
    q, r = qr_p.bind(a)
    return QRResult(q, r) if mode == "reduced" else r


# -- slogdet: sign and log|det| ----------------------------------------------------------------
def _slogdet_shape(a):
    check_square("slogdet", a)
    dtype = result_dtype("slogdet", a.dtype)
    return [(a.shape[:-2], dtype), (a.shape[:-2], dtype)]


slogdet_p = core.new_primitive("slogdet", lapack(lambda a: tuple(np.linalg.slogdet(a)), "slogdet"),
                               _slogdet_shape, multiple_results=True)
defvjp_all(slogdet_p, lambda g, ans, a: [expand_dims(expand_dims(g[1], -1), -1)
                                         * mT(inverse(a))])
defjvp_all(slogdet_p, lambda ts, ans, a: [None, sum(mT(inverse(a)) * ts[0], axis=(-2, -1))])


def slogdet(a):
    """(sign, log|det a|) of a square matrix (stack), as `np.linalg.slogdet`; the sign has
    no derivative, log|det| has a^-T."""
    a = as_tensor(a)
    check_square("slogdet", a)
    return SlogdetResult(*slogdet_p.bind(a))


# -- examples for the generated checks ------------------------------------------------------------
core.defexamples(solve_p)(lambda rng: [
    core.Example(invertible(rng, 3, 3), rng.uniform(-1, 1, (3, 2))),
    core.Example(invertible(rng, 2, 3, 3), rng.uniform(-1, 1, (3, 1))),
    core.Example(invertible(rng, 3, 3), rng.uniform(-1, 1, (2, 3, 2)))])
core.defexamples(cholesky_p)(lambda rng: [spd_example(rng, 3, 3), spd_example(rng, 2, 3, 3)])
core.defexamples(eigh_p)(lambda rng: [
    core.Example(rng.uniform(-1.5, 1.5, (3, 3)), lower=True),
    core.Example(rng.uniform(-1.5, 1.5, (2, 3, 3)), lower=False)])
core.defexamples(svd_p)(lambda rng: [
    core.Example(rng.uniform(-1.5, 1.5, s)) for s in ((3, 2), (2, 3), (2, 3, 3))])
core.defexamples(qr_p)(lambda rng: [
    core.Example(invertible(rng, *s)) for s in ((3, 2), (3, 3), (2, 3, 2))])
core.defexamples(slogdet_p)(lambda rng: [
    core.Example(invertible(rng, 3, 3)), core.Example(invertible(rng, 2, 3, 3, signs=(1, 1, 1)))])
