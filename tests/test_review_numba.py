"""The numba backend against the numpy backend, bit for bit (signed zeros, NaN, inf), on
the elementwise ops where numba's own ufuncs differ from numpy's: floor_divide (numba's is
floor(a / b): 1.0 // 0.1 is 9 in numpy, 10 there), remainder (the sign of a zero result),
sign and relu (-0.0)."""
import warnings

import numpy as np
import pytest

import pforjac as pj

pytest.importorskip("numba")

_SPECIAL = [-np.inf, -2.5, -1.0, -0.5, -0.0, 0.0, 0.1, 0.5, 1.0, 2.5, 7.0, 1e300, np.inf, np.nan]
V = np.array(_SPECIAL + list(np.random.default_rng(0).normal(size=10) * 10))


def _values(dtype):
    with np.errstate(over="ignore"):                # (1e300 is inf in float32)
        return V.astype(dtype)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))


def _both(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return (pj.function(fn, backend="numba")(*args), pj.function(fn, backend="numpy")(*args))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_floor_divide_and_remainder_are_numpys(dtype):
    x, y = _values(dtype)[:, None], _values(dtype)[None, :]
    got, want = _both(lambda a, b: (a // b, a % b, pj.floor_divide(a.T, b) * 2.0), x, y)
    for g, w in zip(got, want):
        _same_bits(g, w)
    assert np.asarray(want[0])[list(V).index(1.0), list(V).index(0.1)] == 9.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sign_and_relu_of_negative_zero(dtype):
    got, want = _both(lambda a: (pj.sign(a), pj.relu(a), pj.sign(a) * 2.0 + a), _values(dtype))
    for g, w in zip(got, want):
        _same_bits(g, w)


def test_integer_floor_divide_and_remainder_keep_numbas_loops():
    i = np.arange(-6, 7)
    got, want = _both(lambda a, b: (a // b, a % b), i[:, None], i[None, :])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert np.asarray(g).dtype == np.asarray(w).dtype
