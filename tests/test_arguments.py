"""What users pass in: numpy arrays are taken by value, op parameters by exact value, and a
refused argument says which it is and changes nothing."""
import numpy as np
import pytest

import pforjac as pj
from pforjac import extend
from pforjac.memory import JacobianMemoryError, working_memory_advice
from pforjac.testing import isolated_registries


# -- numpy arrays are copied when an op takes them (as constant() copies them) ----------
def test_a_numpy_operand_changed_after_the_forward_pass_does_not_change_the_gradient():
    w = np.array([1., 2., 3.], np.float32)
    x = pj.constant([1., 1., 1.])
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = pj.sin(x * w)
    w[:] = 100.                        # a buffer refilled for the next batch
    want = np.cos([1., 2., 3.]) * [1., 2., 3.]
    np.testing.assert_allclose(g.gradient(y, x).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(np.diag(g.jacobian(y, x).numpy()), want, rtol=1e-6)


def test_an_op_on_a_numpy_array_is_not_a_view_of_it():
    a = np.ones(3)
    t = pj.reshape(a, (3,))
    a[:] = 7.
    np.testing.assert_array_equal(t.numpy(), np.ones(3))


def test_a_compiled_function_takes_a_closure_array_at_trace_time():
    # it used to fold the ops of W alone at trace time and read W itself at every call
    w = np.array([[1., 2.], [3., 4.]], np.float32)
    f = pj.function(lambda x: pj.tanh(x @ w) @ (w * 0.5))
    x = np.array([[0.1, 0.2]], np.float32)
    first = np.asarray(f(x))
    w -= 0.5
    np.testing.assert_array_equal(np.asarray(f(x)), first)   # as jax.jit and tf.function capture


# -- op parameters are told apart by value -----------------------------------------------
@pytest.fixture
def scale_by_param():
    with isolated_registries():
        op = extend.defop("scale_by_param", lambda x, w: x * w, extend.same_shape,
                          vjp=lambda g, ans, x, w: g * pj.constant(w),
                          jvp=lambda t, ans, x, w: t * pj.constant(w))
        extend.register_converter(op)(extend.elementwise_converter(op))
        yield op


def test_the_loop_cache_tells_apart_array_parameters_numpy_prints_alike(scale_by_param):
    def jac(w):
        x = pj.constant(np.ones(2000))
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.sum(scale_by_param(x, w=w))
        return g.jacobian(y, x).numpy()
    w1, w2 = np.ones(2000), np.ones(2000)
    w2[1000] = 5.0                     # repr elides the middle: the same text as w1
    assert repr(w1) == repr(w2)
    for w in (w1, w1, w2):             # the second call compiles, the third must not reuse it
        got = jac(w)
    np.testing.assert_array_equal(got, w2)


def test_common_subexpressions_keep_ops_whose_parameters_differ_past_8_digits(scale_by_param):
    a, b = np.array([0.1234567891]), np.array([0.1234567899])
    f = pj.function(lambda x: scale_by_param(x, w=a) - scale_by_param(x, w=b))
    np.testing.assert_array_equal(np.asarray(f(np.ones(1))), a - b)


# -- complex cotangents and tangents for real values ------------------------------------
def test_a_complex_cotangent_for_a_real_target_is_refused_and_the_tape_stays_usable():
    x = pj.constant([1., 2., 3.])
    with pj.GradientTape() as g:
        g.watch(x)
        y = x * x
    with pytest.raises(TypeError, match="output_gradients is complex128.*target.*float32"):
        g.gradient(y, x, output_gradients=np.ones(3) * 1j)
    np.testing.assert_array_equal(g.gradient(y, x).numpy(), [2., 4., 6.])


@pytest.mark.parametrize("fn, pairs", [(pj.jvp, "input"), (pj.vjp, "output")])
def test_a_complex_v_for_a_real_value_is_refused(fn, pairs):
    with pytest.raises(TypeError, match=f"{fn.__name__}: v is complex128.*the {pairs}"):
        fn(lambda x: x * x, np.array([1., 2.]), np.array([1j, 0]))
    _, t = fn(lambda x: x * x, np.array([1., 2.], complex), np.array([1j, 0]))
    np.testing.assert_array_equal(np.asarray(t), [2j, 0])


# -- Variable.assign: a value that does not fit is refused, nothing assigned -------------
@pytest.mark.parametrize("dtype, value", [(np.int32, [2 ** 32 + 5, 2 ** 31]),
                                          (np.float32, [1e300, 2.])])
def test_assign_refuses_a_value_that_would_wrap_or_overflow(dtype, value):
    v = pj.Variable(np.array([1, 2], dtype), name="steps")
    with pytest.raises(ValueError, match="'steps' holds .*does not fit"):
        v.assign(np.array(value))
    with pytest.raises(ValueError, match="Variable.assign_add: .*does not fit"):
        v.assign_add(np.array(value))
    np.testing.assert_array_equal(v.numpy(), [1, 2])
    v.assign([3, 4])                   # Python ints and floats that fit: as before
    v.assign_add(1)
    np.testing.assert_array_equal(v.numpy(), [4, 5])
    assert v.dtype == dtype


def test_assign_keeps_infinities_and_nans_it_is_given():
    v = pj.Variable(np.zeros(2, np.float32))
    v.assign(np.array([np.inf, np.nan]))
    assert np.isinf(v.numpy()[0]) and np.isnan(v.numpy()[1])


def test_assign_add_errors_name_assign_add_and_the_shapes():
    v = pj.Variable(np.zeros(2, np.int32), name="n")
    with pytest.raises(ValueError, match=r"assign_add: a delta of shape \(3,\) .*\(2,\) of 'n'"):
        v.assign_add(np.ones(3, np.int32))
    with pytest.raises(TypeError, match="Variable.assign_add: 'n' holds int32"):
        v.assign_add(0.5)
    with pytest.raises(ValueError, match="Variable.assign: cannot read list"):
        v.assign([[1, 2], [3]])


@pytest.mark.parametrize("dtype", ["U3", object, "S2", "datetime64[s]"])
def test_cast_refuses_dtypes_that_are_not_numbers(dtype):
    with pytest.raises(TypeError, match="pforjac.cast: dtype .* is not a number type"):
        pj.cast(pj.constant([1., 2.]), dtype)


# -- tapes -------------------------------------------------------------------------------
def test_watch_checks_every_tensor_before_watching_any():
    x = pj.constant([1., 2.])
    with pj.GradientTape() as g:
        with pytest.raises(TypeError, match="wrap arrays with pforjac.constant"):
            g.watch([x, np.array([3., 4.])])
        y = x * x
    with pytest.raises(ValueError, match="never watched"):
        g.gradient(y, x)


def test_a_python_number_as_target_has_no_gradient_as_in_jacobian():
    x = pj.constant([1., 2.])
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
    assert g.gradient(3.0, x) is None and g.jacobian(3.0, x) is None
    np.testing.assert_array_equal(g.gradient([y, 2.0], x).numpy(), [2., 4.])
    with pytest.raises(TypeError, match="GradientTape.jacobian: target: cannot convert NoneType"):
        g.jacobian(None, x)


@pytest.mark.parametrize("create_graph", [False, True])
def test_stop_recording_inside_a_function_the_functional_api_differentiates(create_graph):
    x = pj.constant([1., 2.])
    with pj.GradientTape() as outer:
        outer.watch(x)

        def f(a):
            with outer.stop_recording():       # bookkeeping the outer tape must not see
                scale = a * 2
            return scale * a
        jac = pj.jacobian(f, x, create_graph=create_graph)
        _, back = pj.vjp(f, x, pj.constant([1., 1.]), create_graph=create_graph)
        z = pj.sum(x * x)                      # recording again afterwards
    np.testing.assert_array_equal(jac.numpy(), np.diag([4., 8.]))
    np.testing.assert_array_equal(back.numpy(), [4., 8.])
    np.testing.assert_array_equal(outer.gradient(z, x).numpy(), [2., 4.])


# -- memory --------------------------------------------------------------------------------
def test_a_pfor_result_that_cannot_fit_is_refused_before_anything_runs():
    calls = []
    big = pj.constant(np.ones((1000, 1000), np.float32))

    def body(i):
        calls.append(i)
        return big * pj.cast(i, "float32")
    for chunk in (None, 10):
        with pytest.raises(JacobianMemoryError, match=r"pfor: the stacked result of shape "
                                                      r"\(10000000, 1000, 1000\)"):
            pj.pfor(body, 10 ** 7, parallel_iterations=chunk)
    assert len(calls) == 2             # traced once per call, never run


def test_the_working_memory_advice_says_what_parallel_iterations_was():
    def fail(chunk):
        with working_memory_advice("pfor", chunk):
            raise MemoryError("Unable to allocate 9 GiB")
    with pytest.raises(JacobianMemoryError, match="all rows at once.*parallel_iterations=k"):
        fail(None)
    with pytest.raises(JacobianMemoryError, match=r"10 rows at a time \(parallel_iterations=10\)"
                                                  r".*a smaller parallel_iterations"):
        fail(10)


# -- axes, sizes and options: named when wrong, never wrapped or truncated ------------------
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


def test_an_out_of_range_axis_raises_numpys_axis_error():
    x = pj.constant(np.ones((2, 3)))
    for bad in (lambda: pj.sum(x, axis=2), lambda: pj.concat([x, x], axis=-3),
                lambda: pj.softmax(x, axis=5)):
        with pytest.raises(np.exceptions.AxisError, match="out of range"):  # ValueError, IndexError
            bad()


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


def test_option_errors_name_the_function_and_one_hot_refuses_float_indices():
    with pytest.raises(pj.functional.UnsupportedOptionsError, match="hessian: outer_jacobian_strategy"):
        pj.hessian(lambda a: pj.sum(a ** 3), pj.constant([1.0]), outer_jacobian_strategy="forward-mode",
                   vectorize=False)
    with pytest.raises(TypeError, match="one_hot indices must be integers, got float32"):
        pj.one_hot(pj.constant([0.5, 1.7]), 3)
