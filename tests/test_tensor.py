"""Tensor, constant and Variable: dtype rules, the numpy-like API, operators, errors."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj


# -- dtype rules -------------------------------------------------------------------------
@pytest.mark.parametrize("value, dtype", [
    (1.5, np.float32), ([1.5, 2.0], np.float32), ([[1.0], [2.0]], np.float32), ((1.0, 2), np.float32),
    (3, np.int32), ([1, 2], np.int32), (True, np.bool_), ([True, False], np.bool_),
    (np.arange(3), np.int64), (np.arange(3, dtype=np.int32), np.int32),
    (np.ones(2), np.float64), (np.ones(2, np.float32), np.float32), (np.ones(2, np.float16), np.float16),
    (np.float64(2.0), np.float64), (np.float32(2.0), np.float32), (np.int64(2), np.int64),
])
@pytest.mark.parametrize("make", [pj.constant, pj.Variable], ids=["constant", "Variable"])
def test_dtype_of_converted_values(make, value, dtype):
    t = make(value)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), np.asarray(value))


@pytest.mark.parametrize("make", [pj.constant, pj.Variable], ids=["constant", "Variable"])
def test_explicit_dtype(make):
    assert make([1.0, 2.0], dtype=np.float64).dtype == np.float64
    assert make([1, 2], dtype="float32").dtype == np.float32
    assert make(np.ones(2), dtype=np.float32).dtype == np.float32


def test_constant_of_tensor_is_itself_or_a_cast():
    x = pj.constant([1.0, 2.0])
    assert pj.constant(x) is x
    assert pj.constant(x, dtype=np.float64).dtype == np.float64


def test_constant_copies_numpy_arrays_and_np_array_copies_tensors():
    a = np.array([1.0, 2.0])
    t = pj.constant(a)
    a[0] = 5.0
    assert t.numpy()[0] == 1.0
    b = np.array(t)
    b[1] = 7.0
    assert t.numpy()[1] == 2.0
    assert np.asarray(t) is t.numpy()
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="copy=False"):
        t.__array__(np.float32, copy=False)


def test_variable_from_tensor_and_array_copies():
    a = np.array([1.0, 2.0])
    v = pj.Variable(a)
    a[0] = 5.0
    assert v.numpy()[0] == 1.0
    assert pj.Variable(pj.constant([1.0, 2.0])).dtype == np.float32


@pytest.mark.parametrize("bad", [object(), [1.0, "a"], {"a": 1.0}, np.array([1.0, None]),
                                 np.array(["a", "b"]), np.str_("a")])
def test_unconvertible_value_is_type_error(bad):
    with pytest.raises(TypeError, match="cannot convert"):
        pj.constant(bad)
    if isinstance(bad, np.ndarray):
        with pytest.raises(TypeError, match="not a number"):
            pj.function(lambda x: x)(bad)


def test_compiled_function_refuses_a_non_numeric_array_naming_it():
    with pytest.raises(TypeError, match="input 0 .* dtype object"):
        pj.function(lambda x: x * 2.0)(np.array([1.0, None], dtype=object))


def test_python_ints_too_large_for_int32_become_int64():
    """As TensorFlow: `constant(2**40)` wrapped around to 0."""
    assert pj.constant(3).dtype == np.int32
    for value, want in ((2 ** 40, 2 ** 40), (2 ** 31, 2 ** 31), ([3_000_000_000, 1], [3_000_000_000, 1]),
                        (-(2 ** 31) - 1, -(2 ** 31) - 1)):
        for t in (pj.constant(value), pj.Variable(value)):
            assert t.dtype == np.int64
            np.testing.assert_array_equal(t.numpy(), want)
    assert pj.constant(-(2 ** 31)).dtype == np.int32


# -- Python numbers and lists next to a tensor take its dtype (weak typing) -----------------
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


# -- Variable -----------------------------------------------------------------------------
def test_variable_assign_and_assign_add():
    v = pj.Variable([1.0, 2.0])
    assert v.assign([3.0, 4.0]) is v
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])
    v.assign_add([1.0, 1.0])
    v.assign_add(pj.constant([0.5, 0.5]))
    v.assign_sub(1.0)
    np.testing.assert_array_equal(v.numpy(), [3.5, 4.5])
    assert v.dtype == np.float32


def test_variable_assign_keeps_dtype_and_checks_shape():
    v = pj.Variable(np.zeros(2))
    v.assign(pj.constant([1.0, 2.0]))
    assert v.dtype == np.float64
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(2,\)"):
        v.assign([1.0, 2.0, 3.0])


@pytest.mark.parametrize("dtype, bad", [(np.float32, None), (np.float32, [None, None]),
                                        (np.float32, np.complex64(3 + 4j)), (np.float32, "1.0"),
                                        (np.int32, [1.9, -2.7]), (np.int32, 0.5)])
def test_variable_assign_refuses_a_value_of_another_kind(dtype, bad):
    v = pj.Variable(np.zeros(2 if isinstance(bad, list) else (), dtype))
    before = v.numpy().copy()
    with pytest.raises(TypeError, match=f"holds {np.dtype(dtype).name}.*cast it first"):
        v.assign(bad)
    if not isinstance(bad, list) and bad is not None and not isinstance(bad, str):
        with pytest.raises(TypeError):
            v.assign_add(bad)
    np.testing.assert_array_equal(v.numpy(), before)       # nothing changed


def test_variable_assign_casts_within_a_kind():
    v, i = pj.Variable(np.zeros(2, np.float32)), pj.Variable(np.zeros(2, np.int32))
    v.assign(np.array([1.5, 2.5]))           # float64 -> float32, as a weight update
    i.assign([1, 2])
    v.assign_add(i)                           # int -> float
    assert (v.dtype, i.dtype) == (np.float32, np.int32)
    np.testing.assert_array_equal(v.numpy(), [2.5, 4.5])


def test_ops_on_variable_see_its_current_value():
    v = pj.Variable(2.0)
    y1 = v * 3.0
    v.assign(5.0)
    assert float(y1) == 6.0 and float(v * 3.0) == 15.0
    assert type(v * 1.0) is pj.Tensor


def test_variable_repr_and_attributes():
    v = pj.Variable([1.0, 2.0], name="w", trainable=False)
    assert v.name == "w" and v.trainable is False
    assert repr(v).startswith("<pforjac.Variable 'w' shape=(2,) dtype=float32")


@pytest.mark.parametrize("watch_accessed, trainable, watched", [
    (True, True, True), (True, False, False), (False, True, False), (False, False, False)])
def test_tapes_watch_accessed_trainable_variables(watch_accessed, trainable, watched):
    v = pj.Variable([1.0, 2.0], trainable=trainable)
    with pj.GradientTape(watch_accessed_variables=watch_accessed) as tape:
        y = pj.sum(v * v)
    assert tape.watched_variables() == ((v,) if watched else ())
    if watched:
        np.testing.assert_allclose(tape.gradient(y, v).numpy(), [2.0, 4.0])
    else:
        with pytest.raises(ValueError, match="not watched"):
            tape.gradient(y, v)


def test_integer_variable_is_listed_but_has_no_gradient():
    v = pj.Variable([1, 2])
    with pj.GradientTape() as tape:
        y = v * 2
    assert tape.watched_variables() == (v,)      # as TensorFlow's tape lists it
    assert tape.gradient(y, v) is None


# -- Tensor API ---------------------------------------------------------------------------
@pytest.fixture
def t():
    return pj.constant([[1.0, 2.0], [3.0, 4.0]])


def test_attributes(t):
    assert t.shape == (2, 2) and isinstance(t.shape, tuple)
    assert t.dtype == np.float32 and isinstance(t.dtype, np.dtype)
    assert t.ndim == 2 and t.size == 4 and len(t) == 2
    assert isinstance(t.numpy(), np.ndarray)
    np.testing.assert_array_equal(np.asarray(t), [[1.0, 2.0], [3.0, 4.0]])
    assert np.asarray(t).dtype == np.float32
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert float(pj.constant(2.5)) == 2.5 and int(pj.constant(3)) == 3
    assert bool(pj.constant(True))
    assert [r.shape for r in t] == [(2,), (2,)]


def test_repr(t):
    text = repr(t)
    assert text.startswith("pforjac.Tensor(") and text.endswith("shape=(2, 2), dtype=float32)")
    assert "[[1. 2.]" in text
    assert repr(pj.constant(2.0)) == "pforjac.Tensor(2.0, shape=(), dtype=float32)"
    assert repr(pj.constant([1, 2])) == "pforjac.Tensor([1 2], shape=(2,), dtype=int32)"
    assert str(t) == repr(t)


def test_scalar_len_and_iteration_are_type_errors():
    with pytest.raises(TypeError):
        len(pj.constant(1.0))
    with pytest.raises(TypeError):
        iter(pj.constant(1.0))


A = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
B = np.array([[0.5, -1.0], [2.0, 1.5]], dtype=np.float32)

OPERATORS = [
    ("add", lambda a, b: a + b), ("sub", lambda a, b: a - b), ("mul", lambda a, b: a * b),
    ("div", lambda a, b: a / b), ("pow", lambda a, b: abs(a) ** b), ("matmul", lambda a, b: a @ b),
]


@pytest.mark.parametrize("name, op", OPERATORS, ids=[o[0] for o in OPERATORS])
def test_binary_operators_match_numpy(name, op):
    expected = op(A, B)
    for a, b in [(pj.constant(A), pj.constant(B)), (pj.constant(A), B), (A, pj.constant(B))]:
        out = op(a, b)
        assert isinstance(out, pj.Tensor) and out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("name, op", OPERATORS[:5], ids=[o[0] for o in OPERATORS[:5]])
@pytest.mark.parametrize("scalar", [2.0, 3])
def test_python_scalars_on_either_side_keep_float32(name, op, scalar):
    t = pj.constant(A)
    for out, expected in [(op(t, scalar), op(A, np.float32(scalar))),
                          (op(scalar, t), op(np.float32(scalar), A))]:
        assert out.dtype == np.float32, f"{name} with {scalar!r} gave {out.dtype}"
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_python_scalar_with_float64_and_int_tensors():
    assert (pj.constant(np.ones(2)) * 2.0).dtype == np.float64
    assert (pj.constant([1, 2]) + 1).dtype == np.int32
    assert (2 * pj.constant([1, 2])).dtype == np.int32


def test_numpy_array_operand_promotes_like_numpy():
    assert (pj.constant(A) + np.ones(2)).dtype == np.float64
    assert (np.ones(2) + pj.constant(A)).dtype == np.float64


def test_unary_operators(t):
    np.testing.assert_array_equal((-t).numpy(), -A)
    np.testing.assert_array_equal(abs(-t).numpy(), A)
    np.testing.assert_array_equal((+t).numpy(), A)


@pytest.mark.parametrize("op, expected", [
    (lambda t: t > 2.0, A > 2.0), (lambda t: t >= 2.0, A >= 2.0), (lambda t: t < 2, A < 2),
    (lambda t: t <= 2.0, A <= 2.0), (lambda t: t == 2.0, A == 2.0), (lambda t: t != 2.0, A != 2.0),
    (lambda t: 2.0 < t, 2.0 < A), (lambda t: t == pj.constant(B), A == B),
    (lambda t: (t > 1.0) & (t < 4.0), (A > 1.0) & (A < 4.0)), (lambda t: ~(t > 2.0), ~(A > 2.0)),
])
def test_comparisons_give_bool_tensors(t, op, expected):
    out = op(t)
    assert isinstance(out, pj.Tensor) and out.dtype == np.bool_
    np.testing.assert_array_equal(out.numpy(), expected)


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("key", [
    1, -1, (1, 0), (slice(1, None), 0), slice(None, None, -1), (None, Ellipsis), (Ellipsis, 1),
    (slice(None), slice(None, None, -2)), (0, None, slice(1, 3), Ellipsis), (Ellipsis, None),
    (slice(-2, None), slice(None), slice(3, 0, -1)), np.array([1, 0, 1]), (slice(None), np.array([2, -1])),
], ids=str)
def test_indexing_matches_numpy(key):
    out = pj.constant(X)[key]
    np.testing.assert_array_equal(out.numpy(), X[key])
    assert out.dtype == np.float32


def test_indexing_with_an_index_tensor_and_an_int_tensor(t):
    np.testing.assert_array_equal(t[pj.constant([1, 1, 0])].numpy(), A[[1, 1, 0]])
    np.testing.assert_array_equal(t[pj.constant(1)].numpy(), A[1])


@pytest.mark.parametrize("key, error", [
    ((0, 0, 0), "too many indices"), (5, "out of bounds|index"), ((Ellipsis, Ellipsis), "single ellipsis"),
], ids=str)
def test_bad_indexing_is_index_error(t, key, error):
    with pytest.raises(IndexError, match=error):
        t[key]


@pytest.mark.parametrize("method, expected", [
    (lambda t: t.sum(axis=1), A.sum(axis=1)), (lambda t: t.sum(), A.sum()),
    (lambda t: t.mean(), A.mean()), (lambda t: t.mean(axis=0, keepdims=True), A.mean(axis=0, keepdims=True)),
    (lambda t: t.max(axis=1), A.max(axis=1)), (lambda t: t.min(), A.min()), (lambda t: t.prod(axis=0), A.prod(axis=0)),
    (lambda t: t.exp(), np.exp(A)), (lambda t: t.log(), np.log(A)), (lambda t: t.sqrt(), np.sqrt(A)),
    (lambda t: t.reshape(4), A.reshape(4)), (lambda t: t.reshape(1, 4), A.reshape(1, 4)),
    (lambda t: t.reshape((4, 1)), A.reshape((4, 1))), (lambda t: t.reshape(-1), A.reshape(-1)),
    (lambda t: t.T, A.T), (lambda t: t.transpose(), A.T), (lambda t: t.transpose(1, 0), A.T),
    (lambda t: t.flatten(), A.flatten()), (lambda t: t.astype(np.float64), A.astype(np.float64)),
    (lambda t: t.squeeze(), A), (lambda t: t.expand_dims(0), A[None]), (lambda t: t.dot(t), A @ A),
])
def test_numpy_named_methods(t, method, expected):
    out = method(t)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    assert out.dtype == expected.dtype and out.shape == expected.shape


# -- errors name the op and the shapes -------------------------------------------------------------
@pytest.mark.parametrize("op, name, shapes", [
    (lambda a, b: pj.add(a, b), "add", ((2, 3), (4,))),
    (lambda a, b: a + b, "add", ((2, 3), (4,))),
    (lambda a, b: a * b, "multiply", ((2, 3), (3, 2))),
    (lambda a, b: b - a, "subtract", ((2, 3), (4,))),
    (lambda a, b: pj.maximum(a, b), "maximum", ((2, 3), (4,))),
    (lambda a, b: a @ b, "matmul", ((2, 3), (4, 3))),
    (lambda a, b: pj.concat([a, b], axis=0), "concat", ((2, 3), (2, 4))),
])
def test_shape_errors_name_op_and_shapes(op, name, shapes):
    a, b = pj.constant(np.ones(shapes[0])), pj.constant(np.ones(shapes[1]))
    with pytest.raises(ValueError) as info:
        op(a, b)
    message = str(info.value)
    assert name in message
    for s in shapes:
        assert str(s) in message, f"{message!r} lacks {s}"


def test_shape_errors_under_a_tape_too():
    a = pj.constant(np.ones((2, 3)))
    with pj.GradientTape() as tape:
        tape.watch(a)
        with pytest.raises(ValueError, match=r"add.*\(2, 3\).*\(4,\)"):
            a + pj.constant(np.ones(4))


@pytest.mark.parametrize("op, match", [
    (lambda x: pj.reshape(x, (4, 2)), r"reshape 6 elements into shape \(4, 2\)"),
    (lambda x: pj.sum(x, axis=2), "axis 2 is out of range"),
    (lambda x: pj.transpose(x, (0, 0)), r"transpose: perm=\(0, 0\) is not a permutation.*\(2, 3\)"),
    (lambda x: pj.squeeze(x, axis=0), "size 2, not 1"),
    (lambda x: pj.broadcast_to(x, (3, 3)), r"broadcast_to.*\(2, 3\).*shape=\(3, 3\)"),
    (lambda x: pj.split(x, 2, axis=1), "3 can't be split into 2"),
])
def test_shape_op_errors_are_clear(op, match):
    with pytest.raises(ValueError, match=match):
        op(pj.constant(np.ones((2, 3))))


@pytest.mark.parametrize("op", [lambda t: t & t, lambda t: t | 1, lambda t: ~t,
                                lambda t: (t > 0) & t])
@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.float32])
def test_and_or_invert_refuse_what_is_not_bool(op, dtype):
    """numpy's `&`, `|`, `~` are bitwise on integers (~1 == -2) and refuse floats; these
    were logical_and/or/not on any dtype (~[1, 2, 6] gave [False, False, False])."""
    with pytest.raises(TypeError, match="bool tensors only"):
        op(pj.constant(np.array([1, 2, 6], dtype)))


def test_all_python_operands_of_mixed_kinds_take_one_default_dtype():
    """Python floats next to Python ints: float32 for both (TensorFlow's default and JAX's
    weak float), not float32 values promoted with an int32 to a float64 that holds them
    rounded (np.select([c], [[0.1, 0.2]]) was float64 0.10000000149)."""
    c = pj.constant([True, False])
    for got in (pj.where(c, [0.1, 0.2], 0), pj.add(1, 2.5), pj.concat([[0.1], [1]], 0)):
        assert got.dtype == np.float32
    assert pj.where(c, [0.1, 0.2], 0).numpy()[0] == np.float32(0.1)
    # through numpy's functions a list is an array, float64 as numpy reads it (NEP 50)
    got = np.select([c], [[0.1, 0.2]])
    assert got.dtype == np.float64 and got.numpy()[0] == 0.1
    assert pj.add(True, 2).dtype == np.int32 and pj.add(2 ** 40, 1).dtype == np.int64
