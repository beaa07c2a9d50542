"""The numba backend's float32 exp, tanh, sigmoid, softplus and log (pforjac/compiled/
numba_vecmath.py), computed in float32 lanes. Accuracy on a dense sample of every binade
(4096 random significands in each of the 512 sign-and-exponent classes, plus their ends)
and at every edge: within 1 ulp of the correctly rounded value (the float64 function
rounded once to float32) for exp, tanh and log, within 2 for sigmoid and softplus, and no
further from numpy's float32 results than that plus 3 ulps (numpy's float32 exp, log,
sigmoid and softplus are themselves up to 3-4 ulps from the correctly rounded values; its
sigmoid rounds to 0 where the true value is below the smallest normal, where the kernel
keeps the subnormal, as the float64 kernel does). NaN, infinities, signed zeros, overflow
and subnormal results exactly as the rounded reference. `benchmarks/vecmath_accuracy.py`
runs the same comparison over all 2^32 float32 values. Then through `pj.function(...,
backend="numba")`: float32 programs call the kernels (arrays through their ufunc form),
float64 ones the C library; a loop of each kernel is vectorized (its LLVM IR holds float
vectors) and calls no C library function (no timing)."""
import re
from types import SimpleNamespace

import numpy as np
import pytest

import pforjac as pj

numba = pytest.importorskip("numba")

from pforjac import core  # noqa: E402
from pforjac.compiled import numba_kernels as K, numba_lowering  # noqa: E402
from pforjac.compiled.numba_codegen import numba_source  # noqa: E402
from pforjac.compiled.numba_vecmath import FLOAT32_KERNELS  # noqa: E402


@numba.njit
def _apply(x, out):
    for i in range(x.size):          # (a loop of scalar calls, as the generated code has)
        out[0, i] = K.exp_f32(x[i])
        out[1, i] = K.tanh_f32(x[i])
        out[2, i] = K.sigmoid_f32(x[i])
        out[3, i] = K.softplus_f32(x[i])
        out[4, i] = K.log_f32(x[i])


def _kernels(x):
    out = np.empty((5, x.size), np.float32)
    _apply(np.ascontiguousarray(x, np.float32), out)
    return dict(zip(FLOAT32_KERNELS, out))


def _ulps(a, b):
    """|a - b| in float32 ulps (steps between them, across 0); 0 where both are NaN."""
    ia, ib = (np.asarray(v, np.float32).view(np.int32).astype(np.int64) for v in (a, b))
    ia, ib = (np.where(i < 0, -(i & 0x7FFFFFFF), i) for i in (ia, ib))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    return np.where(nan_a & nan_b, 0, np.where(nan_a | nan_b, 2**40, np.abs(ia - ib)))


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _softplus(v):
    return np.maximum(v, 0) + np.log1p(np.exp(-np.abs(v)))


def _numpy_sigmoid(x):                      # (the numpy backend's float32 sigmoid)
    return pj.function(pj.sigmoid, backend="numpy")(x)


REFERENCE = dict(exp=np.exp, tanh=np.tanh, sigmoid=_sigmoid, softplus=_softplus, log=np.log)
NUMPY32 = dict(exp=np.exp, tanh=np.tanh, sigmoid=_numpy_sigmoid,
               softplus=lambda x: pj.function(pj.softplus, backend="numpy")(x), log=np.log)
TOLERANCE = dict(exp=1, tanh=1, sigmoid=2, softplus=2, log=1)


def _rounded(f, x):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return f(np.asarray(x, np.float64)).astype(np.float32)


def _binades(per_binade=4096, seed=0):
    """Random significands in every sign-and-exponent class, and each class's ends."""
    rng = np.random.default_rng(seed)
    classes = np.arange(512, dtype=np.uint32) << 23
    low = rng.integers(0, 1 << 23, (512, per_binade), dtype=np.uint32)
    ends = np.array([0, 1, (1 << 23) - 2, (1 << 23) - 1], np.uint32)
    bits = (classes[:, None] | np.concatenate([low, np.broadcast_to(ends, (512, 4))], 1)).ravel()
    return bits.view(np.float32)


SPECIALS = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-38,
                     -1e-38, 3.4e38, -3.4e38, 88.72283, 88.72284, 89.0, -87.33654, -87.33655,
                     -103.27893, -103.97208, -103.97209, -104.0, -110.0, 9.0, 9.1, 20.0,
                     0.625, -0.625, 2.0**-13, -2.0**-13], np.float32)


def _specials():
    up, down = (np.nextafter(SPECIALS, np.float32(d)) for d in (np.inf, -np.inf))
    return np.concatenate([SPECIALS, up, down])


@pytest.mark.parametrize("name", FLOAT32_KERNELS)
def test_a_dense_sample_of_every_binade_is_within_its_ulps(name):
    x = np.concatenate([_binades(), _specials()])
    got, exact = _kernels(x)[name], _rounded(REFERENCE[name], x)
    u = _ulps(got, exact)
    assert u.max() <= TOLERANCE[name], (x[u.argmax()], got[u.argmax()], exact[u.argmax()])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        numpy32 = NUMPY32[name](x)
    flushed = (numpy32 == 0) & (exact != 0) & (np.abs(exact) < np.finfo(np.float32).tiny)
    apart = _ulps(got, numpy32)[~flushed]     # (numpy's float32 results: up to 3 ulps off)
    assert apart.max() <= TOLERANCE[name] + 3, x[~flushed][apart.argmax()]
    assert flushed.sum() == 0 or name == "sigmoid"


@pytest.mark.parametrize("name", FLOAT32_KERNELS)
def test_specials_are_numpys_nan_infinities_signed_zeros_and_subnormals(name):
    x = _specials()
    got, exact = _kernels(x)[name], _rounded(REFERENCE[name], x)
    special = ~np.isfinite(exact) | (exact == 0) | (np.abs(exact) < np.finfo(np.float32).tiny)
    np.testing.assert_array_equal(got[special], exact[special])
    signed = special & ~np.isnan(exact)           # (a NaN's sign is left open)
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(exact[signed]))
    assert (_ulps(got, exact) <= TOLERANCE[name]).all()


def _activations(x):
    return (pj.tanh(x) * pj.exp(-x * x) + pj.sigmoid(x) + pj.log(x * x)
            + pj.softplus(x) - pj.tanh(x) ** 2)


def test_float32_programs_call_the_kernels_and_float64_ones_the_c_library():
    f = pj.function(_activations, backend="numba")
    x32 = np.concatenate([np.linspace(-12.0, 12.0, 4001, dtype=np.float32), SPECIALS])
    x64 = x32.astype(np.float64)
    for x, dtype in ((x32, np.float32), (x64, np.float64)):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            got = f(x)
            want = pj.function(_activations, backend="numpy")(x)
        assert got.dtype == dtype
        eps = np.finfo(dtype).eps        # (terms of up to 12 cancel: an absolute tolerance)
        np.testing.assert_allclose(got, want, rtol=8 * eps, atol=32 * eps)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    source32, source64 = (numba_source(f.program(x)) for x in (x32, x64))
    for name in FLOAT32_KERNELS:
        assert f"K.{name}_f32(" in source32 and f"K.{name}_f32" not in source64
    assert "np.tanh(" in source64 and "np.exp(" in source64 and "np.tanh(" not in source32


def _rule_text(name, shape):
    """What the lowering rule of `name` writes for a float32 operand `a` of `shape`."""
    v = SimpleNamespace(dtype=np.dtype(np.float32), shape=shape, ndim=len(shape))
    eqn = SimpleNamespace(prim=core.primitive_named(name), params={}, inputs=[v], outputs=[v])
    return numba_lowering.rule_for(eqn.prim)(None, eqn, ["a"])


def test_the_ufunc_forms_equal_the_scalar_kernels_on_arrays():
    x = np.concatenate([_binades(64), _specials()])[:34900].reshape(-1, 2)
    scalar = _kernels(x.ravel())
    for name in FLOAT32_KERNELS:
        assert _rule_text(name, ()) == f"K.{name}_f32(a)"            # an element (loop nests)
        text = _rule_text(name, x.shape)                            # a whole array
        assert text == f"K.{name}_f32_ufunc(a)"
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            got = eval(text, {"K": K, "a": x})
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got.ravel(), scalar[name])


def test_a_float32_gradient_through_the_kernels_agrees_with_numpy():
    def loss(w, x):
        h = x @ w
        return pj.numpy.sum(pj.tanh(h) ** 2 + pj.sigmoid(h) + pj.softplus(h) * pj.exp(-h * h))
    rng = np.random.default_rng(0)
    w, x = rng.normal(size=(8, 5)).astype(np.float32), rng.normal(size=(16, 8)).astype(np.float32)
    got = pj.function(pj.grad(loss), backend="numba")(w, x)
    want = pj.function(pj.grad(loss), backend="numpy")(w, x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", FLOAT32_KERNELS)
def test_a_loop_of_a_kernel_is_vectorized_and_calls_no_c_library_function(name):
    namespace = {"K": K}
    exec(f"def loop(x, out):\n    for i in range(x.size):\n        out[i] = K.{name}_f32(x[i])\n",
         namespace)
    loop = numba.njit(namespace["loop"])
    x = np.linspace(-3.0, 3.0, 64, dtype=np.float32)
    out = np.empty_like(x)
    loop(x, out)
    np.testing.assert_array_equal(out, _kernels(x)[name])
    ir = loop.inspect_llvm(loop.signatures[0])
    assert re.search(r"<\d+ x float>", ir), "the loop was not vectorized"
    called = set(re.findall(r"call [^@]*@(\w+)", ir))
    assert not called & {"expf", "tanhf", "logf", "log1pf", "exp", "tanh", "log", "log1p"}, called
    assert not any("_f32" in c for c in called), called     # (the kernel inlined)
