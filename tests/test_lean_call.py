"""pforjac.function's lean call path (compiled/lean_call.py): calls of plain numpy arrays
and floats run straight into the compiled code, and never take an entry made for another
dtype, shape, memory layout, backend or set of rules; Tensors, tapes and traces keep the
general path's behaviour."""
import collections

import numpy as np
import pytest

import pforjac as pj
from pforjac import core
from pforjac.compiled import lean_call
from pforjac.compiled.numba_backend import available as numba_available

pnp = pj.numpy
RNG = np.random.default_rng(11)


def _rosen(x):
    return pnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _rosen_grad_by_hand(x):
    g = np.zeros_like(x)
    d = x[1:] - x[:-1] ** 2
    g[:-1] = -400.0 * x[:-1] * d - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * d
    return g


def _lean_hits(f, *args):
    """The result of a call that must have run through a lean entry (made by the call
    before), checked by the entry being there and no new trace."""
    before = f.trace_count
    out = f(*args)
    assert f._lean.get(pj.compiled.lean_call.lean_key(args)) is not None
    assert f.trace_count == before
    return out


BACKENDS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not numba_available(), reason="numba is not installed"))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_in_numpy_out_read_only(backend):
    f = pj.function(pj.grad(_rosen), backend=backend)
    x = np.linspace(-1.0, 1.5, 20)
    first = f(x)
    out = _lean_hits(f, x)
    assert type(out) is np.ndarray and out.dtype == np.float64 and not out.flags.writeable
    with pytest.raises(ValueError):
        out.flags.writeable = True
    np.testing.assert_allclose(out, _rosen_grad_by_hand(x), rtol=1e-12)
    np.testing.assert_array_equal(out, first)
    assert x.flags.writeable                       # the caller's array is left as it was


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scalar_result_is_a_numpy_scalar_of_its_dtype(backend):
    f = pj.function(_rosen, backend=backend)
    x32 = np.linspace(-1.0, 1.5, 8).astype(np.float32)
    f(x32)
    out = _lean_hits(f, x32)
    assert type(out) is np.float32
    assert out == _rosen(pj.constant(x32)).numpy()


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_dtype_shape_or_layout_is_another_entry(backend):
    f = pj.function(lambda a, b: a @ b, backend=backend)
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))
    f(a, b)
    calls = [(a.astype(np.float32), b.astype(np.float32)),       # dtype
             (a[:2], b),                                          # shape
             (np.asfortranarray(a), b),                           # layout: Fortran order
             (a[:, ::-1], b),                                     # reversed columns
             (RNG.normal(size=(3, 8))[:, ::2], b)]                # strided columns
    for args in calls:
        want = np.ascontiguousarray(args[0]) @ args[1]
        for _ in range(2):                          # the general call, then the lean one
            got = f(*args)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len(f._lean) == len(calls) + 1 and f.trace_count == 3    # (float32; a[:2])


def test_floats_are_keys_by_value_signed_zeros_and_nan_included():
    f = pj.function(lambda x, s: x / s)
    x = np.array([1.0, -2.0])
    with np.errstate(divide="ignore"), pytest.warns(RuntimeWarning, match="traced 5 times"):
        for s in (2.0, 3.0, 0.0, -0.0, 2.0, -0.0, 0.0):
            want = x / s
            np.testing.assert_array_equal(f(x, s), want)
            np.testing.assert_array_equal(f(x, s), want)     # (lean)
        for _ in range(4):            # NaN equals nothing: one entry, not one per call
            assert np.isnan(f(x, float("nan"))).all()
    assert len(f._lean) == 5


def test_tensors_in_still_give_tensors():
    f = pj.function(pj.grad(_rosen))
    x = np.linspace(-1.0, 1.5, 6)
    f(x), f(x)
    out = f(pj.constant(x))
    assert isinstance(out, pj.Tensor)
    np.testing.assert_allclose(out.numpy(), _rosen_grad_by_hand(x), rtol=1e-12)
    assert isinstance(f(x, **{}), np.ndarray)


def test_under_a_tape_the_call_is_recorded():
    f = pj.function(lambda x: pnp.sin(x) * x)
    x = np.array([0.3, 1.2])
    f(x), f(x)                                     # a lean entry for arrays exists
    t = pj.constant(x)
    with pj.GradientTape() as tape:
        tape.watch(t)
        y = f(t)
    g = tape.gradient(y, t).numpy()
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-12)
    with pj.GradientTape() as tape:                # a numpy array under a recording tape:
        y = f(x)                                   # the body runs on its Tensors
    assert isinstance(y, pj.Tensor)


def test_inside_another_trace_the_call_is_inlined():
    inner = pj.function(lambda x: x * x)
    x = np.array([1.0, 2.0])
    inner(x), inner(x)
    outer = pj.function(lambda x: pj.grad(lambda v: pnp.sum(inner(v)))(x))
    np.testing.assert_allclose(outer(x), 2 * x)
    np.testing.assert_allclose(pj.grad(lambda v: pnp.sum(inner(v)))(x), 2 * x)


def test_changed_rules_are_not_served_from_an_old_entry():
    f = pj.function(lambda x: x + 1.0)
    x = np.ones(3)
    f(x), f(x)
    assert f.trace_count == 1
    core.rules_changed("a rule registered since")    # what every registration does
    np.testing.assert_array_equal(f(x), x + 1.0)
    assert f.trace_count == 2


@pytest.mark.skipif(not numba_available(), reason="numba is not installed")
def test_a_changed_config_backend_is_not_served_from_an_old_entry():
    f = pj.function(pj.grad(_rosen))
    x = np.linspace(-1.0, 1.5, 7)
    saved = pj.config.backend
    try:
        pj.config.backend = "numpy"
        f(x), f(x)
        assert {e.compiled.backend for e in f._lean.values()} == {"numpy"}
        pj.config.backend = "numba"
        got = f(x)
        assert {e.compiled.backend for e in f._lean.values()} == {"numba"}
        np.testing.assert_allclose(_lean_hits(f, x), got, rtol=0)
        pj.config.backend = "numpy"            # back: its trace is still there, no new one
        count = f.trace_count
        f(x)
        assert f.trace_count == count
        assert {e.compiled.backend for e in f._lean.values()} == {"numpy"}
    finally:
        pj.config.backend = saved


def test_a_filled_in_default_makes_no_entry():
    w = np.array([1.0, 2.0])
    f = pj.function(lambda x, w=w: x * w)       # an array default: an input read every call
    x = np.array([3.0, 4.0])
    f(x), f(x)
    assert not f._lean
    w[:] = [5.0, 6.0]
    np.testing.assert_array_equal(f(x), [15.0, 24.0])
    f(x, w), f(x, w)
    assert len(f._lean) == 1


def test_subclasses_and_other_pytree_nodes_take_the_general_path():
    f = pj.function(lambda x: x * 2.0)
    m = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    f(m), f(m)
    f(np.float64(3.0)), f(np.float64(3.0))       # a numpy scalar: a Python value
    g = pj.function(lambda xs: xs[0] * xs[1])
    pair = collections.namedtuple("pair", "a b")
    for xs in (pair(np.ones(2), np.ones(2)), collections.OrderedDict([(0, np.ones(2)),
                                                                       (1, np.ones(2))]),
               {0: np.ones(2), 1: np.ones(2)}, [np.ones(2), 2]):     # (non-str keys; an int)
        g(xs), g(xs)
        assert lean_call.lean_key((xs,)) is None
    assert not f._lean and not g._lean
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [2.0, 4.0])


def test_variables_are_read_at_every_lean_call():
    v = pj.Variable(np.array([1.0, 2.0]))
    f = pj.function(lambda x: x * v)
    x = np.array([3.0, 4.0])
    f(x), f(x)
    v.assign(np.array([10.0, 20.0]))
    np.testing.assert_array_equal(_lean_hits(f, x), [30.0, 80.0])


def test_structure_guards_still_give_the_dense_answer():
    def jac(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = x * x
        return g.batch_jacobian(y, x)
    f = pj.function(jac)
    x = RNG.normal(size=(3, 2))
    f(x), f(x)
    bad = x.copy()
    bad[1, 0] = np.inf
    with np.errstate(invalid="ignore"):
        want = jac(pj.constant(bad)).numpy()
        got = _lean_hits(f, bad)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.nan_to_num(got), np.nan_to_num(want))


def test_a_tuple_of_outputs_comes_back_as_a_tuple():
    f = pj.function(lambda x: (x * 2.0, {"s": pnp.sum(x)}))
    x = np.array([1.0, 2.0])
    f(x)
    a, d = _lean_hits(f, x)
    assert type(a) is np.ndarray and not a.flags.writeable and type(d["s"]) is np.float64
    np.testing.assert_array_equal(a, [2.0, 4.0])
    assert d["s"] == 3.0
