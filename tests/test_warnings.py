"""Warnings are for things a user can act on: once per cause, at the user's line, and never
used up by a call that raised them as errors."""
import importlib
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac import extend
from pforjac.testing import isolated_registries

# the loop cache's own behaviour (compiled at the second sight, warnings replayed): not
# conftest's verification, which compiles at the first
pytestmark = pytest.mark.unverified


@pytest.fixture(autouse=True)
def _isolated():
    with isolated_registries():
        yield


def _declare_mul_with_a_float64_converter(name):
    """A converter bug whose message carries the shapes: it returns float64 for float32."""
    op = extend.defop(name, lambda a, b: a * b, extend.elementwise_shape(lambda a, b: a * b),
                      vjp=(lambda g, ans, a, b: op(g, b), lambda g, ans, a, b: op(g, a)),
                      elementwise=True)

    @extend.register_converter(op)
    def convert(n, args, stacked):
        return pj.cast(op(*args), "float64"), True
    return op


def _batch_jacobian(f, x, **kw):
    with pj.GradientTape() as g:
        g.watch(x)
        y = f(x)
    return g.batch_jacobian(y, x, **kw)


def test_a_converter_bug_warns_once_over_many_shapes():
    op = _declare_mul_with_a_float64_converter("warn_mul_f64")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for batch in range(1, 9):
            x = pj.constant(np.ones((batch, 3), np.float32))
            jac = _batch_jacobian(lambda x: op(pj.sin(x), x), x).numpy()
            expected = np.cos(1.0) + np.sin(1.0)      # d/dx sin(x) x at 1, on the diagonal
            np.testing.assert_allclose(jac, np.broadcast_to(expected * np.eye(3), (batch, 3, 3)),
                                       rtol=1e-6)
    fallbacks = [w for w in caught if "'warn_mul_f64'" in str(w.message)]
    assert len(fallbacks) == 1, [str(w.message) for w in fallbacks]


def test_warnings_point_at_the_users_line():
    op = _declare_mul_with_a_float64_converter("warn_mul_where")
    x = pj.constant(np.ones((2, 3), np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _batch_jacobian(lambda x: op(pj.sin(x), x), x)                    # the converter falls back
        _batch_jacobian(lambda x: x - pj.mean(x, axis=0, keepdims=True), x)   # rows mix
    assert {type(w.message) for w in caught} == {RuntimeWarning} and len(caught) >= 2
    assert {w.filename for w in caught} == {__file__}


def test_a_warning_raised_as_an_error_is_raised_again_next_call():
    importlib.import_module("pforjac.pfor")._warned.clear()   # a fresh process's state
    x = pj.constant(np.ones((2, 3)))
    mixing = lambda x: x - pj.mean(x, axis=0, keepdims=True)  # noqa: E731
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(RuntimeWarning, match="batch_jacobian assumes row b"):
                _batch_jacobian(mixing, x)
    with pytest.warns(RuntimeWarning, match="batch_jacobian assumes row b"):
        _batch_jacobian(mixing, x)


def test_row_mixing_warns_on_every_call_the_filters_let_through():
    # A wrong per-example result is not a slow path: it goes through Python's filters on
    # every call (cached calls included), for every model, not once per process.
    x = pj.constant(np.random.default_rng(0).normal(size=(4, 3)))
    models = [lambda a: a * pj.sum(a, axis=0), lambda a: a * pj.max(a, axis=0),
              lambda a: a * a[0]] + [lambda a: a * pj.sum(a, axis=0)] * 4
    for f in models:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _batch_jacobian(f, x)
        assert [str(w.message)[:28] for w in caught] == ["batch_jacobian assumes row b"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(5):
            _batch_jacobian(models[0], x)
    assert len(caught) == 1                       # the default filter: once per line


def test_rows_moved_by_constant_indices_warn_on_cached_calls_too():
    """The loop cache traces the tape's tensors as symbols, so the row check
    could not read gather indices there and the cached code passed a row permutation
    silently from the second call on (and on the first, after an identity gather of the
    same structure). Such structures now stay uncached: every call checks the values."""
    x = pj.constant(np.arange(12.0).reshape(3, 4))
    moves = [lambda a: pj.gather(a, [2, 1, 0], axis=0), lambda a: a[[2, 1, 0]],
             lambda a: pj.gather(a, [0, 1, 2], axis=0)]
    for f, warns in zip(moves, (True, True, False)):
        for _ in range(3):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                got = _batch_jacobian(f, x)
            assert bool(caught) == warns
    seen = []
    for order in ([0, 1, 2], [0, 1, 2], [2, 1, 0]):        # identity first, then a permutation
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = _batch_jacobian(lambda a, o=order: pj.gather(a, o, axis=0), x)
        seen.append(bool(caught))
    assert seen == [False, False, True]
    np.testing.assert_array_equal(got.numpy()[0], np.eye(4))   # TF's numbers, but warned


def test_row_mixing_warns_on_every_call_of_a_compiled_function():
    """pforjac.function showed it once, when it traced: its code now
    replays it on every call, as the loop cache's does, and traces once."""
    x = pj.constant(np.arange(12.0).reshape(3, 4))
    f = pj.function(lambda a: _batch_jacobian(lambda t: t[::-1], a))
    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f(x)
        assert [str(w.message)[:28] for w in caught] == ["batch_jacobian assumes row b"]
    assert f.trace_count == 1


def test_row_mixing_warns_once_over_many_batch_sizes():
    # the shapes used to be in the text, so the default filter showed it once per batch size
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for b in range(2, 30):
            _batch_jacobian(lambda a: a - pj.mean(a, axis=0), pj.constant(np.ones((b, 3))))
    assert len(caught) == 1 and "mixes rows of the batch" in str(caught[0].message)
    with pytest.raises(ValueError, match=r"target \(4, 3\), source \(4, 3\)"):
        _batch_jacobian(lambda a: a - pj.mean(a, axis=0), pj.constant(np.ones((4, 3))), strict=True)


def test_numpy_warnings_of_generated_code_show_once_over_many_shapes():
    # each compiled program had a warning registry of its own: one warning per shape
    def jac(n):
        x = pj.constant(np.concatenate([[0.], np.ones(n - 1)]))   # log(0), 1/0
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.log(x)
        return g.jacobian(y, x)
    f = pj.function(lambda x: pj.log(x) * 2)
    for call, most in ((jac, 8), (lambda n: f(np.zeros(n)), 1)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            for k in range(60):
                call(2 + k % 20)
        assert 1 <= len(caught) <= most, [str(w.message) for w in caught]
