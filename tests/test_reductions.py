"""Reductions and their composites (sum, prod, max, min, mean, var, std, cumsum, argmax,
logsumexp, softmax, log_softmax): numpy's values, dtypes and accumulation, bit for bit where
numpy's own reduction is the reference, at non-finite values and over empty axes, eagerly,
under pfor and compiled."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.loopcache import same_bits

from helpers import central_differences

RNG = np.random.default_rng(24)


# -- dtypes and accumulation ---------------------------------------------------------------
@pytest.mark.parametrize("reduce", [pj.sum, pj.prod, pj.max])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.float32])
def test_reductions_give_numpys_dtype_on_every_path(reduce, dtype):
    x = np.array([[1, 2], [3, 1]]).astype(dtype)
    want = getattr(np, reduce.__name__)(x, axis=1)
    mapped = pj.vectorized_map(lambda r: reduce(r), pj.constant(x), fallback_to_while_loop=False)
    compiled = pj.function(lambda t: reduce(t, axis=1))(x)
    traced = pj.make_program(lambda t: reduce(t, axis=1), [(x.shape, x.dtype)]).outputs[0]
    for got in (reduce(pj.constant(x), axis=1), mapped, compiled, traced):
        assert got.dtype == want.dtype
    for got in (mapped, compiled):
        np.testing.assert_array_equal(np.asarray(got), want)


def _near_three(shape):
    return (3 + 0.03 * RNG.standard_normal(shape)).astype(np.float16)


@pytest.mark.parametrize("axis", [0, 1, None, (0, 1)])
def test_float16_mean_accumulates_in_float32_as_numpy_does(axis):
    x = _near_three((10000, 4))                    # float16 running sums stall at 8192
    got = pj.mean(pj.constant(x), axis=axis).numpy()
    want = np.mean(x, axis=axis)                   # numpy: a float32 sum, divided, rounded
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, np.mean(x.astype(np.float64), axis=axis), rtol=1e-3)
    np.testing.assert_array_equal(pj.constant(x).mean(axis=axis).numpy(), want)


def test_float16_var_and_std_are_computed_in_float32():
    """numpy's var of float16 sums in float16 (1.6 for a variance of 0.0009 here); pforjac's
    follows its own mean into float32, as JAX's does, and rounds the result to float16."""
    x = _near_three((10000, 4))
    exact = x.astype(np.float64)
    for axis in (0, 1, None):
        for name in ("var", "std"):
            got = getattr(pj, name)(pj.constant(x), axis=axis).numpy()
            assert got.dtype == np.float16
            np.testing.assert_allclose(got, getattr(np, name)(exact, axis=axis), rtol=2e-3)
    short = _near_three((50, 3))                   # numpy's float16 steps: off by up to 3%
    for name in ("var", "std"):
        np.testing.assert_allclose(getattr(pj, name)(pj.constant(short), axis=1).numpy(),
                                   getattr(np, name)(short.astype(np.float64), axis=1), rtol=2e-3)
        np.testing.assert_allclose(getattr(pj, name)(pj.constant(short), axis=1).numpy(),
                                   getattr(np, name)(short, axis=1), rtol=5e-2)


@pytest.mark.parametrize("name", ["sum", "prod", "cumsum"])
def test_float16_sum_prod_and_cumsum_keep_numpys_float16_bits(name):
    x = _near_three((3000, 4)) if name != "prod" else \
        (1 + 0.01 * RNG.standard_normal((40, 4))).astype(np.float16)
    for axis in (0, 1):
        got = getattr(pj, name)(pj.constant(x), axis=axis).numpy()
        want = getattr(np, name)(x, axis=axis)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_integer_mean_accumulates_in_float64_as_numpy_does():
    big = np.array([2 ** 62, 2 ** 62, 2 ** 62], np.int64)      # an int64 sum wraps around
    assert float(pj.mean(pj.constant(big))) == np.mean(big)
    ints = RNG.integers(-9, 9, (5, 7)).astype(np.int32)
    np.testing.assert_array_equal(pj.mean(pj.constant(ints), axis=1).numpy(), np.mean(ints, axis=1))


@pytest.mark.parametrize("name", ["mean", "var", "std", "sum", "prod", "cumsum"])
def test_float16_reduction_gradients_match_float64_differences(name):
    x16 = (1 + 0.1 * RNG.standard_normal((64, 3))).astype(np.float16)
    x = pj.constant(x16)
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.sum(getattr(pj, name)(x, axis=0))
    got = tape.gradient(y, x).numpy()
    assert got.dtype == np.float16
    want = central_differences(lambda a: getattr(np, name)(a, axis=0).sum(),
                               x16.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-3 * np.abs(want).max())


def test_clip_var_cumsum_argmax_flip_roll_round_and_arctan2_match_numpy():
    """clip, var, std, logaddexp, cumsum, argmax/argmin, flip, roll, floor/ceil/round and
    arctan2: numpy's values, dtypes and axis conventions (None flattens where numpy does)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 4, 5)) * 3
    t = pj.constant(x)
    pairs = [
        (pj.clip(t, -0.5, 0.5), np.clip(x, -0.5, 0.5)), (pj.clip(t, None, 0.2), np.clip(x, None, 0.2)),
        (pj.var(t, 1), np.var(x, 1)), (pj.std(t, (0, 2), keepdims=True, ddof=1), np.std(x, (0, 2), keepdims=True, ddof=1)),
        (pj.var(t), np.var(x)), (pj.logaddexp(t, t[0]), np.logaddexp(x, x[0])),
        (pj.cumsum(t, -1), np.cumsum(x, -1)), (pj.cumsum(t), np.cumsum(x)),
        (pj.argmax(t, 1), np.argmax(x, 1)), (pj.argmin(t), np.argmin(x)),
        (pj.flip(t, (0, 2)), np.flip(x, (0, 2))), (pj.flip(t), np.flip(x)),
        (pj.roll(t, 2, 1), np.roll(x, 2, 1)), (pj.roll(t, -7), np.roll(x, -7)),
        (pj.roll(t, (1, -2), (0, 2)), np.roll(x, (1, -2), (0, 2))),
        (pj.floor(t), np.floor(x)), (pj.ceil(t), np.ceil(x)), (pj.round(t), np.round(x)),
        (pj.round(pj.constant([0.5, 1.5, 2.5, -0.5])), np.round(np.float32([0.5, 1.5, 2.5, -0.5]))),
        (pj.arctan2(t, t[0]), np.arctan2(x, x[0])),
        (pj.cumsum(pj.constant(np.array([1, 2, 3], np.int32))), np.cumsum(np.array([1, 2, 3], np.int32))),
    ]
    for got, want in pairs:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    with pytest.raises(np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError,
                       match="cumsum: axis 3"):
        pj.cumsum(t, 3)
    with pytest.raises(ValueError, match="argmax.*empty"):
        pj.argmax(pj.zeros((2, 0)), 1)
    with pytest.raises(ValueError, match="roll: shift .* same length"):
        pj.roll(t, (1, 2), (0, 1, 2))
    with pj.GradientTape() as g:                # argmax picks; it has no gradient of its own
        g.watch(t)
        y = pj.sum(pj.gather(pj.reshape(t, (-1,)), pj.argmax(t)))
    assert g.gradient(y, t).numpy().ravel()[np.argmax(x)] == 1.0


# -- numpy's bits from the faster kernels ----------------------------------------------------
def test_sums_over_one_short_axis_equal_np_sum_bit_for_bit():
    """A sum over one short axis is added slice by slice where numpy's reduction loop is
    slow (the Lennard-Jones Hessian's sums over xyz: 5.4 -> 2.7 ms); its bits, zeros' signs
    included, must stay numpy's."""
    from pforjac.ops._kernels import sum_short_axis
    rng = np.random.default_rng(3)
    shapes = [((96, 8, 3), 2), ((300, 5), 1), ((4, 256, 3), 1), ((64, 32, 16), 1), ((2, 5000, 2), 1),
              ((700, 2), 1), ((40, 20, 7), 2), ((9, 2048, 4), 1), ((1000, 50, 2), 1), ((20, 500, 10), 1),
              ((3, 7, 17), 1), ((5, 3, 2, 2), 1), ((6, 4, 5, 3), 2)]
    for shape, axis in shapes:
        for dtype in (np.float32, np.float64):
            x = (rng.normal(size=shape) * np.exp(rng.normal(size=shape) * 4)).astype(dtype)
            x.flat[::7] = -0.0
            x.flat[5] = np.inf
            for keepdims in (False, True):
                want, got = np.sum(x, axis=axis, keepdims=keepdims), sum_short_axis(x, (axis,), keepdims)
                assert got.shape == want.shape and got.dtype == want.dtype
                assert got.tobytes() == want.tobytes(), (shape, axis, dtype)
        zeros = np.full(shape, -0.0)
        assert sum_short_axis(zeros, (axis,)).tobytes() == np.sum(zeros, axis=axis).tobytes()   # +0, as numpy


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 7])
def test_max_and_min_over_a_short_last_axis_match_numpy_bit_for_bit(dtype, n):
    """max/min over a last axis of 2-7 elements go through the slices' elementwise maximum
    where that gives numpy's bits on this machine (13x faster on a max-pool's (64, 32, 4));
    every row of +-0, +-1, +-inf and NaN (a sample
    of them for 7 elements) must give numpy's own reduction, NaN and zeros' signs included,
    with and without keepdims, from C-ordered and transposed inputs. pforjac holds its
    inputs C-ordered, and numpy's choice between +0 and -0 can depend on the layout (on an
    AVX2 CPU, numpy's max of the rows of a transposed array keeps other zeros than that of
    its C-ordered copy): the bits are numpy's for the C-ordered copy, the values (+0 == -0)
    numpy's for the input as given."""
    values = [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf]
    rows = np.array(list(itertools.product(values, repeat=n)), dtype=dtype)
    if n == 7:
        rows = rows[np.random.default_rng(0).choice(len(rows), 20000, replace=False)]
    rows = np.tile(rows, (max(1, 512 // len(rows)) + 1, 1))
    rows = rows[:len(rows) // 2 * 2]
    for x in (rows, np.asfortranarray(rows), rows.reshape(-1, 2, n)[:, ::-1, :]):
        for op, reduce in ((pj.max, np.max), (pj.min, np.min)):
            for keepdims in (False, True):
                got = op(pj.constant(x), axis=-1, keepdims=keepdims).numpy()
                want = reduce(np.ascontiguousarray(x), axis=-1, keepdims=keepdims)
                assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous
                assert same_bits(got, want), (op.__name__, x.strides, keepdims)
                np.testing.assert_array_equal(got, reduce(x, axis=-1, keepdims=keepdims))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_fold_is_used_only_where_it_gives_numpys_bits(dtype):
    """`_fold_is_numpys` decides once per row length and dtype from a sample of rows. Where
    it takes the fold, the fold must give numpy's bits on every row of 2-6 values from +-0,
    +-1, +-inf and NaN (100,000 others of 7), C-ordered at eight offsets from a 64-byte
    boundary and transposed. (On an AVX2 CPU numpy's choice of zero for float64 rows of 5-7
    depends on where a row lies in memory, so a "no" is not checked against one array: it
    only costs the fold's speed.)"""
    from pforjac.ops._kernels import _fold_is_numpys, _fold_slices, shifted_copy
    values = np.array([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf], dtype)
    for n in range(2, 8):
        if not _fold_is_numpys(n, np.dtype(dtype)):
            continue
        rows = np.arange(7 ** n) if n < 7 else np.random.default_rng(2).choice(7 ** n, 100000, replace=False)
        x = values[rows[:, None] // 7 ** np.arange(n)[::-1] % 7]
        for a in [shifted_copy(x, s) for s in range(8)] + [np.asfortranarray(x)]:
            for pairwise, reduce in ((np.maximum, np.maximum.reduce), (np.minimum, np.minimum.reduce)):
                assert same_bits(_fold_slices(pairwise, a, 1, order="C"), reduce(a, axis=1)), \
                    (n, pairwise.__name__, a.strides, a.ctypes.data % 64)


@pytest.mark.parametrize("shape, axis", [((96, 8, 32, 3), 2), ((20, 50, 10), 1), ((100, 50, 2), 1),
                                         ((4, 5, 2, 16), 1), ((3, 0, 4), 1)])
def test_sum_over_a_middle_axis_moves_its_rows_as_items_with_the_same_bits(shape, axis):
    """sum over an axis with 2-16 elements after it sums a copy with that axis first; the copy
    moves those elements as one void item each (4x faster), the same bits as numpy's
    moveaxis copy summed, NaN and zeros' signs included."""
    from pforjac.ops._kernels import axis_first
    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(shape).astype(dtype)
        x.flat[::7] = -0.0
        x.flat[::11] = np.nan
        inner = int(np.prod(shape[axis + 1:]))
        want = np.ascontiguousarray(np.moveaxis(x, axis, 0))
        if x.size:
            moved = axis_first(x, axis, inner)
            assert moved.flags.c_contiguous and same_bits(moved, want)
        for keepdims in (False, True):
            got = pj.sum(pj.constant(x), axis=axis, keepdims=keepdims).numpy()
            expected = want.sum(axis=0)
            assert same_bits(got, np.expand_dims(expected, axis) if keepdims else expected)


# -- logsumexp, softmax, log_softmax -------------------------------------------------------
@pytest.mark.parametrize("row, want", [([-np.inf, -np.inf], -np.inf), ([np.inf, 1.0], np.inf),
                                       ([np.inf, -np.inf], np.inf), ([np.nan, 1.0], np.nan),
                                       ([1.0, 2.0], np.log(np.exp(1.0) + np.exp(2.0)))])
@pytest.mark.filterwarnings("ignore:divide by zero encountered in log")
def test_logsumexp_of_non_finite_rows_is_what_the_unshifted_formula_gives(row, want):
    x = np.array([row, [0.5, -0.5]])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "invalid value")    # none from the shift (log(0)
        #                                                    may warn, as numpy's does)
        eager = pj.logsumexp(pj.constant(x), axis=1).numpy()
        mapped = pj.vectorized_map(lambda r: pj.logsumexp(r), pj.constant(x),
                                   fallback_to_while_loop=False).numpy()
    compiled = np.asarray(pj.function(lambda t: pj.logsumexp(t, axis=1))(x))
    for got in (eager, mapped, compiled):
        np.testing.assert_allclose(got, [want, np.log(np.exp(0.5) + np.exp(-0.5))], rtol=1e-15)


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")
def test_logsumexp_and_softmax_over_an_empty_axis_are_numpys():
    x = pj.zeros((0, 3), np.float64)
    np.testing.assert_array_equal(pj.logsumexp(x, axis=0).numpy(), [-np.inf] * 3)
    assert pj.softmax(x, axis=0).shape == (0, 3) and pj.log_softmax(x, axis=0).shape == (0, 3)
    assert pj.jacobian(lambda a: pj.softmax(a, axis=0), x.numpy()).shape == (0, 3, 0, 3)


@pytest.mark.parametrize("dtype, row, want", [
    # want: log_softmax in float64 closed form, (x - max) - log(sum(exp(x - max)))
    (np.float32, [1000.0, 1001.0, 0.0], None),
    (np.float32, [88.0, 89.0, 0.0], None),
    (np.float32, [3e38, 3e38, -3e38], [-np.log(2), -np.log(2), -np.inf]),
    (np.float64, [1e300, 1e300, 1e300], [-np.log(3)] * 3),
    (np.float64, [20.0, -20.0, 40.0], None),
    (np.float16, [60000.0, 60000.0, 0.0], [-np.log(2), -np.log(2), -60000.0]),
])
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_log_softmax_subtracts_the_max_before_the_log_of_the_sum(dtype, row, want):
    """x - logsumexp(x) let a large max absorb log(sum): 250 float32 ulps lost at
    [1000, 1001, 0], everything at [1e300] * 3 (zeros instead of -log 3)."""
    x = np.array(row, dtype)
    if want is None:
        x64 = x.astype(np.float64)
        shifted = x64 - x64.max()
        want = shifted - np.log(np.exp(shifted).sum())
    got = pj.log_softmax(pj.constant(x)).numpy()
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2 * np.finfo(dtype).eps, atol=0)
    compiled = np.asarray(pj.function(lambda t: pj.log_softmax(t))(x))
    np.testing.assert_array_equal(compiled, got)


def test_log_softmax_gradient_is_identity_minus_softmax():
    x = np.array([[1000.0, 1001.0, 0.0], [1.0, 2.0, 3.0]])
    J = np.asarray(pj.jacobian(lambda t: pj.log_softmax(t), x, vectorize=True))
    for b in range(2):
        s = np.exp(x[b] - x[b].max())
        s /= s.sum()
        np.testing.assert_allclose(J[b, :, b, :], np.eye(3) - s[None, :], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("shape, axis, keepdims", [((), None, False), ((1,), None, True),
                                                   ((1, 3), 0, False), ((1, 3), 0, True),
                                                   ((3, 1, 2), 1, False), ((2, 3), (), False)])
def test_std_over_one_value_is_a_constant_with_derivative_zero(shape, axis, keepdims):
    """Over one value the deviations are identically zero: std is 0 and so are its
    derivatives, in every mode (at a zero-variance point of more values it stays NaN, as
    JAX's: test_forward.test_std_and_norm_at_zero_are_nan_in_both_modes)."""
    x = RNG.uniform(-1, 1, shape)
    f = lambda t: np.std(t, axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(f(pj.constant(x)).numpy(), np.std(x, axis=axis, keepdims=keepdims))
    size = np.std(x, axis=axis, keepdims=keepdims).size * x.size
    for jac in (pj.jacobian(f, pj.constant(x), vectorize=True),
                pj.jacobian(f, pj.constant(x), vectorize=False),
                pj.jacobian(f, pj.constant(x), strategy="forward-mode", vectorize=True)):
        np.testing.assert_array_equal(jac.numpy().reshape(size), np.zeros(size))
    np.testing.assert_array_equal(np.asarray(pj.jvp(f, x, np.ones_like(x))[1]), 0.0)
    hess = pj.hessian(lambda t: pj.sum(pj.std(t, axis=axis)), pj.constant(x)).numpy()
    np.testing.assert_array_equal(hess, np.zeros_like(hess))


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
@pytest.mark.parametrize("x, ddof", [(np.arange(3.0), 3), (np.arange(3.0), 4), (np.ones(3), 4),
                                     (np.ones(1), 1)])
def test_var_and_std_without_degrees_of_freedom_are_numpys_nan_or_inf(x, ddof):
    # (count - ddof was divided by as it was: -2 for var(arange(3), ddof=4), numpy's inf)
    for name in ("var", "std"):
        with pytest.warns(RuntimeWarning, match=f"over {x.size} values with ddof={ddof}"):
            got = getattr(np, name)(pj.constant(x), ddof=ddof).numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_array_equal(got, getattr(np, name)(x, ddof=ddof))


@pytest.mark.parametrize("reduce, axis", [(np.max, None), (np.max, 1), (np.min, 0), (np.max, (0, 1))])
def test_extremum_ties_share_the_derivative_evenly_in_every_mode(reduce, axis):
    """JAX's and autograd's convention: each of k tied extrema gets 1/k of the derivative,
    in reverse mode (pfor and loop), forward mode and jvp alike."""
    x = np.array([[1.0, 3.0, 3.0], [3.0, 0.5, 3.0], [0.5, 0.5, 0.5]])
    ans = reduce(x, axis=axis, keepdims=True)
    tied = (x == ans) / (x == ans).sum(axis=axis, keepdims=True)
    out_shape = reduce(x, axis=axis).shape
    want = np.zeros(out_shape + x.shape)
    for k in np.ndindex(x.shape):
        out_k = tuple(i for a, i in enumerate(k) if axis is not None and a not in np.atleast_1d(axis))
        want[out_k + k] = tied[k]
    f = lambda t: reduce(t, axis=axis)
    for jac in (pj.jacobian(f, pj.constant(x), vectorize=True),
                pj.jacobian(f, pj.constant(x), vectorize=False),
                pj.jacobian(f, pj.constant(x), strategy="forward-mode", vectorize=True)):
        np.testing.assert_allclose(jac.numpy(), want, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(pj.jvp(f, x, np.ones_like(x))[1]), want.reshape(
        out_shape + (-1,)).sum(-1), rtol=1e-15)


@pytest.mark.parametrize("ddof", [2, 3, 5])
def test_var_and_std_past_their_degrees_of_freedom_are_inf_or_nan_as_numpy(ddof):
    """ddof >= the count divides by 0, as numpy's max(count - ddof, 0): inf (NaN for no
    values), never the negative variance count - ddof < 0 gave (var([1, 2], ddof=3) was
    -0.5)."""
    for x in (np.array([1.0, 2.0]), np.array([1.5]), np.zeros(0), np.arange(6.0).reshape(2, 3)):
        for dtype in (np.float64, np.float16):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                for fn, ref in ((pj.var, np.var), (pj.std, np.std)):
                    got = fn(pj.constant(x.astype(dtype)), 0, False, ddof).numpy()
                    np.testing.assert_array_equal(got, ref(x.astype(dtype), 0, ddof=ddof))
