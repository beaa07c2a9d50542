"""Public-API behaviour an exploratory hunt found wrong (session 4), kept as tests: each
compares with numpy's or TensorFlow's semantics, eagerly, under pfor and compiled."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import pforjac as pj


# -- logsumexp at non-finite values --------------------------------------------------------
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
    compiled = pj.function(lambda t: pj.logsumexp(t, axis=1))(x).numpy()
    for got in (eager, mapped, compiled):
        np.testing.assert_allclose(got, [want, np.log(np.exp(0.5) + np.exp(-0.5))], rtol=1e-15)


# -- tapes inside traces, and traces around compiled functions ------------------------------
W = np.array([1.0, 2.0, 3.0])


def _gradient_of_watched_constant(x):
    w = pj.constant(W)
    with pj.GradientTape() as g:
        g.watch(w)
        y = pj.sum(w * w) * x            # w * w alone has no symbolic input
    return g.gradient(y, w)


def _jacobian_of_watched_constant(x):
    w = pj.constant(W)
    with pj.GradientTape() as g:
        g.watch(w)
        y = pj.sin(w) * x
    return g.jacobian(y, w)


@pytest.mark.parametrize("f, want", [
    (_gradient_of_watched_constant, lambda x: 2.0 * W * x),
    (_jacobian_of_watched_constant, lambda x: np.diag(np.cos(W)) * x)])
def test_a_tape_in_a_trace_records_ops_on_the_constants_it_watches(f, want):
    """Such ops ran eagerly, below the tape's trace level: the compiled gradient was None."""
    np.testing.assert_allclose(f(pj.constant(2.0)).numpy(), want(2.0), rtol=1e-15)
    np.testing.assert_allclose(pj.function(f)(np.array(2.0)).numpy(), want(2.0), rtol=1e-15)
    rows = pj.pfor(lambda i: f(pj.cast(i, np.float64) + 1.0), 3).numpy()
    np.testing.assert_allclose(rows, [want(k + 1.0) for k in range(3)], rtol=1e-15)


def test_an_outer_tape_differentiates_through_a_compiled_function():
    square = pj.function(lambda a: a * pj.sin(a))
    x = pj.constant(np.array([0.5, 2.0]))
    with pj.GradientTape() as g:
        g.watch(x)
        y = square(x)
    np.testing.assert_allclose(g.gradient(y, x).numpy(), np.sin([0.5, 2.0]) + [0.5, 2.0] * np.cos([0.5, 2.0]))
    assert square.trace_count == 0                    # run as Python, for the tape to see
    outer = pj.function(lambda a: square(a) + 1.0)    # nested: inlined into the outer trace
    np.testing.assert_allclose(outer(np.array([0.5])).numpy(), 0.5 * np.sin(0.5) + 1.0)
    assert outer.trace_count == 1 and square.trace_count == 0


# -- dtypes, axes, split ---------------------------------------------------------------------
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
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("call, message", [
    (lambda x: pj.transpose(x, (2, 1)), "transpose: axis 2 is out of range"),
    (lambda x: pj.transpose(x, (0, 0)), "not a permutation"),
    (lambda x: pj.expand_dims(x, 5), "expand_dims: axis 5"),
    (lambda x: pj.moveaxis(x, 5, 0), r"moveaxis \(source\): axis 5"),
    (lambda x: pj.swapaxes(x, 0, -3), "swapaxes: axis -3"),
    (lambda x: pj.split(x, [2, 1], axis=1), "must not decrease")])
def test_out_of_range_axes_raise_instead_of_wrapping(call, message):
    with pytest.raises(ValueError, match=message):
        call(pj.constant(np.arange(6.0).reshape(2, 3)))


def test_split_at_negative_and_large_indices_as_numpy_on_every_path():
    x = np.arange(6.0)
    for indices in ([-2], [1, -1], [10], [-10, 3]):
        want = np.split(x, indices)
        f = lambda t, indices=indices: pj.split(t, indices)   # noqa: E731
        for got in (f(pj.constant(x)), pj.function(f)(x)):
            assert [p.shape for p in got] == [p.shape for p in want]
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a.numpy(), b)


# -- tapes stay usable after a refused call; Variables --------------------------------------
@pytest.mark.parametrize("what", ["jacobian", "batch_jacobian"])
def test_a_refused_jacobian_call_leaves_a_non_persistent_tape_usable(what):
    x = pj.constant(np.array([[1.0, 2.0]]))
    with pj.GradientTape() as g:
        g.watch(x)
        y = pj.sin(x)
    with pytest.raises(ValueError, match="parallel_iterations must be a positive int"):
        getattr(g, what)(y, x, parallel_iterations=0)
    np.testing.assert_allclose(getattr(g, what)(y, x).numpy().reshape(2, 2), np.diag(np.cos([1.0, 2.0])))


def test_constant_of_a_variable_is_its_value_now_and_read_when_a_compiled_function_runs():
    v = pj.Variable(np.array([1.0, 2.0]))
    snapshot = pj.constant(v)
    scaled = pj.function(lambda x: x * pj.constant(v))
    np.testing.assert_array_equal(scaled(np.ones(2)).numpy(), [1.0, 2.0])
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(snapshot.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(scaled(np.ones(2)).numpy(), [5.0, 6.0])
    assert scaled.trace_count == 1


def test_assigning_a_variable_while_tracing_raises_and_leaves_no_state():
    v = pj.Variable(1.0)
    f = pj.function(lambda x: (v.assign_add(1.0), x * v))
    with pytest.raises(RuntimeError, match="would run once, while tracing"):
        f(np.array(2.0))
    with pytest.raises(RuntimeError, match="would run once, while tracing"):
        pj.pfor(lambda i: v.assign(2.0) and i, 3)
    state = pj.core.current_state()
    assert v.numpy() == 1.0 and not state.traces and not state.tapes and state.lifting is None


# -- second hunt: indices, targets, messages ------------------------------------------------
@pytest.mark.parametrize("bad", [4, -5])
def test_an_out_of_range_index_raises_under_pfor_as_eagerly(bad):
    """Table and index both per iteration: pfor offsets the index into one flat table, where
    an index out of range read (or wrote) another iteration's block."""
    x = pj.constant(np.arange(12.0).reshape(3, 4))
    idx = pj.constant(np.array([[bad], [1], [2]], np.int32))
    ones = pj.constant(np.ones((3, 1)))
    with pytest.raises(IndexError):
        pj.gather(x[0], idx[0], axis=0)
    for body, args in ((lambda e: pj.gather(e[0], e[1], axis=0), (x, idx)),
                       (lambda e: pj.scatter_add(e[0], e[1], axis=0, size=4), (ones, idx))):
        for _ in range(3):                           # eager, then cached compiled code
            with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
                pj.vectorized_map(body, args)
    ok = pj.constant(np.array([[3], [-1], [-4]], np.int32))
    got = pj.vectorized_map(lambda e: pj.gather(e[0], e[1], axis=0), (x, ok))
    np.testing.assert_array_equal(got.numpy().ravel(), [3.0, 7.0, 8.0])


def test_a_jacobian_of_a_list_of_targets_is_refused_not_none():
    x = pj.constant([1.0, 2.0])
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
    with pytest.raises(TypeError, match=r"GradientTape.jacobian: target must be one Tensor, got a list of 2"):
        g.jacobian([y, y], x)
    with pytest.raises(TypeError, match="GradientTape.batch_jacobian: target must be one Tensor"):
        g.batch_jacobian((y,), x)
    with pytest.raises(ValueError, match=r"GradientTape.jacobian: a source .* never watched"):
        g.jacobian(y, pj.constant([1.0]))
    np.testing.assert_array_equal(g.jacobian(y, x).numpy(), np.diag([2.0, 4.0]))


def test_option_errors_name_the_function_and_one_hot_refuses_float_indices():
    with pytest.raises(pj.functional.UnsupportedOptionsError, match="hessian: outer_jacobian_strategy"):
        pj.hessian(lambda a: pj.sum(a ** 3), pj.constant([1.0]), outer_jacobian_strategy="forward-mode")
    with pytest.raises(TypeError, match="one_hot indices must be integers, got float32"):
        pj.one_hot(pj.constant([0.5, 1.7]), 3)


# -- third hunt: compiled code and caches ---------------------------------------------------
@pytest.mark.parametrize("op", ["multiply", "divide"])
def test_a_variable_in_a_one_hot_product_is_guarded_when_the_compiled_code_runs(op):
    """0 * inf is NaN: after the Variable takes 0/inf/NaN the compact one-hot path must give
    way to the dense one, as eagerly (it was checked once, at trace time)."""
    v = pj.Variable(np.array([1.0, 2.0, 3.0], np.float32))

    def body(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = x * v if op == "multiply" else x / v
        return g.jacobian(y, x)
    compiled, x = pj.function(body), np.ones(3, np.float32)
    compiled(x)
    v.assign(np.array([0.0, 2.0, np.inf], np.float32))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pj.compiled.loopcache.caching(False):
            want = body(pj.constant(x)).numpy()
        got = compiled(x).numpy()
    np.testing.assert_array_equal(got, want)
    assert np.isnan(want).any()


def test_signature_values_distinguish_signed_zeros_and_share_one_nan():
    f = pj.function(lambda x, s: x / s)
    x = np.ones(2, np.float32)
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert f(x, 0.0).numpy()[0] == np.inf and f(x, -0.0).numpy()[0] == -np.inf
        for _ in range(5):
            f(x, float("nan"))
    assert f.trace_count == 3


def test_results_never_alias_what_the_caller_owns():
    x = np.arange(3.0, dtype=np.float32)
    same = pj.function(lambda t: t * pj.ones_like(t))             # simplifies to t itself
    got = same(x).numpy()
    x[0] = 100.0
    np.testing.assert_array_equal(got, [0.0, 1.0, 2.0])
    c = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    xt = pj.constant(np.ones((2, 3), np.float32))

    def jac():                                                   # d sum(x * c) / dx = c
        with pj.GradientTape() as g:
            g.watch(xt)
            y = pj.sum(xt * pj.as_tensor(c))
        return g.jacobian(y, xt).numpy()
    results = [jac() for _ in range(3)]                          # the 2nd on: loop cache
    c[0, 0] = 100.0
    for r in results:
        assert r[0, 0] == 1.0 and not np.shares_memory(r, c)


def test_generated_code_keeps_byte_order_and_any_function_name():
    big_endian = pj.function(lambda x: pj.cast(x, np.dtype(">f8")))
    assert big_endian(np.ones(3, np.float32)).dtype == np.dtype(">f8")

    def slice(x):                                                # noqa: A001 (the point)
        return x[1:] * 2.0

    def np_(x):
        return pj.exp(x)
    np_.__name__ = "np"
    np.testing.assert_array_equal(pj.function(slice)(np.ones(3)).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(pj.function(np_)(np.zeros(2)).numpy(), [1.0, 1.0])


def test_sigmoid_of_integers_is_numpys_float_and_odd_numpy_errors_keep_their_message():
    got = pj.sigmoid(pj.constant(np.arange(3, dtype=np.int32)))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), 1 / (1 + np.exp(-np.arange(3.0))))
    assert pj.function(pj.sigmoid)(np.arange(3, dtype=np.int8)).dtype == np.exp(np.int8(1)).dtype

    class Picky(TypeError):                                      # like numpy's casting errors
        def __init__(self, a, b):
            super().__init__(f"{a} {b}")
    from pforjac.testing import isolated_registries
    with isolated_registries():
        boom = pj.extend.defop("api_picky", lambda x: (_ for _ in ()).throw(Picky("no", "way")),
                               pj.extend.same_shape)
        with pytest.raises(TypeError, match=r"pforjac.api_picky: cannot apply .*no way"):
            boom(pj.constant([1.0]))


# -- fourth hunt: tapes in traces, Variables ------------------------------------------------
def test_a_tape_in_a_pfor_body_watches_the_variables_it_reads_as_eagerly():
    v = pj.Variable(np.array([1.0, 2.0, 3.0]))

    def body(i):
        with pj.GradientTape() as g:                  # watch_accessed_variables: no watch()
            y = pj.sum(v * v * v)
        return g.gradient(y, v)
    want = 3.0 * v.numpy() ** 2
    np.testing.assert_array_equal(body(pj.constant(0)).numpy(), want)
    np.testing.assert_array_equal(pj.pfor(body, 2).numpy(), [want, want])
    np.testing.assert_array_equal(pj.function(body)(np.int32(0)).numpy(), want)


def test_a_tensors_array_is_read_only():
    """Writing into `t.numpy()` used to change the tensor and a gradient its tape had
    recorded, and `v.numpy()` a Variable behind assign's checks (a hunt, 2026-11-30)."""
    x = pj.constant([1.0, 2.0])
    with pj.GradientTape() as g:
        g.watch(x)
        y = x * x
    v = pj.Variable([1.0, 2.0])
    for array in (x.numpy(), np.asarray(x), y.numpy(), v.numpy(), np.asarray(v),
                  pj.function(lambda t: t * 2)(x).numpy(), g.gradient(y, x).numpy()):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 10.0
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    copy = np.array(x)                                   # a copy to write into, as numpy's
    copy[0] = 10.0
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    v.assign([3.0, 4.0])                                 # assign still works
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])
    mine = np.ones(3)                                    # the caller's arrays stay theirs:
    t = pj.Tensor(mine)                                  # copied, so still writable (and
    mine[0] = 5.0                                        # the tensor keeps its value)
    np.testing.assert_array_equal(t.numpy(), [1.0, 1.0, 1.0])


def test_an_op_that_changes_nothing_on_a_variable_keeps_its_value():
    """reshape to its own shape, .T of a vector, v[:], a one-tensor concat, a same-dtype
    cast... returned the Variable itself, so the "result" followed later assigns (a hunt,
    2026-11-30). TensorFlow's reshape of a Variable is a new tensor."""
    v = pj.Variable([1.0, 2.0])
    made = [pj.reshape(v, (2,)), v.T, v[:], pj.concat([v], 0), pj.squeeze(v), pj.cast(v, "float32"),
            pj.moveaxis(v, 0, 0), pj.broadcast_to(v, (2,)), v.flatten(), v.astype("float32")]
    v.assign([5.0, 6.0])
    for y in made:
        assert not isinstance(y, pj.Variable)
        np.testing.assert_array_equal(y.numpy(), [1.0, 2.0])
    with pj.GradientTape() as g:                         # the tape still sees the read
        y = pj.reshape(v, (2,))
    np.testing.assert_array_equal(g.gradient(y, v).numpy(), [1.0, 1.0])
    x = pj.constant([1.0, 2.0])
    assert pj.reshape(x, (2,)) is x                      # a plain tensor is returned as is


def test_an_out_of_range_axis_raises_numpys_axis_error():
    x = pj.constant(np.ones((2, 3)))
    for bad in (lambda: pj.sum(x, axis=2), lambda: pj.concat([x, x], axis=-3),
                lambda: pj.softmax(x, axis=5)):
        with pytest.raises(np.exceptions.AxisError, match="out of range"):  # ValueError, IndexError
            bad()


def test_the_callers_arrays_are_never_frozen_or_shared():
    """A hunt after the read-only change (2026-11-30): an object whose __array__ hands out
    its own array, and an array a contributor's forward returns as it got it (a param),
    were made read-only (and shared)."""
    from pforjac import extend

    class Wrapped:                                       # pandas/xarray style
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a
    for make in (pj.constant, pj.Tensor, pj.as_tensor, lambda w: pj.add(w, 1.0)):
        a = np.ones(3)
        t = make(Wrapped(a))
        assert a.flags.writeable and not np.shares_memory(a, t.numpy())
    from pforjac.testing import isolated_registries
    table = np.arange(4.0)
    with isolated_registries():                          # the op leaves no trace behind
        lut = extend.defop("test_lut_param", lambda i, table: table,
                           lambda i, table: ((4,), np.float64))
        got = lut(pj.constant(0), table=table)
    assert table.flags.writeable and not got.numpy().flags.writeable


def test_python_ints_too_large_for_int32_become_int64():
    """As TensorFlow: `constant(2**40)` wrapped around to 0 (a hunt, 2026-11-30)."""
    assert pj.constant(3).dtype == np.int32
    for value, want in ((2 ** 40, 2 ** 40), (2 ** 31, 2 ** 31), ([3_000_000_000, 1], [3_000_000_000, 1]),
                        (-(2 ** 31) - 1, -(2 ** 31) - 1)):
        for t in (pj.constant(value), pj.Variable(value)):
            assert t.dtype == np.int64
            np.testing.assert_array_equal(t.numpy(), want)
    assert pj.constant(-(2 ** 31)).dtype == np.int32


def test_constant_of_a_variable_shares_no_memory_and_assign_add_refuses_while_tracing():
    v = pj.Variable(np.array([1.0, 2.0]))
    assert not np.shares_memory(pj.constant(v).numpy(), v.numpy())
    grow = pj.function(lambda x: (v.assign_add(x), x)[1])
    with pytest.raises(RuntimeError, match="would run once, while tracing"):
        grow(np.ones(2))
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


# -- a zero cotangent through an infinite derivative is zero (TensorFlow's sqrt/reciprocal) ------
@pytest.mark.parametrize("use_pfor", [True, False])
@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")   # numpy: sqrt(-1), 1/0
def test_safe_sqrt_and_sqrt_at_zero_have_zero_gradients_where_nothing_flows(use_pfor):
    x = pj.constant([-1.0, 0.0, 4.0])
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        safe = pj.where(x > 0, pj.sqrt(x), pj.zeros_like(x))
        root = pj.sqrt(x[1:])
    np.testing.assert_array_equal(tape.gradient(safe, x).numpy(), [0.0, 0.0, 0.25])
    jac = tape.jacobian(root, x, experimental_use_pfor=use_pfor).numpy()
    np.testing.assert_array_equal(jac, [[0.0, np.inf, 0.0], [0.0, 0.0, 0.25]])


@pytest.mark.parametrize("use_pfor", [True, False])
@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")   # numpy: sqrt(-1), 1/0
def test_reciprocal_of_a_tiny_value_has_exact_zeros_off_the_diagonal(use_pfor):
    x = pj.constant(np.array([1e-300, 1.0, 2.0]))
    xb = pj.constant(np.array([[1e-300, 1.0], [1.0, 2.0]]))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch([x, xb])
        y, yb = pj.reciprocal(x), pj.reciprocal(xb)
    jac = tape.jacobian(y, x, experimental_use_pfor=use_pfor).numpy()
    np.testing.assert_array_equal(jac[1], [0.0, -1.0, 0.0])
    assert jac[0, 0] == -np.inf and not np.isnan(jac).any()
    bjac = tape.batch_jacobian(yb, xb, experimental_use_pfor=use_pfor).numpy()
    np.testing.assert_array_equal(bjac[0, 1], [0.0, -1.0])
    assert bjac[0, 0, 0] == -np.inf and not np.isnan(bjac).any()


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")   # numpy: sqrt(-1), 1/0
def test_forward_mode_sqrt_at_zero_is_nan_as_in_jax():
    """sqrt is not differentiable at 0: any tangent there gives NaN or inf, as JAX's jvp does,
    so std or a norm at zero is NaN in forward mode as in reverse mode (a zero tangent gave 0,
    tests/test_reliability_ops.py); a zero tangent elsewhere stays 0."""
    _, tangent = pj.jvp(pj.sqrt, np.array([0.0, 4.0]), np.array([0.0, 1.0]))
    np.testing.assert_array_equal(tangent.numpy(), [np.nan, 0.25])
    _, tangent = pj.jvp(pj.sqrt, np.array([1.0, 4.0]), np.array([0.0, 1.0]))
    np.testing.assert_array_equal(tangent.numpy(), [0.0, 0.25])


def test_multiply_no_nan_is_tensorflows():
    x = pj.constant([np.inf, np.nan, 2.0, -3.0])
    y = pj.constant([0.0, 0.0, 3.0, -0.0])
    np.testing.assert_array_equal(pj.multiply_no_nan(x, y).numpy(), [0.0, 0.0, 6.0, 0.0])
    pj.testing.check_grads(pj.multiply_no_nan, [np.array([1.5, -2.0]), np.array([0.5, 3.0])])


# -- integer arguments: named when wrong, never truncated ---------------------------------------
A23 = np.ones((2, 3), np.float32)


@pytest.mark.parametrize("call, message", [
    (lambda a: pj.sum(a, axis=1.0), "sum: axis must be an integer"),
    (lambda a: pj.sum(a, axis="x"), "sum: axis must be an integer"),
    (lambda a: pj.sum(a, axis=[None]), r"sum: axis\[0\] must be an integer"),
    (lambda a: pj.softmax(a, axis=0.5), "softmax: axis must be an integer"),
    (lambda a: pj.mean(a, axis=(0, 1.5)), r"mean: axis\[1\] must be an integer"),
    (lambda a: pj.zeros((2.5, 2)), r"zeros: shape\[0\] must be an integer"),
    (lambda a: pj.reshape(a, (3.7, 2)), r"reshape: shape\[0\] must be an integer"),
    (lambda a: pj.expand_dims(a, 1.9), "expand_dims: axis must be an integer"),
    (lambda a: pj.one_hot(pj.constant([0, 1]), 2.5), "one_hot: depth must be an integer"),
    (lambda a: pj.tile(a, (1, 2.0)), r"tile: reps\[1\] must be an integer"),
    (lambda a: pj.split(a, 1.5, axis=1), "split: sections must be an integer"),
    (lambda a: pj.pad(a, [(0, 0), (1.5, 1)]), "pad: pad_width must be integers"),
])
def test_non_integer_axes_and_sizes_are_refused_naming_the_op(call, message):
    with pytest.raises(TypeError, match=message):
        call(pj.constant(A23))


@pytest.mark.parametrize("call, message", [
    (lambda a: pj.sum(a, axis=5), "sum: axis 5 is out of range"),
    (lambda a: pj.concat([a, a], axis=2), "concat: axis 2 is out of range"),
    (lambda a: pj.gather(a, np.array([0]), axis=-3), "gather: axis -3 is out of range"),
    (lambda a: pj.one_hot(pj.constant([0, 1]), -1), "one_hot: depth must be >= 0"),
])
def test_out_of_range_axes_and_sizes_name_the_op(call, message):
    with pytest.raises(ValueError, match=message):
        call(pj.constant(A23))


def test_numpy_integers_are_accepted_as_axes_and_sizes():
    a = pj.constant(A23)
    assert pj.sum(a, axis=np.int64(1)).shape == (2,)
    assert pj.reshape(a, (np.int32(3), 2)).shape == (3, 2)
    assert pj.one_hot(pj.constant([0, 1]), np.int64(4)).shape == (2, 4)


# -- forward mode of max/min at infinite extremes; reductions over empty axes ----------------------
@pytest.mark.parametrize("x, expected", [([np.inf, 1.0, 2.0], [1.0, 0.0, 0.0]),
                                         ([np.inf, np.inf, 0.0], [0.5, 0.5, 0.0]),
                                         ([-np.inf, -np.inf, -np.inf], [1 / 3] * 3)])
def test_forward_mode_of_max_at_an_infinite_maximum_matches_reverse(x, expected):
    x = np.array(x)
    forward = pj.jacobian(pj.max, x, vectorize=True, strategy="forward-mode").numpy()
    reverse = pj.jacobian(pj.max, x).numpy()
    np.testing.assert_allclose(forward, expected, rtol=1e-15)
    np.testing.assert_array_equal(forward, reverse)
    np.testing.assert_array_equal(pj.jacobian(lambda a: pj.min(-a), x, vectorize=True,
                                              strategy="forward-mode").numpy(), -forward)


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")
def test_logsumexp_and_softmax_over_an_empty_axis_are_numpys():
    x = pj.zeros((0, 3), np.float64)
    np.testing.assert_array_equal(pj.logsumexp(x, axis=0).numpy(), [-np.inf] * 3)
    assert pj.softmax(x, axis=0).shape == (0, 3) and pj.log_softmax(x, axis=0).shape == (0, 3)
    assert pj.jacobian(lambda a: pj.softmax(a, axis=0), x.numpy()).shape == (0, 3, 0, 3)


def test_slice_bounds_from_the_loop_index_are_refused_with_the_way_out():
    x = pj.constant(np.arange(12.0).reshape(4, 3))
    for body in (lambda i: x[i:i + 2], lambda i: x[:, :i]):
        with pytest.raises(TypeError, match=r"slice bound that depends on a loop index.*gather"):
            pj.pfor(body, 2)
    np.testing.assert_array_equal(pj.pfor(lambda i: pj.gather(x, i + np.arange(2)), 2).numpy(),
                                  np.stack([x.numpy()[0:2], x.numpy()[1:3]]))
    np.testing.assert_array_equal(x[pj.constant(1):pj.constant(3)].numpy(), x.numpy()[1:3])
    with pytest.raises(TypeError, match="slice bounds must be integers"):
        x[1.5:]


def test_pfor_takes_a_concrete_integer_scalar_as_iters():
    # As TensorFlow's pfor takes tf.shape(x)[0]; a float or negative count is still refused.
    x = pj.constant(np.arange(6.0).reshape(3, 2))
    for iters in (pj.constant(3), np.array(3), np.int64(3)):
        np.testing.assert_array_equal(pj.pfor(lambda i: x[i] * 2.0, iters).numpy(), 2 * x.numpy())
    for bad in (pj.constant(2.0), pj.constant([3]), -1):
        with pytest.raises(ValueError, match="iters must be a non-negative int"):
            pj.pfor(lambda i: x[i], bad)


def test_star_import_gives_the_api_not_the_submodules():
    import types
    names: dict = {}
    exec("from pforjac import *", names)
    modules = {n for n, v in names.items() if isinstance(v, types.ModuleType)}
    assert modules == {"extend", "testing"}                  # the public contributor modules
    assert {"jacobian", "GradientTape", "function", "exp", "log_softmax", "Variable"} <= set(names)
    assert all(hasattr(pj, n) for n in pj.__all__) and len(set(pj.__all__)) == len(pj.__all__)


def test_numpy_ops_added_after_the_model_zoo_hunt_match_numpy():
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
