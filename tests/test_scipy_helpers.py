"""pforjac.scipy.optimize / pforjac.scipy.integrate: scipy's solvers with exact derivatives
filled in, against the same solvers with scipy's hand-written derivatives (or its finite
differences where it ships none); and scipy's Rosenbrock functions rebuilt with pforjac ops."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.integrate as si  # noqa: E402
import scipy.optimize as so  # noqa: E402

import pforjac as pj  # noqa: E402
import pforjac.scipy.integrate as pi  # noqa: E402
import pforjac.scipy.optimize as po  # noqa: E402
from pforjac.sparse import PreparedHessian, PreparedJacobian  # noqa: E402
from odes import robertson, robertson_jac  # noqa: E402


def test_importing_pforjac_and_the_helpers_does_not_import_scipy():
    code = ("import sys, pforjac, pforjac.scipy.optimize, pforjac.scipy.integrate; "
            "print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- scipy's Rosenbrock functions ---------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 7])
def test_rosen_and_its_derivatives_give_scipys_values_to_the_bit(n):
    x, p = np.random.default_rng(n).normal(size=(2, n))
    for name in ("rosen", "rosen_der", "rosen_hess"):
        ours, theirs = getattr(po, name)(x), getattr(so, name)(x)
        assert type(ours) is type(theirs) and np.array_equal(ours, theirs), name
    assert np.array_equal(po.rosen_hess_prod(x, p), so.rosen_hess_prod(x, p))


def test_rosen_is_differentiable_and_its_derivatives_agree():
    x = np.random.default_rng(0).normal(size=6)
    np.testing.assert_allclose(pj.grad(po.rosen)(x), so.rosen_der(x), rtol=1e-12)
    np.testing.assert_allclose(pj.jacfwd(po.rosen_der)(x), so.rosen_hess(x), rtol=1e-12)
    assert isinstance(pj.grad(po.rosen)(pj.constant(x)), pj.Tensor)


# -- minimize -----------------------------------------------------------------------------------
_HESS_METHODS = {"Newton-CG", "trust-ncg", "trust-krylov", "trust-exact", "trust-constr"}


@pytest.mark.parametrize("method", ["BFGS", "L-BFGS-B", "CG", "SLSQP", "Newton-CG", "trust-ncg",
                                    "trust-krylov", "trust-exact", "trust-constr"])
def test_minimize_converges_where_scipys_hand_written_derivatives_do(method):
    x0 = np.array([-1.2, 1.0, -0.5, 0.8])
    hess = {"hess": so.rosen_hess} if method in _HESS_METHODS else {}
    want = so.minimize(so.rosen, x0, method=method, jac=so.rosen_der, **hess)
    got = po.minimize(lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
                      x0, method=method)
    gradient = got.grad if method == "trust-constr" else got.jac     # (its jac: constraints')
    assert got.success and type(got.x) is np.ndarray and type(gradient) is np.ndarray
    # (some reach the local minimum.) Both stop once the gradient is under the method's
    # tolerance, which leaves x up to about 1e-4 from the minimum in Rosenbrock's valley;
    # where each stops in that range follows the gradients' last bits (CG: 1.6e-5 apart
    # on one CPU, under 1e-5 on another)
    np.testing.assert_allclose(got.x, want.x, atol=1e-4)
    assert np.abs(so.rosen_der(got.x)).max() < 1e-2
    # about as many values and gradients as with the hand-written gradient
    assert got.njev <= got.nfev <= 1.5 * want.nfev + 5


def test_minimize_passes_args_and_uses_a_given_jac_as_it_is():
    calls = []

    def jac(x, a):
        calls.append(1)
        return 2 * (x - a)
    res = po.minimize(lambda x, a: np.sum((x - a) ** 2), np.zeros(3), args=(np.arange(3.0),),
                      jac=jac, method="BFGS")
    np.testing.assert_allclose(res.x, np.arange(3.0), atol=1e-6)
    assert len(calls) == res.njev > 0


def test_a_function_that_branches_in_python_runs_eagerly_after_one_warning():
    def f(x):
        if x[0] > 0:                         # a Python branch on a value: not traceable
            return np.sum((x - 1.0) ** 2)
        return np.sum((x - 1.0) ** 2) + 0.0 * x[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = po.minimize(f, np.full(3, 0.5), method="Newton-CG")
    messages = [str(w.message) for w in caught if "could not be compiled" in str(w.message)]
    assert len(messages) == 1, messages
    assert "minimize(newton-cg)" in messages[0] and "truth value" in messages[0]
    np.testing.assert_allclose(res.x, 1.0, atol=1e-6)


def _spy(monkeypatch, module, name):
    seen = {}
    real = getattr(module, name)

    def spy(*args, **kwargs):
        seen["args"], seen["kwargs"] = args, kwargs
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, spy)
    return seen


def _chained(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_newton_cg_takes_the_sparse_hessian_for_a_large_sparse_problem(monkeypatch):
    seen = _spy(monkeypatch, so, "minimize")
    x0 = np.full(200, 0.5)
    res = po.minimize(_chained, x0, method="Newton-CG")
    assert isinstance(seen["args"][5], PreparedHessian)        # hess, sparse and coloured
    assert seen["args"][5].ncolors == 3
    want = so.minimize(so.rosen, x0, method="Newton-CG", jac=so.rosen_der, hess=so.rosen_hess)
    assert res.success and res.nit == want.nit
    np.testing.assert_allclose(res.x, want.x, atol=1e-8)
    po.minimize(_chained, x0, method="Newton-CG", sparse=False)
    assert seen["args"][5] is None and callable(seen["args"][6])   # dense: hessp
    po.minimize(_chained, np.full(20, 0.5), method="Newton-CG")    # small: dense
    assert seen["args"][5] is None


def test_value_and_gradient_come_from_one_pass_unless_numpy_computes_the_value(monkeypatch):
    seen = _spy(monkeypatch, so, "minimize")
    x0 = np.full(5, 0.5)
    res = po.minimize(lambda x: pj.sum((x - 1.0) ** 2), x0, method="BFGS")  # a Tensor value
    assert seen["args"][4] is True and res.nfev == res.njev
    np.testing.assert_allclose(res.x, 1.0, atol=1e-6)
    po.minimize(_chained, x0, method="BFGS")            # numpy's value: cheap to recompute
    assert callable(seen["args"][4]) and seen["args"][0] is _chained


def test_sparse_must_be_true_false_or_auto():
    with pytest.raises(ValueError, match="sparse must be True, False or 'auto'"):
        po.minimize(_chained, np.ones(200), method="Newton-CG", sparse="yes")


# -- least_squares, root, curve_fit -------------------------------------------------------------
def test_least_squares_fits_a_curve_as_with_the_hand_written_jacobian():
    t = np.linspace(0, 3, 1000)
    y = 2.5 * np.exp(-1.3 * t) + 0.4 * np.sin(3 * t)

    def residual(p):
        return p[0] * np.exp(-p[1] * t) + p[2] * np.sin(p[3] * t) - y

    def jac(p):
        return np.stack([np.exp(-p[1] * t), -p[0] * t * np.exp(-p[1] * t), np.sin(p[3] * t),
                         p[2] * t * np.cos(p[3] * t)], axis=1)
    x0 = np.array([1.0, 1.0, 1.0, 2.8])
    want = so.least_squares(residual, x0, jac=jac)
    got = po.least_squares(residual, x0)
    np.testing.assert_allclose(got.x, want.x, rtol=1e-7)
    np.testing.assert_allclose(got.jac, jac(got.x), rtol=1e-12, atol=1e-14)
    assert got.njev == want.njev and got.nfev == want.nfev


def _broyden(x):          # the Broyden tridiagonal system: a sparse Jacobian
    xp = pj.pad(x, [(1, 1)])
    return (3 - 2 * x) * x - xp[:-2] - 2 * xp[2:] + 1


def test_least_squares_goes_sparse_with_lsmr_for_a_large_sparse_problem(monkeypatch):
    seen = _spy(monkeypatch, so, "least_squares")
    res = po.least_squares(_broyden, -np.ones(300))
    assert isinstance(seen["args"][2], PreparedJacobian) and seen["kwargs"]["tr_solver"] == "lsmr"
    assert np.abs(res.fun).max() < 1e-8
    po.least_squares(_broyden, -np.ones(300), method="lm")      # lm is dense only
    assert callable(seen["args"][2]) and not isinstance(seen["args"][2], PreparedJacobian)


def test_root_uses_the_exact_jacobian():
    def f(x):
        return np.stack([x[0] + 0.5 * (x[0] - x[1]) ** 3 - 1.0, 0.5 * (x[1] - x[0]) ** 3 + x[1]])

    def jac(x):
        d = 1.5 * (x[0] - x[1]) ** 2
        return np.array([[1 + d, -d], [-d, 1 + d]])
    for method in ("hybr", "lm"):
        want = so.root(lambda x: np.asarray(f(x)), np.zeros(2), jac=jac, method=method)
        got = po.root(f, np.zeros(2), method=method)
        assert got.success and type(got.x) is np.ndarray
        np.testing.assert_allclose(got.x, want.x, rtol=1e-10)


def test_curve_fit_with_the_exact_jacobian():
    x = np.linspace(0, 4, 200)
    y = 3.0 * np.exp(-0.7 * x) + 0.5 + 0.01 * np.random.default_rng(0).normal(size=200)

    def model(x, a, b, c):
        return a * np.exp(-b * x) + c

    def jac(x, a, b, c):
        return np.stack([np.exp(-b * x), -a * x * np.exp(-b * x), np.ones_like(x)], axis=1)
    want, want_cov = so.curve_fit(model, x, y, p0=[1, 1, 0], jac=jac)
    got, got_cov = po.curve_fit(model, x, y, p0=[1, 1, 0])
    np.testing.assert_allclose(got, want, rtol=1e-8)
    np.testing.assert_allclose(got_cov, want_cov, rtol=1e-6)
    np.testing.assert_allclose(po.curve_fit(model, x, y)[0], want, rtol=1e-6)   # p0 counted


# -- solve_ivp ----------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["Radau", "BDF", "LSODA"])
def test_solve_ivp_on_robertson_matches_the_hand_written_jacobian(method):
    kw = dict(method=method, rtol=1e-6, atol=1e-10)
    y0 = np.array([1.0, 0.0, 0.0])
    want = si.solve_ivp(robertson, (0, 1e3), y0, jac=robertson_jac, **kw)
    got = pi.solve_ivp(robertson, (0, 1e3), y0, **kw)
    assert got.success and got.njev > 0 and got.nfev == want.nfev and got.njev == want.njev
    np.testing.assert_allclose(got.y[:, -1], want.y[:, -1], rtol=1e-8, atol=1e-14)


def _diffusion(t, y, k):
    yp = pj.pad(y, [(1, 1)])
    return k * (yp[:-2] - 2 * y + yp[2:]) - y ** 3


def test_solve_ivp_goes_sparse_for_bdf_on_a_large_sparse_system(monkeypatch):
    seen = _spy(monkeypatch, si, "solve_ivp")
    y0 = np.sin(np.linspace(0, np.pi, 200))
    got = pi.solve_ivp(_diffusion, (0, 0.5), y0, method="BDF", args=(50.0,))
    jac = seen["kwargs"]["jac"]
    assert scipy.sparse.issparse(jac(0.0, y0, 50.0))
    banded = scipy.sparse.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(200, 200))
    want = si.solve_ivp(lambda t, y: np.asarray(_diffusion(t, y, 50.0)), (0, 0.5), y0,
                        method="BDF", jac_sparsity=banded)
    np.testing.assert_allclose(got.y[:, -1], want.y[:, -1], rtol=1e-5, atol=1e-8)
    pi.solve_ivp(_diffusion, (0, 0.1), y0, method="LSODA", args=(50.0,))  # LSODA: dense
    assert isinstance(seen["kwargs"]["jac"](0.0, y0, 50.0), np.ndarray)
