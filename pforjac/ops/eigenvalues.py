"""Eigenvalues and singular values alone, as primitives whose derivatives hold at ties.

`eigvalsh(a)`: its vjp is `eigh_lift(a, c) = V diag(c) V^T`, the gradient of sum(c * w),
which is a function of a alone wherever c is the same on each group of equal eigenvalues
(as it is for any symmetric function of the eigenvalues). Where eigenvalues are tied
(equal to rounding), the eigenbasis inside their eigenspace is free; a direction E splits
the tie along the eigenvectors of E's block in that eigenspace (first-order degenerate
perturbation theory), so the forward-mode rules rotate the tied block of V to them:
- eigvalsh's jvp is then the eigenvalues of the tied block of V^T E V, each group
  ascending: the exact one-sided directional derivative of the sorted eigenvalues;
- eigh_lift's jvp, in the rotated basis, has no term between tied eigenvectors, so the
  Hessian of a function of the eigenvalues alone, forward over reverse, is exact at ties
  (12 for sum(eigvalsh(X)**3) at I, along X[1,0]).
In reverse over reverse that term would need the Hessian of the function of the values,
which the rule does not see: it is NaN there, with a warning (`ties.tie_divide`). A c that
differs inside a tied group (the largest eigenvalue alone) has no gradient there: NaN too.

`svdvals(a)`: numpy's singular values, differentiated as the top eigenvalues of the
symmetric [[0, a], [a^T, 0]] (their eigenvalues are +-s and zeros), through the rules above.
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..core import defjvp_all, defvjp_all
from ..tensor import as_tensor
from ..warn import warn_wrong_result
from ._matrix import (check_matrix, check_square, diag_embed, diag_part, eye_like,
                      from_triangle, lapack, mT, onto_triangle, result_dtype)
from .broadcasting import sum, unbroadcast
from .dense_linalg import SVDResult, eigh_p, svd_p
from .elementwise import abs, cast, greater, less_equal, logical_and, where
from .linalg import matmul
from .reductions import max
from .shape import concat, expand_dims, flip
from .ties import tie_divide

__all__ = ["svd", "svdvals"]

_TIE = 16.0           # eigenvalues within 16 eps of the largest magnitude are tied
_SAME = 1e-8          # values of c within 1e-8 of its largest magnitude are the same


def _tied(w):
    """1 where w_i and w_j are equal to rounding (the diagonal included), else 0."""
    eps = float(np.finfo(np.dtype(w.dtype) if w.dtype.kind == "f" else np.float64).eps)
    scale = expand_dims(max(abs(w), axis=-1, keepdims=True), -1)
    return cast(less_equal(abs(expand_dims(w, -2) - expand_dims(w, -1)), _TIE * eps * scale),
                w.dtype)


def _rotated(w, et, vectors: bool):
    """The eigenvalues of each tied block of et (ascending in each block, blocks in w's
    order), and with `vectors` the block-diagonal rotation Q to their eigenvectors: eigh of
    et's tied blocks placed on distinct offsets, so that blocks keep apart and in order."""
    tie = _tied(w)
    below = sum((1.0 - tie) * cast(greater(expand_dims(w, -1), expand_dims(w, -2)), w.dtype),
                axis=-1)                                         # groups below each value
    blocks = et * tie
    big = 2.0 * sum(abs(blocks), axis=(-2, -1), keepdims=True)[..., 0] + 1.0
    offsets = below * big
    m = blocks + diag_embed(offsets)
    if not vectors:             # (eigh's vectors would warn in forward mode at their own ties)
        return eigvalsh_p.bind(m, lower=True) - offsets, None
    values, q = eigh_p.bind(m, lower=True)
    return values - offsets, q


def _same_in_ties(c, tie):
    """c_j - c_i, with differences at rounding level inside tied groups set to 0."""
    dc = expand_dims(c, -2) - expand_dims(c, -1)
    small = less_equal(abs(dc), _SAME * expand_dims(max(abs(c), axis=-1, keepdims=True), -1))
    return where(logical_and(greater(tie, 0.5), small), 0.0 * dc, dc)


def _gaps(w):
    scale = expand_dims(max(abs(w), axis=-1, keepdims=True), -1)
    return expand_dims(w, -2) - expand_dims(w, -1) + np.eye(w.shape[-1], dtype=w.dtype), scale


# -- eigh_lift: V diag(c) V^T --------------------------------------------------------------------
def _lift_impl(a, c, lower: bool, constant: tuple = (0, 0)):
    dtype = result_dtype("eigvalsh", a.dtype, c.dtype)
    w, v = np.linalg.eigh(np.asarray(a, np.float64), UPLO="L" if lower else "U")
    c = np.asarray(c, np.float64)
    tie = np.abs(w[..., None, :] - w[..., :, None]) <= _TIE * np.finfo(float).eps * \
        np.max(np.abs(w), axis=-1, keepdims=True)[..., None]
    dc = np.abs(c[..., None, :] - c[..., :, None])
    differs = tie & (dc > _SAME * np.max(np.abs(c), axis=-1, keepdims=True)[..., None])
    out = (v * c[..., None, :]) @ np.swapaxes(v, -1, -2)
    if np.any(differs):
        warn_wrong_result("eigvalsh: at repeated eigenvalues, the gradient of a function "
                          "that treats tied eigenvalues differently (one alone, as the "
                          "largest) is not defined, nor is a Hessian reverse over reverse "
                          "(the rule would need the Hessian of the function of the values); "
                          "the result holds NaN there. Functions of the eigenvalues alone "
                          "have exact Hessians forward over reverse: pj.hessian's "
                          "default for a function it can trace, or jacfwd(grad(f)).")
        out = np.where(np.any(differs, axis=(-2, -1))[..., None, None], np.nan, out)
    return out.astype(dtype)


def _lift_shape(a, c, lower: bool, constant: tuple = (0, 0)):
    check_square("eigvalsh", a)
    batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(c.shape[:-1]))
    return tuple(batch) + tuple(a.shape[-2:]), result_dtype("eigvalsh", a.dtype, c.dtype)


eigh_lift_p = core.new_primitive("eigh_lift", _lift_impl, _lift_shape)


def _lift_vjp(g, ans, a, c, lower, constant=(0, 0)):
    """`constant` (start, stop): those entries of c are constants, not functions of the
    eigenvalues (svdvals' padding zeros): between two of them the term is 0, tied or not."""
    w, v = eigh_p.bind(a, lower=lower)
    gt = matmul(mT(v), matmul(g, v))
    gaps, scale = _gaps(w)
    n = w.shape[-1]
    inside = (np.arange(n) >= constant[0]) & (np.arange(n) < constant[1])
    skip = np.maximum(np.eye(n), np.outer(inside, inside)).astype(gt.dtype)
    inner = _same_in_ties(c, _tied(w)) * tie_divide(gt * (1.0 - skip), gaps, scale, op="eigh")
    ga = onto_triangle(matmul(v, matmul(inner, mT(v))), lower)
    return [unbroadcast(ga, a.shape), unbroadcast(diag_part(gt), c.shape)]


def _lift_jvp(ts, ans, a, c, lower, constant=(0, 0)):
    (ta, tc), (w, v) = ts, eigh_p.bind(a, lower=lower)
    if ta is None:
        return matmul(v * expand_dims(tc, -2), mT(v))
    et = matmul(mT(v), matmul(from_triangle(ta, lower), v))
    _, q = _rotated(w, et, vectors=True)
    vq, etq = matmul(v, q), matmul(mT(q), matmul(et, q))
    gaps, scale = _gaps(w)
    gamma = tie_divide(_same_in_ties(c, _tied(w)), gaps, scale, op="eigh")
    inner = gamma * (etq - etq * eye_like(etq))
    if tc is not None:
        inner = inner + diag_embed(tc)
    return matmul(vq, matmul(inner, mT(vq)))


defvjp_all(eigh_lift_p, _lift_vjp)
defjvp_all(eigh_lift_p, _lift_jvp)


# -- eigvalsh ------------------------------------------------------------------------------------
def _eigvalsh_shape(a, lower: bool):
    check_square("eigvalsh", a)
    return tuple(a.shape[:-1]), result_dtype("eigvalsh", a.dtype)


def _eigvalsh_impl(a, lower: bool):
    """numpy's eigvalsh; NaN for a matrix holding NaN or inf (a derivative's NaN flows on
    instead of stopping LAPACK)."""
    bad = ~np.all(np.isfinite(a), axis=(-2, -1))
    if not np.any(bad):
        return np.linalg.eigvalsh(a, UPLO="L" if lower else "U")
    w = np.linalg.eigvalsh(np.where(bad[..., None, None], 0, a), UPLO="L" if lower else "U")
    return np.where(bad[..., None], np.nan, w)


eigvalsh_p = core.new_primitive("eigvalsh", lapack(_eigvalsh_impl, "eigvalsh"), _eigvalsh_shape)


def _eigvalsh_jvp(ts, ans, a, lower):
    w, v = eigh_p.bind(a, lower=lower)
    et = matmul(mT(v), matmul(from_triangle(ts[0], lower), v))
    return _rotated(w, et, vectors=False)[0]


defvjp_all(eigvalsh_p, lambda g, ans, a, lower: [onto_triangle(eigh_lift_p.bind(a, g, lower=lower),
                                                                lower)])
defjvp_all(eigvalsh_p, _eigvalsh_jvp)


def eigvalsh(a, UPLO: str = "L"):
    """The eigenvalues (ascending) of a symmetric matrix (stack), as `np.linalg.eigvalsh`;
    see this module for its derivatives at repeated eigenvalues."""
    a = as_tensor(a)
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigvalsh: UPLO must be 'L' or 'U', got {UPLO!r}")
    check_square("eigvalsh", a)
    return eigvalsh_p.bind(a, lower=UPLO == "L")


# -- svdvals: through [[0, a], [a^T, 0]] ---------------------------------------------------------
def _jordan_wielandt(a):
    (m, n), batch = a.shape[-2:], tuple(a.shape[:-2])
    zm, zn = np.zeros(batch + (m, m), a.dtype), np.zeros(batch + (n, n), a.dtype)
    return concat([concat([zm, a], -1), concat([mT(a), zn], -1)], -2)


def _svdvals_shape(a):
    check_matrix("svdvals", a)
    return tuple(a.shape[:-2]) + (min(a.shape[-2:]),), result_dtype("svdvals", a.dtype)


svdvals_p = core.new_primitive(
    "svdvals", lapack(lambda a: np.linalg.svd(a, compute_uv=False), "svdvals"), _svdvals_shape)


def _svdvals_vjp(g, ans, a):
    """The eigenvalues of [[0, a], [a^T, 0]] are -s, m + n - 2k zeros, s (ascending); c is
    g/2 on s and -g/2 on -s: sum(c * w) is then a function of the eigenvalues alone, odd in
    each pair, so ties of +0 and -0 (a zero singular value) are judged like any other."""
    (m, n), k = a.shape[-2:], ans.shape[-1]
    pad = np.zeros(tuple(g.shape[:-1]) + (m + n - 2 * k,), g.dtype)
    c = concat([-0.5 * g, pad, 0.5 * flip(g, -1)], -1)
    lift = eigh_lift_p.bind(_jordan_wielandt(a), c, lower=True, constant=(k, m + n - k))
    return [2.0 * mT(lift[..., m:, :m])]


def _svdvals_jvp(ts, ans, a):
    jw, k = _jordan_wielandt(a), ans.shape[-1]
    w, v = eigh_p.bind(jw, lower=True)
    et = matmul(mT(v), matmul(_jordan_wielandt(ts[0]), v))
    return flip(_rotated(w, et, vectors=False)[0][..., w.shape[-1] - k:], -1)


defvjp_all(svdvals_p, _svdvals_vjp)
defjvp_all(svdvals_p, _svdvals_jvp)


def svdvals(a):
    """The singular values (descending) of a matrix (stack), as `np.linalg.svdvals`; their
    derivatives are those of the top eigenvalues of [[0, a], [a^T, 0]] (see this module)."""
    a = as_tensor(a)
    check_matrix("svdvals", a)
    return svdvals_p.bind(a)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition of a matrix (stack), as `np.linalg.svd`: (U, S, Vh) with
    S descending, or S alone with `compute_uv=False`. Only the reduced factors exist here:
    pass `full_matrices=False` for a non-square matrix. Vector signs are LAPACK's;
    derivatives need distinct nonzero singular values."""
    a = as_tensor(a)
    check_matrix("svd", a)
    if hermitian:
        raise NotImplementedError("svd: hermitian=True is not supported; call svd without it "
                                  "(or eigh for a symmetric matrix)")
    m, n = a.shape[-2:]
    if full_matrices and compute_uv and m != n:
        raise NotImplementedError(f"svd: full_matrices=True on a {m}x{n} matrix needs an "
                                  f"orthogonal complement, which pforjac does not compute; "
                                  f"pass full_matrices=False (the reduced factors)")
    if not compute_uv:                          # (the values' derivatives hold at ties)
        return svdvals_p.bind(a)
    return SVDResult(*svd_p.bind(a))



# -- examples for the generated checks -----------------------------------------------------------
def _spectrum(rng, values):
    q, _ = np.linalg.qr(rng.standard_normal((len(values),) * 2))
    return (q * np.asarray(values)) @ q.T


core.defexamples(eigvalsh_p)(lambda rng: [
    core.Example(rng.uniform(-1.5, 1.5, (3, 3)), lower=True),
    core.Example(rng.uniform(-1.5, 1.5, (2, 3, 3)), lower=False)])
core.defexamples(eigh_lift_p)(lambda rng: [
    core.Example(_spectrum(rng, [0.5, -1.0, 2.0]), rng.uniform(-1, 1, (3,)), lower=True),
    core.Example(rng.uniform(-1.5, 1.5, (2, 3, 3)), rng.uniform(-1, 1, (2, 3)), lower=False)])
core.defexamples(svdvals_p)(lambda rng: [
    core.Example(rng.uniform(-1.5, 1.5, s)) for s in ((3, 2), (2, 3), (2, 3, 3))])
