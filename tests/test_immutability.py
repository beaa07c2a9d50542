"""A tensor's value never changes behind its back: its array is read-only and cannot be made
writable, results never alias the caller's arrays (nor the caller's arrays theirs), and an
op on a Variable is a new value, not a view of the Variable's. An assignment into a tensor
(`t[i] = v`, pforjac.mutation) rebinds the Tensor object and changes no recorded value."""
from __future__ import annotations

import timeit

import numpy as np
import pytest

import pforjac as pj

RNG = np.random.default_rng(24)


def test_a_tensors_array_is_read_only():
    """Writing into `t.numpy()` used to change the tensor and a gradient its tape had
    recorded, and `v.numpy()` a Variable behind assign's checks."""
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
    x = pj.constant(np.random.default_rng(5).normal(size=(64, 64)))
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


# -- no aliasing ------------------------------------------------------------------------
def test_the_callers_arrays_are_never_frozen_or_shared():
    """After the read-only change: an object whose __array__ hands out
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


def test_results_never_alias_what_the_caller_owns():
    x = np.arange(3.0, dtype=np.float32)
    same = pj.function(lambda t: t * pj.ones_like(t))             # simplifies to t itself
    got = np.asarray(same(x))
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


def test_an_op_that_changes_nothing_on_a_variable_keeps_its_value():
    """reshape to its own shape, .T of a vector, v[:], a one-tensor concat, a same-dtype
    cast... returned the Variable itself, so the "result" followed later assigns.
    TensorFlow's reshape of a Variable is a new tensor."""
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


def test_constant_of_a_variable_shares_no_memory_and_assign_add_refuses_while_tracing():
    v = pj.Variable(np.array([1.0, 2.0]))
    assert not np.shares_memory(pj.constant(v).numpy(), v.numpy())
    grow = pj.function(lambda x: (v.assign_add(x), x)[1])
    with pytest.raises(RuntimeError, match="would run once, while tracing"):
        grow(np.ones(2))
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


# -- assignment (pforjac.mutation) -----------------------------------------------------------
def _recorded_values(tape) -> list:
    return [np.array(t.numpy()) for e in tape._entries for t in (*e.inputs, *e.outputs)]


def test_an_assignment_never_changes_a_value_a_tape_recorded():
    """`t[i] = v` and `t += v` rebind the Tensor object; every tensor a tape recorded
    (sources among them) keeps its array, and the handed-out arrays theirs."""
    x = pj.constant(np.array([1.0, 2.0, 3.0]))
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        t = x * 2.0
        view = t[1:]
        y = pj.sin(t)
        handed = t.numpy()
        before = _recorded_values(g)
        t[1] = 0.0
        t += x
        z = t * x
    after = _recorded_values(g)[:len(before)]          # the entries recorded before, in order
    assert len(before) == len(after) >= 3
    for was, now in zip(before, after):
        np.testing.assert_array_equal(now, was)
    np.testing.assert_array_equal(handed, [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(t.numpy(), [3.0, 2.0, 9.0])
    np.testing.assert_array_equal(view.numpy(), [2.0, 9.0])       # a view follows t
    np.testing.assert_allclose(g.jacobian(y, x).numpy(), np.diag(2 * np.cos([2.0, 4.0, 6.0])))
    np.testing.assert_allclose(g.gradient(z, x).numpy(), [6.0, 4.0, 18.0])   # z = [3x0², x1², 3x2²]
