"""Adversarial checks of the numba backend's fused reads, stores as read and weight
tables, its float32 kernels and the merging of equal constants: each test an input that
once gave a failed or a wrong result, against the numpy backend."""
import warnings

import numpy as np
import pytest

import pforjac as pj

numba = pytest.importorskip("numba")


@pytest.fixture
def settings():
    saved = pj.config.num_threads, pj.config.parallel_min_size
    yield pj.config
    pj.config.num_threads, pj.config.parallel_min_size = saved


def _columns(x, w):
    return x[:, None, :] * pj.transpose(w)[None]


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba runs one thread here")
def test_a_tabled_nest_large_enough_to_run_in_parallel_compiles(settings):
    settings.num_threads, settings.parallel_min_size = 2, 1000
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((64, 41)), rng.standard_normal((41, 9))
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # (no fallback to the numpy backend)
        got = pj.function(_columns, backend="numba")(x, w)
    np.testing.assert_array_equal(got, x[:, None, :] * w.T[None])


def _steps(n):
    def chain(x):
        for _ in range(n):
            x = pj.tanh(x) * 0.5 + x * 0.25        # (x read twice: by tanh and by the product)
        return x
    return chain


def test_a_chain_of_values_each_read_twice_lowers_in_linear_space():
    import tracemalloc
    from pforjac.compiled.numba_codegen import numba_source
    x = np.linspace(-2, 2, 7)
    program = pj.function(_steps(20), backend="numba").program(x)
    tracemalloc.start()
    try:
        numba_source(program)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 << 20                          # (each step's text copied twice: 2^20 copies)
    long = _steps(60)
    got = pj.function(long, backend="numba")(x)
    np.testing.assert_allclose(got, pj.function(long, backend="numpy")(x), rtol=1e-13, atol=1e-15)


def test_a_long_elementwise_chain_lowers_without_deep_recursion():
    def single(x):                                  # (each value read once)
        for _ in range(300):
            x = pj.tanh(x) * 0.5 + 0.125
        return x
    x = np.linspace(-2, 2, 7)
    for f in (_steps(150), single):                 # (as deep as Python's recursion limit)
        got = pj.function(f, backend="numba")(x)
        np.testing.assert_allclose(got, pj.function(f, backend="numpy")(x), rtol=1e-13, atol=1e-15)


_WRAPPED = {"maximum": lambda square, zero: pj.maximum(square, zero),
            "greater": lambda square, zero: square > zero,
            "floor_divide": lambda square, zero: square // (zero + 7)}


@pytest.mark.parametrize("op", sorted(_WRAPPED))
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32])
def test_integer_results_in_loops_wrap_as_numpy_before_they_are_read(dtype, op):
    info = np.iinfo(dtype)
    x = np.array([12, 100, 250, info.max, info.min, 0, 1, 50000], dtype=np.int64).astype(dtype)
    x = np.repeat(x[None], 3, axis=0)

    def f(a):                                       # (a * a wraps: 12 * 12 is -112 in int8)
        return _WRAPPED[op](a * a, dtype(0))
    want = pj.function(f, backend="numpy")(x)
    got = pj.function(f, backend="numba")(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_a_helper_called_with_arrays_of_other_ranks_keeps_the_program_on_numba():
    """Two loop nests of one canonical text, outlined as one helper that numba compiles
    for each call's types (here a passed-through array of rank 3, then of rank 2): each
    call's names are checked against the compilation for its own types."""
    from test_numba_loops import _views_and_loops
    rng = np.random.default_rng(3)
    x, y = rng.uniform(0, 1, (4, 6)), rng.uniform(-1, 1, 6)
    idx = np.array([0, -1, 2, 2, 5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # (no fallback to the numpy backend)
        got = pj.function(_views_and_loops, backend="numba")(x, y, idx)
    for g, w in zip(got, pj.function(_views_and_loops, backend="numpy")(x, y, idx)):
        np.testing.assert_allclose(g, w, rtol=16 * np.finfo(float).eps, atol=1e-15)
