"""pforjac.function: traced once per signature, runs generated numpy code, same results."""
import re
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.loopcache import same_bits

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
        got = [t.numpy() for t in compiled(x_np, xb_np)]
        for a, b in zip(got, want):
            assert same_bits(a, b), (a, b)      # bit for bit, zeros' signs and NaNs included
    assert compiled.trace_count == 1


# -- session 6 hunt: compiled functions against tf.function / jax.jit users' expectations --
def test_reading_a_variables_value_while_tracing_raises_instead_of_freezing_it():
    v = pj.Variable(2.0, name="scale")
    for read in (lambda: v.numpy(), lambda: float(v), lambda: np.asarray(v)):
        f = pj.function(lambda x, read=read: x * read())
        with pytest.raises(TypeError, match="Variable 'scale'.*reads Variables when it runs"):
            f(np.ones(2))
    f = pj.function(lambda x: x * v)              # what the message says to do
    assert f(np.ones(2)).numpy().tolist() == [2.0, 2.0]
    v.assign(5.0)
    assert f(np.ones(2)).numpy().tolist() == [5.0, 5.0]


def test_a_compiled_method_binds_its_object():
    class Model:
        def __init__(self, scale):
            self.w = pj.Variable(np.eye(3) * scale)

        @pj.function
        def per_example(self, x):
            with pj.GradientTape() as g:
                g.watch(x)
                y = pj.tanh(x @ self.w)
            return g.batch_jacobian(y, x)

        @pj.function
        def __call__(self, x):
            return x @ self.w
    a, b, x = Model(1.0), Model(2.0), np.ones((2, 3))
    for m in (a, b):
        with pj.GradientTape() as g:
            xc = pj.constant(x)
            g.watch(xc)
            y = pj.tanh(xc @ m.w)
        np.testing.assert_array_equal(m.per_example(x).numpy(), g.batch_jacobian(y, xc).numpy())
        np.testing.assert_array_equal(m(x).numpy(), x @ m.w.numpy())
    a.per_example(x)
    assert a.per_example.trace_count == 1              # its own function, none for the repeat
    assert a.per_example is a.per_example and a.per_example is not b.per_example
    a.w.assign(np.eye(3) * 5)
    assert a(x).numpy()[0].tolist() == [5.0, 5.0, 5.0]
    assert "matmul" in a.__call__.source(x) and Model.per_example.__name__ == "per_example"


def test_arguments_bind_to_the_signature_with_defaults():
    def f(x, s=2.0):
        return pj.exp(x) * s
    compiled, x = pj.function(f), np.ones((2, 3), np.float32)
    results = [compiled(x), compiled(x, 2.0), compiled(x, s=2.0), compiled(x=x), compiled(x)]
    assert compiled.trace_count == 1
    for r in results:
        np.testing.assert_array_equal(r.numpy(), f(pj.constant(x)).numpy())
    compiled(x, 3.0)
    assert compiled.trace_count == 2
    with pytest.raises(TypeError, match="pforjac.function 'f': too many positional"):
        compiled(x, 1.0, 2.0)
    g = pj.function(lambda x, d=np.full(3, 2.0): x * d)    # a default array is an input too
    assert g(np.ones(3)).numpy().tolist() == g(np.ones(3)).numpy().tolist() == [2.0] * 3


def test_namedtuple_classes_of_one_name_are_different_signatures():
    import collections
    q1, q2 = (collections.namedtuple("Q", "a") for _ in range(2))
    f = pj.function(lambda q: q.a * (2.0 if type(q) is q1 else 3.0))
    x = np.ones(3, np.float32)
    assert f(q1(x)).numpy().tolist() == [2.0] * 3
    assert f(q2(x)).numpy().tolist() == [3.0] * 3
    assert f.trace_count == 2


def test_range_indices_compile():
    x = np.arange(12.0).reshape(3, 4)

    def jac(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = x[range(1, 3)] ** 2
        return g.jacobian(y, x)
    assert same_bits(pj.function(jac)(x).numpy(), jac(pj.constant(x)).numpy())
    assert pj.function(lambda x: x[range(2)])(x).numpy().tolist() == x[:2].tolist()


def test_outer_product_with_ones_keeps_the_products_signs_and_gemm():
    """ones(n,1) @ b is 0 + 1*b: +0 where b is -0 (1/that is +inf); and where a product
    reads the result it stays a product (a broadcast view takes numpy's other matmul path)."""
    f = lambda x: 1.0 / (pj.ones((3, 1), np.float64) @ (x * 0.0)[:1])   # noqa: E731
    x = -np.ones((3, 2))
    with pj.compiled.loopcache.caching(False), np.errstate(divide="ignore"):
        want = f(pj.constant(x)).numpy()
        got = pj.function(f)(x).numpy()
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
    assert same_bits(pj.function(per_example)(x).numpy(), want)


def test_retracing_for_python_values_warns_once_at_the_users_line():
    import warnings
    f = pj.function(lambda x, s: pj.exp(x) * s)
    x = np.ones(3, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for s in range(12):
            f(x, float(s))
        f(np.ones(4, np.float32), 1.0)              # a new shape: not what the warning is about
    assert f.trace_count == 13
    (w,) = [w for w in caught if "pforjac.function" in str(w.message)]
    assert "traced 5 times" in str(w.message) and "4.0" in str(w.message)
    assert "np.asarray(s, np.float32)" in str(w.message) and w.filename == __file__
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = pj.function(lambda x: pj.exp(x))
        for n in range(1, 12):                      # new shapes each call: no warning
            g(np.ones(n, np.float32))
    assert not [w for w in caught if "pforjac.function" in str(w.message)]


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
    assert f(x, np.array([2, 1, 0])).numpy().tolist() == (np.exp(x) * 2 + 1).tolist()


def test_variable_arguments_are_traced_by_shape_and_dtype_and_read_when_called():
    """As current TensorFlow: a new Variable each call does not trace again."""
    import warnings
    f = pj.function(lambda x, v: x * v)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(7):
            assert f(np.ones(2), pj.Variable(float(k))).numpy().tolist() == [float(k)] * 2
    assert f.trace_count == 1 and not [w for w in caught if "pforjac.function" in str(w.message)]
    w = pj.Variable(2.0)
    g = pj.function(lambda x, v: x * v + w)          # the same Variable through a closure
    assert g(np.ones(2), w).numpy().tolist() == [4.0, 4.0]
    assert g(np.ones(2), pj.Variable(10.0)).numpy().tolist() == [12.0, 12.0]
    h = pj.function(lambda a, b: a * 1.0 + b * 10.0)
    a, b = pj.Variable(1.0), pj.Variable(2.0)
    assert float(h(a, a)) == 11.0 and float(h(a, b)) == 21.0 and h.trace_count == 2

    @pj.function
    def grad(x, v):
        with pj.GradientTape() as tape:
            y = pj.sum((x * v) ** 2)
        return tape.gradient(y, v)
    v1, v2, x = pj.Variable(np.array([1.0, 2.0])), pj.Variable(np.array([3.0, 4.0])), np.ones(2)
    assert grad(x, v1).numpy().tolist() == [2.0, 4.0]
    assert grad(x, v2).numpy().tolist() == [6.0, 8.0]
    v1.assign(np.array([5.0, 5.0]))
    assert grad(x, v1).numpy().tolist() == [10.0, 10.0] and grad.trace_count == 1
    assert pj.function(lambda v: v * 1.0)(pj.Variable(np.ones(3, np.float32))).dtype == np.float32


def test_methods_of_equal_objects_are_compiled_apart_and_freed_with_them():
    import dataclasses
    import gc
    import weakref

    @dataclasses.dataclass
    class Layer:                                 # == by fields, unhashable
        name: str
        w: object = dataclasses.field(compare=False)

        @pj.function
        def __call__(self, x):
            return x * self.w
    x = np.ones(3, np.float32)
    one, five = Layer("d", pj.constant(np.float32([1] * 3))), Layer("d", pj.constant(np.float32([5] * 3)))
    assert one == five
    assert one(x).numpy().tolist() == [1.0] * 3 and five(x).numpy().tolist() == [5.0] * 3
    gone = weakref.ref(one)
    gc.disable()                                 # freed by reference counting: no cycle
    try:
        del one
        assert gone() is None
    finally:
        gc.enable()

    class Scaled:
        @pj.function
        @staticmethod
        def twice(x):
            return x * 2.0
    assert Scaled().twice(x).numpy().tolist() == Scaled.twice(x).numpy().tolist() == [2.0] * 3


def test_a_changed_default_is_read_at_every_call():
    cfg = {"s": 2.0}

    @pj.function
    def scaled(x, c=cfg):
        return x * c["s"]
    x = np.ones(3, np.float32)
    assert scaled(x).numpy().tolist() == [2.0] * 3
    cfg["s"] = 5.0
    assert scaled(x).numpy().tolist() == scaled(x=x).numpy().tolist() == [5.0] * 3


def test_callables_without_a_name_and_ufuncs_compile():
    import functools
    import warnings
    f = pj.function(functools.partial(lambda x, s: x * s, s=2.0))
    assert f(np.ones(2)).numpy().tolist() == [2.0, 2.0]
    g = pj.function(functools.partial(lambda x, s: x * s))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(6):
            g(np.ones(2), float(k))
    assert [w for w in caught if "has traced 5 times" in str(w.message)]
    assert g.trace_count == 6
    # a numpy ufunc compiles: numpy dispatches it to pforjac's op (pforjac.numpy_dispatch)
    assert pj.function(np.negative)(np.ones(2)).numpy().tolist() == [-1.0, -1.0]


def test_a_python_if_on_a_traced_comparison_names_the_op():
    v = pj.Variable(2.0)
    f = pj.function(lambda x: x if v > 0 else -x)
    with pytest.raises(TypeError, match=r"truth value .* \(the result of pforjac.greater\) "
                                        r"while tracing.*pforjac.where"):
        f(np.ones(2))


def test_compiled_methods_of_slotted_objects():
    import gc

    class Weak:
        __slots__ = ("w", "__weakref__")

        def __init__(self, w):
            self.w = pj.constant(np.float64(w))

        @pj.function
        def scaled(self, x):
            return x * self.w

    class Strong:
        __slots__ = ("w",)

        def __init__(self, w):
            self.w = pj.constant(np.float64(w))

        @pj.function
        def scaled(self, x):
            return x * self.w
    for k in range(4):                              # ids get reused: each object its own
        obj = Weak(k)
        assert obj.scaled(np.ones(2)).numpy().tolist() == [k, k]
        del obj
        gc.collect()
    assert Weak.scaled._bindings == {}               # dropped with the objects
    one, two = Strong(1), Strong(2)
    assert one.scaled(np.ones(2)).numpy().tolist() == [1, 1]
    assert two.scaled(np.ones(2)).numpy().tolist() == [2, 2]


# -- a hunt through pforjac.function's Python-level semantics (tf.function / jax.jit) -------
def test_ndarray_subclasses_and_array_likes_are_inputs_as_eager_ops_take_them():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)    # (np.matrix's own)
        m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    assert pj.function(lambda x: x[:, 0] + x[0])(m).numpy().tolist() == [2.0, 5.0]
    masked = np.ma.array([1.0, 2.0, 100.0, -3.0], mask=[0, 0, 1, 0])
    assert float(pj.function(lambda x: pj.max(x))(masked)) == float(pj.max(masked)) == 100.0
    assert float(pj.function(lambda x: x @ x)(masked)) == 10014.0

    class ArrayLike:                       # a torch tensor, a JAX array: read at every call
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a
    f, a = pj.function(lambda x: x * 2.0), ArrayLike(np.ones(3))
    assert f(a).numpy().tolist() == [2.0] * 3
    a.a = a.a * 5
    assert f(a).numpy().tolist() == f(ArrayLike(np.full(3, 5.0))).numpy().tolist() == [10.0] * 3
    assert f.trace_count == 1
    with pytest.raises(TypeError, match="dtype <U1, which is not a number"):
        f(ArrayLike(np.array(["a", "b"])))


def test_copies_and_pickles_of_an_object_bind_their_own_compiled_method():
    import copy
    import gc
    import pickle
    a = _Scaler(1.0)
    assert a(np.ones(2)).numpy().tolist() == [1.0, 1.0]
    b = copy.copy(a)
    b.w = pj.constant(np.float64(5.0))
    assert b(np.ones(2)).numpy().tolist() == [5.0, 5.0]
    c = copy.deepcopy(a)
    c.w = pj.constant(np.float64(7.0))
    assert c(np.ones(3)).numpy().tolist() == [7.0] * 3
    d = pickle.loads(pickle.dumps(a))
    assert d(np.ones(2)).numpy().tolist() == [1.0, 1.0] and "_pforjac" not in str(vars(d))
    del a
    gc.collect()
    assert b(np.ones(3)).numpy().tolist() == [5.0] * 3      # not the freed original's


class _Scaler:                                 # (module level: pickle finds the class)
    def __init__(self, w):
        self.w = np.float64(w)

    @pj.function
    def __call__(self, x):
        return x * self.w


def test_classmethods_compile_per_class():
    class A:
        @classmethod
        @pj.function
        def twice(cls, x):
            return x * (2.0 if cls is A else 3.0)

    class B(A):
        pass
    assert A.twice(np.ones(2)).numpy().tolist() == A().twice(np.ones(2)).numpy().tolist() == [2.0] * 2
    assert B.twice(np.ones(2)).numpy().tolist() == [3.0] * 2


def test_source_inside_the_functions_own_trace_does_not_deadlock():
    @pj.function
    def f(x, debug=False):
        if debug:
            shown.append(f.source(np.ones(2)))
        return x * 2.0
    shown: list = []
    assert f(np.ones(3), True).numpy().tolist() == [2.0] * 3
    assert "np.multiply" in shown[0]


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
    out = per_example(x).numpy()
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
    np.testing.assert_array_equal(twice(x).numpy()[0], want)
    x[1, 1] = np.inf                            # the dense twin replays both states
    np.testing.assert_array_equal(twice(x).numpy()[0], want)


def test_long_double_python_values_are_keyed_by_every_digit():
    f = pj.function(lambda x, s: x + s)
    x = np.zeros(1, np.longdouble)
    one, tiny = np.longdouble(1), np.longdouble(2.0) ** -60
    f(x, one)
    if one + tiny != one:                       # (where long double is wider than float64)
        assert (f(x, one + tiny).numpy() - 1)[0] == tiny and f.trace_count == 2
    assert f(x, np.longdouble(-0.0)).numpy()[0] == 0 and f.trace_count == len({one, one + tiny}) + 1


def test_a_leaked_symbolic_value_names_the_finished_trace():
    leak: list = []
    pj.function(lambda x: leak.append(x * 2.0) or x)(np.ones(3))
    with pytest.raises(RuntimeError, match="finished trace was used outside it"):
        pj.function(lambda x: x + leak[0])(np.ones(3))
    with pytest.raises(TypeError, match="belongs to a finished trace"):
        leak[0].numpy()


def test_ordered_and_default_dicts_keep_their_kind_and_order():
    import collections
    f = pj.function(lambda d: collections.OrderedDict([("b", d["b"] * 2.0), ("a", d["a"])]))
    out = f(collections.OrderedDict([("b", np.ones(2)), ("a", np.zeros(2))]))
    assert type(out) is collections.OrderedDict and list(out) == ["b", "a"]
    g = pj.function(lambda d: d["x"] + (d["missing"] if "missing" in d else 0.0) + len(d["none"]))
    dd = collections.defaultdict(list, {"x": np.ones(2)})
    assert g(dd).numpy().tolist() == [1.0, 1.0]
    h = pj.function(lambda d: d["x"] * (1.0 if type(d) is dict else 2.0))
    assert float(h({"x": np.ones(())})) == 1.0 and float(h(dd.__class__(list, {"x": np.ones(())}))) == 2.0
    assert h.trace_count == 2


def test_numpy_reductions_of_tensors_call_their_methods():
    t = pj.constant([[1.0, 2.0], [3.0, 4.0]])
    assert [float(np.sum(t)), float(np.mean(t)), float(np.max(t)), float(np.min(t)),
            float(np.prod(t))] == [10.0, 2.5, 4.0, 1.0, 24.0]
    assert np.sum(t, axis=0).numpy().tolist() == [4.0, 6.0] and np.sum(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError, match="sum: pforjac tensors are immutable.*got out"):
        np.sum(t, out=np.zeros(()))
    with pytest.raises(TypeError, match="max: .*got initial"):
        np.max(t, initial=3.0)
    with pj.GradientTape() as g:
        g.watch(t)
        y = np.sum(t * t)
    assert g.gradient(y, t).numpy().tolist() == [[2.0, 4.0], [6.0, 8.0]]


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
