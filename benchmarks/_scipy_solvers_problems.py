"""The problems of benchmarks/scipy_solvers.py, written once for numpy (which pforjac's
dispatch runs on Tensors) and for jax.numpy (`_scipy_solvers_jax.py`), with scipy's or
hand-written derivatives where they exist."""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

JAX_WORKLOADS = ["BFGS, chained Rosenbrock n=50", "BFGS, chained Rosenbrock n=1000",
                 "L-BFGS-B, chained Rosenbrock n=50", "L-BFGS-B, chained Rosenbrock n=1000",
                 "Newton-CG (hessp), chained Rosenbrock n=1000",
                 "least_squares, 1000-point curve fit", "solve_ivp Radau, Robertson",
                 "solve_ivp BDF, Robertson", "solve_ivp Radau, Robertson, rtol 1e-8"]


def make_chained_rosenbrock(xp):
    """scipy's `rosen`: the chained Rosenbrock function."""
    def f(x):
        return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    return f


def rosen_start(n: int) -> np.ndarray:
    """The classic start (-1.2, 1, -1.2, 1, ...)."""
    x0 = np.ones(n)
    x0[::2] = -1.2
    return x0


CURVE_T = np.linspace(0.0, 3.0, 1000)
CURVE_TRUE = np.array([2.5, 1.3, 0.4, 3.0])
CURVE_X0 = np.array([1.0, 1.0, 1.0, 2.8])


def make_curve_residual(xp):
    """A 1000-point fit of a decaying exponential plus a sine: 4 parameters."""
    t = CURVE_T
    y = 2.5 * np.exp(-1.3 * t) + 0.4 * np.sin(3.0 * t) \
        + 0.01 * np.random.default_rng(0).normal(size=t.size)

    def r(q):
        return q[0] * xp.exp(-q[1] * t) + q[2] * xp.sin(q[3] * t) - y
    return r


def curve_jacobian(q):
    t = CURVE_T
    e = np.exp(-q[1] * t)
    return np.stack([e, -q[0] * t * e, np.sin(q[3] * t), q[2] * t * np.cos(q[3] * t)], axis=1)


def make_robertson(xp):
    def rhs(t, y):
        return xp.stack([-0.04 * y[0] + 1e4 * y[1] * y[2],
                         0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
                         3e7 * y[1] ** 2])
    return rhs


def robertson_jac(t, y):
    return np.array([[-0.04, 1e4 * y[2], 1e4 * y[1]],
                     [0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]],
                     [0.0, 6e7 * y[1], 0.0]])


ROBERTSON_Y0 = np.array([1.0, 0.0, 0.0])
ROBERTSON_SPAN = (0.0, 1e5)
ROBERTSON_TOL = {"rtol": 1e-6, "atol": 1e-10}
ROBERTSON_TIGHT = {"rtol": 1e-8, "atol": 1e-12}     # as examples/stiff_ode.py solves it
BRUSSELATOR_SPAN = {"BDF": (0.0, 11.5), "Radau": (0.0, 1.5)}

chained_rosenbrock = make_chained_rosenbrock(np)
curve_residual = make_curve_residual(np)
robertson = make_robertson(np)


def brusselator(N: int = 32):
    """(rhs, y0, the hand-built pattern) of the 2-D Brusselator (benchmarks/_sparse_workloads)."""
    import _sparse_workloads as w
    rhs, y0 = w.brusselator(np, N)
    return rhs, y0, w.brusselator_pattern(N)


def numba_robertson():
    """(rhs, jac) of Robertson hand-written with numba's @njit (None without numba): what
    the right-hand side and its Jacobian cost at best, one native call each."""
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(cache=True)
    def rhs(t, y):
        out = np.empty(3)
        out[0] = -0.04 * y[0] + 1e4 * y[1] * y[2]
        out[1] = 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2
        out[2] = 3e7 * y[1] ** 2
        return out

    @numba.njit(cache=True)
    def jac(t, y):
        J = np.zeros((3, 3))
        J[0, 0], J[0, 1], J[0, 2] = -0.04, 1e4 * y[2], 1e4 * y[1]
        J[1, 0], J[1, 1], J[1, 2] = 0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]
        J[2, 1] = 6e7 * y[1]
        return J
    return rhs, jac


def check() -> None:
    """The hand-written derivatives are those of the functions (central differences)."""
    import scipy.optimize as so
    x = rosen_start(6) + 0.1
    assert chained_rosenbrock(x) == so.rosen(x)
    q = CURVE_X0 + 0.05
    assert np.allclose(curve_jacobian(q), _central(curve_residual, q), rtol=1e-6, atol=1e-8)
    y = np.array([0.9, 2e-5, 0.1])
    assert np.allclose(robertson_jac(0.0, y), _central(lambda z: robertson(0.0, z), y),
                       rtol=1e-5, atol=1e-6)
    native = numba_robertson()
    if native is not None:
        assert np.allclose(native[0](0.0, y), robertson(0.0, y), rtol=1e-15, atol=0)
        assert np.array_equal(native[1](0.0, y), robertson_jac(0.0, y))


def _central(f, x, h=1e-6):
    cols = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)]
    return np.stack(cols, axis=-1)
