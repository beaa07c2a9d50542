"""Adversarial checks of three parts of the numba backend: the generated code's reshape
view `K.reshaped` (numba_views.py), the programs generated without parallel helpers
where they call BLAS or LAPACK (numba_codegen.py), and the structure guard over a whole
array `K.all_finite` (numba_kernels.py). Each program is compared with the numpy
backend and must run on numba (a fallback's warning fails the test)."""
import warnings

import numpy as np
import pytest

import pforjac as pj
import pforjac.numpy as pnp

numba = pytest.importorskip("numba")


def _both(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("error")             # (no fallback to the numpy backend)
        got = pj.function(fn, backend="numba")(*args)
        warnings.simplefilter("ignore")
        want = pj.function(fn, backend="numpy")(*args)
    return got, want


def test_a_gather_of_one_element_reshapes_to_no_axes_on_numba():
    """`x[argmax(x)]`: a gather with a 0-d index, whose (1,)-shaped kernel result is
    reshaped to shape (); numba's reshape takes (), the view `K.reshaped` refused it at
    typing, so the program ran on the numpy backend."""
    def f(x):
        return x[pnp.argmax(x)] * pnp.sum(x), pnp.take(x, 1, axis=0)
    x = np.array([1.0, 3.0, -2.0])
    got, want = _both(f, x)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w) == ()
        assert float(g) == float(w)
