"""The Moore-Penrose pseudo-inverse as a primitive, with the closed-form derivative of a
pseudo-inverse of constant rank (Golub & Pereyra 1973):

    dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P,     P = pinv(A).

Through the svd, its rule divides by differences of singular values and drops the terms
of tied ones: at a matrix with a repeated singular value (an orthogonal one, a multiple of
the identity) that gave silently wrong derivatives, which this formula does not.
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..core import defjvp_all, defvjp_all
from ._matrix import check_matrix, invertible, lapack, mT, result_dtype
from .linalg import matmul


def _pinv_impl(a, rcond):
    """rcond: one cutoff, or nested tuples of one per matrix of the stack (a hashable param)."""
    return np.linalg.pinv(a, rcond=np.asarray(rcond))


def _pinv_shape(a, rcond):
    check_matrix("pinv", a)
    return tuple(a.shape[:-2]) + (a.shape[-1], a.shape[-2]), result_dtype("pinv", a.dtype)


pinv_p = core.new_primitive("pinv", lapack(_pinv_impl, "pinv"), _pinv_shape)


def _pinv_vjp(g, p, a, rcond):
    """The adjoint of the formula above: -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)."""
    pt, gt = mT(p), mT(g)
    left = matmul(gt, matmul(p, pt))                  # G^T P P^T, (m, n)
    right = matmul(matmul(pt, p), gt)                 # P^T P G^T, (m, n)
    return [-matmul(pt, matmul(g, pt)) + left - matmul(a, matmul(p, left))
            + right - matmul(matmul(right, p), a)]


def _pinv_jvp(ts, p, a, rcond):
    (t,) = ts
    tt = mT(t)
    left = matmul(matmul(p, mT(p)), tt)              # P P^T dA^T, (n, m)
    right = matmul(tt, matmul(mT(p), p))             # dA^T P^T P, (n, m)
    return (-matmul(p, matmul(t, p)) + left - matmul(matmul(left, a), p)
            + right - matmul(p, matmul(a, right)))


defvjp_all(pinv_p, _pinv_vjp)
defjvp_all(pinv_p, _pinv_jvp)


def _repeated(rng, *shape):
    """An orthogonal matrix times 2 (every singular value 2), the case the svd's rule misses."""
    q, _ = np.linalg.qr(rng.standard_normal(shape[:-1] + (shape[-2],)))
    return 2.0 * q[..., :, :shape[-1]]


core.defexamples(pinv_p)(lambda rng: [
    core.Example(invertible(rng, 3, 2), rcond=1e-15),
    core.Example(rng.uniform(-1.5, 1.5, (2, 3)), rcond=1e-15),
    core.Example(_repeated(rng, 3, 3), rcond=1e-15),
    core.Example(_repeated(rng, 2, 3, 2), rcond=1e-15)])
