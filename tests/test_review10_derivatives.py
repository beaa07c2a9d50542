"""Derivatives that were silently wrong, or NaN where they are defined, found by an
outside-style attack through the public API (eager tape, pfor, the row loop, compiled code,
forward mode), each checked against JAX float64 values recorded in
tests/data/review10_jax.json (make_review10_jax.py next to it), closed forms, or central
differences."""
import json
import pathlib
import warnings

import numpy as np
import pytest

import pforjac as pj
import pforjac.scipy.special as psp
import pforjac.sparse

JAX = {k: np.asarray(v) for k, v in json.loads(
    (pathlib.Path(__file__).parent / "data" / "review10_jax.json").read_text()).items()}


def _grads(f, x):
    """f's gradient at x on every path, as numpy arrays."""
    x = np.asarray(x, np.float64)

    def tape_grad(v):
        with pj.GradientTape() as tape:
            tape.watch(v)
            y = f(v)
        return tape.gradient(y, v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = {"tape": tape_grad(pj.constant(x)), "grad": pj.grad(f)(x),
               "pfor": pj.jacobian(f, x), "loop": pj.jacobian(f, x, vectorize=False),
               "compiled": pj.function(pj.grad(f))(x), "jacfwd": pj.jacfwd(f)(x)}
    return {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in out.items()}


def _assert_every_path(f, x, want, rtol=1e-12):
    for path, got in _grads(f, x).items():
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-14, err_msg=path)


def _central(f, x, h=1e-6):
    x = np.asarray(x, np.float64)
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])


# -- numpy 2's complex sign z / |z| had a zero derivative (a real sign's) ----------------------
def _sign_squared(x):
    z = x[:2] + 1j * x[2:]
    return np.sum(np.imag(np.sign(z) ** 2 * (2 - 1j)) + np.real(np.sign(z) * z * z))


@pytest.mark.skipif(np.sign(1j) == 0, reason="numpy 1's complex sign is a step")
def test_complex_sign_has_the_derivative_of_z_over_abs_z():
    x = JAX["x"]
    _assert_every_path(_sign_squared, x, JAX["sign_grad"], rtol=1e-11)
    np.testing.assert_allclose(_central(lambda v: float(_sign_squared(v)), x), JAX["sign_grad"],
                               rtol=1e-7)
    for hess in (pj.hessian(_sign_squared), pj.jacfwd(pj.grad(_sign_squared))):
        np.testing.assert_allclose(np.asarray(hess(x)), JAX["sign_hessian"], rtol=1e-10,
                                   atol=1e-12)


@pytest.mark.skipif(np.sign(1j) == 0, reason="numpy 1's complex sign is a step")
def test_complex_sign_in_sparse_jacobians_and_a_real_sign_stays_a_step():
    def f(x):
        return pj.real(pj.sign(x[:2] + 1j * x[2:]) * (1 + 2j))
    x = JAX["x"]
    dense = np.asarray(pj.jacobian(f, x))
    assert np.count_nonzero(dense) == 4            # each output reads its real and imaginary part
    np.testing.assert_allclose(pforjac.sparse.jacobian(f, x).toarray(), dense, rtol=1e-14)
    real_sign = pforjac.sparse.jacobian_sparsity(lambda v: pj.sign(v) + 0.0, x)
    assert real_sign.nnz == 0
    np.testing.assert_array_equal(pj.grad(lambda v: np.sum(np.sign(v) * v ** 2))(
        np.array([0.0, -2.0, 3.0])), [0.0, 4.0, 6.0])
    _assert_every_path(lambda v: np.real(np.sign(v[0] + 1j * v[1]) * (1 + 2j)), [0.0, 0.0],
                       [0.0, 0.0])        # at 0 a step's convention, as a real sign's and JAX's


# -- x ** y's y-derivative at a negative base was TensorFlow's 0: it is not defined ------------
def test_power_exponent_derivative_at_a_negative_base_is_nan():
    for path, got in _grads(lambda v: v[0] ** v[1], [-2.0, 3.0]).items():
        assert got[0] == 12.0 and np.isnan(got[1]), (path, got)
    _assert_every_path(lambda v: v[0] ** v[1], [2.0, 3.0], [12.0, 8.0 * np.log(2.0)])
    _assert_every_path(lambda v: v[0] ** v[1], [0.0, 2.0], [0.0, 0.0])   # 0**y constant in y > 0
    # a where that keeps the negative base out still has a finite gradient (zero cotangent)
    guarded = lambda v: np.sum(np.where(v[:2] > 0, v[:2] ** v[2], 0.0))  # noqa: E731
    _assert_every_path(guarded, [-2.0, 3.0, 2.0], [0.0, 6.0, 9.0 * np.log(3.0)])
