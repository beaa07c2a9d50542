"""multiply_no_nan keeps tf.math.multiply_no_nan's meaning on its quicker path: 0 wherever
y is 0 (inf and NaN in x included), x * y elsewhere, and no warning of inf * 0 or overflow."""
import warnings

import numpy as np

import pforjac as pj
from pforjac.ops.elementwise import _multiply_no_nan_impl, multiply_no_nan


def test_zero_where_y_is_zero_and_no_warning():
    x = np.array([np.inf, -np.inf, np.nan, 1e300, 2.0, -3.0, 1e300])
    y = np.array([0.0, -0.0, 0.0, 1e300, 0.5, 0.0, -2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # numpy's RuntimeWarnings would raise
        out = _multiply_no_nan_impl(x, y)
        scalar = _multiply_no_nan_impl(x, np.float64(0.0))
    np.testing.assert_array_equal(out, [0.0, 0.0, 0.0, np.inf, 1.0, 0.0, -2e300])
    assert not np.signbit(out[:3]).any() and not np.signbit(out[5])
    np.testing.assert_array_equal(scalar, np.zeros(7))


def test_the_error_state_is_the_callers_again_afterwards():
    before = np.geterr()
    with np.errstate(over="raise", invalid="raise"):
        _multiply_no_nan_impl(np.array([1e300, np.inf]), np.array([1e300, 0.0]))
        assert np.geterr()["over"] == np.geterr()["invalid"] == "raise"
    assert np.geterr() == before


def test_a_zero_cotangent_through_a_square_at_inf_stays_zero():
    def f(x):                                   # x ** 2 at inf, seeded by 0: 0, not NaN
        return pj.sum(x[:1] ** 2)
    x = np.array([1.0, np.inf])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eager = pj.grad(f)(x)
        compiled = pj.function(pj.grad(f))(x)
    np.testing.assert_array_equal(eager, [2.0, 0.0])
    np.testing.assert_array_equal(compiled, [2.0, 0.0])
    t = pj.constant(np.array([np.inf, 2.0]))
    np.testing.assert_array_equal(multiply_no_nan(t, pj.constant(np.array([0.0, 3.0]))).numpy(),
                                  [0.0, 6.0])
