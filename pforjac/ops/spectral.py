"""Functions of symmetric matrices, f(S) = V f(W) V^T, with derivatives of every order that
are right at repeated eigenvalues.

One primitive, `sym_funm(S, E1, ..., Ek; f)`, is the k-th Frechet derivative
D^k f(S)[E1, ..., Ek] (k = 0: f(S) itself). In S's eigenbasis (S = V diag(w) V^T,
Et = V^T E V) it is the Daleckii-Krein formula

    (V^T D^k f(S)[E1..Ek] V)[a, b] = sum over orderings s of the Es, and over i1..i(k-1), of
        f[w_a, w_i1, ..., w_b] * Es1[a, i1] * Es2[i1, i2] * ... * Esk[i(k-1), b],

with f[...] the divided differences of f over the eigenvalues. Where eigenvalues are
equal or close, a divided difference is a Taylor series of f's derivatives about their
mean (f[x, x] = f'(x)), never a quotient of tiny differences; so the rule has no
1/(w_i - w_j) and holds at ties. Its derivatives are the same primitive with one more
direction, so Hessians and higher derivatives are exact too. The formula holds for any
directions E (not only symmetric ones) at a symmetric S: the derivative is that of the
general matrix function (scipy's expm, logm, sqrtm), restricted to symmetric points.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import core
from ..core import defjvp_all, defvjp_all
from ..tensor import as_tensor
from ._matrix import check_square, mT, result_dtype
from ._scalar_functions import function_name, scalar_function
from .broadcasting import unbroadcast

__all__ = ["sym_funm"]

_TAYLOR = 1e-3       # a relative spread of the points below which f[...] is a Taylor series
_ASYMMETRY = 1e-4    # relative asymmetry up to which S is a symmetric matrix plus a direction
_SERIES = 3          # terms of the Taylor series in that direction (error ~ asymmetry^4)


# -- divided differences -------------------------------------------------------------------
def divided_differences(fn, w: np.ndarray, k: int) -> np.ndarray:
    """D[..., i0, ..., ik] = f[w_i0, ..., w_ik] for ascending w of shape (..., n)."""
    table = fn.deriv(w, 0)
    for order in range(1, k + 1):
        table = _next_order(fn, w, table, order)
    return table


def _next_order(fn, w, prev, k: int) -> np.ndarray:
    """Order k from order k - 1: for each index tuple sorted (so its points ascend),
    (f[x1..xk] - f[x0..x(k-1)]) / (xk - x0) if the points are spread, else a Taylor series."""
    n = w.shape[-1]
    idx = np.sort(np.indices((n,) * (k + 1)).reshape(k + 1, -1), axis=0)
    strides = n ** np.arange(k - 1, -1, -1)
    flat = prev.reshape(prev.shape[:prev.ndim - k] + (-1,))
    hi, lo = flat[..., strides @ idx[1:]], flat[..., strides @ idx[:-1]]
    x = w[..., idx]                                            # (..., k + 1, n^(k+1))
    spread = x[..., -1, :] - x[..., 0, :]
    scale = np.maximum(np.abs(x[..., -1, :]), np.abs(x[..., 0, :]))
    near = spread <= _TAYLOR * scale
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(near, 0.0, (hi - lo) / np.where(near, 1.0, spread))
    if np.any(near):
        out[near] = _taylor(fn, np.moveaxis(x, -2, -1)[near], k)
    return out.reshape(out.shape[:-1] + (n,) * (k + 1))


def _taylor(fn, x: np.ndarray, k: int) -> np.ndarray:
    """f[x0..xk] = sum_j f^(k+j)(m) / (k+j)! h_j(x - m), m the points' mean, h_j the
    complete homogeneous symmetric polynomials (Newton's identities from power sums)."""
    m = x.mean(axis=-1)
    y = x - m[:, None]
    p = [None] + [np.sum(y ** r, axis=-1) for r in (1, 2, 3)]
    h = [np.ones_like(m)]
    for j in (1, 2, 3):
        h.append(sum(p[i] * h[j - i] for i in range(1, j + 1)) / j)
    out = fn.deriv(m, k) / math.factorial(k)
    for j in (2, 3):
        if np.any(h[j] != 0):
            out = out + fn.deriv(m, k + j) / math.factorial(k + j) * h[j]
    return out


# -- the multilinear form in the eigenbasis --------------------------------------------------
def _frechet(table: np.ndarray, dirs: list) -> np.ndarray:
    """sum over orderings of `dirs` of the path products with the divided differences."""
    k = len(dirs)
    if k == 0:
        return table[..., :, None] * np.eye(table.shape[-1])
    letters = "abcdefghijklmnopqrstuvw"[:k + 1]
    spec = "..." + letters + "," + ",".join(
        "..." + letters[j] + letters[j + 1] for j in range(k)) + "->..." + letters[0] + letters[k]
    out, seen = 0.0, {}
    for order in itertools.permutations(range(k)):
        key = tuple(id(dirs[j]) for j in order)
        seen[key] = seen.get(key, 0) + 1
    for key, count in seen.items():
        by_id = {id(d): d for d in dirs}
        out = out + count * np.einsum(spec, table, *(by_id[i] for i in key), optimize=True)
    return out


def _sym_funm_impl(s, *es, f: str):
    dtype = result_dtype("sym_matrix_function", s.dtype, *(e.dtype for e in es))
    fn = scalar_function(f)
    batch = np.broadcast_shapes(*(a.shape[:-2] for a in (s,) + es))
    s = np.broadcast_to(np.asarray(s, np.float64), batch + s.shape[-2:])
    sym, skew = (s + np.swapaxes(s, -1, -2)) / 2, (s - np.swapaxes(s, -1, -2)) / 2
    _check_symmetric(sym, skew, f)
    w, v = np.linalg.eigh(sym)
    rot = [np.swapaxes(v, -1, -2) @ np.asarray(e, np.float64) @ v for e in es]
    terms = 1 + (_SERIES if np.any(skew) else 0)               # S = sym + skew: a Taylor series
    skew_t = np.swapaxes(v, -1, -2) @ skew @ v
    out, table = 0.0, None
    for j in range(terms):
        table = divided_differences(fn, w, len(es) + j)
        out = out + _frechet(table, rot + [skew_t] * j) / math.factorial(j)
    return (v @ out @ np.swapaxes(v, -1, -2)).astype(dtype)


def _check_symmetric(sym, skew, f: str) -> None:
    size = np.max(np.abs(sym), axis=(-2, -1), initial=0.0)
    if np.any(np.max(np.abs(skew), axis=(-2, -1), initial=0.0) > _ASYMMETRY * size):
        raise ValueError(f"sym_matrix_function(f={f!r}): the matrix is not symmetric (max "
                         f"|S - S^T| / 2 = {np.max(np.abs(skew)):.3g}); pforjac's expm, logm, "
                         f"sqrtm and funm take symmetric matrices only (scipy.linalg's take "
                         f"general ones)")


def _sym_funm_shape(s, *es, f: str):
    for x in (s,) + es:
        check_square("sym_matrix_function", x)
        if x.shape[-1] != s.shape[-1]:
            raise ValueError(f"sym_matrix_function: directions must be {s.shape[-1]}x"
                             f"{s.shape[-1]} like S; got shape {tuple(x.shape)}")
    batch = np.broadcast_shapes(*(tuple(x.shape[:-2]) for x in (s,) + es))
    return tuple(batch) + tuple(s.shape[-2:]), result_dtype(
        "sym_matrix_function", s.dtype, *(e.dtype for e in es))


sym_funm_p = core.new_primitive("sym_funm", _sym_funm_impl, _sym_funm_shape, layout="free")


def _sym_funm_jvp(ts, ans, s, *es, f):
    out = None if ts[0] is None else sym_funm_p.bind(s, *es, ts[0], f=f)
    for j, t in enumerate(ts[1:]):
        if t is not None:
            term = sym_funm_p.bind(s, *es[:j], t, *es[j + 1:], f=f)
            out = term if out is None else out + term
    return out


def _sym_funm_vjp(g, ans, s, *es, f):
    """tr(G^T D^k f(S)[E..]) is a cyclic trace of G^T, the Es and powers of S: the cotangent
    of S (or of one E) is the rest of the cycle, transposed, D^(k+1) f(S^T)[G, E^T..] (or
    D^k f(S^T)[G, the other E^T]). S^T, not S: the rule must hold off the symmetric
    matrices too, where it is differentiated again (Hessians)."""
    st, flipped = mT(s), [mT(e) for e in es]
    cts = [sym_funm_p.bind(st, g, *flipped, f=f)]
    cts += [sym_funm_p.bind(st, g, *flipped[:j], *flipped[j + 1:], f=f) for j in range(len(es))]
    return [unbroadcast(ct, x.shape) for ct, x in zip(cts, (s,) + es)]


defvjp_all(sym_funm_p, _sym_funm_vjp)
defjvp_all(sym_funm_p, _sym_funm_jvp)


def sym_funm(a, f: str):
    """f(a) = V f(W) V^T for a symmetric matrix (stack) a = V diag(W) V^T, f a name ("exp",
    "log", "sqrt", "sin", "cos", "power:<p>"; callables: `pj.sym_matrix_function`). Its
    derivatives of every order are exact at repeated eigenvalues (divided differences),
    and equal the general matrix function's (scipy.linalg.expm's) at symmetric points.
    A matrix that is not symmetric raises ValueError."""
    a = as_tensor(a)
    check_square("sym_matrix_function", a)
    return sym_funm_p.bind(a, f=function_name(f))


# -- examples for the generated checks ---------------------------------------------------------
def _with_spectrum(rng, values, *batch):
    q, _ = np.linalg.qr(rng.standard_normal(batch + (len(values),) * 2))
    return (q * np.asarray(values)) @ np.swapaxes(q, -1, -2)


def _example(s, *es, f):
    """Per-iteration matrices that stay symmetric (rolled copies would not)."""
    eye = np.eye(s.shape[-1])
    return core.Example(s, *es, f=f, iterations=[[s, 1.2 * s, s + 0.3 * eye]]
                        + [[e, 0.5 * e, mT_np(e)] for e in es])


def mT_np(x):
    return np.swapaxes(x, -1, -2)


def _examples(rng):
    tied, spread = _with_spectrum(rng, [1.0, 1.0, 2.5]), _with_spectrum(rng, [0.5, 1.2, 2.0], 2)
    near = _with_spectrum(rng, [0.8, 0.8 + 1e-9, 1.7])
    return [_example(np.eye(3), f="exp"), _example(tied, f="log"),
            _example(spread, f="sqrt"), _example(near, f="sin"),
            _example(tied, rng.uniform(-1, 1, (3, 3)), f="exp"),
            _example(spread, f="power:3")]


core.defexamples(sym_funm_p)(_examples)
