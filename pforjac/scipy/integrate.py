"""`pforjac.scipy.integrate.solve_ivp`: scipy's `solve_ivp` with the exact Jacobian of
the right-hand side filled in for the implicit methods (Radau, BDF, LSODA).

The Jacobian of `fun(t, y, *args)` with respect to y is compiled once with
`pforjac.function` (forward mode: a jvp per column, all columns in one pass) and called
as scipy calls `jac(t, y, *args)`; with `sparse` (True, or "auto" for 100 or more
unknowns and a pattern at most 10% full; Radau and BDF only, whose sparse LU it feeds)
the pattern is detected from the traced right-hand side and coloured, so no pattern is
written by hand. A `jac` given is used as it is. Radau and BDF are scipy's classes with
their dense LU calls made straight to LAPACK (`_lapack_lu.py`: the same steps and values,
less Python a call). Importing this module does not import
scipy; calling `solve_ivp` does (the `pforjac[scipy]` extra).

Example:
    >>> import numpy as np
    >>> from pforjac.scipy.integrate import solve_ivp
    >>> def robertson(t, y):
    ...     return np.stack([-0.04 * y[0] + 1e4 * y[1] * y[2],
    ...                      0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
    ...                      3e7 * y[1] ** 2])
    >>> sol = solve_ivp(robertson, (0.0, 1e3), np.array([1.0, 0.0, 0.0]), method="Radau",
    ...                 rtol=1e-6, atol=1e-10)
    >>> sol.success, sol.y[:, -1].round(4).tolist()
    (True, [0.3369, 0.0, 0.6631])
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ..transforms import jacfwd, jacrev
from ._lapack_lu import lapack_lu_method
from ._solving import Derivatives, as_numpy, check_sparse, use_sparse

__all__ = ["solve_ivp"]

_IMPLICIT = {"Radau", "BDF", "LSODA"}
_SPARSE_LU = {"Radau", "BDF"}        # LSODA takes a dense (or banded) Jacobian only


def solve_ivp(fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None,
              vectorized=False, args=None, *, sparse="auto", backend=None, **options):
    """`scipy.integrate.solve_ivp` with the exact Jacobian of `fun(t, y, *args)` filled in
    for Radau, BDF and LSODA (see the module's docstring); other methods use no Jacobian.
    `backend` ("numpy" or "numba"; default `pforjac.config.backend`) compiles the Jacobian;
    on numba the right-hand side itself is compiled too (the same values, about a
    microsecond a call). Returns scipy's OdeResult."""
    import scipy.integrate
    y0 = np.asarray(y0)     # float64, or complex128 as scipy keeps a complex y0
    y0 = y0.astype(complex if np.iscomplexobj(y0) else float, copy=False)
    extra = tuple(args) if args is not None else ()
    t0 = float(t_span[0])
    d = Derivatives(f"pforjac.scipy.integrate.solve_ivp({method})", backend)
    rhs = _rhs(fun, t0, y0, extra, d)
    if options.get("jac") is None and isinstance(method, str) and method in _IMPLICIT:
        options["jac"] = _jacobian(fun, t0, y0, extra, method, sparse, d)
    return scipy.integrate.solve_ivp(rhs, t_span, y0, lapack_lu_method(method), t_eval,
                                     dense_output, events, vectorized, args, **options)


def _sparse():
    from .. import sparse         # (imports scipy.sparse: only for a large problem)
    return sparse


def _rhs(fun, t0: float, y0: np.ndarray, args: tuple, d: Derivatives):
    """The right-hand side as scipy wants it, a numpy array: compiled to native code on the
    numba backend, else the user's function (a Tensor result converted)."""
    native = d.native(lambda y, t: fun(t, y, *args), (y0, np.asarray(t0)))
    if native is not None:
        def compiled_rhs(t, y, *a):     # (args are in the compiled code: one solve's)
            return native(y, t)
        return compiled_rhs

    def rhs(t, y, *a):
        out = fun(t, y, *a)
        return out.numpy() if isinstance(out, Tensor) else out
    return rhs


def _jacobian(fun, t0: float, y0: np.ndarray, args: tuple, method: str, sparse,
              d: Derivatives):
    who = d.who
    # a complex y: the complex derivative, as scipy's finite differences along the real
    # axis give it for a holomorphic right-hand side; dense (the sparse path is real)
    complex_y = np.iscomplexobj(y0)
    check_sparse(sparse, who)
    if complex_y and sparse is True:
        from ..warn import warn_at_user_line
        warn_at_user_line(f"{who}: sparse=True is not available for a complex y0 (the "
                          f"sparsity detection and colouring are real-valued); the Jacobian "
                          f"is computed dense. Pass sparse='auto' or False to silence this")
    if method in _SPARSE_LU and not complex_y:
        pattern = use_sparse(sparse, lambda: _sparse().jacobian_sparsity(
            lambda y: fun(t0, y, *args), y0), y0.size, who)
        if pattern is not None:
            return _sparse().prepare_ode_jacobian(fun, t0, y0, sparsity=pattern, args=args,
                                                  backend=d.backend).scipy_jac()
    # exactly the arrays that change as arguments (one solve's args are in the code); t as
    # a 0-d array: traced as an input, not compiled in as a value per time step
    # forward mode compiled; reverse mode eagerly (forward mode traces the function, which
    # a Python `if` on its values refuses; a tape records it)
    compiled = d.compiled(
        lambda y, t: jacfwd(lambda z: fun(t, z, *args), holomorphic=complex_y)(y),
        eager=lambda y, t: jacrev(lambda z: fun(t, z, *args), holomorphic=complex_y)(y))

    def jac(t, y, *a):
        return as_numpy(compiled(y, t))
    return jac
