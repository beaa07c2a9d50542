"""Matrix products of the numba backend calling scipy's BLAS library directly
(numba_blas.py): numba's np.dot's numbers for every layout, and no scipy.linalg import
when a second process runs cached code with a product."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pforjac as pj

numba = pytest.importorskip("numba")
from pforjac.compiled import numba_blas  # noqa: E402
from pforjac.compiled.numba_backend import kernels  # noqa: E402

needs_blas = pytest.mark.skipif(numba_blas.found() is None,
                                reason="scipy carries no OpenBLAS library of its own here")


def _layouts(rng, shape, dtype):
    """The same matrix C-ordered, Fortran-ordered, and strided (every other column)."""
    a = rng.normal(size=shape).astype(dtype)
    wide = np.zeros((shape[0], 2 * shape[1]), dtype)
    wide[:, ::2] = a
    return {"C": a, "F": np.asfortranarray(a), "strided": wide[:, ::2]}


@needs_blas
@pytest.mark.filterwarnings("ignore:np.dot\\(\\) is faster on contiguous arrays")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_layout_multiplies_as_numpy_does(dtype):
    rng = np.random.default_rng(7)
    dot = kernels().dot
    assert dot is kernels().blas_dot and numba_blas.found()
    for la, a in _layouts(rng, (7, 5), dtype).items():
        for lb, b in _layouts(rng, (5, 6), dtype).items():
            got, want = dot(a, b), a @ b
            assert got.dtype == want.dtype and got.flags.c_contiguous, (la, lb)
            np.testing.assert_allclose(got, want, rtol=8 * np.finfo(dtype).eps,
                                       atol=8 * np.finfo(dtype).eps * np.abs(want).max())
    numba_dot = numba.njit(lambda a, b: np.dot(a, b))
    for a in _layouts(rng, (40, 30), dtype).values():
        b = rng.normal(size=(30, 20)).astype(dtype)      # (numba's np.dot: the same library)
        np.testing.assert_array_equal(dot(a, b), numba_dot(a, b))


@needs_blas
def test_empty_axes_nan_and_inf_follow_numpy():
    dot = kernels().dot
    for m, k, n in [(0, 3, 2), (3, 0, 2), (3, 2, 0)]:
        np.testing.assert_array_equal(dot(np.ones((m, k)), np.ones((k, n))), np.ones((m, k)) @ np.ones((k, n)))
    a = np.array([[1.0, np.inf], [np.nan, 2.0]])
    b = np.array([[0.0, 1.0], [1.0, -1.0]])
    np.testing.assert_array_equal(dot(a, b), a @ b)
    with pytest.raises(ValueError, match="not aligned"):
        dot(np.ones((2, 3)), np.ones((2, 3)))
    x, v = np.ones((3, 2)), np.arange(2.0)                   # (a vector: numba's np.dot)
    np.testing.assert_array_equal(dot(x, v), x @ v)


@needs_blas
def test_batched_products_and_a_network_jacobian_agree_with_numpy():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(4, 5, 3)), rng.normal(size=(1, 3, 6))
    np.testing.assert_allclose(kernels().batched_dot(a, b), a @ b, rtol=1e-14)
    w1, w2 = rng.normal(size=(6, 16)), rng.normal(size=(16, 3))

    def per_example(x):
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = pj.numpy.tanh(pj.numpy.tanh(x @ w1) @ w2)
        return tape.batch_jacobian(y, x)
    x = rng.normal(size=(8, 6))
    f = pj.function(per_example, backend="numba")
    got = f(x)
    assert next(iter(f._cache.values())).backend == "numba"
    want = pj.function(per_example, backend="numpy")(x)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


_SECOND = textwrap.dedent("""
    import sys, time, numpy as np, pforjac as pj
    W = np.linspace(-1, 1, 70).reshape(10, 7)
    f = pj.function(pj.grad(lambda x: pj.numpy.sum(pj.numpy.tanh(x @ W) ** 2)), backend="numba")
    x = np.linspace(-1, 1.5, 60).reshape(6, 10)
    g = f(x)
    print("scipy.linalg" in sys.modules, float(np.sum(g)))
""")


@needs_blas
def test_a_second_process_runs_cached_products_without_importing_scipy_linalg(tmp_path):
    env = dict(os.environ, PFORJAC_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    runs = [subprocess.run([sys.executable, "-c", _SECOND], env=env, capture_output=True, text=True,
                           check=True).stdout.split() for _ in range(2)]
    assert runs[1][0] == "False"             # (cached: numba's own BLAS binding never started)
    assert runs[0][1] == runs[1][1]
