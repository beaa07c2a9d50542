"""det as a primitive whose derivatives of every order are exact at singular and
ill-conditioned matrices.

det's gradient is the cofactor matrix, cof(A) = det(A) A^-T for an invertible A; written so,
it raises at a singular A and cancels catastrophically near one (at [[1,2,3],[4,5,6],
[7,8,9+1e-8]] the Hessian entry d2det/dA11^2, exactly 0 as det is linear in each entry,
came out 852.7). Here the cofactors come from an SVD, A = U diag(s) Vh:

    cof(A + X) = det(U) det(Vh) U cof(diag(s) + U^T X Vh^T) Vh,

and the cofactors of a diagonal matrix and their first derivative are products of the
other singular values, with no division: cof(diag(s))[a, a] = prod_{i != a} s_i, and
D cof(diag(s))[Y][a, b] = -Y[b, a] prod_{i not in {a, b}} s_i (a != b),
sum_{m != a} Y[m, m] prod_{i not in {a, m}} s_i (a == b).

One primitive, `cofactor(A, E1, ..., Ek)`, is the k-th derivative D^k cof(A)[E1..Ek] (the
gradient of the (k+1)-th derivative of det); orders above one are the mixed coefficients of
the first one along the other directions, a polynomial, read off exactly at complex roots
of unity. Its rules are the same primitive with one more direction.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import core
from ..core import defjvp_all, defvjp_all
from ..tensor import as_tensor
from ._matrix import check_square, invertible, lapack, result_dtype
from .broadcasting import sum, unbroadcast
from .shape import expand_dims

__all__ = ["cofactor"]


def _svd(a):
    u, s, vh = np.linalg.svd(a)
    return u, s, vh, np.linalg.det(u) * np.linalg.det(vh)


def _products_without(s, *drop_axes_eq):
    """prod over i of s_i, leaving out i equal to each of the given index axes."""
    n = s.shape[-1]
    i = np.arange(n)
    keep = np.ones((n,) * len(drop_axes_eq) + (n,), bool)
    for k in range(len(drop_axes_eq)):
        shape = [1] * (len(drop_axes_eq) + 1)
        shape[k] = n
        keep &= i.reshape(shape) != i
    s = s.reshape(s.shape[:-1] + (1,) * len(drop_axes_eq) + (n,))
    return np.prod(np.where(keep, s, 1), axis=-1)


def _cof0(a):
    u, s, vh, c = _svd(a)
    p1 = _products_without(s, 0)                                   # (..., n)
    return c[..., None, None] * (np.conj(u) * p1[..., None, :]) @ np.conj(vh)


def _cof1(a, e):
    u, s, vh, c = _svd(a)
    y = np.swapaxes(np.conj(u), -1, -2) @ e @ np.swapaxes(np.conj(vh), -1, -2)
    p2 = _products_without(s, 0, 1)                                # (..., n, n), a != m
    off = -np.swapaxes(y, -1, -2) * p2
    diag_y = np.diagonal(y, axis1=-2, axis2=-1)
    n = s.shape[-1]
    on = np.sum(np.where(np.eye(n, dtype=bool), 0, p2) * diag_y[..., None, :], axis=-1)
    x = np.where(np.eye(n, dtype=bool), on[..., :, None], off)
    return c[..., None, None] * np.conj(u) @ x @ np.conj(vh)


def _cof_higher(a, first, rest):
    """The coefficient of t_1 ... t_m in D cof(A + sum_j t_j E_j)[first], a polynomial of
    degree below n in each t_j, from its values at t_j = r_j w^p (w an n-th root of unity)."""
    n = a.shape[-1]
    size = max(float(np.max(np.abs(a), initial=0.0)), 1e-300)
    radii = [size / max(float(np.max(np.abs(e), initial=0.0)), 1e-300) for e in rest]
    roots = np.exp(2j * np.pi * np.arange(n) / n)
    total = 0.0
    for p in np.ndindex(*(n,) * len(rest)):
        point = a + builtins.sum(r * roots[q] * e for r, q, e in zip(radii, p, rest))
        total = total + _cof1(point, first) * np.prod([np.conj(roots[q]) for q in p])
    return np.real(total) / (n ** len(rest) * np.prod(radii))


def _cofactor_impl(a, *es):
    dtype = result_dtype("cofactor", a.dtype, *(e.dtype for e in es))
    batch = np.broadcast_shapes(*(x.shape[:-2] for x in (a,) + es))
    a, *es = (np.broadcast_to(np.asarray(x, np.float64), batch + x.shape[-2:]) for x in (a,) + es)
    if a.shape[-1] == 0:
        return np.zeros(a.shape, dtype)
    if not es:
        out = _cof0(a)
    elif len(es) == 1:
        out = _cof1(a, es[0])
    else:
        out = _cof_higher(a, es[0], es[1:])
    return np.real(out).astype(dtype)


def _cofactor_shape(a, *es):
    for x in (a,) + es:
        check_square("cofactor", x)
        if x.shape[-1] != a.shape[-1]:
            raise ValueError(f"cofactor: directions must be {a.shape[-1]}x{a.shape[-1]} like "
                             f"the matrix; got shape {tuple(x.shape)}")
    batch = np.broadcast_shapes(*(tuple(x.shape[:-2]) for x in (a,) + es))
    return tuple(batch) + tuple(a.shape[-2:]), result_dtype(
        "cofactor", a.dtype, *(e.dtype for e in es))


cofactor_p = core.new_primitive("cofactor", _cofactor_impl, _cofactor_shape, layout="free")


def _cofactor_jvp(ts, ans, a, *es):
    out = None if ts[0] is None else cofactor_p.bind(a, *es, ts[0])
    for j, t in enumerate(ts[1:]):
        if t is not None:
            term = cofactor_p.bind(a, *es[:j], t, *es[j + 1:])
            out = term if out is None else out + term
    return out


def _cofactor_vjp(g, ans, a, *es):
    """<G, D^k cof(A)[E..]> = D^(k+1) det(A)[E.., G], symmetric in all its directions."""
    cts = [cofactor_p.bind(a, *es, g)]
    cts += [cofactor_p.bind(a, *es[:j], *es[j + 1:], g) for j in range(len(es))]
    return [unbroadcast(ct, x.shape) for ct, x in zip(cts, (a,) + es)]


defvjp_all(cofactor_p, _cofactor_vjp)
defjvp_all(cofactor_p, _cofactor_jvp)


def cofactor(a):
    """The cofactor matrix of a square matrix (stack): the gradient of det, det(a) a^-T when
    a is invertible, computed from an SVD (no inverse: right at singular matrices)."""
    a = as_tensor(a)
    check_square("cofactor", a)
    return cofactor_p.bind(a)


# -- det ------------------------------------------------------------------------------------
def _det_shape(a):
    check_square("det", a)
    return tuple(a.shape[:-2]), result_dtype("det", a.dtype)


det_p = core.new_primitive("det", lapack(np.linalg.det, "det"), _det_shape)
defvjp_all(det_p, lambda g, ans, a: [expand_dims(expand_dims(g, -1), -1) * cofactor_p.bind(a)])
defjvp_all(det_p, lambda ts, ans, a: sum(cofactor_p.bind(a) * ts[0], axis=(-2, -1)))


# -- examples for the generated checks --------------------------------------------------------
def _examples(rng):
    singular = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    rank_one = np.outer([1.0, -2.0, 0.5], [0.3, 1.0, -1.0])
    return [core.Example(invertible(rng, 3, 3)), core.Example(singular),
            core.Example(rank_one), core.Example(invertible(rng, 2, 3, 3)),
            core.Example(singular, rng.uniform(-1, 1, (3, 3)))]


core.defexamples(cofactor_p)(_examples)
core.defexamples(det_p)(lambda rng: _examples(rng)[:4] + [core.Example(rng.uniform(-1, 1, (4, 4)))])
