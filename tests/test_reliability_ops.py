"""Silent wrong results of issue 24 in ops, tensors and result assembly, kept as tests: each
compares with numpy itself, a closed form or central differences in float64."""
from __future__ import annotations

import timeit
import warnings

import numpy as np
import pytest

import pforjac as pj

RNG = np.random.default_rng(24)


# -- 4. float16 reductions accumulate as numpy's do -----------------------------------------
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
    want = _central_differences(lambda a: getattr(np, name)(a, axis=0).sum(),
                                x16.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-3 * np.abs(want).max())


def _central_differences(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += eps
        down[k] -= eps
        out[k] = (f(up) - f(down)) / (2 * eps)
    return out


# -- 5. Python numbers next to a tensor take its dtype -----------------------------------------
X64 = np.array([1.0, 3.0])
W = [0.1, 0.2]


@pytest.mark.parametrize("name, op, want", [
    ("@", lambda t: t @ W, X64 @ W),
    ("@ reflected", lambda t: W @ t, np.array(W) @ X64),
    ("matmul", lambda t: pj.matmul(t, W), X64 @ W),
    ("dot", lambda t: pj.dot(t, W), np.dot(X64, W)),
    ("einsum", lambda t: pj.einsum("i,i->", t, W), np.einsum("i,i->", X64, W)),
    ("-", lambda t: t - W, X64 - W),
    ("- reflected", lambda t: W - t, W - X64),
    ("+ tuple", lambda t: t + tuple(W), X64 + W),
    (">", lambda t: pj.cast(t * 0.1 > [0.1, 0.3], "float64"), (X64 * 0.1 > [0.1, 0.3]) * 1.0),
    ("concat", lambda t: pj.concat([t, W], axis=0), np.concatenate([X64, W])),
    ("stack", lambda t: pj.stack([t, W]), np.stack([X64, W])),
    ("where", lambda t: pj.where([True, False], t, W), np.where([True, False], X64, W)),
    ("logaddexp", lambda t: pj.logaddexp(t, 0.1), np.logaddexp(X64, 0.1)),
    ("logaddexp list", lambda t: pj.logaddexp(W, t), np.logaddexp(W, X64)),
    ("maximum", lambda t: pj.maximum(t * 0.01, W), np.maximum(X64 * 0.01, W)),
])
def test_lists_and_scalars_next_to_a_float64_tensor_are_float64(name, op, want):
    got = op(pj.constant(X64)).numpy()
    assert got.dtype == np.float64, name
    np.testing.assert_array_equal(got, want)


def test_weak_operands_follow_the_tensor_of_any_dtype():
    f32, f16 = pj.constant(np.ones(2, np.float32)), pj.constant(np.ones(2, np.float16))
    assert (f32 @ W).dtype == np.float32 and (f16 - W).dtype == np.float16
    assert pj.concat([f16, [1, 2]], axis=0).dtype == np.float16
    ints = pj.constant(np.array([1, 2], np.int32))
    np.testing.assert_array_equal((ints - [0.1, 0.2]).numpy(), np.array([1, 2]) - np.array(W))
    assert (pj.constant(np.array([1, 2], np.int8)) + [3, 4]).dtype == np.int8
    assert pj.constant([1.0, 2.0]).dtype == np.float32          # alone: TensorFlow's rule
    assert pj.add([1.0, 2.0], [0.5, 0.25]).dtype == np.float32
    assert pj.where(pj.constant([True, False]), [0.1, 0.2], [0.3, 0.4]).dtype == np.float32
    np.testing.assert_array_equal(pj.gather(pj.constant(X64), [1, 0]).numpy(), X64[[1, 0]])


def test_weak_lists_are_weak_under_tapes_pfor_and_compiled_functions():
    x = pj.constant(X64)
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.sum(pj.stack([x, W]) * [[0.1, 0.3], [0.7, 0.9]])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.1, 0.3])
    mapped = pj.vectorized_map(lambda r: r @ [0.1, 0.2], pj.constant(np.stack([X64, X64])))
    np.testing.assert_array_equal(mapped.numpy(), [X64 @ W] * 2)
    np.testing.assert_array_equal(pj.function(lambda t: t @ [0.1, 0.2])(x).numpy(), X64 @ W)


# -- 6. std and norms at zero are NaN in both modes; var's derivative is 0 in both --------------
def _both_modes(f, x):
    rev = pj.jacobian(f, pj.constant(x)).numpy()
    fwd = pj.jacobian(f, pj.constant(x), strategy="forward-mode", vectorize=True).numpy()
    loop = pj.jacobian(f, pj.constant(x), vectorize=False).numpy()
    np.testing.assert_array_equal(loop, rev)
    return rev, fwd


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
@pytest.mark.parametrize("name, f", [("std", lambda x: pj.std(x, axis=1)),
                                     ("norm", lambda x: pj.sqrt(pj.sum(x * x, axis=1)))])
def test_std_and_norm_at_zero_are_nan_in_both_modes(name, f):
    """JAX's convention: the derivative of sqrt at 0 times the zero derivative of a variance
    (or a sum of squares) at its minimum is NaN, in both modes (forward mode gave 0)."""
    x = np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]]) if name == "std" else \
        np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 4.0]])
    rev, fwd = _both_modes(f, x)
    np.testing.assert_array_equal(rev[0, 1], 0.0)      # nothing flows back to row 1 (TF's rule)
    assert np.isnan(fwd[0, 1]).all()                   # every tangent through sqrt(0), as jacfwd
    for got in (rev, fwd):
        assert np.isnan(got[0, 0]).all(), (name, got[0])
        want = _central_differences(lambda a: (np.std(a, axis=1) if name == "std"
                                               else np.linalg.norm(a, axis=1))[1], x)
        np.testing.assert_allclose(got[1, 1], want[1], rtol=1e-6)
        assert not np.isnan(got[1]).any()
    _, t = pj.jvp(f, x, np.ones_like(x) * [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    assert np.isnan(t.numpy()[0])


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
def test_var_at_zero_variance_has_the_same_zero_derivative_in_both_modes():
    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    rev, fwd = _both_modes(lambda t: pj.var(t, axis=1), x)
    np.testing.assert_allclose(rev, fwd, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(rev[0], np.zeros((2, 3)))
    np.testing.assert_array_equal(fwd[0], np.zeros((2, 3)))
    want = _central_differences(lambda a: np.var(a, axis=1)[1], x)
    np.testing.assert_allclose(rev[1, 1], want[1], rtol=1e-6)


# -- 7. scatter_add adds into +0, as np.add.at ----------------------------------------------
SPECIAL = np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, -0.0, 1.5, -2.5])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("indices", [[0, 1, 2, 3, 4, 5, 6, 7, 8], [8, 6, 4, 2, 0, 1, 3, 5, 7],
                                     [0, 0, 1, 2, 2, 3, 3, 9, 9]])  # (two NaNs' sum: either NaN)
def test_scatter_add_has_np_add_at_bits_at_signed_zeros_nan_and_inf(dtype, indices):
    g = SPECIAL.astype(dtype)
    if dtype == np.complex64:
        g.imag = np.roll(SPECIAL, 2)
    rows = np.stack([g, np.roll(g, 2)], axis=1)                 # (9, 2): axis 0 scattered
    for values, axis in ((g, 0), (rows, 0), (rows.T.copy(), 1)):
        want = np.zeros(values.shape[:axis] + (10,) + values.shape[axis + 1:], dtype)
        np.add.at(want, (slice(None),) * axis + (np.array(indices),), values)
        got = pj.scatter_add(pj.constant(values), np.array(indices), axis, 10).numpy()
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (axis, got, want)


def test_gradient_of_a_gather_of_negative_zeros_is_positive_zero_as_np_add_at():
    x = pj.constant(np.array([1.0, 2.0, 3.0]))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.gather(x, [2, 0])
    g = tape.gradient(y, x, output_gradients=pj.constant(np.array([-0.0, -0.0])))
    assert not np.signbit(g.numpy()).any()


# -- 11. a tensor's array can't be made writable -----------------------------------------------
def _refuses_write(array):
    assert not array.flags.writeable
    with pytest.raises(ValueError):
        array.setflags(write=True)
    with pytest.raises(ValueError):
        array.flags.writeable = True


def _sources_of_tensors():
    x = pj.constant(RNG.normal(size=(4, 3)))
    w = pj.Variable(RNG.normal(size=(3, 2)))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = pj.tanh(x @ w)
    yield "constant", x
    yield "constant of a list", pj.constant([1.0, 2.0])
    yield "op result", y
    yield "view result", x[1:, ::2]
    yield "variable", w
    yield "jacobian", tape.jacobian(y, x)
    yield "batch_jacobian", tape.batch_jacobian(y, x, experimental_use_pfor=False)
    yield "pfor", pj.pfor(lambda i: pj.exp(x[i]), 4)
    yield "functional", pj.jacobian(lambda a: a * a, x, strategy="forward-mode", vectorize=True)
    yield "compiled", pj.function(lambda a: pj.sin(a) * 2.0)(x)


def test_arrays_of_tensors_of_every_origin_refuse_to_become_writable():
    for name, t in _sources_of_tensors():
        before = np.array(t)
        for array in (np.asarray(t), t.numpy(), np.asarray(t, dtype=t.dtype)):
            _refuses_write(array)
        np.testing.assert_array_equal(np.asarray(t), before, err_msg=name)
        assert np.array(t).flags.writeable                      # a copy is writable


def test_variables_stay_assignable_and_their_old_arrays_keep_their_values():
    v = pj.Variable(np.array([1.0, 2.0]))
    old = np.asarray(v)
    v.assign([3.0, 4.0])
    v.assign_add(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(old, [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(v), [4.0, 5.0])
    _refuses_write(np.asarray(v))
    _refuses_write(old)


def test_results_from_a_buffer_pool_refuse_to_become_writable():
    """Results a BufferPool keeps for reuse are read-only views like every tensor's."""
    from pforjac import memory
    x = pj.constant(RNG.normal(size=(64, 64)))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = pj.sin(x)
    with memory.BufferPool(min_bytes=1 << 16):
        results = [tape.jacobian(y, x), tape.batch_jacobian(y, x),
                   tape.batch_jacobian(y, x, experimental_use_pfor=False)]
    for t in results:
        _refuses_write(np.asarray(t))


def test_handing_out_a_tensors_array_costs_no_copy():
    t = pj.constant(RNG.normal(size=(512, 512)))
    assert np.shares_memory(np.asarray(t), t.numpy())
    per_call = min(timeit.repeat(lambda: np.asarray(t), number=2000, repeat=5)) / 2000
    assert per_call < 5e-6                                       # a copy of 2 MiB: ~100 us


# -- 13. every Jacobian path returns a C-ordered array ----------------------------------------
def _c_ordered(t):
    a = np.asarray(t)
    return a.flags.c_contiguous


def _layout_case():
    x = pj.constant(RNG.normal(size=(3, 4)))
    w = pj.constant(RNG.normal(size=(4, 4)))
    return x, lambda a: pj.transpose(pj.tanh(a @ w)) * pj.broadcast_to(a[:, :1], (3, 4)).T


@pytest.mark.parametrize("use_pfor", [True, False])
@pytest.mark.parametrize("parallel_iterations", [None, 2])
def test_tape_jacobians_are_c_ordered_on_every_path(use_pfor, parallel_iterations):
    x, f = _layout_case()
    w = pj.constant(RNG.normal(size=(4, 4)))
    for _ in range(3):                         # repeated calls run the loop cache's code
        with pj.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = f(x)
            yb = pj.tanh(x @ w) * pj.broadcast_to(x[:, :1], (3, 4))
        kw = dict(experimental_use_pfor=use_pfor, parallel_iterations=parallel_iterations)
        full, batch = tape.jacobian(y, x, **kw), tape.batch_jacobian(yb, x, **kw)
        assert _c_ordered(full) and _c_ordered(batch)
    np.testing.assert_allclose(full.numpy(), tape.jacobian(y, x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.einsum("abad->abd", tape.jacobian(yb, x).numpy()), batch.numpy(),
                               rtol=1e-12)
    grads = []
    for kws in (kw, {}):                  # recorded by an outer tape: still C, and its
        with pj.GradientTape(persistent=True) as outer:          # derivative is the same
            outer.watch(x)
            with pj.GradientTape(persistent=True) as tape:
                tape.watch(x)
                yb = pj.tanh(x @ w) * x
            batch = tape.batch_jacobian(yb, x, **kws)
            total = pj.sum(batch * batch)
        assert _c_ordered(batch)
        grads.append(outer.gradient(total, x).numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


@pytest.mark.parametrize("strategy, vectorize", [("reverse-mode", True), ("reverse-mode", False),
                                                 ("forward-mode", True)])
def test_functional_jacobians_and_hessians_are_c_ordered(strategy, vectorize):
    x, f = _layout_case()
    jac = pj.jacobian(f, x, strategy=strategy, vectorize=vectorize)
    chunked = pj.jacobian(f, x, strategy=strategy, vectorize=True, parallel_iterations=5)
    hess = pj.hessian(lambda a: pj.sum(f(a) ** 2), x, vectorize=vectorize,
                      outer_jacobian_strategy=strategy)
    assert _c_ordered(jac) and _c_ordered(chunked) and _c_ordered(hess)
    np.testing.assert_allclose(jac.numpy(), pj.jacobian(f, x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(hess.numpy(), pj.hessian(lambda a: pj.sum(f(a) ** 2), x).numpy(),
                               rtol=1e-10)


def test_pfor_and_vectorized_map_results_are_c_ordered():
    x = pj.constant(RNG.normal(size=(3, 4)))
    body = lambda i: pj.transpose(pj.reshape(x[i], (2, 2))) * 2.0         # noqa: E731
    for k in (None, 2):
        assert _c_ordered(pj.pfor(body, 3, parallel_iterations=k))
    assert _c_ordered(pj.vectorized_map(lambda r: pj.transpose(pj.reshape(r, (2, 2))), x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _c_ordered(pj.pfor(body, 3))
