"""numpy's array functions and remaining ufuncs on pforjac Tensors (pforjac.ops.sorting,
.scans, .convolution, .numeric, .ufuncs; registered in pforjac/numpy/_arrays.py).

Each case is a function written in plain numpy. Run on arrays it is numpy; run on Tensors it
dispatches to pforjac. The oracles: numpy's own values (bit for bit where pforjac runs
numpy's forward or numpy's operations in numpy's order), central finite differences in
float64 of the numpy function for Jacobians, and closed forms.
"""
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac.testing import check_converter, check_grads
from helpers import no_fallback

RNG = np.random.default_rng(23)
X = RNG.normal(size=(3, 4))
V3 = np.array([0.5, -1.0, 2.0])
XP = np.sort(RNG.uniform(-2, 2, 6))
FP = RNG.normal(size=6)
NAN_MASK = np.array([[False, True, False, False], [False, False, False, True],
                     [True, False, False, False]])
ZEROS_AT = np.array([[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0]])
C = RNG.uniform(0.5, 2.0, (3, 4)) * np.array([1, -1, 1, -1])
C_NAN = np.where(NAN_MASK, np.nan, C)
SPECIAL = np.where(NAN_MASK, np.array([np.inf, -np.inf, np.nan, 0.0]), 1.0)


def _with_zeros(x):
    return x * ZEROS_AT


# name -> (numpy-written function of one float64 array, whose result is bit for bit numpy's)
CASES = {
    "sort_rows": (lambda x: np.sort(x), True),
    "sort_cols": (lambda x: np.sort(x, axis=0, kind="stable"), True),
    "sort_flat": (lambda x: np.sort(x, axis=None), True),
    "partition": (lambda x: np.partition(x, 1, axis=-1), True),
    "partition_kths": (lambda x: np.partition(x, (0, 2), axis=0), True),
    "take_along_axis": (lambda x: np.take_along_axis(x, np.array([[3, -1], [0, 0], [2, 1]]), 1),
                        True),
    "take_along_broadcast": (lambda x: np.take_along_axis(x, np.array([[2, 0, 1, 1]]), 0), True),
    "cumprod_zeros": (lambda x: np.cumprod(_with_zeros(x), axis=1), True),
    "cumprod_flat": (lambda x: np.cumprod(_with_zeros(x)), True),
    "cumulative_prod": (lambda x: np.cumulative_prod(_with_zeros(x), axis=0, include_initial=True),
                        True),
    "median_even": (lambda x: np.median(x, axis=1), True),
    "median_odd_keepdims": (lambda x: np.median(x, axis=0, keepdims=True), True),
    "median_all": (lambda x: np.median(x), True),
    "quantile": (lambda x: np.quantile(x, [0.1, 0.5, 0.95], axis=1), True),
    "percentile": (lambda x: np.percentile(x, 40.0, axis=(0, 1), keepdims=True), True),
    "diff": (lambda x: np.diff(x), True),
    "diff_n2_axis0": (lambda x: np.diff(x, n=2, axis=0, prepend=0.5, append=x[:1]), True),
    "ediff1d": (lambda x: np.ediff1d(x, to_end=[1.0, 2.0], to_begin=-3.0), True),
    "convolve_full": (lambda x: np.convolve(np.ravel(x), V3), False),
    "convolve_same": (lambda x: np.convolve(V3, x[0], mode="same"), False),
    "convolve_valid": (lambda x: np.convolve(x[1], V3, mode="valid"), False),
    "correlate_valid": (lambda x: np.correlate(np.ravel(x), V3), False),
    "correlate_full_swapped": (lambda x: np.correlate(V3, x[2], mode="full"), False),
    "interp_x": (lambda x: np.interp(x, XP, FP), True),
    "interp_fp": (lambda x: np.interp(np.linspace(-3, 3, 7), XP[:4], x[0], right=-2.0), True),
    "polyval_x": (lambda x: np.polyval(V3, x), True),
    "polyval_p": (lambda x: np.polyval(x[0], V3), True),
    "nansum": (lambda x: np.nansum(np.where(NAN_MASK, np.nan, x), axis=0), False),
    "nanmean": (lambda x: np.nanmean(np.where(NAN_MASK, np.nan, x), axis=1), False),
    "nanvar": (lambda x: np.nanvar(np.where(NAN_MASK, np.nan, x), axis=1, ddof=1), False),
    "nanstd": (lambda x: np.nanstd(np.where(NAN_MASK, np.nan, x)), False),
    "nanmax": (lambda x: np.nanmax(np.where(NAN_MASK, np.nan, x), axis=0), True),
    "nanmin": (lambda x: np.nanmin(np.where(NAN_MASK, np.nan, x), axis=1, keepdims=True), True),
    "nanprod": (lambda x: np.nanprod(np.where(NAN_MASK, np.nan, x), axis=1), False),
    "nancumsum": (lambda x: np.nancumsum(np.where(NAN_MASK, np.nan, x), axis=1), True),
    "nancumprod": (lambda x: np.nancumprod(np.where(NAN_MASK, np.nan, x), axis=0), True),
    "nan_to_num": (lambda x: np.nan_to_num(x + SPECIAL)
                   + np.nan_to_num(x - SPECIAL, nan=1.5, posinf=9.0, neginf=-9.0), True),
    "exp2": (lambda x: np.exp2(x), True),
    "radians_degrees": (lambda x: np.degrees(x) + np.radians(x) * np.rad2deg(np.deg2rad(x)), True),
    "cbrt": (lambda x: np.cbrt(x), True),
    "sinc": (lambda x: np.sinc(_with_zeros(x)), True),
    "fabs": (lambda x: np.fabs(x), True),
    "hypot": (lambda x: np.hypot(x, C), True),
    "logaddexp2": (lambda x: np.logaddexp2(x, C), True),
    "fmax_fmin": (lambda x: np.fmax(x, C_NAN) * np.fmin(C_NAN, x), True),
    "fmod_mod": (lambda x: np.fmod(x, C) + np.mod(x, C), True),
    "mod_operator": (lambda x: x % C + 3.5 % (np.abs(x) + 0.5), True),
    "copysign": (lambda x: np.copysign(x, C), True),
    "heaviside": (lambda x: np.heaviside(_with_zeros(C), x), True),
    "float_power": (lambda x: np.float_power(np.abs(x) + 0.5, 2.5), False),   # (np.power's loop)
    "trunc_fix": (lambda x: x * np.trunc(3 * x) + np.fix(2 * x), True),
}
NAMES = sorted(CASES)


def _jacobian_fd(f, x, eps=1e-6):
    cols = []
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += eps
        down[k] -= eps
        cols.append((np.asarray(f(up), np.float64) - np.asarray(f(down), np.float64)) / (2 * eps))
    out = np.stack(cols, axis=-1)
    return out.reshape(np.shape(f(x)) + x.shape)


@pytest.fixture(autouse=True)
def _quiet_numpy():
    with warnings.catch_warnings():      # numpy's own all-NaN and divide warnings on the oracle
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@pytest.mark.parametrize("name", NAMES)
def test_values_are_numpys(name):
    f, bitwise = CASES[name]
    got, want = f(pj.constant(X)), f(X)
    assert isinstance(got, pj.Tensor)
    assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want)
    if bitwise:
        np.testing.assert_array_equal(got.numpy(), want)
    else:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-14)


@no_fallback
@pytest.mark.parametrize("name", NAMES)
def test_jacobians_pfor_and_while_loop_match_finite_differences(name):
    f = CASES[name][0]
    x = pj.constant(X)
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    pfor = tape.jacobian(y, x, unconnected_gradients="zero").numpy()
    loop = tape.jacobian(y, x, unconnected_gradients="zero", experimental_use_pfor=False).numpy()
    np.testing.assert_allclose(pfor, loop, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(pfor, _jacobian_fd(f, X), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_gradients_to_second_order(name):
    check_grads(CASES[name][0], X, order=2)


@pytest.mark.parametrize("name", ["sort_rows", "cumprod_zeros", "interp_x", "polyval_x",
                                  "nanmean", "convolve_same", "sinc", "fmax_fmin"])
def test_inside_a_compiled_function(name):
    f = CASES[name][0]

    def jac(x):
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.jacobian(y, x, unconnected_gradients="zero")
    compiled = pj.function(jac)
    for x in (X, X[::-1] * 0.7):
        np.testing.assert_allclose(np.asarray(compiled(x)), np.asarray(jac(pj.constant(x))), rtol=1e-12,
                                   atol=1e-12)


# row-wise functions: batch_jacobian is the block diagonal of the full Jacobian
ROWWISE = {
    "sort": lambda x: np.sort(x, axis=1),
    "partition": lambda x: np.partition(x, 2, axis=-1),
    "cumprod": lambda x: np.cumprod(_with_zeros(x), axis=1),
    "diff": lambda x: np.diff(x, axis=1, append=1.0),
    "nanstd": lambda x: np.nanstd(np.where(NAN_MASK, np.nan, x), axis=1, keepdims=True),
    "interp": lambda x: np.interp(x, XP, FP),
    "median": lambda x: np.median(x, axis=1, keepdims=True),
    "ufuncs": lambda x: np.hypot(np.exp2(x), np.sinc(x)) + np.fmod(x, 0.7),
}


@no_fallback
@pytest.mark.filterwarnings("error:batch_jacobian could not check:RuntimeWarning")
@pytest.mark.parametrize("name", sorted(ROWWISE))
def test_batch_jacobians_pfor_and_while_loop(name):
    f = ROWWISE[name]
    x = pj.constant(X)
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    full = _jacobian_fd(f, X)
    want = np.stack([full[b, :, b, :] for b in range(X.shape[0])])
    for pfor in (True, False):
        got = tape.batch_jacobian(y, x, experimental_use_pfor=pfor).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# -- what the generic checks don't say ------------------------------------------------------
def test_sort_gradient_follows_numpys_stable_order_of_ties():
    x = pj.constant(np.array([1.0, 0.0, 1.0, 0.0]))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.sort(x) * np.array([1.0, 2.0, 3.0, 4.0]))
    # sorted: x[1], x[3], x[0], x[2] (ties keep their order)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 1.0, 4.0, 2.0])


def test_argsort_searchsorted_argpartition_are_integers_numpy_gives():
    x = RNG.integers(-2, 3, (4, 6)).astype(np.float64)
    t = pj.constant(x)
    np.testing.assert_array_equal(np.argsort(t, kind="stable").numpy(), np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(np.argsort(t, axis=None, stable=True).numpy(),
                                  np.argsort(x, axis=None, stable=True))
    got = np.argpartition(t, 3, axis=1).numpy()
    np.testing.assert_array_equal(np.take_along_axis(x, got, 1)[:, 3], np.sort(x, axis=1)[:, 3])
    grid = np.array([-1.0, 0.0, 0.0, 2.0, np.nan])
    values = np.array([[0.0, -5.0, np.nan], [2.0, 1.0, 7.0]])
    for side in ("left", "right"):
        out = np.searchsorted(pj.constant(grid), pj.constant(values), side=side)
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out.numpy(), np.searchsorted(grid, values, side=side))
    order = np.array([3, 0, 2, 1])
    np.testing.assert_array_equal(
        np.searchsorted(pj.constant(grid[:4][order]), 0.5, sorter=order).numpy(),
        np.searchsorted(grid[:4][order], 0.5, sorter=order))


def test_searchsorted_converter_with_per_iteration_sorted_arrays():
    tables = [np.sort(RNG.uniform(-1, 1, 5)) for _ in range(3)] + [np.array([0., 0., 1., np.nan, np.nan])]
    values = [np.array([[0.0, 0.5, np.nan], [-2.0, 1.0, 0.2]]) * (k + 1) for k in range(4)]
    for side in ("left", "right"):
        check_converter("searchsorted", tables[0], values[0], n=4, iterations=[tables, values],
                        side=side)


def test_put_along_axis_add_adds_repeated_indices_as_np_add_at():
    g = RNG.normal(size=(3, 4))
    idx = np.array([[0, 0, 2, -1], [1, 1, 1, 1], [3, 2, 1, 0]])
    want = np.zeros((3, 5))
    np.add.at(want, (np.arange(3)[:, None], idx % 5), g)
    np.testing.assert_allclose(pj.put_along_axis_add(g, idx, 1, 5).numpy(), want, rtol=1e-15)
    x = pj.constant(RNG.normal(size=(3, 5)))
    with pj.GradientTape() as tape:               # take_along_axis's gradient is that sum
        tape.watch(x)
        y = pj.sum(np.take_along_axis(x, idx, axis=1) * g)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), want, rtol=1e-15)


def test_sort_is_numpys_forward_for_every_kind():
    x = np.concatenate([RNG.normal(size=20), [np.nan, -0.0, 0.0, np.inf, 1.0, 1.0]])
    for kind in ("quicksort", "mergesort", "heapsort", "stable"):
        np.testing.assert_array_equal(np.sort(pj.constant(x), kind=kind).numpy(),
                                      np.sort(x, kind=kind))


def test_cumprod_hessian_with_two_zeros_matches_finite_differences():
    z = np.array([0.5, 0.0, 2.0, 0.0, 3.0, 1.5, -1.0])
    w = np.linspace(1.0, 2.0, z.size)
    hess = pj.hessian(lambda t: np.sum(np.cumprod(t) * w), pj.constant(z)).numpy()
    e, n = 1e-4, z.size
    f = lambda t: np.sum(np.cumprod(t) * w)       # noqa: E731
    want = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            d = [z.copy() for _ in range(4)]
            for k, (si, sj) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
                d[k][i] += si * e
                d[k][j] += sj * e
            want[i, j] = (f(d[0]) - f(d[1]) - f(d[2]) + f(d[3])) / (4 * e * e)
    np.testing.assert_allclose(hess, want, atol=1e-6)
    assert np.abs(hess[1, 3]) > 1.0              # d2/dz1 dz3: the product of the others


def test_sinc_second_derivative_at_zero_is_the_closed_form():
    hess = pj.hessian(lambda t: np.sum(np.sinc(t)), pj.constant(np.zeros(2))).numpy()
    np.testing.assert_allclose(hess, -np.pi ** 2 / 3 * np.eye(2), rtol=1e-12)


def test_sinc_in_float32_has_float64_accurate_derivatives():
    x = np.array([0.02, 0.05, 0.3], np.float32)
    t = pj.constant(x)
    with pj.GradientTape() as tape:
        tape.watch(t)
        y = pj.sum(pj.sinc(t))
    got = tape.gradient(y, t).numpy()
    x64 = x.astype(np.float64)
    want = (np.cos(np.pi * x64) - np.sinc(x64)) / x64
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_quantile_gradient_in_q_and_nan_slices():
    check_grads(lambda q: np.quantile(X, q, axis=1), np.array([0.3, 0.61]))
    xn = np.where(NAN_MASK, np.nan, X)
    for fn in (lambda a: np.median(a, axis=1), lambda a: np.quantile(a, [0.2, 0.7], axis=0)):
        np.testing.assert_array_equal(fn(pj.constant(xn)).numpy(), fn(xn))


def test_interp_outside_and_at_the_knots():
    x = np.concatenate([XP, [XP[0] - 1, XP[-1] + 1, np.nan]])
    got = np.interp(pj.constant(x), XP, FP, left=-9.0, right=9.0).numpy()
    np.testing.assert_array_equal(got, np.interp(x, XP, FP, left=-9.0, right=9.0))
    np.testing.assert_array_equal(np.interp(pj.constant([0.3, -4.0]), [0.3], [2.0]).numpy(),
                                  np.interp([0.3, -4.0], [0.3], [2.0]))


def test_numpy_keywords_pforjac_lacks_are_refused_by_name():
    x = pj.constant(X)
    with pytest.raises(TypeError, match="numpy.sort.*order"):
        np.sort(x, order="a")
    with pytest.raises(TypeError, match="numpy.interp.*period"):
        np.interp(x, XP, FP, period=1.0)
    with pytest.raises(TypeError, match="numpy.nansum.*where"):
        np.nansum(x, where=NAN_MASK)
    with pytest.raises(TypeError, match="numpy.partition.*kind"):
        np.partition(x, 1, kind="quickselect")


def test_errors_name_the_function_and_the_shapes():
    x = pj.constant(X)
    with pytest.raises(ValueError, match="take_along_axis.*rank 1.*rank 2"):
        np.take_along_axis(x, np.array([0, 1]), 1)
    with pytest.raises(IndexError, match="index 4 is out of bounds.*size 4"):
        np.take_along_axis(x, np.array([[4]]), 1)
    with pytest.raises(ValueError, match="convolve: both operands must be 1-D"):
        np.convolve(x, V3)
    with pytest.raises(ValueError, match="searchsorted: side"):
        pj.searchsorted(XP, x, side="middle")
    with pytest.raises(ValueError, match="nanargmax: an all-NaN slice"):
        np.nanargmax(np.full((2, 2), np.nan) * x[:2, :2], axis=1)
    with pytest.raises(TypeError, match="fabs: complex"):
        pj.fabs(pj.constant(np.array([1j])))


def test_predicates_are_bool_tensors_without_gradient():
    x = pj.constant(np.array([1.0, np.nan, np.inf, -np.inf, -0.0]))
    for name in ("isnan", "isinf", "isfinite", "signbit", "isposinf", "isneginf"):
        got = getattr(np, name)(x)
        assert isinstance(got, pj.Tensor) and got.dtype == np.bool_
        np.testing.assert_array_equal(got.numpy(), getattr(np, name)(x.numpy()))
    np.testing.assert_array_equal(np.nanargmin(pj.constant(C_NAN), axis=0).numpy(),
                                  np.nanargmin(C_NAN, axis=0))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_floor_divide_and_its_operator_are_numpys_with_a_zero_derivative(dtype):
    """`t // y` and np.floor_divide: numpy's exact floor of the quotient (7.5 // 2 = 3,
    -7.5 // 2 = -4, -0.0 // 3 = -0.0), a step with derivative 0 in both arguments."""
    x = np.array([7.5, -7.5, 3.0, -0.0, 1e16 + 2]).astype(dtype)
    y = np.array([2.0, 2.0, -0.7, 3.0, 3.0]).astype(dtype) if dtype != np.int64 else \
        np.array([2, 2, -1, 3, 3])
    want = np.floor_divide(x, y)
    for got in ((pj.constant(x) // y), np.floor_divide(pj.constant(x), y)):
        np.testing.assert_array_equal(got.numpy(), want)
        assert got.dtype == want.dtype
    np.testing.assert_array_equal((x // pj.constant(y)).numpy(), want)      # __rfloordiv__
    if dtype != np.int64:
        jac = pj.jacobian(lambda t: t // 2.0 + t, pj.constant(x[:4]))
        np.testing.assert_array_equal(jac.numpy(), np.eye(4))
