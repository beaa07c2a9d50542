"""The parts of complex tensors: real, imag, conj, angle, and |z|^2 for the norms and
variances, differentiable.

pforjac's convention for complex derivatives is JAX's (tests/test_complex.py,
docs/numpy.md): a vjp takes no conjugate, so the gradient of a real-valued f at z = x + iy
is df/dx - i df/dy. In it, real's cotangent g goes back as g + 0i, imag's as -i g, and
conj's as conj(g); forward, the tangents are real(t), imag(t) and conj(t).
For real tensors real and conj are the tensor itself and imag is zeros, as numpy gives.
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..core import defjvp, defvjp
from ..tensor import as_tensor
from ._family import declare_elementwise
from .elementwise import (abs as abs_, arctan2, cast, multiply, not_equal, ones_like, reciprocal,
                          sign_p, square, stop_gradient, where, zeros_like)

__all__ = ["real", "imag", "conj", "conjugate", "angle", "abs_squared"]


def _real_dtype(dtype) -> np.dtype:
    return np.empty(0, dtype).real.dtype


imag_p = core.new_primitive("imag", lambda x: np.imag(x).copy(),
                            lambda x: (x.shape, _real_dtype(x.dtype)), elementwise=True,
                            zero_preserving=True, layout="following")
defvjp(imag_p, lambda g, ans, x: multiply(cast(g, x.dtype), -1j) if x.dtype.kind == "c"
       else zeros_like(x))
defjvp(imag_p, lambda t, ans, x: imag(t))

conj_p = declare_elementwise("conj", np.conjugate, zero_preserving=True, layout="following",
                             domain=("real",))
defvjp(conj_p, lambda g, ans, x: conj(g))
defjvp(conj_p, lambda t, ans, x: conj(t))


def real(val):
    """np.real: the real part (a complex tensor's as a float tensor; a real tensor itself)."""
    x = as_tensor(val)
    return cast(x, _real_dtype(x.dtype)) if x.dtype.kind == "c" else x


def imag(val):
    """np.imag: the imaginary part (zeros for a real tensor, with no derivative)."""
    x = as_tensor(val)
    return imag_p.bind(x) if x.dtype.kind == "c" else zeros_like(x)


def conj(x):
    """np.conj: the complex conjugate (a real tensor itself)."""
    x = as_tensor(x)
    return conj_p.bind(x) if x.dtype.kind == "c" else x


conjugate = conj


# -- sign: a step for real values, numpy 2's x / |x| for complex ones ----------------------------
def _sign_scale(s, v, ans, x):
    """i s Im(conj(s) v) / |x|, 0 where x == 0: with s = sign(x) and s conj(s) = 1, the
    derivative of numpy's complex sign x / |x| (numpy 2) in tangent v = t, and with s
    conjugated, its vjp in cotangent v = g (JAX's convention, as abs's). At 0, a step's 0."""
    r = abs_(x)
    nonzero = not_equal(r, 0.0)
    inv_r = where(nonzero, reciprocal(where(nonzero, r, ones_like(r))), zeros_like(r))
    return s * cast(imag(conj(s) * v) * inv_r, ans.dtype) * 1j


def _complex_sign(x) -> bool:
    return x.dtype.kind == "c" and np.sign(1j) != 0   # (numpy 1's complex sign is a step)


defvjp(sign_p, lambda g, ans, x: _sign_scale(conj(ans), g, ans, x) if _complex_sign(x)
       else g * zeros_like(x))
defjvp(sign_p, lambda t, ans, x: _sign_scale(ans, t, ans, x) if _complex_sign(x)
       else t * zeros_like(x))


def angle(z, deg=False):
    """np.angle: arctan2(imag z, real z), in degrees with `deg`. For real z, numpy's
    arctan2(0, z) (pi where negative and at -0.0), a constant (not arctan2's 0/0 at 0)."""
    z = as_tensor(z)
    if z.dtype.kind == "c":
        a = arctan2(imag(z), real(z))
    else:
        z = z if z.dtype.kind == "f" else cast(z, np.float64)
        a = stop_gradient(arctan2(zeros_like(z), z))
    return a * (180.0 / np.pi) if deg else a


def abs_squared(x):
    """|x|^2 (real for complex x: re^2 + im^2, with no |x|'s square root and its kink at
    0); square(x) for real x."""
    x = as_tensor(x)
    if x.dtype.kind == "c":
        return square(real(x)) + square(imag(x))
    return square(x)


@core.defexamples(imag_p)
def _imag_examples(rng):
    z = rng.uniform(-1.5, 1.5, (2, 3)) + 1j * rng.uniform(-1.5, 1.5, (2, 3))
    return [core.Example(z), core.Example(rng.uniform(-1.5, 1.5, 3))]
