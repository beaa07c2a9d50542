"""The ODE helper's Radau and BDF: scipy's solvers with their dense LU calls made straight
to LAPACK. They must take scipy's steps to the bit, keep scipy's errors and warnings, and
leave sparse Jacobians to scipy's sparse LU."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.integrate as si  # noqa: E402
import scipy.integrate._ivp.bdf as scipy_bdf  # noqa: E402
import scipy.integrate._ivp.radau as scipy_radau  # noqa: E402
import scipy.sparse  # noqa: E402
from scipy.linalg import LinAlgWarning  # noqa: E402

import pforjac.scipy.integrate as pi  # noqa: E402
from pforjac.scipy._lapack_lu import lapack_lu_method  # noqa: E402
from odes import robertson, robertson_jac  # noqa: E402


def _count_scipy_lu_solves(monkeypatch):
    calls = []
    for module in (scipy_radau, scipy_bdf):
        real = module.lu_solve
        monkeypatch.setattr(module, "lu_solve",
                            lambda *a, _real=real, **k: calls.append(1) or _real(*a, **k))
    return calls


@pytest.mark.parametrize("method", ["Radau", "BDF"])
def test_the_helper_takes_scipys_steps_to_the_bit_without_scipys_lu_wrappers(
        method, monkeypatch):
    kw = dict(method=method, rtol=1e-8, atol=1e-12)
    y0 = np.array([1.0, 0.0, 0.0])
    calls = _count_scipy_lu_solves(monkeypatch)
    want = si.solve_ivp(robertson, (0, 1e5), y0, jac=robertson_jac, **kw)
    scipys = len(calls)
    got = pi.solve_ivp(robertson, (0, 1e5), y0, jac=robertson_jac, **kw)
    assert scipys > 100 and len(calls) == scipys          # no lu_solve call of scipy's
    assert (got.nfev, got.njev, got.nlu) == (want.nfev, want.njev, want.nlu)
    assert np.array_equal(got.t, want.t) and np.array_equal(got.y, want.y)


def test_a_complex_system_keeps_its_complex_values_and_derivative():
    A = np.array([[-1 + 2j, 0.5], [0.1, -3 - 1j]])
    y0 = np.array([1 + 0j, 1j])
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # (no ComplexWarning: nothing is dropped)
        got = pi.solve_ivp(lambda t, y: A @ y + 0.1 * y ** 2, (0, 1), y0, method="BDF")
    want = si.solve_ivp(lambda t, y: A @ y + 0.1 * y ** 2, (0, 1), y0, method="BDF",
                        jac=lambda t, y: A + np.diag(0.2 * y))
    assert got.y.dtype == np.complex128 and got.njev == want.njev
    np.testing.assert_allclose(got.y, want.y, rtol=1e-13, atol=1e-15)


def _solver(method, jac=robertson_jac):
    return lapack_lu_method(method)(robertson, 0.0, np.array([1.0, 0.0, 0.0]), 1.0,
                                    jac=jac)


@pytest.mark.parametrize("method", ["Radau", "BDF"])
def test_non_finite_input_raises_scipys_error_and_a_singular_matrix_warns(method):
    solver = _solver(method)
    with pytest.raises(ValueError, match="infs or NaNs"):
        solver.lu(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.warns(LinAlgWarning, match="Diagonal number 2 is exactly zero"):
        solver.lu(np.array([[1.0, 2.0], [2.0, 4.0]]))
    LU = solver.lu(np.array([[2.0, 1.0], [1.0, 3.0]]))
    assert solver.nlu == 3
    with pytest.raises(ValueError, match="infs or NaNs"):
        solver.solve_lu(LU, np.array([1.0, np.inf]))
    np.testing.assert_allclose(solver.solve_lu(LU, np.array([3.0, 4.0])), [1.0, 1.0])
    # a real factor and a complex right-hand side, as Radau's complex system may give
    x = solver.solve_lu(LU, np.array([3.0 + 3j, 4.0 + 4j]))
    np.testing.assert_allclose(x, [1.0 + 1j, 1.0 + 1j])


def test_sparse_jacobians_keep_scipys_sparse_lu_and_other_methods_pass_through():
    sparse_jac = lambda t, y: scipy.sparse.csc_matrix(robertson_jac(t, y))  # noqa: E731
    solver = _solver("BDF", jac=sparse_jac)
    assert "BDF.__init__" in solver.lu.__qualname__           # scipy's own splu wrapper
    assert "_dense_lu" in _solver("BDF").lu.__qualname__
    assert lapack_lu_method("LSODA") == "LSODA" and lapack_lu_method(si.BDF) is si.BDF
    assert issubclass(lapack_lu_method("Radau"), si.Radau)


def test_sparse_true_with_a_complex_y0_says_the_jacobian_is_dense():
    A = np.array([[-1 + 2j, 0.5], [0.1, -3 - 1j]])
    y0 = np.array([1 + 0j, 1j])
    with pytest.warns(RuntimeWarning, match="sparse=True is not available for a complex y0"):
        got = pi.solve_ivp(lambda t, y: A @ y, (0, 1), y0, method="BDF", sparse=True)
    want = si.solve_ivp(lambda t, y: A @ y, (0, 1), y0, method="BDF", jac=lambda t, y: A)
    assert got.njev == want.njev
    np.testing.assert_allclose(got.y, want.y, rtol=1e-13, atol=1e-15)


def test_a_wrong_sparse_value_is_refused_for_a_complex_y0_too():
    with pytest.raises(ValueError, match="sparse must be True, False or 'auto'"):
        pi.solve_ivp(lambda t, y: -y, (0, 1), np.array([1j]), method="BDF", sparse="yes")


class _LeftoverNaNs:
    """numpy, as scipy's BDF module sees it, with `np.empty` returning arrays whose bytes
    are signaling NaNs: what a heap's leftover bytes may happen to be (they raise
    "invalid value" in arithmetic; a quiet NaN does not)."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(shape, dtype=float, **kwargs):
        a = np.empty(shape, dtype, **kwargs)
        a.view(np.uint8)[...] = np.frombuffer(b"\x01\x00\x00\x00\x00\x00\xf4\x7f" * (a.nbytes // 8),
                                              np.uint8).reshape(a.view(np.uint8).shape)
        return a


def test_bdf_never_reads_the_bytes_np_empty_left_in_its_differences(monkeypatch):
    # scipy's BDF subtracts a row of its `np.empty` differences in its first step: an
    # "invalid value" warning where the heap held a signaling NaN there, though no value
    # depends on it. The helper's BDF zeroes those rows: no warning, and scipy's values.
    y0 = np.sin(np.linspace(0.0, np.pi, 40))
    fun = lambda t, u: 40.0 * (np.r_[0.0, u[:-1]] - 2 * u + np.r_[u[1:], 0.0]) - u ** 3
    jac = lambda t, u: (np.diag(np.full(39, 40.0), -1) + np.diag(np.full(39, 40.0), 1)
                        - np.diag(80.0 + 3 * u ** 2))
    want = si.solve_ivp(fun, (0.0, 0.5), y0, method="BDF", jac=jac)
    monkeypatch.setattr(scipy_bdf, "np", _LeftoverNaNs())
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="invalid value"):
            si.solve_ivp(fun, (0.0, 0.5), y0, method="BDF", jac=jac)    # (scipy's own)
        got = pi.solve_ivp(fun, (0.0, 0.5), y0, method="BDF", jac=jac)
    assert got.success and (got.nfev, got.njev, got.nlu) == (want.nfev, want.njev, want.nlu)
    assert np.array_equal(got.t, want.t) and np.array_equal(got.y, want.y)
