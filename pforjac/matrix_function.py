"""`pj.sym_matrix_function(a, f)`: f(a) = V f(W) V^T for a symmetric matrix, f a name or an
elementwise callable. Callables are differentiated here (nested forward mode on pforjac
Tensors, for the divided differences near ties) and registered with the primitive by
name (`pforjac.ops._scalar_functions`); the primitive and its rules are
`pforjac.ops.spectral`."""
from __future__ import annotations

import numpy as np

from .forward import jvp_program
from .ops._scalar_functions import register_callable
from .ops.spectral import sym_funm
from .program import make_program
from .tensor import as_tensor, constant

__all__ = ["sym_matrix_function"]


def sym_matrix_function(a, f):
    """f(a) = V f(W) V^T for a symmetric matrix (stack) a = V diag(W) V^T: `f` is a name
    ("exp", "log", "sqrt", "sin", "cos", "power:<p>") or an elementwise callable written
    with differentiable operations (`np.exp`, `pj.tanh`, ... work on Tensors). Its
    derivatives of every order are exact at repeated eigenvalues (divided differences),
    and equal the general matrix function's (scipy.linalg.expm's) at symmetric points.
    A matrix that is not symmetric raises ValueError.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> s = np.array([[2.0, 1.0], [1.0, 2.0]])
        >>> np.round(np.asarray(pj.sym_matrix_function(s, lambda x: x ** 2)), 6).tolist()
        [[5.0, 4.0], [4.0, 5.0]]
    """
    if callable(f):
        f = register_callable(f, _derivatives_of(f))
    return sym_funm(a, f)


def _derivatives_of(f):
    """deriv(x, d): f's d-th derivative at the points x, by nested forward mode."""
    def nth(k):
        if k == 0:
            return lambda t: as_tensor(f(t))
        inner = nth(k - 1)

        def step(t):
            program = make_program(inner, [(tuple(t.shape), t.dtype)])
            _, tangents = jvp_program(program, [t], [constant(np.ones(t.shape))])
            return tangents[0] if tangents[0] is not None else 0.0 * t
        return step

    def deriv(x, d):
        out = nth(d)(constant(np.asarray(x, np.float64)))
        return np.broadcast_to(np.asarray(as_tensor(out).numpy(), np.float64), np.shape(x))
    return deriv
