"""The entries of pforjac.function's lean path (compiled/lean_call.py, lean_source.py): each
checks a call's arguments itself and answers MISS for any it was not made for, so the
last call's entry can be tried first; structure guards are checked in the entry, with
the dense twin's answer when one refuses; on numba the compiled entry point is called
with the constants a program passes and its 0-d inputs as numbers."""
import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.lean_call import MISS, lean_key
from pforjac.compiled.numba_backend import available as numba_available

pnp = pj.numpy
RNG = np.random.default_rng(3)
BACKENDS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not numba_available(), reason="numba is not installed"))]


def _entry(f, *args):
    f(*args), f(*args)
    entry = f._lean[lean_key(args)]
    assert f._last is entry
    return entry


def test_an_entry_answers_miss_for_every_other_argument():
    f = pj.function(lambda p, x, s: {"g": p["w"] * x * s, "h": [p["b"][0] + 1.0]})
    p = {"w": RNG.normal(size=3), "b": [RNG.normal(size=2)]}
    x = RNG.normal(size=3)
    entry = _entry(f, p, x, 2.0)
    reshaped = x.copy()
    others = [(p, x), (p, x, 2.0, 1.0), (p, x, 3.0), (p, x, -2.0), (p, x.astype(np.float32), 2.0),
              (p, x[:2], 2.0), (p, np.ones(6)[::2], 2.0), (p, x.reshape(3, 1), 2.0),
              ({"b": p["b"], "w": p["w"]}, x, 2.0), ({**p, "v": x}, x, 2.0),
              ({**p, "b": (p["b"][0],)}, x, 2.0), ({**p, "b": [p["b"][0], None]}, x, 2.0),
              ({**p, "w": pj.constant(p["w"])}, x, 2.0), (p, x, np.float64(2.0)), (p, x, 2)]
    for args in others:
        assert entry(args) is MISS
    reshaped.shape = (1, 3)                    # the same array object, reshaped in place
    assert entry((p, reshaped, 2.0)) is MISS
    got = entry((p, x, 2.0))
    np.testing.assert_array_equal(got["g"], p["w"] * x * 2.0)
    np.testing.assert_array_equal(got["h"][0], p["b"][0] + 1.0)


def test_signed_zeros_and_nan_are_told_apart_by_the_entry():
    f = pj.function(lambda x, s: x / s)
    x = np.array([1.0, -2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        for s in (0.0, -0.0, float("nan")):
            entry = _entry(f, x, s)
            assert [entry((x, t)) is MISS for t in (0.0, -0.0, float("nan"))] == \
                [repr(t) != repr(s) for t in (0.0, -0.0, float("nan"))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_alternating_signatures_each_get_their_own_result(backend):
    f = pj.function(pj.grad(lambda x: pnp.sum(pnp.sin(x) * x)), backend=backend)
    xs = [RNG.normal(size=4), RNG.normal(size=5), RNG.normal(size=4).astype(np.float32),
          np.asfortranarray(RNG.normal(size=(2, 3)))]
    for _ in range(3):
        for x in xs:
            want = np.cos(x) * x + np.sin(x)
            got = f(x)
            assert got.dtype == x.dtype and got.shape == x.shape and not got.flags.writeable
            np.testing.assert_allclose(got, want, rtol=1e-6 if x.dtype == np.float32 else 1e-13)
    assert f.trace_count == 4 and len(f._lean) == 4


def _batch_square_jacobian(x):
    with pj.GradientTape() as g:
        g.watch(x)
        y = x * x
    return g.batch_jacobian(y, x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_guards_are_checked_in_the_entry_and_a_refusal_gives_the_dense_answer(backend):
    f = pj.function(_batch_square_jacobian, backend=backend)
    x = RNG.normal(size=(3, 2))
    f(x)
    compiled = next(iter(f._cache.values()))
    assert compiled.n_guards
    compiled.run = None              # the entry calls the code itself, never `run`
    got = f(x)
    assert f._last is f._lean[lean_key((x,))]
    np.testing.assert_array_equal(got, [np.diag(2 * row) for row in x])
    bad = x.copy()
    bad[1, 0] = np.inf
    with np.errstate(invalid="ignore"):
        got = f(bad)
        want = _batch_square_jacobian(pj.constant(bad)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.nan_to_num(got), np.nan_to_num(want))
    assert not got.flags.writeable and compiled.dense is not None


@pytest.mark.skipif(not numba_available(), reason="numba is not installed")
def test_numba_entry_point_takes_passed_constants_and_0d_inputs():
    table = RNG.normal(size=2000)               # too large to be written into the source
    f = pj.function(lambda x, s: pnp.sum(x * x) * s + pnp.sum(table * s), backend="numba")
    x, s = RNG.normal(size=3), np.array(1.5)
    first = f(x, s)
    compiled = next(iter(f._cache.values()))
    assert compiled.backend == "numba" and compiled.code.passed
    for k in range(3):
        x = RNG.normal(size=3)
        got = f(x, np.array(0.5 * k))
        assert type(got) is np.float64
        assert got == pytest.approx((np.sum(x * x) + np.sum(table)) * 0.5 * k, rel=1e-12,
                                    abs=1e-12)
    assert type(first) is np.float64 and f.trace_count == 1


def test_a_function_traced_again_reuses_its_entrys_bytecode_but_not_its_constants():
    def make(scale):
        return pj.function(lambda x: x * scale + 1.0)
    x = RNG.normal(size=4)
    first, second = make(np.full(4, 2.0)), make(np.full(4, 3.0))
    a, b = _entry(first, x), _entry(second, x)
    assert a is not b and a.__code__ is b.__code__        # one text, compiled once
    np.testing.assert_allclose(first(x), x * 2.0 + 1.0)   # each its own constants
    np.testing.assert_allclose(second(x), x * 3.0 + 1.0)
