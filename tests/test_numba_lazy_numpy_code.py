"""A program the numba backend runs whole gets no numpy code unless it needs it: numpy's
generated code is made on first use, as the fallback for what numba's LAPACK bindings
refuse (a matrix with NaN or inf), and then gives numpy's results."""
import warnings

import numpy as np
import pytest

import pforjac as pj

pytest.importorskip("numba")


def _solve_twice(a, b):
    return np.linalg.solve(a, b) * 2.0


def _compiled(f):
    return f._cache and next(iter(f._cache.values()))


def test_numpy_code_is_made_only_when_numba_refuses_a_matrix():
    f = pj.function(_solve_twice, backend="numba")
    a, b = np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([3.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # (runs whole on numba: no warning)
        np.testing.assert_allclose(f(a, b), [2.0, 2.0])
    compiled = _compiled(f)
    assert compiled.backend == "numba" and compiled._numpy_code is None
    bad = a.copy()
    bad[0, 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = pj.function(_solve_twice, backend="numpy")(bad, b)
        got = f(bad, b)
    assert compiled._numpy_code is not None
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])
