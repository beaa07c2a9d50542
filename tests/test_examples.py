"""Every program in examples/ runs (in-process, small sizes) and its pforjac derivatives
match central finite differences of the same plain-numpy function run on arrays (or scipy's
closed forms)."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

from pforjac import numpy_dispatch

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def needs(*functions):
    """Skips until pforjac implements these numpy functions (written by another change)."""
    missing = [f"numpy.linalg.{f.__name__}" for f in functions
               if numpy_dispatch.FUNCTIONS.get(f) is None]
    return pytest.mark.skipif(bool(missing), reason=f"pforjac lacks {', '.join(missing)} yet")


def fd_gradient(f, x, h=1e-6):
    """Central differences of scalar (or vector, stacked last) `f` at `x`, per entry of x."""
    x = np.asarray(x, float)
    columns = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        e = e.reshape(x.shape)
        columns.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.moveaxis(np.array(columns), 0, -1).reshape(np.shape(f(x)) + x.shape)


def fd_hessian(f, x, h=1e-4):
    return fd_gradient(lambda v: fd_gradient(f, v, h), x, h)


def test_example_files_each_have_a_test():
    tested = {"logistic_regression", "mlp_classifier", "stiff_ode", "curve_fit",
              "physics_energy", "gaussian_process"}
    assert {p.stem for p in EXAMPLES.glob("*.py")} == tested


def test_logistic_regression(capsys):
    ex = load("logistic_regression")
    out = ex.main(steps=20)
    w, X, y = out["w"], out["X"], out["y"]
    assert "loss" in capsys.readouterr().out
    fd = fd_gradient(lambda v: ex.per_example_loss(v, X, y), w)          # (n, d)
    np.testing.assert_allclose(out["per_example"], fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(ex.pj.grad(ex.loss)(w, X, y)),
                               fd_gradient(lambda v: ex.loss(v, X, y), w), rtol=1e-6, atol=1e-9)


def test_mlp_classifier():
    ex = load("mlp_classifier")
    out = ex.main(steps=5)
    params, X, labels = out["params"], out["X"], out["labels"]
    grads = ex.pj.grad(ex.loss)(params, X, labels)
    for name in ("W0", "b1"):
        def per_example(v, name=name):
            return ex.per_example_loss({**params, name: v}, X, labels)
        fd = fd_gradient(per_example, params[name])                    # (n, *shape)
        np.testing.assert_allclose(out["per_example"][name], fd, rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(np.asarray(grads[name]), fd.mean(0), rtol=1e-5, atol=1e-9)


def test_stiff_ode():
    ex = load("stiff_ode")
    out = ex.main(t_end=100.0)
    y = np.array([0.9, 2e-5, 0.1])
    np.testing.assert_allclose(ex.jacobian(0.0, y), fd_gradient(lambda v: ex.robertson(0.0, v), y,
                                                                h=1e-9), rtol=1e-5, atol=1e-3)
    assert out["exact"].success and out["exact"].njev > 0
    np.testing.assert_allclose(out["y"], out["estimated"].y[:, -1], rtol=1e-5, atol=1e-10)


def test_curve_fit_and_newton_minimization():
    from scipy.optimize import rosen_der, rosen_hess
    ex = load("curve_fit")
    out = ex.main(dim=10)
    np.testing.assert_allclose(out["fit"].x, out["truth"], atol=0.02)
    t, y = out["data"]
    p = np.array([1.5, 0.2, 1.6, 0.1])
    np.testing.assert_allclose(ex.jacobian(p, t, y),
                               fd_gradient(lambda v: ex.residuals(v, t, y), p), rtol=1e-6,
                               atol=1e-8)
    assert out["newton"].success and np.abs(out["newton"].x - 1).max() < 1e-5
    x = np.linspace(-1.0, 1.5, 10)
    np.testing.assert_allclose(np.asarray(ex.pj.grad(ex.rosenbrock)(x)), rosen_der(x), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ex.pj.hessian(ex.rosenbrock, x)), rosen_hess(x),
                               rtol=1e-12, atol=1e-12)


@needs(np.linalg.norm)
def test_physics_energy():
    ex = load("physics_energy")
    out = ex.main(n=4)
    x = out["x"]
    np.testing.assert_allclose(np.asarray(ex.pj.grad(ex.energy)(x)), fd_gradient(ex.energy, x),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out["hessian"],
                               fd_hessian(ex.energy, x).reshape(out["hessian"].shape),
                               rtol=1e-4, atol=1e-4)
    assert np.abs(out["eigenvalues"][:6]).max() < 1e-4 and out["eigenvalues"][6] > 0.1


@needs(np.linalg.cholesky, np.linalg.solve, np.linalg.slogdet)
def test_gaussian_process():
    ex = load("gaussian_process")
    out = ex.main()
    X, y = out["X"], out["y"]
    for p in (out["start"], out["fitted"].x):
        nll = lambda v: ex.neg_log_marginal_likelihood(v, X, y)         # noqa: E731
        np.testing.assert_allclose(np.asarray(ex.pj.grad(ex.neg_log_marginal_likelihood)(p, X, y)),
                                   fd_gradient(nll, p), rtol=1e-5, atol=1e-7)
    assert out["fitted"].success
