"""pforjac.function: traced once per signature, runs generated numpy code, same results."""
import numpy as np
import pytest

import pforjac as pj

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
    got = f(x).numpy()
    assert got.dtype == np.float32 and got.shape == (2, 2, 2, 2)
    np.testing.assert_array_equal(got, want)
    assert got[0, 0, 0, 0] == 48 and got[1, 1, 1, 1] == 27


@pytest.mark.parametrize("kind", ["jacobian", "batch_jacobian"])
def test_compiled_equals_eager_for_jacobians(kind):
    w1, w2 = pj.constant(RNG.normal(size=(5, 7))), pj.constant(RNG.normal(size=(7, 3)))
    f = pj.function(lambda x: _net(x, w1, w2, kind))
    x = RNG.normal(size=(4, 5))
    np.testing.assert_allclose(f(x).numpy(), _net(pj.constant(x), w1, w2, kind).numpy(),
                               rtol=1e-12, atol=1e-12)


def test_traces_once_per_signature():
    f = pj.function(lambda x, scale: pj.exp(x) * scale)
    f(np.ones((2, 3), np.float32), 2.0)
    f(np.zeros((2, 3), np.float32), 2.0)
    assert f.trace_count == 1
    f(np.ones((4, 3), np.float32), 2.0)       # new shape
    f(np.ones((4, 3), np.float64), 2.0)       # new dtype
    f(np.ones((4, 3), np.float64), 3.0)       # new Python value
    assert f.trace_count == 4
    assert f.experimental_get_tracing_count() == 4


def test_variables_are_read_at_call_time():
    w = pj.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]))

    @pj.function
    def grad(x):
        with pj.GradientTape() as g:
            y = pj.sum((x @ w) ** 2)
        return g.gradient(y, w)
    x = np.array([[1.0, -1.0]])
    first = grad(x).numpy()
    w.assign(w.numpy() * 3)
    second = grad(x).numpy()
    assert grad.trace_count == 1
    with pj.GradientTape() as g:
        y = pj.sum((pj.constant(x) @ w) ** 2)
    np.testing.assert_allclose(second, g.gradient(y, w).numpy())
    np.testing.assert_allclose(second, 3 * first)


def test_python_if_on_a_traced_value_is_a_clear_error():
    @pj.function
    def f(x):
        if pj.sum(x) > 0:
            return x
        return -x
    with pytest.raises(TypeError, match=r"symbolic value .*sum.*|symbolic value"):
        f(np.ones(3))
    assert pj.core.current_state().traces == [] and pj.core.current_state().lifting is None


def test_program_and_source_show_what_runs():
    f = pj.function(lambda x: pj.sin(x) * 2.0)
    x = np.ones((2, 2), np.float32)
    text = str(f.program(x))
    assert "sin" in text and "multiply" in text
    src = f.source(x)
    assert "np.sin(" in src and src.startswith("def ")
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
    np.testing.assert_array_equal(jac.numpy(), [np.diag([2.0, 4.0]), np.diag([6.0, 8.0])])
    np.testing.assert_array_equal(scattered.numpy(), [0.0, 3.0, 0.0])


def test_nan_inputs_give_the_dense_answer():
    f = pj.function(lambda x: _net(x, W1, W2, "batch_jacobian"))
    x = RNG.normal(size=(4, 5))
    x[1, 2] = np.nan
    got, want = f(x).numpy(), _net(pj.constant(x), W1, W2, "batch_jacobian").numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(np.nan_to_num(got), np.nan_to_num(want), rtol=1e-12)


W1, W2 = pj.constant(RNG.normal(size=(5, 7))), pj.constant(RNG.normal(size=(7, 3)))


def test_functional_api_and_pfor_inside_a_compiled_function():
    @pj.function
    def h(x):
        return pj.hessian(lambda v: pj.sum(pj.softplus(v @ W1)), x, vectorize=True)
    x = RNG.normal(size=(5,))
    want = pj.hessian(lambda v: pj.sum(pj.softplus(v @ W1)), pj.constant(x), vectorize=True)
    np.testing.assert_allclose(h(x).numpy(), want.numpy(), rtol=1e-10)

    @pj.function
    def rows(x):
        return pj.pfor(lambda i: pj.exp(x[i]).sum(), x.shape[0])
    np.testing.assert_allclose(rows(x.reshape(5, 1)).numpy(), np.exp(x))


# -- random programs: compiled jacobians equal eager ones ------------------------------
from hypothesis import assume, given, settings  # noqa: E402

from random_programs import finite_program_value, random_programs  # noqa: E402


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
    import pforjac.codegen as codegen
    saved, codegen._IN_PLACE_MIN = codegen._IN_PLACE_MIN, 1
    try:
        _check_compiled_equals_eager(program)
    finally:
        codegen._IN_PLACE_MIN = saved


def _check_compiled_equals_eager(program):
    with np.errstate(all="ignore"):    # a finite output may pass through log(0) = -inf on the way
        _compare_compiled_and_eager(program)


def _compare_compiled_and_eager(program):
    from pforjac.loopcache import caching
    x_np, xb_np = program.x(), program.x((2,) + program.x_shape)
    assume(program.x_shape != () and finite_program_value(program, x_np)
           and all(finite_program_value(program, r) for r in xb_np))
    both = _jacobians(program.function())
    with caching(False):                     # the eager reference runs no generated code
        want = [t.numpy() for t in both(pj.constant(x_np), pj.constant(xb_np))]
    compiled = pj.function(both)
    for _ in range(2):
        got = [t.numpy() for t in compiled(x_np, xb_np)]
        for a, b in zip(got, want):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)        # bit for bit (NaN where eager has NaN)
    assert compiled.trace_count == 1
