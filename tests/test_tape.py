"""GradientTape behaves as TensorFlow's: watching, structure, unconnected sources, reuse, errors."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj
from pforjac import core


def close(t, expected):
    np.testing.assert_allclose(np.asarray(t), expected, rtol=1e-6)


@pytest.fixture
def x():
    return pj.constant([1.0, 2.0, 3.0])


@pytest.fixture
def z():
    return pj.constant(2.0)


# -- watching ---------------------------------------------------------------------------
def test_watch_nested_lists_and_dicts(x, z):
    w = pj.constant([[1.0, -1.0]])
    with pj.GradientTape() as tape:
        tape.watch({"a": [x, (z,)], "b": {"c": w}})
        y = pj.sum(x) * z + pj.sum(w * w)
    gx, gz, gw = tape.gradient(y, [x, z, w])
    close(gx, [2.0, 2.0, 2.0])
    close(gz, 6.0)
    close(gw, [[2.0, -2.0]])


def test_unwatched_constant_is_not_a_source(x):
    with pj.GradientTape() as tape:
        y = x * x
    with pytest.raises(ValueError, match="never watched"):
        tape.gradient(y, x)


@pytest.mark.parametrize("bad", [np.ones(2), 3.0, [1.0]])
def test_watch_non_tensor_is_type_error(bad):
    with pj.GradientTape() as tape:
        with pytest.raises(TypeError, match="watch expects Tensors"):
            tape.watch(bad)


def test_watched_variables_in_order_of_first_use():
    a, b = pj.Variable(1.0, name="a"), pj.Variable([2.0, 3.0], name="b")
    frozen = pj.Variable(4.0, trainable=False)
    with pj.GradientTape() as tape:
        y = pj.sum(b * a) + frozen + a
    assert [v.name for v in tape.watched_variables()] == ["b", "a"]
    ga, gb = tape.gradient(y, [a, b])
    close(ga, 6.0)
    close(gb, [1.0, 1.0])


def test_an_integer_trainable_variable_read_is_listed_with_a_none_gradient():
    # As TensorFlow: watched_variables lists it; its gradient is None.
    n, w = pj.Variable(np.array([1, 2], np.int32), name="n"), pj.Variable([2.0, 3.0], name="w")
    with pj.GradientTape() as tape:
        y = pj.sum(pj.cast(n, np.float32) * w)
    assert [v.name for v in tape.watched_variables()] == ["n", "w"]
    gn, gw = tape.gradient(y, [n, w])
    assert gn is None
    close(gw, [1.0, 2.0])


def test_watch_accessed_variables_false_watches_only_explicitly():
    a, b = pj.Variable(1.0), pj.Variable(2.0)
    with pj.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(b)
        y = a * b
    assert tape.watched_variables() == (b,)
    close(tape.gradient(y, b), 1.0)


def test_unwatched_variable_error_says_why():
    a = pj.Variable(1.0)
    with pj.GradientTape(watch_accessed_variables=False) as tape:
        y = a * 2.0
    with pytest.raises(ValueError, match="watch_accessed_variables=False"):
        tape.gradient(y, a)
    frozen = pj.Variable(1.0, trainable=False)
    with pj.GradientTape() as tape:
        y = frozen * 2.0
    with pytest.raises(ValueError, match="trainable=False"):
        tape.gradient(y, frozen)


def test_variable_gradient_uses_value_read_when_recorded():
    v = pj.Variable(2.0)
    with pj.GradientTape() as tape:
        y1 = v * v
        v.assign(3.0)
        y = y1 + v * v
    close(tape.gradient(y, v), 2 * 2.0 + 2 * 3.0)


# -- recording control ----------------------------------------------------------------------
def test_stop_recording(x):
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            assert core.current_state().tapes == []
            unrecorded = x * 3.0
        assert core.current_state().tapes == [tape]
        after = x * 5.0
    assert tape.gradient(unrecorded, x) is None
    close(tape.gradient(y, x), [2.0, 4.0, 6.0])
    close(tape.gradient(after, x), [5.0] * 3)


def test_stop_recording_outside_with_block_is_an_error():
    tape = pj.GradientTape()
    with pytest.raises(ValueError, match="stop_recording"):
        with tape.stop_recording():
            pass


def test_reset_forgets_recorded_ops(x, z):
    with pj.GradientTape() as tape:
        tape.watch(x)
        _ = x * x
        tape.reset()
        tape.watch(z)
        y = z * z
    close(tape.gradient(y, z), 4.0)


def test_reset_makes_a_used_tape_usable_again(x):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    tape.reset()
    with tape:
        tape.watch(x)
        y = x * 3.0
    close(tape.gradient(y, x), [3.0] * 3)


# -- gradient: structure, targets, seeds -------------------------------------------------------
def test_nested_sources_give_same_structure(x, z):
    with pj.GradientTape() as tape:
        tape.watch([x, z])
        y = x * z
    g = tape.gradient(y, {"a": [x], "b": (z, {"c": x})})
    assert set(g) == {"a", "b"} and isinstance(g["a"], list) and isinstance(g["b"], tuple)
    close(g["a"][0], [2.0] * 3)
    close(g["b"][0], 6.0)
    close(g["b"][1]["c"], [2.0] * 3)


def test_non_scalar_target_is_summed(x):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.reshape(x, (3, 1)) * pj.constant([[1.0, 2.0]])
    close(tape.gradient(y, x), [3.0] * 3)


def test_list_of_targets_adds_their_gradients(x):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y1, y2 = x * x, pj.sum(x) * 2.0
    close(tape.gradient([y1, {"k": y2}], x), [4.0, 6.0, 8.0])


def test_target_equal_to_source_gives_ones(x):
    with pj.GradientTape() as tape:
        tape.watch(x)
    close(tape.gradient(x, x), [1.0] * 3)


def test_output_gradients(x):
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        y2 = pj.sum(x)
    close(tape.gradient(y, x, output_gradients=pj.constant([1.0, 0.0, -1.0])), [2.0, 0.0, -6.0])
    g = tape.gradient([y, y2], x, output_gradients=[pj.constant([1.0, 1.0, 1.0]), pj.constant(3.0)])
    close(g, [5.0, 7.0, 9.0])
    with pytest.raises(ValueError, match="does not match the target's shape"):
        tape.gradient(y, x, output_gradients=pj.constant([1.0, 1.0]))
    with pytest.raises(ValueError, match=r"structure of target \(2 tensors\).*list or tuple of 2"):
        tape.gradient([y, y2], x, output_gradients=[pj.constant([1.0, 1.0, 1.0])])
    # None in place of a target's gradient means ones, as TensorFlow's does
    close(tape.gradient([y, y2], x, output_gradients=[None, pj.constant(3.0)]), [5.0, 7.0, 9.0])
    close(tape.gradient({"a": y, "b": [y2]}, x, output_gradients={"a": pj.constant([1.0, 0.0, 0.0]),
                                                                   "b": None}), [3.0, 1.0, 1.0])


def test_gradient_dtype_follows_source():
    x64 = pj.constant(np.array([1.0, 2.0]))
    x32 = pj.constant([1.0, 2.0])
    with pj.GradientTape() as tape:
        tape.watch([x64, x32])
        y = x64 * pj.cast(x32, np.float64)
    g64, g32 = tape.gradient(y, [x64, x32])
    assert g64.dtype == np.float64 and g32.dtype == np.float32


# -- unconnected and integer sources -------------------------------------------------------
@pytest.mark.parametrize("mode, zero", [
    (None, False), (pj.UnconnectedGradients.NONE, False), ("none", False),
    (pj.UnconnectedGradients.ZERO, True), ("zero", True)])
def test_unconnected_gradients(x, z, mode, zero):
    with pj.GradientTape() as tape:
        tape.watch([x, z])
        y = x * 2.0
    kwargs = {} if mode is None else {"unconnected_gradients": mode}
    gx, gz = tape.gradient(y, [x, z], **kwargs)
    close(gx, [2.0] * 3)
    if zero:
        assert gz.shape == () and gz.dtype == np.float32 and float(gz) == 0.0
    else:
        assert gz is None


def test_unconnected_gradients_bad_value(x):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(ValueError, match="'none' or 'zero'"):
        tape.gradient(y, x, unconnected_gradients="zeros")


def test_target_computed_outside_tape_is_refused_naming_the_cause(x):
    """TensorFlow returns None here, silently: the tape never saw the op that made the
    target. pforjac refuses it; a constant made in the block stays unconnected."""
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        constant = pj.constant([1.0, 2.0]) * 2.0
    with pytest.raises(ValueError, match="computed outside the tape's `with` block"):
        tape.gradient(y * 2.0, x)
    with pytest.raises(ValueError, match="GradientTape.jacobian: the target .* was not recorded"):
        tape.jacobian(y * 2.0, x)
    with pytest.raises(ValueError, match="batch_jacobian: the target .* was not recorded"):
        tape.batch_jacobian(pj.reshape(y, (3, 1)) * 2.0, pj.reshape(x, (3, 1)))
    assert tape.gradient(constant, x) is None
    close(tape.gradient(y, x, unconnected_gradients="zero"), 2 * x.numpy())


def test_a_tape_never_entered_is_refused_naming_the_cause(x):
    tape = pj.GradientTape()
    tape.watch(x)
    with pytest.raises(ValueError, match="never entered"):
        tape.gradient(x * 2.0, x)


def test_a_recorded_target_independent_of_the_source_is_unconnected(x, z):
    with pj.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = x * x
    assert tape.gradient(y, z) is None
    assert tape.jacobian(y, z) is None
    np.testing.assert_array_equal(tape.gradient(y, z, unconnected_gradients="zero").numpy(),
                                  np.zeros(z.shape))


def test_integer_sources_give_none(x):
    i = pj.constant([1, 2, 3])
    iv = pj.Variable(3)
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(i)
        y = x * pj.cast(i, np.float32) * pj.cast(iv, np.float32)
    assert tape.gradient(y, i) is None
    assert tape.gradient(y, iv) is None
    zero = tape.gradient(y, i, unconnected_gradients="zero")
    assert zero.shape == (3,) and not np.any(zero.numpy())


# -- reuse -------------------------------------------------------------------------------
def test_non_persistent_second_call_is_runtime_error(x):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent GradientTape.*persistent=True"):
        tape.gradient(y, x)


def test_failed_call_does_not_use_up_the_tape(x):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError):
        tape.gradient(y, pj.constant(1.0))
    close(tape.gradient(y, x), [2.0, 4.0, 6.0])


def test_strict_batch_jacobian_refusal_leaves_the_tape_usable_for_jacobian():
    # The refusal says "use jacobian() for the full result": that must still work.
    x = pj.constant(np.ones((3, 2)))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x * pj.sum(x, axis=0)
    with pytest.raises(ValueError, match="mixes rows"):
        tape.batch_jacobian(y, x, strict=True)
    assert tape.jacobian(y, x).shape == (3, 2, 3, 2)


def test_persistent_tape_reuse(x):
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        w = pj.exp(x)
    for _ in range(2):
        close(tape.gradient(y, x), [2.0, 4.0, 6.0])
        close(tape.gradient(w, x), np.exp([1.0, 2.0, 3.0]))


def test_gradient_inside_the_with_block_is_recorded_by_a_persistent_tape(x):
    # As TensorFlow: the same tape then gives the next derivative.
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        g = tape.gradient(y, x)
        y3 = x * 3.0
    close(g, 3 * x.numpy() ** 2)
    close(tape.gradient(g, x), 6 * x.numpy())
    close(tape.gradient(y3, x), [3.0] * 3)


def test_gradient_inside_the_with_block_of_a_non_persistent_tape(x):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        n = len(tape._entries)
        g = tape.gradient(y, x)
        x * 3.0
    assert len(tape._entries) == n + 1           # paused: the tape can't be used again anyway
    close(g, 2 * x.numpy())


@pytest.mark.parametrize("call", ["jacobian", "jacobian_loop", "batch_jacobian"])
def test_tape_goes_on_recording_after_a_jacobian_inside_its_block(call):
    # The Jacobian's traced loop body used to re-enter the tape at the trace's level, so the
    # ops after it were not recorded and their gradient was a silent None.
    x = pj.constant([[1.0, 2.0], [3.0, 4.0]])
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        if call == "batch_jacobian":
            tape.batch_jacobian(y, x)
        else:
            tape.jacobian(y, x, experimental_use_pfor=call == "jacobian")
        z = y * 3.0
    close(tape.gradient(z, x), 6 * x.numpy())


@pytest.mark.parametrize("use_pfor", [True, False])
def test_jacobians_inside_the_with_block_are_recorded_by_a_persistent_tape(use_pfor):
    x, xb = pj.constant([1.0, 2.0]), pj.constant([[1.0], [2.0]])
    with pj.GradientTape(persistent=True) as tape:
        tape.watch([x, xb])
        y = x ** 3
        jac = tape.jacobian(y, x, experimental_use_pfor=use_pfor)
        bjac = tape.batch_jacobian(xb ** 3, xb, experimental_use_pfor=use_pfor)
    close(jac, np.diag(3 * x.numpy() ** 2))
    expected = np.zeros((2, 2, 2))
    expected[[0, 1], [0, 1], [0, 1]] = 6 * x.numpy()
    close(tape.jacobian(jac, x, experimental_use_pfor=use_pfor), expected)
    close(tape.gradient(bjac, xb), 6 * xb.numpy())


def test_tape_goes_on_recording_after_stop_recording_in_a_pfor_body(x):
    with pj.GradientTape() as tape:
        tape.watch(x)

        def body(i):
            with tape.stop_recording():
                pass
            return pj.cast(i, "float32")
        pj.pfor(body, 3)
        z = x * 3.0
    close(tape.gradient(z, x), [3.0] * 3)


def test_tape_in_a_compiled_function_goes_on_recording_after_a_jacobian():
    @pj.function
    def f(a):
        with pj.GradientTape(persistent=True) as tape:
            tape.watch(a)
            y = a * a
            tape.jacobian(y, a)
            z = y * 3.0
        return tape.gradient(z, a)
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    close(f(x), 6 * x)


def test_tape_cannot_be_entered_twice(x):
    tape = pj.GradientTape()
    with tape:
        with pytest.raises(RuntimeError, match="already recording"):
            tape.__enter__()


# -- higher derivatives ------------------------------------------------------------------------
def test_second_derivative_nested_tapes(x):
    with pj.GradientTape() as outer:
        outer.watch(x)
        with pj.GradientTape() as inner:
            inner.watch(x)
            y = x * x * x
        dy = inner.gradient(y, x)
    close(dy, 3 * x.numpy() ** 2)
    close(outer.gradient(dy, x), 6 * x.numpy())


def test_third_derivative_nested_tapes(z):
    with pj.GradientTape() as t3:
        t3.watch(z)
        with pj.GradientTape() as t2:
            t2.watch(z)
            with pj.GradientTape() as t1:
                t1.watch(z)
                y = pj.sin(z)
            d1 = t1.gradient(y, z)
        d2 = t2.gradient(d1, z)
    d3 = t3.gradient(d2, z)
    close(d1, np.cos(2.0))
    close(d2, -np.sin(2.0))
    close(d3, -np.cos(2.0))


def test_persistent_inner_tape_for_hessian_rows():
    x = pj.constant([1.0, 2.0])
    with pj.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with pj.GradientTape() as inner:
            inner.watch(x)
            y = x[0] * x[0] * x[1]
        g = inner.gradient(y, x)
        rows = [g[0], g[1]]
    hess = [outer.gradient(r, x) for r in rows]
    close(hess[0], [2 * 2.0, 2 * 1.0])
    close(hess[1], [2 * 1.0, 0.0])


def test_second_derivative_with_variables():
    v = pj.Variable(1.5)
    with pj.GradientTape() as outer:
        with pj.GradientTape() as inner:
            y = pj.exp(v * v)
        dy = inner.gradient(y, v)
    close(outer.gradient(dy, v), (2 + 4 * 1.5 ** 2) * np.exp(1.5 ** 2))


# -- argument errors and context hygiene -------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.ones(3), 1.0, "x"])
def test_non_tensor_source_is_type_error(x, bad):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(TypeError, match="sources must be Tensors"):
        tape.gradient(y, [x, bad])


def test_source_never_seen_is_value_error(x):
    other = pj.constant([1.0, 2.0, 3.0])
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match=r"shape \(3,\).*never watched.*tape.watch"):
        tape.gradient(y, other)


def test_exception_inside_with_block_leaves_no_tape_active():
    with pytest.raises(KeyError):
        with pj.GradientTape():
            with pj.GradientTape(persistent=True):
                raise KeyError("boom")
    assert core.current_state().tapes == []


def test_exception_inside_stop_recording_restores_the_tape(x):
    with pj.GradientTape() as tape:
        with pytest.raises(KeyError):
            with tape.stop_recording():
                raise KeyError("boom")
        assert core.current_state().tapes == [tape]
    assert core.current_state().tapes == []


def test_failing_op_inside_tape_leaves_no_tape_active():
    with pytest.raises(ValueError, match="add"):
        with pj.GradientTape() as tape:
            a = pj.constant(np.ones((2, 3)))
            tape.watch(a)
            pj.add(a, pj.constant(np.ones(4)))
    assert core.current_state().tapes == []


def test_output_gradients_as_a_one_element_list_for_one_target():
    """TensorFlow flattens output_gradients: [dy] is the documented form for one target."""
    x = pj.constant(np.ones((2, 3)))
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * 3.0
    dy = np.full((2, 3), 2.0)
    np.testing.assert_array_equal(g.gradient(y, x, output_gradients=[dy]).numpy(), np.full((2, 3), 6.0))
    np.testing.assert_array_equal(g.gradient(y, x, output_gradients=(dy,)).numpy(),
                                  g.gradient(y, x, output_gradients=dy).numpy())
    with pytest.raises(ValueError, match=r"output_gradients of shape \(2, 2, 3\)"):
        g.gradient(y, x, output_gradients=[dy, dy])
    z = pj.constant(np.ones((1, 3)))
    with pj.GradientTape() as g:
        g.watch(z)
        y = z * 3.0
    np.testing.assert_array_equal(                      # a nested list is an array of its shape
        g.gradient(y, z, output_gradients=[[1.0, 2.0, 3.0]]).numpy(), [[3.0, 6.0, 9.0]])


def test_a_copy_of_a_tracked_tensor_is_still_tracked():
    """copy.copy / copy.deepcopy made a new Tensor the tape had never seen: deep-copying
    a dict of state inside a differentiated function gave a None gradient and a zero
    Jacobian, silently. A tensor is immutable: its copy is itself. A Variable's copy is
    still a new Variable of its value."""
    import copy
    x = pj.constant(np.array([1.0, 2.0]))
    with pj.GradientTape() as g:
        g.watch(x)
        state = copy.deepcopy({"h": x * 3, "rest": [x]})
        y = state["h"] * 2 + copy.copy(state["rest"][0])
    np.testing.assert_array_equal(g.gradient(y, x).numpy(), [7.0, 7.0])
    f = lambda z: copy.deepcopy(z * 3) * 2      # noqa: E731
    for jacobian in (pj.jacobian(f, x), pj.function(lambda z: pj.jacobian(f, z))(x),
                     pj.jacobian(f, x, strategy="forward-mode", vectorize=True)):
        np.testing.assert_array_equal(jacobian.numpy(), 6 * np.eye(2))
    v = pj.Variable([1.0, 2.0])
    w = copy.deepcopy(v)
    w.assign([0.0, 0.0])
    assert w is not v and v.numpy().tolist() == [1.0, 2.0]
