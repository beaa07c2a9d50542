"""scipy's solvers with pforjac's derivatives passed as a user writes them the first time
(`jac=pj.grad(f)`): each converges to the solution found with hand-written derivatives
(scipy's rosen_der/rosen_hess, closed forms), `res.x` is a numpy array, and the derivative
was called (the counts scipy reports, or counted here)."""
import numpy as np
import pytest

import pforjac as pj

optimize = pytest.importorskip("scipy.optimize")
integrate = pytest.importorskip("scipy.integrate")

X0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])


def rosen(x):                       # written with numpy, as a user writes it
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _counted(fn):
    def counted(*args):
        counted.calls += 1
        return fn(*args)
    counted.calls = 0
    return counted


def _same_solve(res, ref, atol=1e-5):
    assert type(res.x) is np.ndarray and res.x.dtype == np.float64
    assert res.success == ref.success
    np.testing.assert_allclose(res.x, ref.x, atol=atol)


@pytest.mark.parametrize("method", ["BFGS", "L-BFGS-B", "CG", "SLSQP", "TNC", "trust-constr"])
def test_minimize_with_grad(method):
    jac, ref_jac = _counted(pj.grad(rosen)), _counted(optimize.rosen_der)
    res = optimize.minimize(rosen, X0, jac=jac, method=method)
    ref = optimize.minimize(optimize.rosen, X0, jac=ref_jac, method=method)
    _same_solve(res, ref, atol=1e-4)
    assert jac.calls == ref_jac.calls > 0


def test_minimize_with_value_and_grad_and_jac_true():
    fun = _counted(pj.value_and_grad(rosen))
    res = optimize.minimize(fun, X0, jac=True, method="BFGS")
    ref = optimize.minimize(optimize.rosen, X0, jac=optimize.rosen_der, method="BFGS")
    _same_solve(res, ref)
    assert fun.calls == res.nfev == ref.nfev


@pytest.mark.parametrize("method", ["Newton-CG", "trust-ncg", "trust-krylov", "trust-exact"])
def test_minimize_with_hessian(method):
    hess, ref_hess = _counted(pj.hessian(rosen)), _counted(optimize.rosen_hess)
    res = optimize.minimize(rosen, X0, jac=pj.grad(rosen), hess=hess, method=method)
    ref = optimize.minimize(optimize.rosen, X0, jac=optimize.rosen_der, hess=ref_hess,
                            method=method)
    _same_solve(res, ref)
    assert hess.calls == ref_hess.calls > 0 and res.nit == ref.nit


def test_minimize_dogleg_with_hessian():
    """dogleg needs a positive definite Hessian along the path: a convex quadratic-plus-quartic."""
    A = np.diag([3.0, 2.0, 1.0]) + 0.5

    def f(x):
        return 0.5 * x @ A @ x + np.sum(x ** 4) - x[0]
    hess = _counted(pj.hessian(f))
    ref_hess = _counted(lambda x: A + np.diag(12 * x ** 2))
    res = optimize.minimize(f, np.ones(3), jac=pj.grad(f), hess=hess, method="dogleg")
    ref = optimize.minimize(f, np.ones(3), jac=lambda x: A @ x + 4 * x ** 3 - np.eye(3)[0],
                            hess=ref_hess, method="dogleg")
    _same_solve(res, ref)
    assert hess.calls == ref_hess.calls > 0


@pytest.mark.parametrize("method", ["Newton-CG", "trust-ncg", "trust-krylov"])
def test_minimize_with_hessp(method):
    hessp = _counted(lambda x, p: pj.hvp(rosen, x, p)[1])
    res = optimize.minimize(rosen, X0, jac=pj.grad(rosen), hessp=hessp, method=method)
    ref = optimize.minimize(optimize.rosen, X0, jac=optimize.rosen_der,
                            hessp=optimize.rosen_hess_prod, method=method)
    _same_solve(res, ref)
    assert hessp.calls > 0 and res.nit == ref.nit


def _decay(t, k, c):
    return k[0] * np.exp(-k[1] * t) + c


def test_least_squares_with_jacrev():
    t = np.linspace(0.0, 3.0, 20)
    y = 2.0 * np.exp(-1.3 * t) + 0.5

    def residuals(p):
        return p[0] * np.exp(-p[1] * t) + p[2] - y
    jac = _counted(pj.jacrev(residuals))
    res = optimize.least_squares(residuals, np.array([1.0, 1.0, 0.0]), jac=jac)

    def exact(p):
        e = np.exp(-p[1] * t)
        return np.stack([e, -p[0] * t * e, np.ones_like(t)], axis=1)
    ref = optimize.least_squares(residuals, np.array([1.0, 1.0, 0.0]), jac=exact)
    _same_solve(res, ref, atol=1e-8)
    np.testing.assert_allclose(res.x, [2.0, 1.3, 0.5], atol=1e-6)
    assert jac.calls == res.njev == ref.njev > 0


@pytest.mark.parametrize("method", ["hybr", "lm"])
def test_root_with_jacobian(method):
    def fun(x):
        return np.stack([x[0] + 0.5 * (x[0] - x[1]) ** 3 - 1.0,
                         0.5 * (x[1] - x[0]) ** 3 + x[1]])

    def exact(x):
        d = 1.5 * (x[0] - x[1]) ** 2
        return np.array([[1.0 + d, -d], [-d, 1.0 + d]])
    jac, ref_jac = _counted(pj.jacobian(fun)), _counted(exact)
    res = optimize.root(fun, np.zeros(2), jac=jac, method=method)
    ref = optimize.root(fun, np.zeros(2), jac=ref_jac, method=method)
    _same_solve(res, ref, atol=1e-10)
    assert jac.calls == ref_jac.calls > 0


def test_curve_fit_with_jac():
    xdata = np.linspace(0.0, 4.0, 30)
    ydata = _decay(xdata, [2.5, 0.8], 0.3) + 0.01 * np.sin(7 * xdata)

    def model(x, a, b, c):
        return a * np.exp(-b * x) + c
    # curve_fit calls jac(x, *params): the Jacobian with respect to the parameters
    jac = _counted(pj.jacrev(model, argnums=(1, 2, 3)))

    def jac_matrix(x, *params):
        return np.stack(jac(x, *params), axis=-1)

    def exact(x, a, b, c):
        e = np.exp(-b * x)
        return np.stack([e, -a * x * e, np.ones_like(x)], axis=-1)
    p, cov = optimize.curve_fit(model, xdata, ydata, p0=[1.0, 1.0, 0.0], jac=jac_matrix)
    p_ref, cov_ref = optimize.curve_fit(model, xdata, ydata, p0=[1.0, 1.0, 0.0], jac=exact)
    assert type(p) is np.ndarray
    np.testing.assert_allclose(p, p_ref, rtol=1e-8)
    np.testing.assert_allclose(cov, cov_ref, rtol=1e-6)
    assert jac.calls > 0


def robertson(t, y):
    return np.stack([-0.04 * y[0] + 1e4 * y[1] * y[2],
                     0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
                     3e7 * y[1] ** 2])


def robertson_jac(t, y):
    return np.array([[-0.04, 1e4 * y[2], 1e4 * y[1]],
                     [0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]],
                     [0.0, 6e7 * y[1], 0.0]])


@pytest.mark.parametrize("method", ["BDF", "Radau", "LSODA"])
def test_solve_ivp_with_jacobian(method):
    jac = _counted(pj.jacrev(robertson, argnums=1))
    y0 = np.array([1.0, 0.0, 0.0])
    kw = dict(method=method, rtol=1e-6, atol=1e-10)
    res = integrate.solve_ivp(robertson, (0.0, 40.0), y0, jac=jac, **kw)
    ref = integrate.solve_ivp(robertson, (0.0, 40.0), y0, jac=robertson_jac, **kw)
    assert res.success and type(res.y) is np.ndarray
    np.testing.assert_allclose(res.y[:, -1], ref.y[:, -1], rtol=1e-9, atol=1e-14)
    assert jac.calls == res.njev == ref.njev > 0
