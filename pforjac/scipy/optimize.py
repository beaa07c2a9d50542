"""`pforjac.scipy.optimize`: scipy.optimize's solvers with exact derivatives filled in.

`minimize`, `least_squares`, `root` and `curve_fit` take scipy's arguments and return
scipy's results (numpy arrays inside), and compute what the method uses from the user's
function: value and gradient in one pass (`jac=True` to scipy), the Hessian or the
Hessian-vector product of Newton-CG and the trust-region methods, the Jacobian of a
least-squares residual or a root problem; each compiled once per shape with
`pforjac.function`, and sparse (pattern detected, coloured) for a large sparse problem
(`sparse="auto"`, the default; True or False to choose). A derivative the caller passes
(`jac=`, `hess=`, `hessp=`) is used as given. See docs/scipy.md.

`rosen`, `rosen_der`, `rosen_hess` and `rosen_hess_prod` are scipy's Rosenbrock function
and its derivatives written with pforjac's ops: scipy's values on numpy arrays, and
differentiable.

Importing this module does not import scipy; calling a solver does (the `pforjac[scipy]`
extra).

Example:
    >>> import numpy as np
    >>> from pforjac.scipy.optimize import minimize, rosen
    >>> res = minimize(rosen, np.zeros(5), method="BFGS")
    >>> bool(res.success), np.round(res.x, 4).tolist()
    (True, [1.0, 1.0, 1.0, 1.0, 1.0])
"""
from __future__ import annotations

import inspect
import time

import numpy as np

from .. import ops as pj
from ..functional import hessian, hvp
from ..tensor import Tensor, as_tensor
from ..transforms import grad, jacfwd, jacrev, value_and_grad
from ._solving import Derivatives, as_numpy, use_sparse

__all__ = ["minimize", "least_squares", "root", "curve_fit", "rosen", "rosen_der",
           "rosen_hess", "rosen_hess_prod"]

# what each scipy method uses besides the value: "jac", "hessp" or "hess" (dense)
_NO_DERIVATIVES = {"nelder-mead", "powell", "cobyla", "cobyqa"}
_HESSP = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
_HESS = {"trust-exact", "dogleg"}
_SPARSE_HESS = {"newton-cg", "trust-constr"}     # these take a scipy.sparse Hessian


def _scipy_optimize():
    import scipy.optimize
    return scipy.optimize


def _default_method(method, bounds, constraints) -> str:
    """scipy's choice when method is None."""
    if method is not None:
        return method if callable(method) else method.lower()
    if constraints:
        return "slsqp"
    return "l-bfgs-b" if bounds is not None else "bfgs"


# -- minimize ----------------------------------------------------------------------------------
def minimize(fun, x0, args=(), method=None, jac=None, hess=None, hessp=None, bounds=None,
             constraints=(), tol=None, callback=None, options=None, *, sparse="auto",
             backend=None):
    """`scipy.optimize.minimize` with the exact gradient (and the Hessian, or its product
    with a vector, for the methods that use one) of `fun(x, *args)` filled in.

    `fun` is written with numpy functions or pforjac ops; it is traced once and runs as
    compiled code (`backend` "numpy" or "numba", default `pforjac.config.backend`): the
    gradient, and the value with it (scipy's `jac=True`) unless the backend is numpy and
    numpy computes the value alone in under 50 us (then recomputing it is the cheaper). Newton-CG,
    trust-ncg, trust-krylov and trust-constr get `hessp`, trust-exact and dogleg `hess`;
    with `sparse` (True, or "auto" for 100 or more unknowns and a Hessian pattern at most
    10% full) Newton-CG and trust-constr get the sparse Hessian instead. `jac`, `hess` or
    `hessp` given here are passed to scipy as they are. Returns scipy's OptimizeResult.

    Example:
        >>> import numpy as np
        >>> from pforjac.scipy.optimize import minimize
        >>> f = lambda x: np.sum((x - np.arange(3.0)) ** 2) + np.sum(x ** 4)
        >>> res = minimize(f, np.ones(3), method="Newton-CG")
        >>> res.success, res.x.round(4).tolist()
        (True, [0.0, 0.5898, 0.8351])
    """
    name = _default_method(method, bounds, constraints)
    d = Derivatives(f"pforjac.scipy.optimize.minimize({name})", backend)
    if callable(name) or name in _NO_DERIVATIVES:
        return _scipy_optimize().minimize(fun, x0, args, method, jac, hess, hessp, bounds,
                                          constraints, tol, callback, options)
    x0 = np.asarray(x0, dtype=float)
    args = args if isinstance(args, tuple) else (args,)
    if jac is None:
        fun_, jac = _value_and_gradient(fun, x0, args, d)
    else:
        fun_ = _numpy_scalar(fun)
    if hess is None and hessp is None and name in _HESSP | _HESS:
        hess, hessp = _second_order(fun, x0, args, name, sparse, d)
    return _scipy_optimize().minimize(fun_, x0, args, method, jac, hess, hessp, bounds,
                                      constraints, tol, callback, options)


# A value computed by numpy in less than this many seconds is cheaper to compute again
# than to carry through one pass (scipy's jac=True memoizes, and the compiled code
# computes the value too): L-BFGS-B on the chained Rosenbrock at n=1000 took 1.30x the
# hand-written gradient's CPU time with one pass, 1.07x with the value apart.
_CHEAP_VALUE = 50e-6


def _value_and_gradient(fun, x0, args: tuple, d: Derivatives):
    """(fun, jac) for scipy: a function whose value numpy computes cheaply (it returns a
    number, not a Tensor, for numpy input) keeps it and gets the compiled gradient; any
    other gets value and gradient from one compiled pass (jac=True)."""
    f = _closed(fun, args)
    if d.backend == "numba":           # one native call costs less than numpy's value alone
        return _one_pass(f, d), True
    start = time.perf_counter()
    value = f(x0)
    cheap = time.perf_counter() - start < _CHEAP_VALUE or min(
        _seconds(f, x0) for _ in range(3)) < _CHEAP_VALUE
    if not isinstance(value, Tensor) and cheap:
        gradient = d.ready(grad(f), x0)       # (scipy passes `args` too: they are in f)
        return fun, (gradient if not args else (lambda x, *a: gradient(x)))
    return _one_pass(f, d), True


def _one_pass(f, d: Derivatives):
    """fun(x) -> (value, gradient), scipy's jac=True, from one compiled call."""
    value_grad = d.compiled(value_and_grad(f))

    def fun_and_grad(x, *a):          # (args are in the compiled code: one solve's)
        value, g = value_grad(x)
        return _scalar(value), as_numpy(g)
    return fun_and_grad


def _scalar(value):
    """A 0-d value as a numpy scalar of its dtype, as numpy's own functions return one
    (scipy puts it in `res.fun`)."""
    return np.asarray(as_numpy(value))[()]


def _seconds(f, x) -> float:
    start = time.perf_counter()
    f(x)
    return time.perf_counter() - start


def _closed(fun, args: tuple, kwargs=None):
    """fun of x alone, its extra arguments fixed for the solve. The compiled functions take
    exactly the arrays that change (a signature with defaults or *args is bound anew on
    every call of a pforjac.function: 15 us a call)."""
    kwargs = kwargs or {}
    return lambda x: fun(x, *args, **kwargs)


def _numpy_scalar(fun):
    def value(x, *a):
        v = fun(x, *a)
        return _scalar(v) if isinstance(v, Tensor) else v
    return value


def _second_order(fun, x0, args, name: str, sparse, d: Derivatives):
    """(hess, hessp) for `name`: a sparse Hessian, a dense one, or a Hessian-vector product."""
    if name in _SPARSE_HESS:
        pattern = use_sparse(sparse, lambda: _sparse().hessian_sparsity(
            lambda y: fun(y, *args), x0), x0.size, d.who)
        if pattern is not None:
            return _sparse().prepare_hessian(fun, x0, sparsity=pattern, args=args,
                                             backend=d.backend), None
    f = _closed(fun, args)
    if name in _HESS:
        dense = d.compiled(lambda x: hessian(f, x))
        return (lambda x, *a: as_numpy(dense(x))), None
    product = d.compiled(lambda x, p: hvp(f, x, p)[1])
    return None, (lambda x, p, *a: as_numpy(product(x, np.asarray(p, dtype=x.dtype))))


# -- least_squares and root --------------------------------------------------------------------
def _numpy_vector(fun, kwargs=None):
    kwargs = kwargs or {}

    def value(x, *a):
        return as_numpy(fun(x, *a, **kwargs))
    return value


def _jacobian_mode(m: int, n: int):
    """Forward mode (a jvp per column) for tall Jacobians, reverse (a vjp per row) else."""
    return jacfwd if m >= n else jacrev


def _dense_jacobian(fun, m: int, n: int, d: Derivatives, args: tuple, kwargs=None):
    f, transform = _closed(fun, args, kwargs), _jacobian_mode(m, n)
    compiled = d.compiled(lambda x: transform(f)(x))

    def jac(x, *a):
        return as_numpy(compiled(np.asarray(x, dtype=float)))
    return jac


def _sparse_jacobian(fun, x0, args, kwargs, sparse, d: Derivatives):
    """A PreparedJacobian (called as scipy calls jac) when the rule says sparse, else None."""
    f = (lambda y, *a: fun(y, *a, **kwargs)) if kwargs else fun
    pattern = use_sparse(sparse, lambda: _sparse().jacobian_sparsity(
        lambda y: f(y, *args), x0), x0.size, d.who)
    if pattern is None:
        return None
    return _sparse().prepare_jacobian(f, x0, sparsity=pattern, args=args, backend=d.backend)


def _sparse():
    """pforjac.sparse, imported when a problem is large enough to be looked at (it imports
    scipy.sparse)."""
    from .. import sparse
    return sparse


def least_squares(fun, x0, jac=None, bounds=(-np.inf, np.inf), method="trf", *,
                  sparse="auto", backend=None, args=(), kwargs=None, **options):
    """`scipy.optimize.least_squares` with the exact Jacobian of the residuals
    `fun(x, *args, **kwargs)` filled in (when `jac` is None; a callable or one of scipy's
    finite-difference names is used as given).

    Dense: compiled forward mode for m >= n residuals, reverse mode otherwise. Sparse (True,
    or "auto" for 100 or more unknowns and a pattern at most 10% full; not with method
    "lm"): the coloured sparse Jacobian, with `tr_solver="lsmr"` unless given. Other keyword
    arguments are scipy's.

    Example:
        >>> import numpy as np
        >>> from pforjac.scipy.optimize import least_squares
        >>> t = np.linspace(0, 1, 20); y = 2.0 * np.exp(-1.5 * t)
        >>> res = least_squares(lambda p: p[0] * np.exp(-p[1] * t) - y, np.ones(2))
        >>> res.x.round(6).tolist(), res.jac.shape
        ([2.0, 1.5], (20, 2))
    """
    x0 = np.atleast_1d(np.asarray(x0, dtype=float))
    args, kwargs = tuple(args), dict(kwargs or {})
    fun_ = _numpy_vector(fun, kwargs)
    d = Derivatives("pforjac.scipy.optimize.least_squares", backend)
    if jac is None:
        jac = _sparse_jacobian(fun, x0, args, kwargs, sparse if method != "lm" else False, d)
        if jac is not None:
            options.setdefault("tr_solver", "lsmr")
        else:
            m = fun_(x0, *args).size
            jac = _dense_jacobian(fun, m, x0.size, d, args, kwargs)
    return _scipy_optimize().least_squares(fun_, x0, jac, bounds, method, args=args,
                                           **options)


_ROOT_JACOBIAN = {"hybr", "lm"}


def root(fun, x0, args=(), method="hybr", jac=None, tol=None, callback=None, options=None, *,
         backend=None):
    """`scipy.optimize.root` with the exact Jacobian of `fun(x, *args)` filled in for the
    methods that use one (hybr, lm), compiled once; `jac` given is used as it is.

    Example:
        >>> import numpy as np
        >>> from pforjac.scipy.optimize import root
        >>> res = root(lambda x: np.stack([x[0] + 0.5 * (x[0] - x[1]) ** 3 - 1.0,
        ...                                0.5 * (x[1] - x[0]) ** 3 + x[1]]), np.zeros(2))
        >>> res.success, res.x.round(4).tolist()
        (True, [0.8412, 0.1588])
    """
    x0 = np.asarray(x0, dtype=float)
    args = args if isinstance(args, tuple) else (args,)
    fun_ = _numpy_vector(fun)
    if jac is None and method in _ROOT_JACOBIAN:
        m = fun_(x0, *args).size
        jac = _dense_jacobian(fun, m, x0.size,
                              Derivatives("pforjac.scipy.optimize.root", backend), args)
    return _scipy_optimize().root(fun_, x0, args, method, jac, tol, callback, options)


# -- curve_fit ---------------------------------------------------------------------------------
def curve_fit(f, xdata, ydata, p0=None, sigma=None, absolute_sigma=False, check_finite=None,
              bounds=(-np.inf, np.inf), method=None, jac=None, *, backend=None, **kwargs):
    """`scipy.optimize.curve_fit` with the exact Jacobian of `f(xdata, *params)` with
    respect to the parameters filled in (compiled forward mode); `jac` given is used as it
    is. Returns scipy's `(popt, pcov)` (or more with `full_output=True`).

    Example:
        >>> import numpy as np
        >>> from pforjac.scipy.optimize import curve_fit
        >>> x = np.linspace(0, 2, 30); y = 3.0 * np.exp(-0.7 * x) + 0.5
        >>> popt, pcov = curve_fit(lambda x, a, b, c: a * np.exp(-b * x) + c, x, y,
        ...                        p0=[1.0, 1.0, 0.0])
        >>> popt.round(6).tolist()
        [3.0, 0.7, 0.5]
    """
    if p0 is None:        # as scipy counts them: the parameters after xdata
        k = len(inspect.signature(f).parameters) - 1
        p0 = np.ones(k)
    p0 = np.atleast_1d(np.asarray(p0, dtype=float))

    def model(x, *params):
        return as_numpy(f(x, *params))
    if jac is None:
        jac = _curve_jacobian(f, p0.size, backend)
    return _scipy_optimize().curve_fit(model, xdata, ydata, p0, sigma, absolute_sigma,
                                       check_finite, bounds, method, jac, **kwargs)


def _curve_jacobian(f, k: int, backend):
    """jac(xdata, *params) as curve_fit calls it: the (m, k) Jacobian by the parameters,
    which are traced as one array (a new value is not a new trace)."""
    d = Derivatives("pforjac.scipy.optimize.curve_fit", backend)
    compiled = d.compiled(lambda x, p: jacfwd(lambda q: f(x, *[q[i] for i in range(k)]))(p))

    def jac(x, *params):
        return as_numpy(compiled(x, np.asarray(params, dtype=float)))
    return jac


# -- scipy's Rosenbrock function, with pforjac's ops ----------------------------------------------
# Each expression is scipy's, in scipy's order of operations, so numpy inputs give scipy's
# values to the last bit; numpy in, numpy out (a Tensor in, or a recording tape or a trace,
# gives a Tensor, differentiable again).
def rosen(x):
    """scipy's Rosenbrock function, `sum(100 (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2)`
    along the first axis."""
    t, plain = _input(x)
    value = pj.sum(100.0 * (t[1:] - t[:-1] ** 2.0) ** 2.0 + (1 - t[:-1]) ** 2.0, axis=0)
    return _output(value, plain)


def rosen_der(x):
    """The gradient of `rosen`, as scipy's `rosen_der`."""
    t, plain = _input(x)
    xm, xm_m1, xm_p1 = t[1:-1], t[:-2], t[2:]
    middle = 200 * (xm - xm_m1 ** 2) - 400 * (xm_p1 - xm ** 2) * xm - 2 * (1 - xm)
    first = -400 * t[:1] * (t[1:2] - t[:1] ** 2) - 2 * (1 - t[:1])
    last = 200 * (t[-1:] - t[-2:-1] ** 2)
    return _output(pj.concat([first, middle, last], axis=0), plain)


def rosen_hess(x):
    """The Hessian of `rosen` at a 1-D x, an (n, n) matrix, as scipy's `rosen_hess`."""
    t, plain = _input(x, one_dimensional="rosen_hess")
    first = 1200 * t[:1] ** 2 - 400 * t[1:2] + 2
    middle = 202 + 1200 * t[1:-1] ** 2 - 400 * t[2:]
    diagonal = pj.concat([first, middle, 200.0 * pj.ones((1,), t.dtype)], axis=0)
    h = pj.diag(-400 * t[:-1], 1) - pj.diag(400 * t[:-1], -1) + pj.diag(diagonal)
    return _output(h, plain)


def rosen_hess_prod(x, p):
    """The product of `rosen`'s Hessian at x with the vector p, as scipy's
    `rosen_hess_prod` (the Hessian is not formed)."""
    t, plain = _input(x, one_dimensional="rosen_hess_prod")
    q, plain_p = _input(p, one_dimensional="rosen_hess_prod")
    first = (1200 * t[:1] ** 2 - 400 * t[1:2] + 2) * q[:1] - 400 * t[:1] * q[1:2]
    middle = (-400 * t[:-2] * q[:-2] + (202 + 1200 * t[1:-1] ** 2 - 400 * t[2:]) * q[1:-1]
              - 400 * t[1:-1] * q[2:])
    last = -400 * t[-2:-1] * q[-2:-1] + 200 * q[-1:]
    return _output(pj.concat([first, middle, last], axis=0), plain and plain_p)


def _input(x, one_dimensional: str | None = None) -> tuple[Tensor, bool]:
    """(x as a float Tensor, whether it came as numpy: an array, a list, a number)."""
    plain = not isinstance(x, Tensor)
    t = as_tensor(np.atleast_1d(np.asarray(x, dtype=float)) if plain else x)
    if one_dimensional and t.ndim != 1:
        raise ValueError(f"{one_dimensional}: x and p must be 1-D, got shape {tuple(t.shape)}")
    return t, plain


def _output(value: Tensor, plain: bool):
    """numpy out for numpy in, unless a tape records or a trace is open (then a Tensor)."""
    from .. import core
    state = core.current_state()
    if not plain or state.tapes or state.traces:
        return value
    out = value.numpy()
    return out[()] if out.ndim == 0 else out.copy()
