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
    steps = [h * e.reshape(x.shape) for e in np.eye(x.size)]
    return np.array([(f(x + e) - f(x - e)) / (2 * h) for e in steps]).reshape(x.shape)


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
    _assert_every_path(lambda v: v[0] ** v[1], [2.0, 0.0], [0.0, np.log(2.0)])
    for path, got in _grads(lambda v: v[0] ** v[1], [0.0, 0.0]).items():
        assert got[0] == 0.0 and np.isnan(got[1]), (path, got)        # 0**y jumps at y == 0
    # a where that keeps the negative base out still has a finite gradient (zero cotangent)
    guarded = lambda v: np.sum(np.where(v[:2] > 0, v[:2] ** v[2], 0.0))  # noqa: E731
    _assert_every_path(guarded, [-2.0, 3.0, 2.0], [0.0, 6.0, 9.0 * np.log(3.0)])


def test_an_integer_divisor_or_base_keeps_true_division():
    """An integer divisor or base: the derivative is the true quotient's (an integer
    reciprocal would make 1 / 2 -> 0), and power's y-derivative reads log of the base."""
    for divisor in (np.array([2, 4]), np.array([2, 4], np.int32)):
        _assert_every_path(lambda v: np.sum(v / divisor), [1.0, 2.0], [0.5, 0.25])
    _assert_every_path(lambda v: np.sum(np.array([2, 3]) ** v), [1.5, 2.0],
                       [2 ** 1.5 * np.log(2.0), 9.0 * np.log(3.0)])


# -- qr at a rank-deficient matrix: the rule divided by a zero of R's diagonal ----------------
_RANK_DROP = np.array([[1.0, 2.0, 0.5], [2.0, 4.0, -1.0], [3.0, 6.0, 2.0], [-1.0, -2.0, 1.0]])
_W = np.arange(1.0, 13.0).reshape(4, 3) / 7.0


@pytest.mark.parametrize("name, f, defined", [
    ("first column of Q", lambda a: np.sum(np.linalg.qr(a)[0][:, 0] * _W[:, 0]), True),
    ("first column of R", lambda a: np.sum(np.linalg.qr(a)[1][:, 0] * _W[0]), True),
    ("R's first row", lambda a: np.sum(np.linalg.qr(a)[1][0] * _W[0]), False),   # was wrong
    ("R past the drop", lambda a: np.linalg.qr(a)[1][1, 1], False),
    ("Q past the drop", lambda a: np.sum(np.linalg.qr(a)[0][:, 1] * _W[:, 1]), False),
])
def test_qr_past_a_rank_drop_is_nan_with_a_warning_never_finite(name, f, defined):
    """Column 1 is twice column 0: R[1, 1] is at rounding level. A cotangent that reaches
    Q's or R's columns from there on gives NaN (R's first row is smooth, but the rule
    divides by R[1, 1] for it: it gave a finite wrong number); one that does not is exact."""
    with pytest.warns(RuntimeWarning, match="qr: its derivative at a rank-deficient"):
        pj.jacfwd(f)(_RANK_DROP)               # forward mode: any tangent moves Q's completion
    paths = _grads(f, _RANK_DROP)
    del paths["jacfwd"]
    for path, got in paths.items():
        if defined:
            np.testing.assert_allclose(got, _central(lambda v: float(f(v)), _RANK_DROP),
                                       atol=1e-7, err_msg=path)
        else:
            assert np.all(np.isnan(got)), (path, got)


def test_qr_at_full_rank_matches_central_differences():
    a = _RANK_DROP + np.eye(4, 3)

    def f(v):
        q, r = np.linalg.qr(v)
        return np.sum(r ** 2 * _W[:3]) + np.sum(q * _W)
    want = _central(lambda v: float(f(v)), a)
    for path, got in _grads(f, a).items():
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=path)


# -- pforjac.sparse's Hessian pattern took a complex abs as piecewise linear ------------------
@pytest.mark.parametrize("f", [
    lambda x: pj.abs(x[0] + 1j * x[1]) * x[2],
    lambda x: np.linalg.norm(x[:2] + 1j * x[2:], 1),
    lambda x: np.linalg.norm(x[:2] + 1j * x[2:], np.inf),
])
def test_sparse_hessian_through_a_complex_abs_equals_the_dense_one(f):
    x = np.array([2.0, 0.7, 1.0, 3.0])
    dense = np.asarray(pj.hessian(f)(x))
    assert np.count_nonzero(dense) > 2
    np.testing.assert_allclose(pforjac.sparse.hessian(f, x).toarray(), dense, rtol=1e-12,
                               atol=1e-15)
    real = pforjac.sparse.hessian_sparsity(lambda v: np.sum(np.abs(v[:2] * v[2:])), x)
    assert real.toarray()[0, 0] == 0           # a real abs stays piecewise linear: no x0 x0 pair
