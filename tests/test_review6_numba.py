"""Adversarial checks of the numba backend against the numpy backend where numba's own
implementations give other values than numpy's: integer division, remainder, fmod and
power at the edges of their range, true division of narrow integers, the sign of
unsigned integers and the ties of maximum and minimum (-0.0 against 0.0). Each input
once gave a wrong result, or killed the process."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import pforjac as pj

numba = pytest.importorskip("numba")


def _both(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("error")             # (no fallback to the numpy backend)
        got = pj.function(fn, backend="numba")(*args)
        warnings.simplefilter("ignore")            # (numpy's own overflow warnings)
        want = pj.function(fn, backend="numpy")(*args)
    return got, want


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def _edges(dtype):
    info = np.iinfo(dtype)
    return np.array([v for v in (info.min, info.min + 1, -7, -3, -1, 0, 1, 3, 7, info.max)
                     if info.min <= v <= info.max], dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8, np.uint64])
def test_integer_division_and_fmod_at_the_edges_are_numpys(dtype):
    """numba's fmod reads negative operands as unsigned (fmod(-7, 3) was 0), its int64
    min // -1 was 0 (numpy wraps it to min)."""
    a, b = _edges(dtype)[:, None], _edges(dtype)[None, :]
    b = b[:, b[0] != -1] if dtype == np.int64 else b   # (min % -1: in the subprocess below)
    got, want = _both(lambda x, y: (x // y, x % y, pj.fmod(x, y)), a, b)
    for g, w in zip(got, want):
        _same_bits(g, w)
    if dtype == np.int64:
        got, want = _both(lambda x, y: x // y, a, np.array([-1], dtype))
        _same_bits(got, want)


def test_int64_min_remainder_minus_one_does_not_kill_the_process():
    """numba's int64 % traps on min % -1 (SIGFPE: the whole process died); numpy gives 0."""
    code = ("import numpy as np, pforjac as pj\n"
            "x = np.array([np.iinfo(np.int64).min, 7])\n"
            "print(pj.function(lambda a, b: a % b, backend='numba')(x, np.array([-1, -1])))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), *sys.path]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[0", "0]"]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64])
def test_integer_power_is_exact_and_wraps_as_numpys(dtype):
    """numba's integer power goes through float64: 3**39 off by 11, int32 max**2 was 0."""
    a = _edges(dtype)[:, None]
    b = np.array([0, 1, 2, 3, 5, 39, 63], dtype)[None, :]
    got, want = _both(lambda x, y: (x ** y, x ** 3), a, b)
    for g, w in zip(got, want):
        _same_bits(g, w)
    if dtype == np.int64:
        assert np.asarray(got[0])[list(a[:, 0]).index(3), 5] == 3 ** 39


def test_integer_power_with_a_negative_exponent_raises_as_numpy():
    x = np.array([3, -2, 1])
    for b in ("numpy", "numba"):
        with pytest.raises(ValueError, match="negative integer powers"):
            pj.function(lambda a, e: a ** e, backend=b)(x, np.array([2, -1, 1]))


@pytest.mark.parametrize("dtype", [np.int8, np.uint16])
def test_true_division_of_narrow_integers_is_float64(dtype):
    """numpy divides int8 by int8 in float64; numba's loop for them is float32's."""
    a = np.array([7, 1, 100, 0, 5], dtype)
    b = np.array([3, 3, 7, 0, 0], dtype)
    got, want = _both(lambda x, y: (x / y, x / y * 3.0), a, b)
    for g, w in zip(got, want):
        _same_bits(g, w)
    assert np.asarray(got[0])[0] == 7 / 3


def test_sign_of_unsigned_integers():
    """numba's sign read uint8 255 as negative (its sign was 255)."""
    for dtype in (np.uint8, np.uint64):
        x = np.array([0, 1, 2, np.iinfo(dtype).max // 2 + 1, np.iinfo(dtype).max], dtype)
        got, want = _both(lambda a: (pj.sign(a), pj.sign(a) + a), x)
        for g, w in zip(got, want):
            _same_bits(g, w)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_maximum_and_minimum_resolve_signed_zero_ties_as_numpy(dtype):
    """numpy's maximum(-0.0, 0.0) is 0.0 (its second operand), numba's was -0.0."""
    a = np.array([-0.0, 0.0, np.nan, 1.0, -0.0], dtype)
    b = np.array([0.0, -0.0, 1.0, np.nan, -0.0], dtype)
    got, want = _both(lambda x, y: (pj.maximum(x, y), pj.minimum(x, y),
                                    pj.maximum(x[:, None], y[None, :])), a, b)
    for g, w in zip(got, want):
        _same_bits(g, w)


def test_uint64_against_int64_compares_exactly_as_numpy():
    """numba compared the pair as float64: 2**63 <= 2**63 - 1 was True."""
    u = np.array([2**63, 2**63, 2**64 - 1, 5, 0, 2**53 + 1], np.uint64)
    i = np.array([2**63 - 1, -1, -1, 5, -2**63, 2**53], np.int64)
    got, want = _both(lambda a, b: (a < b, a <= b, a > b, a >= b, a == b, a != b,
                                    b < a, b == a), u, i)
    for g, w in zip(got, want):
        _same_bits(g, w)

def test_rel_entr_whose_ratio_overflows_is_finite_as_scipys():
    """The kernel computed x log(x / y): inf where the ratio overflows (1e200 / 1e-200,
    1 / 5e-324), -inf where it underflows; scipy's (the numpy backend's) stays finite."""
    from pforjac.ops.special import rel_entr
    x = np.array([1e200, 1.0, 5e-324, 0.7, 2.0, 1e-300])
    y = np.array([1e-200, 5e-324, 7.0, 1.0, 1.9, 1e300])
    got, want = _both(lambda a, b: rel_entr(a, b), x, y)
    _same_bits(got, want)
    assert np.isfinite(np.asarray(got)).all()

def _overflowing(a):
    return pj.tanh(a), pj.exp(a) * 2.0, pj.cosh(a) + a


def test_complex_exp_and_tanh_that_overflow_run_on_numpy():
    """numba's complex exp, sinh, cosh, tanh, ... overflow to NaN where numpy's give inf or
    +-1 (tanh(400+1j) was NaN, exp(1e10+0j) inf+nanj): those ops run on numpy, named."""
    z = np.array([400 + 1j, -400 + 3j, 1e10 + 0j, 0.5 - 2j])
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        got = pj.function(_overflowing, backend="numba")(z)
        want = pj.function(_overflowing, backend="numpy")(z)
    assert any("tanh" in str(w.message) for w in caught)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert np.asarray(got[0])[0] == 1.0


def _ulps_apart(got, want) -> float:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    scale = np.finfo(want.dtype).eps * np.abs(want.astype(np.float64)).max()
    return float(np.abs(got.astype(np.float64) - want).max() / scale)


def test_a_float32_sum_of_a_million_values_keeps_numpys_accuracy():
    """numpy sums along the last axis pairwise; the loop summed in order in float32 and
    was 81 ulps off at 10**6 values (var 2900): it now accumulates in float64."""
    x = (np.random.default_rng(7).random(1 << 20) + 1.0).astype(np.float32)

    def f(a):
        rows = pj.reshape(a, (16, -1))
        return pj.numpy.sum(a), pj.numpy.var(a), pj.numpy.sum(rows, axis=1), pj.numpy.sum(rows, axis=0)
    got, want = _both(f, x)
    for g, w in zip(got, want):
        assert _ulps_apart(g, w) <= 4


def test_a_float64_sum_of_a_million_values_is_numpys():
    """numpy sums a contiguous run pairwise; in order, the loop was 150 ulps off at
    10**6 values: it now sums in numpy's order (numba_sums.py), to the bit."""
    x = np.random.default_rng(7).standard_normal(1 << 20)
    got, want = _both(lambda a: pj.numpy.sum(a), x)
    _same_bits(got, want)


@pytest.fixture
def two_threads():
    saved = pj.config.num_threads, pj.config.parallel_min_size
    pj.config.num_threads, pj.config.parallel_min_size = 2, 64
    yield
    pj.config.num_threads, pj.config.parallel_min_size = saved


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                    reason="numba runs one thread here")
def test_a_negative_integer_exponent_in_a_parallel_loop_raises_numpys_error(two_threads):
    """numba's parallel loops turned the kernel's ValueError into a SystemError: a nest
    that may raise stays serial."""
    a, b = np.arange(-32, 32).reshape(8, 8), np.full((8, 8), 2)
    f = pj.function(lambda x, y: x ** y + 1, backend="numba")
    np.testing.assert_array_equal(f(a, b), a ** 2 + 1)
    b[3, 3] = -1
    with pytest.raises(ValueError, match="negative integer powers"):
        f(a, b)


def test_max_and_min_along_leading_axes_keep_numpys_signed_zero():
    """numpy's reduction along a leading axis folds np.maximum, which keeps its second
    operand on a tie: max of rows [0.0, -0.0] is -0.0 (the loop kept the first)."""
    x = np.array([[0.0, -0.0, 0.0, np.nan], [-0.0, 0.0, 0.0, 1.0], [-0.0, -0.0, 0.0, 2.0]])
    got, want = _both(lambda a: (pj.numpy.max(a, axis=0), pj.numpy.min(a, axis=0),
                                 pj.numpy.max(a[:2, :3], axis=0)), x)
    for g, w in zip(got, want):
        _same_bits(g, w)


@pytest.mark.parametrize("seeds", [range(0, 6)])
def test_random_array_programs_agree_with_the_numpy_backend(seeds):
    """A few programs of tests/numba_array_fuzz.py (mixed dtypes, broadcast and length-0
    axes, Fortran, reversed, strided and broadcast inputs); its main runs many more."""
    from numba_array_fuzz import check
    for seed in seeds:
        problem, _ = check(seed)
        assert problem is None, problem
