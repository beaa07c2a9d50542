"""`Function.specialize(*example_args)` (compiled/specialized.py): a callable that runs the
compiled code of the examples' signature directly, with the Function's own results, and
goes through the Function for any other call (another signature, a tape, a trace, rules
registered since)."""
import numpy as np
import pytest

import pforjac as pj
from pforjac import core
from pforjac.compiled.numba_backend import available as numba_available

pnp = pj.numpy
RNG = np.random.default_rng(17)
BACKENDS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not numba_available(), reason="numba is not installed"))]


def _value_and_grad(backend):
    return pj.function(pj.value_and_grad(lambda x: pnp.sum(pnp.sin(x) * x ** 2)), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_specialized_call_gives_the_functions_results(backend):
    f = _value_and_grad(backend)
    x = RNG.normal(size=6)
    fast = f.specialize(x)
    assert fast.backend == backend and f.trace_count == 1
    for _ in range(3):
        y = RNG.normal(size=6)
        (value, g), (want_value, want_g) = fast(y), f(y)
        assert type(value) is np.float64 and value == want_value
        np.testing.assert_array_equal(g, want_g)
        np.testing.assert_allclose(g, np.cos(y) * y ** 2 + 2 * y * np.sin(y), rtol=1e-13)
        assert not g.flags.writeable
        with pytest.raises(ValueError):
            g.flags.writeable = True
    assert f.trace_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_other_arguments_go_through_the_function(backend):
    f = _value_and_grad(backend)
    x = RNG.normal(size=4)
    fast = f.specialize(x)
    for y in (RNG.normal(size=5), x.astype(np.float32), RNG.normal(size=8)[::2]):
        value, g = fast(y)
        np.testing.assert_array_equal(g, f(y)[1])
    with pytest.raises(TypeError):
        fast(x, x)                                     # as f(x, x) raises
    t = pj.constant(x)
    with pj.GradientTape() as tape:                    # recorded, as f's call is
        tape.watch(t)
        value, _ = fast(t)
    assert isinstance(value, pj.Tensor)
    np.testing.assert_allclose(tape.gradient(value, t).numpy(), f(x)[1], rtol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_float_is_taken_for_a_0d_float64_example_and_traced_once(backend, monkeypatch):
    f = pj.function(lambda y, t: y * pnp.exp(-t), backend=backend)
    fast = f.specialize(np.ones(3), np.array(0.0))
    through_f = []
    real = pj.compiled.Function.__call__
    monkeypatch.setattr(pj.compiled.Function, "__call__",
                        lambda self, *a, **k: through_f.append(a) or real(self, *a, **k))
    y = np.array([1.0, 2.0, 3.0])
    for t in (0.0, 0.5, np.float64(2.0), np.array(1.5)):     # (scipy's solvers pass float64)
        np.testing.assert_allclose(fast(y, t), y * np.exp(-t), rtol=1e-15)
    assert not through_f and f.trace_count == 1
    np.testing.assert_allclose(fast(y, 3), y * np.exp(-3), rtol=1e-15)   # an int: f's own call
    assert len(through_f) == 1 and f.trace_count == 2                    # (a value: traced)


@pytest.mark.parametrize("backend", BACKENDS)
def test_writable_hands_out_fresh_arrays_and_keeps_shared_ones_read_only(backend):
    f = pj.function(lambda x, p: {"x": x, "y": x * 2.0, "w": p["w"] + 1.0}, backend=backend)
    x, p = RNG.normal(size=3), {"w": RNG.normal(size=(2, 2))}
    fast = f.specialize(x, p, writable=True)
    for _ in range(2):
        x = RNG.normal(size=3)
        out = fast(x, p)
        assert out["y"].flags.writeable and out["w"].flags.writeable
        np.testing.assert_array_equal(out["y"], x * 2.0)
        np.testing.assert_array_equal(out["w"], p["w"] + 1.0)
        np.testing.assert_array_equal(out["x"], x)
        if np.may_share_memory(out["x"], x):     # the input itself: never writable here
            assert not out["x"].flags.writeable
        out["y"][0] = 7.0                        # the caller's own array
    assert fast(x, p)["y"][0] == x[0] * 2.0 and x.flags.writeable


def test_guards_and_changed_rules_keep_the_functions_results():
    def batch_jacobian(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = x * x
        return g.batch_jacobian(y, x)
    f = pj.function(batch_jacobian)
    x = RNG.normal(size=(2, 2))
    fast = f.specialize(x)
    bad = x.copy()
    bad[0, 1] = np.nan
    np.testing.assert_array_equal(fast(bad), f(bad))
    np.testing.assert_array_equal(fast(x), [np.diag(2 * row) for row in x])
    count = f.trace_count
    core.rules_changed("a rule registered since")
    np.testing.assert_array_equal(fast(x), [np.diag(2 * row) for row in x])
    assert f.trace_count == count + 1                 # through f, which traced again


def test_arguments_the_lean_path_does_not_take_give_the_functions_own_call():
    w = np.array([2.0, 3.0])
    f = pj.function(lambda x, w=w: x * w)             # an array default: read every call
    x = np.array([1.0, 2.0])
    fast = f.specialize(x)
    np.testing.assert_array_equal(fast(x), [2.0, 6.0])
    w[:] = [5.0, 7.0]
    np.testing.assert_array_equal(fast(x), [5.0, 14.0])
    assert fast.backend == "numpy" and f.trace_count == 1 and not f._lean
    g = f.specialize(pj.constant(x))                  # a Tensor: Tensors back
    assert g.backend is None and isinstance(g(pj.constant(x)), pj.Tensor)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_refused_guard_with_a_float_time_gives_the_dense_answer(backend):
    def jac(y, t):
        with pj.GradientTape() as g:
            g.watch(y)
            z = pnp.sqrt(y) * t
        return g.jacobian(z, y)
    f = pj.function(jac, backend=backend)
    fast = f.specialize(np.array([1.0, 4.0]), np.array(0.5))
    assert next(iter(f._cache.values())).n_guards
    np.testing.assert_allclose(fast(np.array([1.0, 4.0]), 2.0), np.diag([1.0, 0.5]), rtol=1e-15)
    with np.errstate(divide="ignore", invalid="ignore"):
        got, want = fast(np.array([0.0, 4.0]), 2.0), f(np.array([0.0, 4.0]), np.array(2.0))
    np.testing.assert_array_equal(got, want)
    assert got[0, 0] == np.inf
