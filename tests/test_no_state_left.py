"""An exception anywhere leaves nothing behind.

After an exception in a GradientTape block, in a trace, in a pfor conversion or in
a fallback: no tape or trace is left pushed on the (thread-local) context stack,
no tape keeps recording, and the converter registry is exactly as it was. Each
case runs 100 times in a row, so a leak that grows by one entry per failure shows.
"""
from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac import core
from pforjac.ops.elementwise import multiply_p, sin_p

pfor_mod = importlib.import_module("pforjac.pfor")  # `pforjac.pfor` is also the function

REPEAT = 100


class Boom(Exception):
    """A user exception that nothing in pforjac should catch."""


def assert_clean(registry: dict, tapes=()):
    state = core.current_state()
    assert state.tapes == list(tapes), f"tapes left pushed: {state.tapes}"
    assert state.traces == [], f"traces left pushed: {state.traces}"
    assert dict(pfor_mod.converters) == registry, "the converter registry changed"


@pytest.fixture
def registry():
    """The registry as it is when the test starts (after its monkeypatches, if any)."""
    return lambda: dict(pfor_mod.converters)


def _x():
    return pj.constant(np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]))


def _assert_not_recording(tape, x):
    n = len(tape._entries)
    _ = pj.exp(x) * x
    assert len(tape._entries) == n, "the tape kept recording after its block raised"


# -- GradientTape blocks -----------------------------------------------------------------------
def test_exception_in_tape_block(registry):
    before = registry()
    x = _x()
    for _ in range(REPEAT):
        tape = pj.GradientTape()
        with pytest.raises(Boom):
            with tape:
                tape.watch(x)
                y = x * x
                raise Boom
        assert_clean(before)
        _assert_not_recording(tape, x)
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * x.numpy())


def test_exception_in_nested_tapes_and_stop_recording(registry):
    before = registry()
    x = _x()
    for _ in range(REPEAT):
        outer, inner = pj.GradientTape(), pj.GradientTape(persistent=True)
        with pytest.raises(Boom):
            with outer:
                outer.watch(x)
                with inner:
                    inner.watch(x)
                    y = pj.sin(x)
                    with inner.stop_recording():
                        assert core.current_state().tapes == [outer]
                        raise Boom
        assert_clean(before)
        _assert_not_recording(outer, x)
        _assert_not_recording(inner, x)
        assert inner.gradient(y, x) is not None


def test_exception_from_an_op_in_tape_block(registry):
    before = registry()
    x = _x()
    for _ in range(REPEAT):
        tape = pj.GradientTape()
        with pytest.raises(ValueError, match="matmul"):
            with tape:
                tape.watch(x)
                pj.matmul(x, x)  # (2, 3) @ (2, 3): shapes don't fit
        assert_clean(before)
        _assert_not_recording(tape, x)


# -- traces ------------------------------------------------------------------------------------
def _raise_boom(*args):
    raise Boom


def test_exception_in_make_program(registry):
    before = registry()
    leaked = []

    def body(i):
        leaked.append(pj.cast(i, np.float32) * 2.0)
        raise Boom

    for _ in range(REPEAT):
        with pytest.raises(Boom):
            pj.make_program(body, [((), np.int32)])
        assert_clean(before)
    with pytest.raises(RuntimeError, match="finished trace"):
        leaked[0] + 1.0


def test_exception_in_nested_trace(registry):
    before = registry()

    def outer(i):
        with pytest.raises(Boom):
            pj.make_program(lambda j: _raise_boom(j + i), [((), np.int32)])
        assert len(core.current_state().traces) == 1
        return i * 2

    for _ in range(REPEAT):
        program = pj.make_program(outer, [((), np.int32)])
        assert_clean(before)
        assert int(program(pj.constant(np.int32(3)))) == 6


def test_pfor_loop_fn_raising_inside_a_tape(registry):
    before = registry()
    x = _x()
    for _ in range(REPEAT):
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = x * 3.0
            with pytest.raises(Boom):
                pj.pfor(lambda i: _raise_boom(x[i]), 2)
            assert_clean(before, tapes=[tape])
            z = y * 2.0
        assert_clean(before)
        np.testing.assert_allclose(tape.gradient(z, x).numpy(), np.full((2, 3), 6.0))


@pytest.mark.parametrize("inside_block", [False, True])
def test_jacobian_body_raising(monkeypatch, registry, inside_block):
    """A vjp rule raising while the Jacobian's body is traced (the tape is paused then)."""
    x = _x()
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = pj.sin(x)
    monkeypatch.setitem(core.vjp_rules, sin_p, (lambda g, ans, x: _raise_boom(),))
    before = registry()
    for _ in range(REPEAT):
        for use_pfor in (True, False):
            if inside_block:
                with tape:
                    with pytest.raises(Boom):
                        tape.jacobian(y, x, experimental_use_pfor=use_pfor)
                    assert_clean(before, tapes=[tape])
            else:
                with pytest.raises(Boom):
                    tape.jacobian(y, x, experimental_use_pfor=use_pfor)
            assert_clean(before)
            _assert_not_recording(tape, x)


# -- conversions -------------------------------------------------------------------------------
def _sin_loop(i):
    return pj.sin(pj.cast(i, np.float64))


def _value_error(n, args, stacked, **params):
    raise ValueError("this converter cannot handle the case")


def _runtime_error(n, args, stacked, **params):
    raise ZeroDivisionError("a bug inside a converter")


def test_converter_value_error_without_fallback(monkeypatch, registry):
    monkeypatch.setitem(pfor_mod.converters, sin_p, _value_error)
    before = registry()
    for _ in range(REPEAT):
        with pytest.raises(pj.ConversionError, match="'sin'.*cannot handle"):
            pj.pfor(_sin_loop, 4, fallback_to_while_loop=False)
        assert_clean(before)


def test_converter_value_error_falls_back(monkeypatch, registry):
    for prim in list(core.primitives.values()):   # every conversion fails: all falls back
        monkeypatch.setitem(pfor_mod.converters, prim, _value_error)
    before = registry()
    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(REPEAT):
            np.testing.assert_allclose(pj.pfor(_sin_loop, 4).numpy(), np.sin(np.arange(4.0)))
            with pj.GradientTape() as tape:
                tape.watch(x)
                y = x * x
            j = tape.jacobian(y, x)
            np.testing.assert_allclose(j.numpy(), np.diag(2 * x.numpy().ravel()).reshape(2, 3, 2, 3))
            assert_clean(before)


@pytest.mark.parametrize("fallback", [True, False])
def test_converter_raising_other_exception(monkeypatch, registry, fallback):
    """Only ValueError means "can't vectorize"; any other exception is a bug and propagates."""
    monkeypatch.setitem(pfor_mod.converters, sin_p, _runtime_error)
    before = registry()
    x = _x()
    for _ in range(REPEAT):
        with pytest.raises(ZeroDivisionError, match="a bug inside"):
            pj.pfor(_sin_loop, 4, fallback_to_while_loop=fallback)
        assert_clean(before)
        with pj.GradientTape() as tape:
            tape.watch(x)
            with pytest.raises(ZeroDivisionError, match="a bug inside"):
                pj.pfor(lambda i: pj.sin(x[i] * x[i]), 2, fallback_to_while_loop=fallback)
            assert_clean(before, tapes=[tape])
        assert_clean(before)
        _assert_not_recording(tape, x)


# -- fallbacks ---------------------------------------------------------------------------------
def _sin_failing_at(k):
    def impl(x):
        if np.any(x == k):
            raise Boom
        return np.sin(x)
    return impl


def test_per_iteration_fallback_raising(monkeypatch, registry):
    monkeypatch.setattr(pfor_mod, "family_converters", [])   # sin now runs once per iteration
    monkeypatch.setitem(core.impl_rules, sin_p, _sin_failing_at(2.0))
    before = registry()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(REPEAT):
            for fallback in (True, False):      # without fallback: no per-iteration run
                with pytest.raises(Boom if fallback else pj.ConversionError):
                    pj.pfor(_sin_loop, 4, fallback_to_while_loop=fallback)
                assert_clean(before)
                assert pfor_mod.converter_for(sin_p) is None
            np.testing.assert_allclose(pj.pfor(_sin_loop, 2).numpy(), np.sin([0.0, 1.0]))


def test_while_loop_iteration_raising(monkeypatch, registry):
    x = _x()
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    calls = []

    def multiply_failing_late(a, b):
        calls.append(1)
        if len(calls) == 3:
            raise Boom
        return np.multiply(a, b)

    monkeypatch.setitem(core.impl_rules, multiply_p, multiply_failing_late)
    before = registry()
    for _ in range(REPEAT):
        calls.clear()
        with pytest.raises(Boom):
            tape.jacobian(y, x, experimental_use_pfor=False)
        assert_clean(before)
        _assert_not_recording(tape, x)
