"""The numba backend's vectorizable float32 exp, tanh, sigmoid and log (pforjac/compiled/
numba_vecmath.py) on dense sweeps and at every edge: each within an ulp of the correctly
rounded value (the float64 function rounded once to float32); tanh within an ulp of numpy's
float32 tanh; sigmoid within an ulp of the float64 kernel it replaces for float32; exp no
further from numpy's float32 exp than the correctly rounded value is, plus an ulp (numpy's
own float32 exp is 2 ulps from it at about 0.8% of the points of the sweep, and so was the C
library's expf that the backend called before); log likewise (numpy's float32 log is up to
4 ulps from the correctly rounded value on [0.5, 2]). Then through `pj.function(...,
backend="numba")`: float32 programs call the kernels, float64 ones the C library. A loop of
each kernel is vectorized (its LLVM IR holds vectors of doubles) and calls no C library
function (no timing: a loop of np.tanh calls tanhf and holds no vector)."""
import re

import numpy as np
import pytest

import pforjac as pj

numba = pytest.importorskip("numba")

from pforjac.compiled import numba_kernels as K  # noqa: E402
from pforjac.compiled.numba_codegen import numba_source  # noqa: E402


@numba.njit
def _apply(x, out):
    for i in range(x.size):          # (a loop of scalar calls, as the generated code has)
        out[0, i] = K.exp_f32(x[i])
        out[1, i] = K.tanh_f32(x[i])
        out[2, i] = K.sigmoid_f32(x[i])
        out[3, i] = K.sigmoid(x[i])
        out[4, i] = K.log_f32(x[i])


def _kernels(x):
    out = np.empty((5, x.size), np.float32)
    _apply(np.ascontiguousarray(x, np.float32), out)
    return dict(zip(("exp", "tanh", "sigmoid", "sigmoid_f64", "log"), out))


def _ulps(a, b):
    """|a - b| in float32 ulps (steps between them, across 0); 0 where both are NaN."""
    ia, ib = (np.asarray(v, np.float32).view(np.int32).astype(np.int64) for v in (a, b))
    ia, ib = (np.where(i < 0, -(i & 0x7FFFFFFF), i) for i in (ia, ib))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    return np.where(nan_a & nan_b, 0, np.where(nan_a | nan_b, 2**40, np.abs(ia - ib)))


def _rounded(f, x):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return f(np.asarray(x, np.float64)).astype(np.float32)


def _sigmoid64(v):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-v))


EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-38, -1e-38, 1e-20,
                  -1e-20, 1e-8, 2.0**-13, 0.0625, -0.0625, 0.5, 1.0, 9.0, 9.1, 10.0, 20.0,
                  88.72283, 88.72284, 89.0, 100.0, 1e30, -87.33654, -87.33655, -100.0,
                  -103.27893, -103.97208, -103.97209, -104.0, -110.0, -1e30, 3.4e38, -3.4e38],
                 np.float32)


def _edges():
    """EDGES and their float32 neighbours."""
    return np.concatenate([EDGES, np.nextafter(EDGES, np.float32(np.inf)),
                           np.nextafter(EDGES, np.float32(-np.inf))])


@pytest.mark.parametrize("lo, hi", [(-104.0, 89.0), (-1.0, 1.0)])
def test_exp_is_within_an_ulp_of_the_rounded_value_and_of_numpy_as_that_is(lo, hi):
    x = np.concatenate([np.linspace(lo, hi, 2_000_001, dtype=np.float32), _edges()])
    got, exact = _kernels(x)["exp"], _rounded(np.exp, x)
    assert _ulps(got, exact).max() <= 1
    with np.errstate(over="ignore"):
        numpy32 = np.exp(x)
    assert (_ulps(got, numpy32) <= _ulps(exact, numpy32) + 1).all()
    edges = _edges()
    np.testing.assert_array_equal(_kernels(edges)["exp"], _rounded(np.exp, edges))
    assert (np.signbit(_kernels(edges)["exp"]) == False).all()   # noqa: E712 (never -0.0)


@pytest.mark.parametrize("lo, hi", [(-10.0, 10.0), (-0.1, 0.1), (-1e-3, 1e-3), (-1e4, 1e4)])
def test_tanh_is_within_an_ulp_of_numpy_and_of_the_rounded_value(lo, hi):
    x = np.concatenate([np.linspace(lo, hi, 1_000_001, dtype=np.float32), _edges()])
    got = _kernels(x)["tanh"]
    assert _ulps(got, np.tanh(x)).max() <= 1
    assert _ulps(got, _rounded(np.tanh, x)).max() <= 1
    edges = _edges()
    tanh = _kernels(edges)["tanh"]
    np.testing.assert_array_equal(tanh, _rounded(np.tanh, edges))
    np.testing.assert_array_equal(np.signbit(tanh), np.signbit(np.tanh(edges)))   # (-0.0)


def test_sigmoid_is_within_an_ulp_of_the_float64_kernel_it_replaces():
    x = np.concatenate([np.linspace(-110.0, 40.0, 2_000_001, dtype=np.float32), _edges()])
    k = _kernels(x)
    assert _ulps(k["sigmoid"], k["sigmoid_f64"]).max() <= 1
    assert _ulps(k["sigmoid"], _rounded(_sigmoid64, x)).max() <= 1
    edges = _edges()
    np.testing.assert_array_equal(_kernels(edges)["sigmoid"], _rounded(_sigmoid64, edges))


@pytest.mark.parametrize("lo, hi, spacing", [(1e-38, 100.0, np.linspace),
                                              (0.5, 2.0, np.linspace),
                                              (1e-45, 3e38, np.geomspace)])
def test_log_is_within_an_ulp_of_the_rounded_value_and_of_numpy_as_that_is(lo, hi, spacing):
    x = np.concatenate([spacing(lo, hi, 1_000_001, dtype=np.float32), _edges(), -_edges()])
    got, exact = _kernels(x)["log"], _rounded(np.log, x)
    assert _ulps(got, exact).max() <= 1
    with np.errstate(divide="ignore", invalid="ignore"):
        numpy32 = np.log(x)
    assert (_ulps(got, numpy32) <= _ulps(exact, numpy32) + 1).all()
    edges = np.concatenate([_edges(), -_edges()])
    np.testing.assert_array_equal(_kernels(edges)["log"], _rounded(np.log, edges))


def _activations(x):
    return pj.tanh(x) * pj.exp(-x * x) + pj.sigmoid(x) + pj.log(x * x)


def test_float32_programs_call_the_kernels_and_float64_ones_the_c_library():
    f = pj.function(_activations, backend="numba")
    x32 = np.concatenate([np.linspace(-12.0, 12.0, 4001, dtype=np.float32), EDGES])
    x64 = x32.astype(np.float64)
    for x, dtype in ((x32, np.float32), (x64, np.float64)):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            got = f(x)
            want = pj.function(_activations, backend="numpy")(x)
        assert got.dtype == dtype
        eps = np.finfo(dtype).eps        # (terms of up to 1.5 cancel: an absolute tolerance)
        np.testing.assert_allclose(got, want, rtol=8 * eps, atol=4 * eps)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    source32, source64 = (numba_source(f.program(x)) for x in (x32, x64))
    for name in ("exp", "tanh", "sigmoid", "log"):
        assert f"K.{name}_f32(" in source32 and f"K.{name}_f32(" not in source64
    assert "np.tanh(" in source64 and "np.exp(" in source64 and "np.tanh(" not in source32


def test_a_float32_gradient_through_the_kernels_agrees_with_numpy():
    def loss(w, x):
        return pj.numpy.sum(pj.tanh(x @ w) ** 2 + pj.sigmoid(x @ w))
    rng = np.random.default_rng(0)
    w, x = rng.normal(size=(8, 5)).astype(np.float32), rng.normal(size=(16, 8)).astype(np.float32)
    got = pj.function(pj.grad(loss), backend="numba")(w, x)
    want = pj.function(pj.grad(loss), backend="numpy")(w, x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", ["exp_f32", "tanh_f32", "sigmoid_f32", "log_f32"])
def test_a_loop_of_a_kernel_is_vectorized_and_calls_no_c_library_function(name):
    namespace = {"K": K}
    exec(f"def loop(x, out):\n    for i in range(x.size):\n        out[i] = K.{name}(x[i])\n",
         namespace)
    loop = numba.njit(namespace["loop"])
    x = np.linspace(-3.0, 3.0, 64, dtype=np.float32)
    out = np.empty_like(x)
    loop(x, out)
    np.testing.assert_array_equal(out, _kernels(x)[name[:-4]])
    ir = loop.inspect_llvm(loop.signatures[0])
    assert re.search(r"<\d+ x double>", ir), "the loop was not vectorized"
    called = set(re.findall(r"call [^@]*@(\w+)", ir))
    assert not called & {"expf", "tanhf", "logf", "exp", "tanh", "log"}, called
