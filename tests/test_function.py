"""pforjac.function computes what eager code computes: jacobians to the digit, Variables
read when it runs, guards and the dense twin, tapes around and inside it, generated code and
its errors. Which trace a call runs (signatures, methods) is in test_function_signatures.py."""
import re
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings

import pforjac as pj
from pforjac.compiled.loopcache import same_bits
from random_programs import finite_program_value, random_programs

RNG = np.random.default_rng(3)


def _seed_first_order(x):
    with pj.GradientTape() as g:
        g.watch(x)
        y = x * x * x
    return g.jacobian(y, x)


def _net(x, w1, w2, kind):
    with pj.GradientTape() as g:
        g.watch(x)
        y = pj.tanh(pj.sigmoid(x @ w1) @ w2)
    return getattr(g, kind)(y, x)


def test_seed_examples_compiled_to_the_digit():
    f = pj.function(_seed_first_order)
    x = np.array([[4, 2], [1, 3]], np.float32)
    want = _seed_first_order(pj.constant(x)).numpy()
    got = np.asarray(f(x))
    assert got.dtype == np.float32 and got.shape == (2, 2, 2, 2)
    np.testing.assert_array_equal(got, want)
    assert got[0, 0, 0, 0] == 48 and got[1, 1, 1, 1] == 27


@pytest.mark.parametrize("kind", ["jacobian", "batch_jacobian"])
def test_compiled_equals_eager_for_jacobians(kind):
    w1, w2 = pj.constant(RNG.normal(size=(5, 7))), pj.constant(RNG.normal(size=(7, 3)))
    f = pj.function(lambda x: _net(x, w1, w2, kind))
    x = RNG.normal(size=(4, 5))
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(_net(pj.constant(x), w1, w2, kind)),
                               rtol=1e-12, atol=1e-12)


def test_program_and_source_show_what_runs():
    f = pj.function(lambda x: pj.sin(x) * 2.0)
    x = np.ones((2, 2), np.float32)
    text = str(f.program(x))
    assert "sin" in text and "multiply" in text
    src = f.source(x)
    assert "np_sin(" in src and src.startswith("def ")
    import ast
    ast.parse(src)


def test_a_densified_jacobian_is_scattered_without_checking_for_repeats():
    """Its rows land in disjoint ranges, so the scatter is told so (`unique=True`) and skips
    the check on every call; a scatter_add the user writes keeps checking (repeats add)."""
    def f(x):
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        return tape.batch_jacobian(y, x), pj.scatter_add(x[0], np.array([1, 1]), 0, 3)
    compiled = pj.function(f)
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    src = compiled.source(x)
    lines = [line for line in src.splitlines() if "scatter_add_impl(" in line]
    assert len(lines) == 2 and sum("unique=True" in line for line in lines) == 1
    jac, scattered = compiled(x)
    np.testing.assert_array_equal(np.asarray(jac), [np.diag([2.0, 4.0]), np.diag([6.0, 8.0])])
    np.testing.assert_array_equal(np.asarray(scattered), [0.0, 3.0, 0.0])


def test_nan_inputs_give_the_dense_answer():
    f = pj.function(lambda x: _net(x, W1, W2, "batch_jacobian"))
    x = RNG.normal(size=(4, 5))
    x[1, 2] = np.nan
    got, want = np.asarray(f(x)), np.asarray(_net(pj.constant(x), W1, W2, "batch_jacobian"))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(np.nan_to_num(got), np.nan_to_num(want), rtol=1e-12)


W1, W2 = pj.constant(RNG.normal(size=(5, 7))), pj.constant(RNG.normal(size=(7, 3)))


def test_functional_api_and_pfor_inside_a_compiled_function():
    @pj.function
    def h(x):
        return pj.hessian(lambda v: pj.sum(pj.softplus(v @ W1)), x, vectorize=True)
    x = RNG.normal(size=(5,))
    want = pj.hessian(lambda v: pj.sum(pj.softplus(v @ W1)), pj.constant(x), vectorize=True)
    np.testing.assert_allclose(np.asarray(h(x)), np.asarray(want), rtol=1e-10)

    @pj.function
    def rows(x):
        return pj.pfor(lambda i: pj.exp(x[i]).sum(), x.shape[0])
    np.testing.assert_allclose(np.asarray(rows(x.reshape(5, 1))), np.exp(x))


def test_an_outer_tape_differentiates_through_a_compiled_function():
    square = pj.function(lambda a: a * pj.sin(a))
    x = pj.constant(np.array([0.5, 2.0]))
    with pj.GradientTape() as g:
        g.watch(x)
        y = square(x)
    np.testing.assert_allclose(g.gradient(y, x).numpy(), np.sin([0.5, 2.0]) + [0.5, 2.0] * np.cos([0.5, 2.0]))
    assert square.trace_count == 0                    # run as Python, for the tape to see
    outer = pj.function(lambda a: square(a) + 1.0)    # nested: inlined into the outer trace
    np.testing.assert_allclose(np.asarray(outer(np.array([0.5]))), 0.5 * np.sin(0.5) + 1.0)
    assert outer.trace_count == 1 and square.trace_count == 0


def _gradient_of_square(x):
    with pj.GradientTape() as g:
        g.watch(x)
        y = x * x
    return g.gradient(y, x)


def test_a_compiled_function_watching_its_array_argument_runs_where_it_is_inlined():
    grad = pj.function(_gradient_of_square)
    x = np.array([1.0, 2.0])
    want = np.asarray(grad(x))
    assert want.tolist() == [2.0, 4.0]
    with pj.GradientTape():
        assert same_bits(grad(x).numpy(), want)                          # under a tape
    assert same_bits(np.asarray(pj.function(lambda a: grad(x) + a)(np.zeros(2))), want)   # a trace
    rows = pj.pfor(lambda i: grad(x)[i], 2)                             # a pfor body
    assert same_bits(rows.numpy(), want)


def test_range_indices_compile():
    x = np.arange(12.0).reshape(3, 4)

    def jac(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = x[range(1, 3)] ** 2
        return g.jacobian(y, x)
    assert same_bits(np.asarray(pj.function(jac)(x)), np.asarray(jac(pj.constant(x))))
    assert np.asarray(pj.function(lambda x: x[range(2)])(x)).tolist() == x[:2].tolist()


def test_outer_product_with_ones_keeps_the_products_signs_and_gemm():
    """ones(n,1) @ b is 0 + 1*b: +0 where b is -0 (1/that is +inf); and where a product
    reads the result it stays a product (a broadcast view takes numpy's other matmul path)."""
    f = lambda x: 1.0 / (pj.ones((3, 1), np.float64) @ (x * 0.0)[:1])   # noqa: E731
    x = -np.ones((3, 2))
    with pj.compiled.loopcache.caching(False), np.errstate(divide="ignore"):
        want = f(pj.constant(x)).numpy()
        got = np.asarray(pj.function(f)(x))
    assert same_bits(got, want) and np.all(got == np.inf)
    rng = np.random.default_rng(0)
    w1, w2 = pj.Variable(rng.standard_normal((2, 33))), pj.Variable(rng.standard_normal((33, 1)))

    def per_example(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = x @ w1 @ w2
        return g.batch_jacobian(y, x)
    x = rng.standard_normal((2, 2))
    with pj.compiled.loopcache.caching(False):
        want = per_example(pj.constant(x)).numpy()
    assert same_bits(np.asarray(pj.function(per_example)(x)), want)


@pytest.mark.parametrize("name", ["abs", "relu", "maximum"])
def test_a_ufunc_reading_a_gather_of_every_row_compiles(name):
    act = {"abs": pj.abs, "relu": pj.relu, "maximum": lambda t: pj.maximum(t, 0.5)}[name]

    def jac(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = act(pj.scatter_add(pj.sin(x), np.arange(4), 0, 4))
        return g.jacobian(y, x)
    x = np.random.default_rng(0).normal(size=(4, 3))
    assert same_bits(np.asarray(pj.function(jac)(x)), np.asarray(jac(pj.constant(x))))


def test_generated_code_keeps_byte_order_and_any_function_name():
    big_endian = pj.function(lambda x: pj.cast(x, np.dtype(">f8")))
    assert big_endian(np.ones(3, np.float32)).dtype == np.dtype(">f8")

    def slice(x):                                                # noqa: A001 (the point)
        return x[1:] * 2.0

    def np_(x):
        return pj.exp(x)
    np_.__name__ = "np"
    np.testing.assert_array_equal(np.asarray(pj.function(slice)(np.ones(3))), [2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(pj.function(np_)(np.zeros(2))), [1.0, 1.0])


def test_numpy_reductions_of_tensors_call_their_methods():
    t = pj.constant([[1.0, 2.0], [3.0, 4.0]])
    assert [float(np.sum(t)), float(np.mean(t)), float(np.max(t)), float(np.min(t)),
            float(np.prod(t))] == [10.0, 2.5, 4.0, 1.0, 24.0]
    assert np.sum(t, axis=0).numpy().tolist() == [4.0, 6.0] and np.sum(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError, match="sum: .*got out"):
        np.sum(t, out=np.zeros(()))
    with pytest.raises(TypeError, match="max: .*got initial"):
        np.max(t, initial=3.0)
    with pj.GradientTape() as g:
        g.watch(t)
        y = np.sum(t * t)
    assert g.gradient(y, t).numpy().tolist() == [[2.0, 4.0], [6.0, 8.0]]


# -- random programs: compiled jacobians equal eager ones ------------------------------
def _jacobians(f):
    def both(x, xb):
        with pj.GradientTape(persistent=True) as g:
            g.watch([x, xb])
            y = f(x)
            yb = pj.stack([pj.reshape(f(xb[k]), (-1,)) for k in range(2)])
        return g.jacobian(y, x, unconnected_gradients="zero"), \
            g.batch_jacobian(yb, xb, unconnected_gradients="zero")
    return both


@settings(max_examples=120, deadline=None)
@given(random_programs())
def test_random_programs_compiled_equal_eager(program):
    _check_compiled_equals_eager(program)


@settings(max_examples=60, deadline=None)
@given(random_programs())
def test_random_programs_with_buffer_reuse_at_every_size_equal_eager(program):
    """The generated code's in-place ufunc calls (normally only for arrays of 1024 elements
    and more) turned on for every array: results must not change."""
    import pforjac.compiled.codegen as codegen
    saved, codegen._IN_PLACE_MIN = codegen._IN_PLACE_MIN, 1
    try:
        _check_compiled_equals_eager(program)
    finally:
        codegen._IN_PLACE_MIN = saved


def _check_compiled_equals_eager(program):
    with np.errstate(all="ignore"):    # a finite output may pass through log(0) = -inf on the way
        _compare_compiled_and_eager(program)


def _compare_compiled_and_eager(program):
    from pforjac.compiled.loopcache import caching
    x_np, xb_np = program.x(), program.x((2,) + program.x_shape)
    assume(program.x_shape != () and finite_program_value(program, x_np)
           and all(finite_program_value(program, r) for r in xb_np))
    both = _jacobians(program.function())
    with caching(False):                     # the eager reference runs no generated code
        want = [t.numpy() for t in both(pj.constant(x_np), pj.constant(xb_np))]
    compiled = pj.function(both)
    for _ in range(2):
        got = [np.asarray(t) for t in compiled(x_np, xb_np)]
        for a, b in zip(got, want):
            assert same_bits(a, b), (a, b)      # bit for bit, zeros' signs and NaNs included
    assert compiled.trace_count == 1


# -- Variables: read when the compiled code runs, never assigned by it ---------------------
def test_variables_are_read_at_call_time():
    w = pj.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]))

    @pj.function
    def grad(x):
        with pj.GradientTape() as g:
            y = pj.sum((x @ w) ** 2)
        return g.gradient(y, w)
    x = np.array([[1.0, -1.0]])
    first = np.asarray(grad(x))
    w.assign(w.numpy() * 3)
    second = np.asarray(grad(x))
    assert grad.trace_count == 1
    with pj.GradientTape() as g:
        y = pj.sum((pj.constant(x) @ w) ** 2)
    np.testing.assert_allclose(second, g.gradient(y, w).numpy())
    np.testing.assert_allclose(second, 3 * first)


def test_constant_of_a_variable_is_its_value_now_and_read_when_a_compiled_function_runs():
    v = pj.Variable(np.array([1.0, 2.0]))
    snapshot = pj.constant(v)
    scaled = pj.function(lambda x: x * pj.constant(v))
    np.testing.assert_array_equal(np.asarray(scaled(np.ones(2))), [1.0, 2.0])
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(snapshot.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(scaled(np.ones(2))), [5.0, 6.0])
    assert scaled.trace_count == 1


def test_reading_a_variables_value_while_tracing_raises_instead_of_freezing_it():
    v = pj.Variable(2.0, name="scale")
    for read in (lambda: v.numpy(), lambda: float(v), lambda: np.asarray(v)):
        f = pj.function(lambda x, read=read: x * read())
        with pytest.raises(TypeError, match="Variable 'scale'.*reads Variables when it runs"):
            f(np.ones(2))
    f = pj.function(lambda x: x * v)              # what the message says to do
    assert np.asarray(f(np.ones(2))).tolist() == [2.0, 2.0]
    v.assign(5.0)
    assert np.asarray(f(np.ones(2))).tolist() == [5.0, 5.0]


def test_assigning_a_variable_while_tracing_raises_and_leaves_no_state():
    v = pj.Variable(1.0)
    f = pj.function(lambda x: (v.assign_add(1.0), x * v))
    with pytest.raises(RuntimeError, match="would run once, while tracing"):
        f(np.array(2.0))
    with pytest.raises(RuntimeError, match="would run once, while tracing"):
        pj.pfor(lambda i: v.assign(2.0) and i, 3)
    state = pj.core.current_state()
    assert v.numpy() == 1.0 and not state.traces and not state.tapes and state.lifting is None


# -- guards and the dense twin ---------------------------------------------------------
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
        got = np.asarray(compiled(x))
    np.testing.assert_array_equal(got, want)
    assert np.isnan(want).any()


def test_the_dense_twin_computes_the_function_the_first_trace_did():
    state, runs = {"s": 1.0}, []

    @pj.function
    def jac(x):
        runs.append(1)
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.sin(x) * state["s"]
        return g.jacobian(y, x)

    def eager(x):
        x = pj.constant(x)
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.sin(x) * 1.0              # the value the trace read
        return g.jacobian(y, x).numpy()
    finite, with_nan = np.array([0.1, 0.4]), np.array([0.1, np.nan])
    jac(finite)
    state["s"] = 5.0                         # after the trace: changes no result
    assert same_bits(np.asarray(jac(finite)), eager(finite))
    assert same_bits(np.asarray(jac(with_nan)), eager(with_nan))     # the dense twin
    assert jac.trace_count == 1 and len(runs) == 1               # Python ran once


def test_the_dense_twin_reads_closure_arrays_as_the_first_trace_did():
    w = np.eye(3)

    @pj.function
    def per_example(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.tanh(x @ w)
        return g.batch_jacobian(y, x)
    x = np.zeros((2, 3))
    per_example(x)
    w *= 10                                     # after the trace: changes no result
    x[0, 0] = np.nan                            # the guards refuse it: the dense twin runs
    out = np.asarray(per_example(x))
    np.testing.assert_array_equal(out[1], np.eye(3))
    assert np.isnan(out[0]).all() and per_example.trace_count == 1

    state = np.ones(3)                          # changed by the function between conversions

    @pj.function
    def twice(x):
        with pj.GradientTape() as g:
            g.watch(x)
            first = x * state
            state[0] = 5.0
            y = first + x * state
        state[0] = 1.0
        return g.batch_jacobian(y, x)
    x = np.ones((2, 3))
    want = np.diag([6.0, 2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(twice(x))[0], want)
    x[1, 1] = np.inf                            # the dense twin replays both states
    np.testing.assert_array_equal(np.asarray(twice(x))[0], want)


# -- errors ----------------------------------------------------------------------------
def test_python_if_on_a_traced_value_is_a_clear_error():
    @pj.function
    def f(x):
        if pj.sum(x) > 0:
            return x
        return -x
    with pytest.raises(TypeError, match=r"symbolic value .*sum.*|symbolic value"):
        f(np.ones(3))
    assert pj.core.current_state().traces == [] and pj.core.current_state().lifting is None


def test_a_python_if_on_a_traced_comparison_names_the_op():
    v = pj.Variable(2.0)
    f = pj.function(lambda x: x if v > 0 else -x)
    with pytest.raises(TypeError, match=r"truth value .* \(the result of pforjac.greater\) "
                                        r"while tracing.*pforjac.where"):
        f(np.ones(2))


def test_an_error_in_generated_code_names_the_op_and_the_source_line():
    f = pj.function(lambda x, i: pj.exp(x) * 2.0 + pj.gather(x, i))
    x, bad = np.ones(3), np.array([0, 1, 5])
    with pytest.raises(IndexError, match=r"^index 5 is out of bounds") as caught:
        f(x, bad)
    (note,) = caught.value.__notes__             # the error itself is numpy's, unchanged
    assert re.fullmatch(r"in compiled code .*line (\d+) of its source\(\): pforjac.gather of "
                        r"inputs of shapes \(3,\), \(3,\)", note)
    line = int(note.split("line ")[1].split()[0])
    assert "gather_impl" in f.source(x, bad).splitlines()[line - 1]
    assert np.asarray(f(x, np.array([2, 1, 0]))).tolist() == (np.exp(x) * 2 + 1).tolist()


def test_a_leaked_symbolic_value_names_the_finished_trace():
    leak: list = []
    pj.function(lambda x: leak.append(x * 2.0) or x)(np.ones(3))
    with pytest.raises(RuntimeError, match="finished trace was used outside it"):
        pj.function(lambda x: x + leak[0])(np.ones(3))
    with pytest.raises(TypeError, match="belongs to a finished trace"):
        leak[0].numpy()


def test_a_compiled_per_example_jacobian_is_c_ordered_as_eager_ones_are():
    @pj.function
    def per_example(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.softmax(x, axis=-1)
        return g.batch_jacobian(y, x)
    x = np.random.default_rng(0).random((4, 5))
    for _ in range(2):                       # the trace, then the generated code
        out = np.asarray(per_example(x))
        assert out.flags.c_contiguous and out.shape == (4, 5, 5)
