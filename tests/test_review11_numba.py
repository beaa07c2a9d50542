"""Adversarial checks of the numba backend against the numpy backend, bit for bit, where
numba's own arithmetic or the code generator gave other values than numpy's: complex
division and reciprocal by zeros of either sign, the complex functions numba gets wrong at
infinite, NaN or denormal parts (they run on numpy, named), a float power by a scalar 0.5
(numpy's loop takes np.sqrt: -0.0 and -inf differ from C's pow), a stable sort of -0.0
and 0.0, scipy's gammaln and rgamma at tiny x, integer reciprocals, float16 values inside
a program, 0-d narrow integer products, complex128 sums, a constant of zeros of both
signs, and a program in segments returning its input. Each input once gave a wrong result."""
import warnings

import numpy as np
import pytest

import pforjac as pj

numba = pytest.importorskip("numba")

_PARTS = [0.0, -0.0, 1.0, -1.5, 1e-310, 1e300, np.inf, -np.inf, np.nan]
_GRID = np.array([complex(a, b) for a in _PARTS for b in _PARTS])


def _run(fn, args, backend, record):
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        out = pj.function(fn, backend=backend)(*args)
    record.extend(str(w.message) for w in caught if "numba" in str(w.message))
    return out


def _both(fn, *args):
    """(numba's results, numpy's, the numba backend's warnings)."""
    warned: list = []
    got = _run(fn, args, "numba", warned)
    return got, _run(fn, args, "numpy", []), warned


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "c":
        _same_bits(got.real, want.real)
        _same_bits(got.imag, want.imag)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_division_and_reciprocal_are_numpys(dtype):
    """numba divided by a zero by the signs of its parts (1j / -0j was nan-infj, numpy's
    nan+infj) and gave 1 / (1+0j) as 1+0j (numpy's 1-0j): now numpy's loops, on numba."""
    with np.errstate(all="ignore"):
        z = _GRID.astype(dtype)
    got, want, warned = _both(lambda a, b: (a / b, 1.0 / a, pj.reciprocal(a) * 2.0),
                              z[:, None], z[None, :])
    assert not warned
    for g, w in zip(got, want):
        _same_bits(g, w)
    one_j_by_zero = np.asarray(got[0])[2, 1]                # 1j / complex(0.0, -0.0)
    assert np.isnan(one_j_by_zero.real) and one_j_by_zero.imag == np.inf


_OTHER = {"sign": (pj.sign, complex(np.inf, 1.0)), "sqrt": (pj.sqrt, 1e-310j),
          "arcsinh": (pj.numpy.arcsinh, complex(np.nan, 0.0)), "tan": (pj.tan, complex(0.0, np.nan)),
          "power": (lambda a: a ** (a + 1.0), 0j)}


@pytest.mark.parametrize("name", sorted(_OTHER))
def test_complex_functions_numba_gets_wrong_run_on_numpy_named(name):
    """numba's sign(inf+1j) was NaN (numpy's 1), 0j ** (1+0j) NaN (numpy's 0), arcsinh(nan+0j)
    nan+nanj (numpy's nan+0j), sqrt(1e-310j) 100 ulps off: those ops run on numpy."""
    fn, edge = _OTHER[name]
    z = np.array([edge, 0.5 - 2j, -3 + 0.25j])
    got, want, warned = _both(fn, z)
    assert any(f"complex {name}" in w for w in warned), warned
    _same_bits(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_float_power_by_a_scalar_half_is_numpys_sqrt(dtype):
    """numpy's power loop by one exponent of 0.5 is np.sqrt: -0.0 ** 0.5 is -0.0 and -inf ** 0.5
    NaN; numba's C pow gave 0.0 and inf. An array of exponents is C's pow in both."""
    x = np.array([-0.0, 0.0, -np.inf, 2.0, np.nan, 9.0], dtype)
    half = dtype(0.5)
    got, want, warned = _both(lambda a, e: (a ** 0.5, a ** e, pj.exp(a ** 0.5) + 1.0, a[:, None] ** 0.5),
                              x, half)
    assert not warned
    for g, w in zip(got, want):
        _same_bits(g, w)
    assert np.signbit(np.asarray(got[0])[0]) and np.isnan(np.asarray(got[1])[2])
    got, want, _ = _both(lambda a, e: a ** e, x, np.full(6, half))
    _same_bits(got, want)
    assert np.asarray(got)[2] == np.inf


def test_a_stable_sort_keeps_numpys_order_of_signed_zeros():
    """numba's quicksort put -0.0 before 0.0 whatever their order; numpy's stable sort keeps
    it (argsort was already stable)."""
    x = np.random.default_rng(1).choice([-0.0, 0.0, 1.0, np.nan, -np.inf], size=(4, 40))
    got, want, warned = _both(lambda a: (pj.numpy.sort(a, axis=1, kind="stable"),
                                         pj.numpy.sort(a.T, axis=0, stable=True)), x)
    assert not warned
    for g, w in zip(got, want):
        _same_bits(g, w)


def test_gammaln_and_rgamma_where_one_over_x_overflows_are_scipys():
    """scipy's gammaln is inf for |x| < 5.6e-309 (its recurrence divides by x; numba's gave
    713.8 at 1e-310) and its rgamma(1e-310) is 1e-310 (numba's 1 / gamma gave 0)."""
    from pforjac.ops.special import gammaln, rgamma
    x = np.array([1e-310, -1e-310, 5.5e-309, 1e-307, 5e-324, -0.0, 2.5, 0.25])
    got, want, warned = _both(lambda a: (gammaln(a), rgamma(a)), x)
    assert not warned
    for g, w in zip(got, want):
        _same_bits(g, w)
    assert np.asarray(got[0])[0] == np.inf and np.asarray(got[1])[0] == 1e-310


def test_an_integer_reciprocal_runs_on_numpy():
    """numpy's reciprocal of an int32 0 is -2**31 (of an int8 0, 0); numba's was 0."""
    x = np.array([0, 1, -1, 2], np.int32)
    got, want, warned = _both(lambda a: pj.reciprocal(a) + a, x)
    assert any("integer reciprocal" in w for w in warned), warned
    np.testing.assert_array_equal(got, want)


def test_a_float16_value_inside_a_program_runs_on_numpy():
    """numpy's sin of a bool (or int8) is float16; numba computed it in float64 and went on
    with those digits (2 sin(1) was 1.682942, numpy's 1.682617): such equations run on numpy."""
    x = np.array([True, False, True])
    got, want, warned = _both(lambda a: pj.cast(pj.sin(a), np.float64) * 2.0 + 1.0, x)
    assert any("float16" in w for w in warned), warned
    _same_bits(got, want)
    assert np.asarray(got)[0] == 2.0 * float(np.sin(np.float16(1.0))) + 1.0


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_narrow_integer_scalars_wrap_as_numpy_before_they_are_read(dtype):
    """A 0-d int8 product read by a cast: numba's int8 -45 * -45 is -23 when returned but
    was read as 233 by np.int32 (in loops the elements were already computed in int64 and
    truncated; 0-d values, numba scalars, were not)."""
    a = np.array(np.iinfo(dtype).min // 3 + 1, dtype)      # (int8: -42; its square wraps)

    def f(x, y):
        square = x * x
        return pj.cast(square, np.int32) * pj.cast(square, np.int32), (x + y) > 0, square * 3 // 2
    got, want, warned = _both(f, a, np.array(np.iinfo(dtype).max, dtype))
    assert not warned
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)


def test_a_complex128_sum_along_the_last_axis_is_numpys_to_the_bit():
    """numpy sums complex values pairwise (each part in four partial sums, blocks of 64);
    the loop summed them in order: 82 ulps off at 2**20 values, 1 ulp at 67."""
    rng = np.random.default_rng(7)
    z = rng.standard_normal((2, 1 << 19)) + 1j * rng.standard_normal((2, 1 << 19)) + (1 + 1j)
    small = z[:, :67 * 5].reshape(10, 67)

    def f(a, b):
        return pj.numpy.sum(a), pj.numpy.sum(b, axis=1), pj.numpy.sum(b[:, :5], axis=-1)
    got, want, warned = _both(f, z, small)
    assert not warned
    for g, w in zip(got, want):
        _same_bits(g, w)


def test_a_constant_of_zeros_of_both_signs_is_not_read_as_one_value():
    """The code generator reads a constant whose entries are all equal as one value; it
    compared them with ==, so [0.0, -0.0, 0.0] was read as 0.0 (x * it: -0.0 * -0.0 gave
    -0.0, numpy's 0.0): equal now means the same bits."""
    x = np.array([1.0, -0.0, 0.0])
    got, want, warned = _both(lambda a: (a * np.array([0.0, -0.0, 0.0]),
                                         pj.where(a > 0, np.array([-0.0, 0.0, -0.0]), np.array([0.0, -0.0, 0.0]))), x)
    assert not warned
    for g, w in zip(got, want):
        _same_bits(g, w)


def test_a_program_in_segments_returns_no_array_the_caller_passed():
    """A program with an op numba declines runs as segments; an output that is an input
    itself (`a.T` of a vector) was returned as the caller's array, which the caller's next
    write changed (the numpy backend and a whole numba program return a copy)."""
    z = np.array([1 + 2j, -0.5 + 0.1j, 3 - 1j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # (complex sin: on numpy, named)
        out = pj.function(lambda a: (pj.sin(a), pj.sin(a)[1:] * 2.0, a.T), backend="numba")(z)
    assert not any(np.shares_memory(o, z) for o in out)
    z[0] = 7.0
    assert out[2][0] == 1 + 2j


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_abs_is_numpys_to_the_bit(dtype):
    """numba's |z| is hypot, an ulp off numpy's SIMD loop for a third of values; a
    remainder by |z| + 1 then sin made that 79 ulps (a fuzzed program)."""
    rng = np.random.default_rng(2)
    z = (rng.standard_normal(300) * np.exp(rng.uniform(-5, 5, 300)) + 1j * rng.standard_normal(300)).astype(dtype)
    z[:4] = [complex(np.inf, np.nan), complex(np.nan, 1.0), complex(-0.0, 0.0), complex(3e38, 3e38)]
    k = np.arange(300) % 50 + 20
    got, want, warned = _both(lambda a, n: (pj.abs(a), pj.abs(a[7]), pj.sin(n % (pj.abs(a) + 1.0))), z, k)
    assert not warned
    for g, w in zip(got, want):
        _same_bits(g, w)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_products_are_numpys_fused_multiply_adds(dtype):
    """numpy's SIMD loop computes each part of a complex product as one fused multiply-add;
    numba rounded the two products apart: an ulp off for 44% of random values, and
    (1e300+1j) * (1e300+infj) nan+infj where numpy's is -inf+infj."""
    rng = np.random.default_rng(3)
    a, b = ((rng.standard_normal(200) + 1j * rng.standard_normal(200)).astype(dtype) for _ in range(2))
    with np.errstate(all="ignore"):
        a[:3] = [1e300 + 1j, 1e300 + 1e300j, complex(-1.5, -1.5)]
        b[:3] = [complex(1e300, np.inf), 1e300 + 1e300j, 1e-310 + 1e-310j]
    got, want, warned = _both(lambda u, v: (u * v, pj.square(u), u * v[5] * 2.0), a, b)
    assert not warned
    for g, w in zip(got, want):
        _same_bits(g, w)
