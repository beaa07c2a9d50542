"""Which trace a call of a pforjac.function runs: signatures of arrays, Python values and
Variables, defaults and containers, retraces and their warnings, a bounded number of traces,
and methods bound to their objects (equal, slotted, copied, pickled, temporary ones)."""
import gc
import re
import warnings
import weakref

import numpy as np
import pytest

import pforjac as pj


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


def test_arguments_bind_to_the_signature_with_defaults():
    def f(x, s=2.0):
        return pj.exp(x) * s
    compiled, x = pj.function(f), np.ones((2, 3), np.float32)
    results = [compiled(x), compiled(x, 2.0), compiled(x, s=2.0), compiled(x=x), compiled(x)]
    assert compiled.trace_count == 1
    for r in results:
        np.testing.assert_array_equal(np.asarray(r), np.asarray(f(pj.constant(x))))
    compiled(x, 3.0)
    assert compiled.trace_count == 2
    with pytest.raises(TypeError, match="pforjac.function 'f': too many positional"):
        compiled(x, 1.0, 2.0)
    g = pj.function(lambda x, d=np.full(3, 2.0): x * d)    # a default array is an input too
    assert np.asarray(g(np.ones(3))).tolist() == np.asarray(g(np.ones(3))).tolist() == [2.0] * 3


def test_namedtuple_classes_of_one_name_are_different_signatures():
    import collections
    q1, q2 = (collections.namedtuple("Q", "a") for _ in range(2))
    f = pj.function(lambda q: q.a * (2.0 if type(q) is q1 else 3.0))
    x = np.ones(3, np.float32)
    assert np.asarray(f(q1(x))).tolist() == [2.0] * 3
    assert np.asarray(f(q2(x))).tolist() == [3.0] * 3
    assert f.trace_count == 2


def test_ordered_and_default_dicts_keep_their_kind_and_order():
    import collections
    f = pj.function(lambda d: collections.OrderedDict([("b", d["b"] * 2.0), ("a", d["a"])]))
    out = f(collections.OrderedDict([("b", np.ones(2)), ("a", np.zeros(2))]))
    assert type(out) is collections.OrderedDict and list(out) == ["b", "a"]
    g = pj.function(lambda d: d["x"] + (d["missing"] if "missing" in d else 0.0) + len(d["none"]))
    dd = collections.defaultdict(list, {"x": np.ones(2)})
    assert np.asarray(g(dd)).tolist() == [1.0, 1.0]
    h = pj.function(lambda d: d["x"] * (1.0 if type(d) is dict else 2.0))
    assert float(h({"x": np.ones(())})) == 1.0 and float(h(dd.__class__(list, {"x": np.ones(())}))) == 2.0
    assert h.trace_count == 2


def test_a_changed_default_is_read_at_every_call():
    cfg = {"s": 2.0}

    @pj.function
    def scaled(x, c=cfg):
        return x * c["s"]
    x = np.ones(3, np.float32)
    assert np.asarray(scaled(x)).tolist() == [2.0] * 3
    cfg["s"] = 5.0
    assert np.asarray(scaled(x)).tolist() == np.asarray(scaled(x=x)).tolist() == [5.0] * 3


def test_signature_values_distinguish_signed_zeros_and_share_one_nan():
    f = pj.function(lambda x, s: x / s)
    x = np.ones(2, np.float32)
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.asarray(f(x, 0.0))[0] == np.inf and np.asarray(f(x, -0.0))[0] == -np.inf
        for _ in range(5):
            f(x, float("nan"))
    assert f.trace_count == 3


def test_long_double_python_values_are_keyed_by_every_digit():
    f = pj.function(lambda x, s: x + s)
    x = np.zeros(1, np.longdouble)
    one, tiny = np.longdouble(1), np.longdouble(2.0) ** -60
    f(x, one)
    if one + tiny != one:                       # (where long double is wider than float64)
        assert (np.asarray(f(x, one + tiny)) - 1)[0] == tiny and f.trace_count == 2
    assert np.asarray(f(x, np.longdouble(-0.0)))[0] == 0 and f.trace_count == len({one, one + tiny}) + 1


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


def test_ndarray_subclasses_and_array_likes_are_inputs_as_eager_ops_take_them():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)    # (np.matrix's own)
        m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    assert np.asarray(pj.function(lambda x: x[:, 0] + x[0])(m)).tolist() == [2.0, 5.0]
    masked = np.ma.array([1.0, 2.0, 100.0, -3.0], mask=[0, 0, 1, 0])
    assert float(pj.function(lambda x: pj.max(x))(masked)) == float(pj.max(masked)) == 100.0
    assert float(pj.function(lambda x: x @ x)(masked)) == 10014.0

    class ArrayLike:                       # a torch tensor, a JAX array: read at every call
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a
    f, a = pj.function(lambda x: x * 2.0), ArrayLike(np.ones(3))
    assert np.asarray(f(a)).tolist() == [2.0] * 3
    a.a = a.a * 5
    assert np.asarray(f(a)).tolist() == np.asarray(f(ArrayLike(np.full(3, 5.0)))).tolist() == [10.0] * 3
    assert f.trace_count == 1
    with pytest.raises(TypeError, match="dtype <U1, which is not a number"):
        f(ArrayLike(np.array(["a", "b"])))


def test_callables_without_a_name_and_ufuncs_compile():
    import functools
    import warnings
    f = pj.function(functools.partial(lambda x, s: x * s, s=2.0))
    assert np.asarray(f(np.ones(2))).tolist() == [2.0, 2.0]
    g = pj.function(functools.partial(lambda x, s: x * s))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(6):
            g(np.ones(2), float(k))
    assert [w for w in caught if "has traced 5 times" in str(w.message)]
    assert g.trace_count == 6
    # a numpy ufunc compiles: numpy dispatches it to pforjac's op (pforjac.numpy_dispatch)
    assert np.asarray(pj.function(np.negative)(np.ones(2))).tolist() == [-1.0, -1.0]


# -- retraces --------------------------------------------------------------------------
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


def test_traces_are_bounded_and_the_warning_says_why():
    @pj.function
    def scaled(x, s):
        return x * s
    x = np.ones(3)
    first = weakref.ref(scaled.program(x, -1.0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(600):
            scaled(x, float(k))
    gc.collect()
    assert first() is None                          # the least recently used trace is gone
    messages = [str(w.message) for w in caught]
    assert any(re.search(r"keeps the \d+ most recently used traces", m) for m in messages)
    count = scaled.trace_count
    scaled(x, 599.0)                                 # the most recent one is kept
    assert scaled.trace_count == count


def test_source_inside_the_functions_own_trace_does_not_deadlock():
    @pj.function
    def f(x, debug=False):
        if debug:
            shown.append(f.source(np.ones(2)))
        return x * 2.0
    shown: list = []
    assert np.asarray(f(np.ones(3), True)).tolist() == [2.0] * 3
    assert "np_multiply(" in shown[0]


# -- methods ---------------------------------------------------------------------------
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
        np.testing.assert_array_equal(np.asarray(m.per_example(x)), np.asarray(g.batch_jacobian(y, xc)))
        np.testing.assert_array_equal(np.asarray(m(x)), x @ np.asarray(m.w))
    a.per_example(x)
    assert a.per_example.trace_count == 1              # its own function, none for the repeat
    assert a.per_example is a.per_example and a.per_example is not b.per_example
    a.w.assign(np.eye(3) * 5)
    assert np.asarray(a(x))[0].tolist() == [5.0, 5.0, 5.0]
    assert "matmul" in a.__call__.source(x) and Model.per_example.__name__ == "per_example"


def test_a_compiled_method_of_a_temporary_object():
    class Model:
        def __init__(self, w):
            self.w = w

        @pj.function
        def scaled(self, x):
            return x * self.w
    assert np.asarray(Model(3.0).scaled(np.ones(2))).tolist() == [3.0, 3.0]
    method = Model(4.0).scaled                  # holds its object, as a bound method does
    gc.collect()
    assert np.asarray(method(np.ones(2))).tolist() == [4.0, 4.0] and method.trace_count == 1
    m = Model(5.0)
    assert m.scaled is m.scaled
    gone = weakref.ref(m)
    m.scaled(np.ones(2))
    del m, method
    gc.collect()
    assert gone() is None and Model.scaled._bindings == {}


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
    assert np.asarray(one(x)).tolist() == [1.0] * 3 and np.asarray(five(x)).tolist() == [5.0] * 3
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
    assert np.asarray(Scaled().twice(x)).tolist() == np.asarray(Scaled.twice(x)).tolist() == [2.0] * 3


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
        assert np.asarray(obj.scaled(np.ones(2))).tolist() == [k, k]
        del obj
        gc.collect()
    assert Weak.scaled._bindings == {}               # dropped with the objects
    one, two = Strong(1), Strong(2)
    assert np.asarray(one.scaled(np.ones(2))).tolist() == [1, 1]
    assert np.asarray(two.scaled(np.ones(2))).tolist() == [2, 2]


def test_copies_and_pickles_of_an_object_bind_their_own_compiled_method():
    import copy
    import gc
    import pickle
    a = _Scaler(1.0)
    assert np.asarray(a(np.ones(2))).tolist() == [1.0, 1.0]
    b = copy.copy(a)
    b.w = pj.constant(np.float64(5.0))
    assert np.asarray(b(np.ones(2))).tolist() == [5.0, 5.0]
    c = copy.deepcopy(a)
    c.w = pj.constant(np.float64(7.0))
    assert np.asarray(c(np.ones(3))).tolist() == [7.0] * 3
    d = pickle.loads(pickle.dumps(a))
    assert np.asarray(d(np.ones(2))).tolist() == [1.0, 1.0] and "_pforjac" not in str(vars(d))
    del a
    gc.collect()
    assert np.asarray(b(np.ones(3))).tolist() == [5.0] * 3      # not the freed original's


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
    assert np.asarray(A.twice(np.ones(2))).tolist() == np.asarray(A().twice(np.ones(2))).tolist() == [2.0] * 2
    assert np.asarray(B.twice(np.ones(2))).tolist() == [3.0] * 2
