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


def test_a_product_too_small_for_blas_threads_keeps_the_parallel_loops():
    """A program calling BLAS is generated without parallel helpers (BLAS's spinning
    threads take the cores). A 4x4 product runs on the caller's thread: beside it, a
    chain of 2^18 elements keeps its parallel helper (generated serial, a 10^6-element one
    took 21.9 ms instead of 10.9 on two threads); beside a 64x64 product it has none."""
    from pforjac.compiled import numba_backend
    from pforjac.compiled.numba_codegen import numba_source, parallel_helpers

    def chain_and(product):
        return lambda x, a: (pj.tanh(x) * 2.0 + x, pnp.sum(product(a, a)))
    x = np.linspace(-1.0, 1.0, 1 << 18).reshape(512, 512)
    matmul, einsum = (lambda a, b: a @ b), (lambda a, b: pnp.einsum("ij,jk->ik", a, b))
    for product, n, helpers in ((matmul, 4, 1), (matmul, 64, 0), (einsum, 64, 0)):
        program = pj.function(chain_and(product), backend="numba").program(x, np.ones((n, n)))
        source = numba_source(program, "p", numba_backend._baked_consts(program), 1 << 18, [])
        assert "K.dot(" in source and parallel_helpers(source) == helpers, (n, source)


def test_all_finite_kernel_reads_every_layout_and_dtype():
    """`K.all_finite`, the structure guards' kernel, against numpy's check on C, F and
    strided arrays, float32 and complex, with NaN, infinities and zeros at either end
    (a complex value is finite where both parts are, zero where both are)."""
    from pforjac.compiled.numba_backend import kernels
    from pforjac.ops.reductions import _all_finite_impl
    all_finite = kernels().all_finite
    base = np.arange(1.0, 25.0).reshape(4, 6)
    for dtype in (np.float64, np.float32, np.complex128):
        for at, value in ((None, 1.0), ((0, 0), np.nan), ((3, 5), np.inf), ((3, 4), -np.inf),
                          ((0, 5), 0.0), ((2, 2), complex(1.0, np.nan)), ((1, 1), complex(0.0, 1.0))):
            if dtype != np.complex128 and isinstance(value, complex):
                continue
            a = base.astype(dtype)
            if at is not None:
                a[at] = value
            for view in (a, a.T, a[:, ::2]):
                for nonzero in (False, True):
                    assert all_finite(view, nonzero) == _all_finite_impl(view, None, nonzero), \
                        (dtype, at, value, view.strides, nonzero)


def _central(f, x, h=1e-6):
    grad = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        grad.flat[k] = (f(x + e) - f(x - e)) / (2 * h)
    return grad


def test_the_derivative_of_one_gathered_element_runs_on_numba():
    """The gradient of `x[i]` for a 0-d index (an argmax's, a traced position) scatters
    g at one index: scatter_add with 0-d indices, which numba declined (the program ran
    in segments), and the gather's one element, a 0-d array where 0-d values are scalars
    (numba refused `np.full` of it: the whole program ran on the numpy backend)."""
    def f(x):
        return x[pnp.argmax(x)] * pnp.sum(x * x)

    def g(m):
        return pnp.sum(pnp.take(m, pnp.argmin(m[0]), axis=1) * pnp.take(m, 2, axis=0))
    x, m = np.array([0.3, 1.7, -0.4, 1.1]), np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [0.1, 0.2, 0.3]])
    for fn, arg in ((f, x), (g, m)):
        got, want = _both(pj.grad(fn), arg)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(got, _central(lambda v: float(pj.function(fn, backend="numpy")(v)), arg),
                                   rtol=1e-7, atol=1e-7)
