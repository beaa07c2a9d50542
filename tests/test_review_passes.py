"""Compiled-program passes against numpy: a rewrite keeps every bit numpy gives, on both
backends (passes/uniform.py: `x + (-1) * y` as `x - y`)."""
import warnings

import numpy as np
import pytest

import pforjac as pj


def _negated_sum(x, y):
    return x + (-1) * y




@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_complex_negated_sum_keeps_numpys_nan(backend):
    """numpy's (-1+0j) * (inf+0j) is -inf+nanj: x - y would give no NaN."""
    if backend == "numba":
        pytest.importorskip("numba")
    x = np.array([1 + 1j, -0.0 - 0.0j, 2 - 1j])
    y = np.array([np.inf + 0j, 0j, 1 + np.inf * 1j])
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = x + (-1) * y
        got = pj.function(_negated_sum, backend=backend)(x, y)
    np.testing.assert_array_equal(np.isnan(got.real), np.isnan(want.real))
    np.testing.assert_array_equal(np.isnan(got.imag), np.isnan(want.imag))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_a_real_negated_sum_is_a_difference_with_numpys_values(dtype):
    x = np.array([1.0, -0.0, 0.0, np.inf, 2.0, np.nan]).astype(dtype) if dtype != np.int64 \
        else np.array([1, 0, -3, 2 ** 62, -2 ** 63, 5], dtype)
    y = np.array([np.inf, 0.0, -0.0, np.inf, np.nan, 1.5]).astype(dtype) if dtype != np.int64 \
        else np.array([-2 ** 63, 0, 7, -2 ** 62, 1, 5], dtype)
    f = pj.function(_negated_sum, backend="numpy")
    with np.errstate(all="ignore"):
        want = x + (-1) * y
        got = f(x, y)
    assert "subtract" in str(f.program(x, y))          # (the rewrite ran)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
    if dtype != np.int64:
        real = ~np.isnan(want)                          # (a NaN's sign: the platform's)
        np.testing.assert_array_equal(np.signbit(got[real]), np.signbit(want[real]))
