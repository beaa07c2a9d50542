"""The fuzzer's linear-algebra composites (inv, det, pinv, norm, matrix_power, lstsq,
multi_dot, eigvalsh) and numpy.linalg's routes to the primitives, appended to `ops.OPS`;
and einsum with '...'.

Matrices are made well conditioned inside the op from a (..., n, k) value, as ops.py's
primitive entries do: `_gram` (a a^T + n I, a spread diagonal where eigenvalues must be
distinct), `_tall` (a stacked over 2 I: full column rank, singular values >= 2). Outputs
are invariant to the gauge of eigen- and singular vectors (signs fixed by a
positive-diagonal convention, or reconstructions). In batch programs matrices sit on the
axes after the batch axis (rank >= 3). References: numpy.linalg on numpy (float16 in
float32, `ops._lin`), jax.numpy.linalg on JAX. Imports neither pforjac nor JAX.
"""
from __future__ import annotations

import numpy as np

from .ops import INTERNAL, _gram, _kinked, _lin
from .ops_numpy import _n, _same_or_const, custom


def _tall(xp, a):
    """a (..., n, k) over 2 I (k x k): (..., n + k, k), full column rank (special values
    zeroed first)."""
    a = xp.where(xp.abs(a) < 1e4, a, xp.zeros_like(a))
    k = a.shape[-1]
    eye = xp.broadcast_to((2 * np.eye(k)).astype(a.dtype), a.shape[:-2] + (k, k))
    return xp.concatenate([a, eye], axis=-2)


def _matrix_draw(least_rank=2, square=False, no_batch=False):
    def draw(d, k, s):
        if len(s) < (3 if d.batch else least_rank) or (no_batch and d.batch) or 0 in s:
            return None
        if square and s[-1] != s[-2]:
            return None
        return [{"v": k}], {}
    return draw


def _la(B, name, a, **kw):
    """B.xp.linalg.<name>(a, **kw); on numpy, float16 in float32 and rounded back."""
    if B.jax or a.dtype != np.float16:
        return getattr(B.xp.linalg, name)(a, **kw)
    out = getattr(np.linalg, name)(a.astype(np.float32), **kw)
    return tuple(o.astype(np.float16) for o in out) if isinstance(out, tuple) else out.astype(np.float16)


# -- inverses and determinants ------------------------------------------------------------------
custom("np_linalg_inv", lambda B, a: _lin(B, "inv", _gram(B.xp, a)),
       lambda pj, a: np.linalg.inv(_gram(pj, a)), _matrix_draw())
custom("pj_det", lambda B, a: _lin(B, "det", _gram(B.xp, a) * 0.5),
       lambda pj, a: pj.det(_gram(pj, a) * 0.5), _matrix_draw(), prims=("det",))
custom("np_linalg_slogdet", lambda B, a: _lin(B, "slogdet", _gram(B.xp, a))[1],
       lambda pj, a: np.linalg.slogdet(_gram(pj, a))[1], _matrix_draw())
custom("np_linalg_solve",
       lambda B, a, b: _lin(B, "solve", _gram(B.xp, a), b),
       lambda pj, a, b: np.linalg.solve(_gram(pj, a), b),
       lambda d, k, s: ([{"v": k}, d.const(list(s[:-1]) + [_n(d, 1, 2)])], {})
       if len(s) >= (3 if d.batch else 2) and 0 not in s else None)
custom("pj_pinv", lambda B, a: _lin(B, "pinv", _tall(B.xp, a)),
       lambda pj, a: pj.pinv(_tall(pj, a)), _matrix_draw(), prims=("pinv",))
custom("np_linalg_matrix_power",
       lambda B, a, n: _la(B, "matrix_power", _gram(B.xp, a) * 0.5 if n < 0 else a, n=n),
       lambda pj, a, n: np.linalg.matrix_power(_gram(pj, a) * 0.5 if n < 0 else a, n),
       lambda d, k, s: ([{"v": k}, int(d.rng.integers(-2, 4))], {})
       if len(s) >= (3 if d.batch else 2) and s[-1] == s[-2] and all(s) else None)


def _draw_lstsq(d, k, s):
    if d.batch or len(s) != 2 or 0 in s:
        return None
    rows = s[0] + s[1]
    return [{"v": k}, d.const([rows] if d.coin() else [rows, _n(d, 1, 2)])], {}


def _lstsq(B, a, b):
    if B.jax or a.dtype != np.float16:
        return B.xp.linalg.lstsq(_tall(B.xp, a), b)[0]
    return _lstsq(B, a.astype(np.float32), b.astype(np.float32)).astype(np.float16)


custom("pj_lstsq", _lstsq,
       lambda pj, a, b: pj.lstsq(_tall(pj, a), b)[0], _draw_lstsq)


def _draw_multi_dot(d, k, s):
    if d.batch or len(s) not in (1, 2) or 0 in s:
        return None
    shapes, inner = [], s[-1]
    for _ in range(_n(d, 1, 3)):
        out = _n(d, 1, 3)
        shapes.append([inner, out])
        inner = out
    if d.coin(0.3):
        shapes[-1] = shapes[-1][:1]         # the last a vector (a column)
    return [[{"v": k}] + [d.const(sh) for sh in shapes]], {}


custom("np_linalg_multi_dot", lambda B, arrays: B.xp.linalg.multi_dot(arrays),
       lambda pj, arrays: np.linalg.multi_dot(arrays), _draw_multi_dot)

# -- decompositions through numpy's names, gauge-free ------------------------------------------
custom("pj_eigvalsh", lambda B, a: _lin(B, "eigvalsh", _gram(B.xp, a, True)),
       lambda pj, a: pj.eigvalsh(_gram(pj, a, True)), _matrix_draw(), prims=("eigvalsh",))


def _eigh_fixed(xp, w, v):
    """Each eigenvector times the sign of its first entry, scaled by its eigenvalue."""
    return v * xp.sign(v[..., :1, :]) * w[..., None, :]


def _first_entries(B, a):
    """How far eigenvectors' first entries are from 0 (the sign's kink)."""
    v = np.linalg.eigh(_gram(np, np.asarray(a, np.float64), True))[1]
    return v[..., 0, :]


custom("np_linalg_eigh",
       _kinked(lambda B, a: _eigh_fixed(B.xp, *_lin(B, "eigh", _gram(B.xp, a, True))),
               _first_entries),
       lambda pj, a: _eigh_fixed(pj, *np.linalg.eigh(_gram(pj, a, True))), _matrix_draw())


def _svd_rebuilt(xp, u, s, vh):
    return xp.matmul(u * s[..., None, :], vh)


custom("np_linalg_svd_rebuilt",       # u diag(s) vh of the tall matrix, which is it again
       lambda B, a: _svd_rebuilt(B.xp, *_la(B, "svd", _tall(B.xp, a) * _ramp(B.xp, a), full_matrices=False)),
       lambda pj, a: _svd_rebuilt(pj, *np.linalg.svd(_tall(pj, a) * _ramp(pj, a), False)),
       _matrix_draw())
custom("np_linalg_svdvals", lambda B, a: _la(B, "svd", _tall(B.xp, a) * _ramp(B.xp, a),
                                              compute_uv=False),
       lambda pj, a: np.linalg.svd(_tall(pj, a) * _ramp(pj, a), compute_uv=False), _matrix_draw(),
       prims=("svdvals",))


def _ramp(xp, a):
    """Columns scaled 1, 1.6, 2.2: distinct singular values of the tall matrix."""
    k = a.shape[-1]
    return (1 + 0.6 * np.arange(k)).astype(a.dtype)


def _qr_fixed(xp, q, r):
    """r's rows and q's columns times the sign of r's diagonal: the unique QR with a positive
    diagonal, both factors."""
    d = xp.sign(xp.diagonal(r, axis1=-2, axis2=-1))
    return xp.concatenate([q * d[..., None, :], r * d[..., :, None]], axis=-2)


custom("np_linalg_qr", lambda B, a: _qr_fixed(B.xp, *_lin(B, "qr", _tall(B.xp, a))),
       lambda pj, a: _qr_fixed(pj, *np.linalg.qr(_tall(pj, a))), _matrix_draw())
custom("np_linalg_cholesky",
       lambda B, a, upper: _lin(B, "cholesky", _gram(B.xp, a)) if not upper else
       B.xp.swapaxes(_lin(B, "cholesky", _gram(B.xp, a)), -1, -2),
       lambda pj, a, upper: np.linalg.cholesky(_gram(pj, a), upper=upper),
       lambda d, k, s: ([{"v": k}, d.coin()], {}) if _matrix_draw()(d, k, s) else None)


# -- norms --------------------------------------------------------------------------------------
def _draw_norm(d, k, s):
    free = [j for j in range(len(s)) if not (d.batch and j == 0)]
    if not free or 0 in s:
        return None
    if len(free) >= 2 and d.coin():
        i, j = (int(x) for x in d.rng.choice(free, 2, replace=False))
        return [{"v": k}], {"ord": d.pick(["fro", "nuc", 2, 1, np.inf]), "axis": [i, j],
                            "keepdims": d.coin()}
    if not d.batch and d.coin(0.2):
        return [{"v": k}], {"ord": None, "axis": None, "keepdims": d.coin()}
    return [{"v": k}], {"ord": d.pick([None, 2, 1, 3, np.inf]), "axis": d.pick(free),
                        "keepdims": d.coin()}


def _norm_kinks(B, a, ord=None, axis=None, keepdims=False):
    """abs's kink (ord 1, inf), max's ties (inf, 2, the matrix 1 and inf), the norm's own at
    zero: the smallest of the distances that apply."""
    from .ops import _top_gap
    a = _spectral_safe(np, np.asarray(a, np.float64), ord if np.ndim(axis) else None)
    out = [float(np.min(np.abs(a), initial=np.inf))] if ord in (1, np.inf, "nuc") else []
    out.append(float(np.min(np.linalg.norm(a, axis=axis if axis is None or np.ndim(axis) == 0
                                           else tuple(axis), keepdims=False), initial=np.inf)))
    if ord in (np.inf, 1, 2) and axis is not None:
        sums = np.abs(a)
        out.append(_top_gap(B, sums.sum(axis=axis[1 if ord == np.inf else 0])
                            if np.ndim(axis) else sums, None))
    if ord in (2, "nuc") and np.ndim(axis):
        s = np.linalg.svd(np.moveaxis(a, tuple(axis), (-2, -1)), compute_uv=False)
        out.append(float(np.min(s, initial=np.inf)) if ord == "nuc" else
                   float(np.min(s[..., :1] - s[..., 1:2], initial=np.inf)))
    return min(out)


def _spectral_safe(xp, a, ord):
    """The spectral and nuclear norms go through an svd: special values zeroed first (LAPACK's
    svd of an infinity does not converge: numpy raises)."""
    return xp.where(xp.abs(a) < 1e4, a, xp.zeros_like(a)) if ord in (2, "nuc") else a


def _norm_ref(B, a, ord=None, axis=None, keepdims=False):
    """numpy's norm; the svd-based ones of float16 in float32 (LAPACK has no float16; the
    others are numpy's own float16 arithmetic, overflow included)."""
    spectral = ord in (2, "nuc") and np.ndim(axis)
    a = _spectral_safe(B.xp, a, ord if spectral else None)
    norm = _la if spectral else lambda B, name, a, **kw: B.xp.linalg.norm(a, **kw)
    return norm(B, "norm", a, ord=ord, axis=axis, keepdims=keepdims)


def _norm_pj(fn):
    """fn(pj): the norm function of a route."""
    return lambda pj, a, ord=None, axis=None, keepdims=False: fn(pj)(
        _spectral_safe(pj, a, ord if np.ndim(axis) else None), ord=ord, axis=axis,
        keepdims=keepdims)


custom("pj_norm", _kinked(_norm_ref, _norm_kinks), _norm_pj(lambda pj: pj.norm), _draw_norm,
       zeroing=True)
custom("np_linalg_norm", _kinked(_norm_ref, _norm_kinks), _norm_pj(lambda pj: np.linalg.norm),
       _draw_norm, zeroing=True)


# -- einsum with '...' --------------------------------------------------------------------------
def _draw_einsum_dots(d, k, s):
    lead = 1 if d.batch else 0         # (batch programs: '...' covers the batch axis)
    if len(s) < 1 + lead or 0 in s:
        return None
    forms = [("...i,i->...", [s[-1]]), ("...i->...", None), ("...i,...i->...", "same")]
    if len(s) >= 2 + lead:
        forms += [("...ij->...ji", None), ("...ij,jk->...ik", [s[-1], _n(d)]),
                  ("...ij,...ij->...i", "same")]
    if not d.batch:
        forms += [("i...->...", None), ("i...,i->...", [s[0]])]
    spec, other = d.pick(forms)
    if other is None:
        return [spec, {"v": k}], {}
    return [spec, {"v": k}, _same_or_const(d, k, s) if other == "same" else d.const(other)], {}


custom("np_einsum_ellipsis", lambda B, spec, *xs: B.xp.einsum(spec, *xs),
       lambda pj, spec, *xs: np.einsum(spec, *xs), _draw_einsum_dots)
custom("pj_einsum_ellipsis", lambda B, spec, *xs: B.xp.einsum(spec, *xs),
       lambda pj, spec, *xs: pj.einsum(spec, *xs), _draw_einsum_dots)


# -- degenerate points: repeated eigenvalues, singular matrices --------------------------------
def _tied(xp, a):
    """2 I + t t^T / n, t = tanh of a's first column: the eigenvalue 2 repeated n - 1 times,
    the others in [2, 3] (no overflow in expm)."""
    t = xp.tanh(xp.where(xp.abs(a) < 1e4, a, xp.zeros_like(a))[..., :, :1])
    n = a.shape[-2]
    return 2 * np.eye(n).astype(a.dtype) + xp.matmul(t, xp.swapaxes(t, -1, -2)) / n


def _expm_ref(B, s):
    if B.jax:
        import jax.scipy.linalg as jsl
        return jsl.expm(s)
    import scipy.linalg as sl
    return sl.expm(s.astype(np.float32) if s.dtype == np.float16 else s).astype(s.dtype)


def _singular(xp, a):
    """tanh(a) (square) with its last row a copy of its first: det exactly 0 (LU meets an
    exact zero), entries bounded by 1 so that rounding in float32 stays small; the gradient
    is the cofactor matrix, which is not 0 (for n >= 2)."""
    t = xp.tanh(xp.where(xp.abs(a) < 1e4, a, xp.zeros_like(a)))
    if a.shape[-1] < 2:
        return t
    return xp.concatenate([t[..., :-1, :], t[..., :1, :]], axis=-2)


def _pj_expm(pj, s):
    from pforjac.scipy.linalg import expm
    return expm(s)


custom("pj_expm_tied", lambda B, a: _expm_ref(B, _tied(B.xp, a)),
       lambda pj, a: _pj_expm(pj, _tied(pj, a)), _matrix_draw(), prims=("sym_funm",))
custom("pj_det_singular", lambda B, a: _lin(B, "det", _singular(B.xp, a)),
       lambda pj, a: pj.det(_singular(pj, a)), _matrix_draw(square=True))

INTERNAL.update({
    "cofactor": "det's gradient and its derivatives: the backward of every det line",
    "eigh_lift": "the gradient of eigvalsh and of svdvals: every such line's backward",
    "tie_divide": "the rules of eigh and svd (their vectors' derivatives)",
})
