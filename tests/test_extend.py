"""pforjac.extend, pforjac.testing and fallback diagnostics, through the public API only."""
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac import extend
from pforjac.testing import check_converter, check_grads, isolated_registries


@pytest.fixture(autouse=True)
def _isolated():
    with isolated_registries():
        yield


def _declare_cube(name="ext_cube"):
    return extend.defop(name, lambda x: x * x * x, extend.same_shape,
                        vjp=lambda g, ans, x: g * 3.0 * x * x,
                        jvp=lambda t, ans, x: t * 3.0 * x * x)


def _declare_roll(name="ext_roll"):
    """A linear op: its vjp applies it again, so it shows up inside Jacobian loop bodies."""
    return extend.defop(name, lambda x, shift: np.roll(x, shift, axis=-1), extend.same_shape,
                        vjp=lambda g, ans, x, shift: roll(g, shift=-shift),
                        jvp=lambda t, ans, x, shift: roll(t, shift=shift))


def roll(x, shift):
    return pj.core.primitives["ext_roll"].bind(x, shift=shift)


def _jacobian(op, x):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = op(pj.sin(x), shift=1) * 2.0
    return tape.jacobian(y, x).numpy()


def _expected_jacobian(x):
    return 2.0 * np.roll(np.diag(np.cos(x)), 1, axis=0)


def _per_iteration_warnings(caught, name):
    return [w for w in caught if f"'{name}'" in str(w.message) and "per iteration" in str(w.message)]


@pytest.mark.unverified
def test_op_without_converter_falls_back_once_then_register_converter_vectorizes():
    op = _declare_roll()
    x = pj.constant(np.array([0.3, -1.2, 2.0]))
    expected = _expected_jacobian(x.numpy())
    with warnings.catch_warnings(record=True) as caught, pj.fallback_report() as report:
        warnings.simplefilter("always")
        slow = _jacobian(op, x)
        slow_again = _jacobian(op, x)
    np.testing.assert_allclose(slow, expected, rtol=1e-12)
    np.testing.assert_array_equal(slow, slow_again)
    (w,) = _per_iteration_warnings(caught, "ext_roll")
    assert "stacked (3, 3)" in str(w.message) and "register_converter('ext_roll')" in str(w.message)
    (rec,) = report.records
    assert (rec.op, rec.kind, rec.count, rec.iterations) == ("ext_roll", "per-iteration", 2, 6)
    assert "ext_roll" in str(report)

    calls = []

    @extend.register_converter(op)
    def _convert_ext_roll(n, args, stacked, shift):
        calls.append(tuple(stacked))
        return op(args[0], shift=shift), True      # rolls the last axis: the loop axis is first

    with warnings.catch_warnings(record=True) as caught, pj.fallback_report() as report:
        warnings.simplefilter("always")
        fast = _jacobian(op, x)
    np.testing.assert_array_equal(fast, slow)
    assert calls == [(True,)] and not _per_iteration_warnings(caught, "ext_roll")
    assert len(report) == 0
    check_converter(op, np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), shift=1)


def test_registering_twice_is_an_error_unless_override():
    cube = _declare_cube()
    with pytest.raises(ValueError, match="ext_cube"):
        _declare_cube()
    extend.register_converter(cube)(extend.elementwise_converter(cube))
    with pytest.raises(ValueError, match="already registered"):
        extend.register_converter(cube)(extend.elementwise_converter(cube))
    extend.register_converter(cube, override=True)(extend.elementwise_converter(cube))
    with pytest.raises(ValueError, match="already registered"):
        extend.defvjp(cube, lambda g, ans, x: g)


def test_check_grads_and_check_converter_pass_for_a_correct_op():
    cube = _declare_cube()
    extend.register_converter(cube)(extend.elementwise_converter(cube))
    check_grads(cube, np.array([0.5, -1.5, 2.0]))
    check_converter(cube, np.array([[0.5, -1.5], [2.0, 1.0]]))
    check_converter(cube, np.array([1.0, 2.0]), n=2, iterations=[[np.array([3.0, 4.0]),
                                                                  np.array([5.0, 6.0])]])
    with pytest.raises(ValueError, match="iterations"):
        check_converter(cube, np.array([1.0, 2.0]), iterations=[[np.array([3.0, 4.0])]])


def test_check_converter_names_the_stacked_mix_that_went_wrong():
    add2 = extend.defop("ext_add2", np.add, extend.elementwise_shape(np.add))

    @extend.register_converter(add2)
    def _convert_ext_add2(n, args, stacked):
        x, y = args
        if stacked[0] and not stacked[1]:
            return add2(x, y[:1]), True          # wrong: uses y's first entry only
        return extend.elementwise_converter(add2)(n, args, stacked)

    with pytest.raises(AssertionError) as err:
        check_converter(add2, np.array([1.0, 2.0]), np.array([3.0, 5.0]))
    msg = str(err.value)
    assert "ext_add2" in msg and "input 0 stacked, input 1 unstacked" in msg
    assert "stacked=(True, False)" in msg and "float64(2,)" in msg


def test_check_converter_catches_wrong_shapes_and_numpy_in_converters():
    double = extend.defop("ext_double", lambda x: 2.0 * x, extend.same_shape)
    extend.register_converter(double)(lambda n, args, stacked: (double(args[0][0]), True))
    with pytest.raises(AssertionError, match=r"ext_double.*output 0 is float64\(2,\)"):
        check_converter(double, np.array([1.0, 2.0]))
    extend.register_converter(double, override=True)(
        lambda n, args, stacked: (pj.constant(2.0 * np.asarray(args[0])), True))
    with pytest.raises(AssertionError, match="traced"):
        check_converter(double, np.array([1.0, 2.0]))


def test_check_grads_catches_wrong_vjp_and_wrong_jvp():
    bad_vjp = extend.defop("ext_bad_vjp", np.sin, extend.same_shape,
                           vjp=lambda g, ans, x: g * pj.sin(x), jvp=lambda t, ans, x: t * pj.cos(x))
    with pytest.raises(AssertionError, match="reverse mode.*input 0"):
        check_grads(bad_vjp, np.array([0.3, 0.5]))
    check_grads(bad_vjp, np.array([0.3, 0.5]), order=1, modes=("fwd",))
    bad_jvp = extend.defop("ext_bad_jvp", np.sin, extend.same_shape,
                           vjp=lambda g, ans, x: g * pj.cos(x), jvp=lambda t, ans, x: t * pj.sin(x))
    with pytest.raises(AssertionError, match="forward mode"):
        check_grads(bad_jvp, np.array([0.3, 0.5]))


def test_check_grads_catches_a_wrong_second_derivative():
    # First derivatives are right, but the vjp rule is written with an op whose own
    # gradient is wrong, so only order 2 sees it.
    cos_bad = extend.defop("ext_cos_bad", np.cos, extend.same_shape,
                           vjp=lambda g, ans, x: g * pj.sin(x), jvp=lambda t, ans, x: t * pj.sin(x))
    sin_ok = extend.defop("ext_sin", np.sin, extend.same_shape,
                          vjp=lambda g, ans, x: g * cos_bad(x), jvp=lambda t, ans, x: t * cos_bad(x))
    check_grads(sin_ok, np.array([0.3, 0.5]), order=1)
    with pytest.raises(AssertionError, match="order 2"):
        check_grads(sin_ok, np.array([0.3, 0.5]), order=2)


def test_wrong_shapes_from_rules_name_the_op():
    summed = extend.defop("ext_bad_shape", lambda x: x.sum(), extend.same_shape)
    with pytest.raises(ValueError, match="forward of op 'ext_bad_shape'.*shape rule"):
        summed(pj.constant([1.0, 2.0]))
    bad_ct = extend.defop("ext_bad_ct", lambda x: 2.0 * x, extend.same_shape,
                          vjp=lambda g, ans, x: g.sum(), jvp=lambda t, ans, x: t.sum())
    x = pj.constant([1.0, 2.0])
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = bad_ct(x)
    with pytest.raises(ValueError, match="vjp rule of op 'ext_bad_ct' for input 0"):
        tape.gradient(y, x)
    with pytest.raises(ValueError, match="jvp rule of op 'ext_bad_ct'"):
        pj.jvp(bad_ct, x, pj.ones((2,)))


def test_whole_loop_fallback_is_reported_with_op_and_reason():
    op = _declare_roll()

    @extend.register_converter(op)
    def _convert(n, args, stacked, shift):
        raise ValueError("this converter declines every case")

    x = pj.constant(np.array([0.3, -1.2]))
    with warnings.catch_warnings(record=True) as caught, pj.fallback_report() as report:
        warnings.simplefilter("always")
        jac = _jacobian(op, x)
        _jacobian(op, x)
    np.testing.assert_allclose(jac, _expected_jacobian(x.numpy()))
    (rec,) = report.records
    assert (rec.kind, rec.op, rec.count) == ("while-loop", "ext_roll", 2)
    assert "declines every case" in rec.cause and "stacked (2, 2)" in rec.inputs
    assert len([w for w in caught if "ext_roll" in str(w.message)]) == 1


def test_a_structured_converter_raising_value_error_falls_back_like_a_dense_one():
    from pforjac import structure
    op = _declare_roll()
    extend.register_converter(op)(lambda n, args, stacked, shift: (roll(args[0], shift), True))

    def decline(prim, ctx, args, stacked, shift):
        raise ValueError("this structured converter declines")
    structure.structured_converters[op.prim] = decline
    x = pj.constant(np.array([0.3, -1.2, 0.5]))
    with warnings.catch_warnings(record=True) as caught, pj.fallback_report() as report:
        warnings.simplefilter("always")
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = op(x, shift=1)            # the seed reaches the op's vjp one-hot (structured)
        jac = tape.jacobian(y, x).numpy()
    np.testing.assert_array_equal(jac, np.roll(np.eye(3), 1, axis=0))
    (rec,) = report.records
    assert (rec.kind, rec.op) == ("while-loop", "ext_roll") and "declines" in rec.cause
    assert len([w for w in caught if "ext_roll" in str(w.message)]) == 1


def test_loop_axis_helpers_round_trip():
    x = pj.constant(np.arange(24.0).reshape(2, 3, 4))
    merged = extend.merge_loop_axis(x)
    assert merged.shape == (6, 4)
    np.testing.assert_array_equal(extend.split_loop_axis(merged, 2).numpy(), x.numpy())
    assert extend.move_loop_axis(x, 2).shape == (3, 4, 2)
    assert extend.to_stacked(3, pj.constant([1.0, 2.0]), False).shape == (3, 2)


# -- several results, too few outputs, replaced and redeclared ops ------------------------
def test_forward_mode_adds_every_inputs_tangents_of_a_multiple_results_op():
    prodsum = extend.defop(
        "ext_prodsum", lambda a, b: [a * b, a + b],
        lambda a, b: [(a.shape, a.dtype), (a.shape, a.dtype)], multiple_results=True,
        vjp=(lambda g, ans, a, b: g[0] * b + g[1], lambda g, ans, a, b: g[0] * a + g[1]),
        jvp=(lambda t, ans, a, b: [t * b, t], lambda t, ans, a, b: [t * a, t]))
    a, b = pj.constant([1.0, 2.0]), pj.constant([3.0, -1.0])
    _, (t_prod, t_sum) = pj.jvp(lambda a, b: prodsum(a, b), (a, b),
                                (pj.constant([1.0, 1.0]), pj.constant([0.5, 2.0])))
    np.testing.assert_allclose(t_prod.numpy(), [3.0 + 0.5, -1.0 + 4.0])      # b da + a db
    np.testing.assert_allclose(t_sum.numpy(), [1.5, 3.0])


def test_a_converter_returning_too_few_outputs_falls_back_naming_the_op():
    sincos = extend.defop("ext_sincos", lambda x: [np.sin(x), np.cos(x)],
                          lambda x: [(x.shape, x.dtype), (x.shape, x.dtype)], multiple_results=True)

    @extend.register_converter(sincos)
    def _one_output(n, args, stacked):
        return [sincos(args[0])[0]], True
    x = np.linspace(0.0, 1.0, 6).reshape(3, 2)
    with pytest.warns(RuntimeWarning, match=r"'ext_sincos'.*returned 1 outputs, expected 2"):
        got = pj.vectorized_map(lambda r: sincos(r)[1], pj.constant(x))
    np.testing.assert_allclose(got.numpy(), np.cos(x))


def test_jacobians_and_compiled_functions_follow_a_rule_replaced_with_override():
    """Eager jacobians cache compiled loop bodies and pforjac.function caches traces: both
    must see a rule fixed after use (CONTRIBUTING's check, fix, check again)."""
    foo = extend.defop("ext_foo", lambda x: 2.0 * x, extend.same_shape,
                       vjp=lambda g, ans, x: 3.0 * g)                  # wrong on purpose
    x = pj.constant(np.ones(3))

    def jac(x):
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = foo(x * x)
        return tape.jacobian(y, x)
    compiled = pj.function(jac)
    for _ in range(3):                                                 # cached from the 2nd
        np.testing.assert_allclose(jac(x).numpy().diagonal(), 6.0)
    np.testing.assert_allclose(np.asarray(compiled(np.ones(3))).diagonal(), 6.0)
    extend.defvjp(foo, lambda g, ans, x: 2.0 * g, override=True)
    np.testing.assert_allclose(jac(x).numpy().diagonal(), 4.0)
    np.testing.assert_allclose(np.asarray(compiled(np.ones(3))).diagonal(), 4.0)
    assert compiled.trace_count == 2


def test_declaring_an_op_again_drops_the_old_ones_converter():
    foo = extend.defop("ext_redeclared", lambda x: 2.0 * x, extend.same_shape)
    extend.register_converter(foo)(extend.elementwise_converter(foo))
    foo = extend.defop("ext_redeclared", lambda x: 3.0 * x, extend.same_shape, override=True)
    x = pj.constant(np.ones((2, 2)))
    with pytest.warns(RuntimeWarning, match="'ext_redeclared' has no converter"):
        got = pj.vectorized_map(foo, x)
    np.testing.assert_array_equal(got.numpy(), 3.0)


def test_an_op_without_converter_raises_under_fallback_to_while_loop_false():
    # As TensorFlow's pfor: "any failure to vectorize the operation will cause an error".
    op = _declare_roll()
    x = pj.constant(np.arange(6.0).reshape(2, 3))
    body = lambda i: op(x * pj.cast(i, np.float64), shift=1)  # noqa: E731
    with pytest.raises(pj.ConversionError, match="'ext_roll'.*no converter is registered"):
        pj.pfor(body, 3, fallback_to_while_loop=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = pj.pfor(body, 3).numpy()                       # the default runs it per iteration
    np.testing.assert_array_equal(got, np.stack([np.roll(x.numpy() * k, 1, axis=-1)
                                                 for k in range(3)]))


def test_defvjp_all_and_defjvp_all_take_the_op_defop_returns():
    twice = extend.defop("twice_all", lambda x: 2 * x, extend.same_shape)
    extend.defvjp_all(twice, lambda g, ans, x: [2.0 * g])
    extend.defjvp_all("twice_all", lambda ts, ans, x: 2.0 * ts[0])
    x = pj.constant([1.0, 2.0])
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = twice(x)
    assert tape.gradient(y, x).numpy().tolist() == [2.0, 2.0]
    assert pj.jvp(lambda x: twice(x), x, pj.constant([1.0, 0.0]))[1].numpy().tolist() == [2.0, 0.0]
    with pytest.raises(TypeError, match="registered for a Primitive, got Op"):
        pj.core.defvjp_all(twice, lambda g, ans, x: [g])


def test_star_import_gives_the_api_not_the_submodules():
    import types
    names: dict = {}
    exec("from pforjac import *", names)
    modules = {n for n, v in names.items() if isinstance(v, types.ModuleType)}
    assert modules == {"extend", "testing"}                  # the public contributor modules
    assert {"jacobian", "GradientTape", "function", "exp", "log_softmax", "Variable"} <= set(names)
    assert all(hasattr(pj, n) for n in pj.__all__) and len(set(pj.__all__)) == len(pj.__all__)
