"""Tapes, traces and the converter registry under several threads at once.

As in TensorFlow, the stack of active tapes and traces is thread-local: a tape
records only the ops of the thread that opened it, and a trace captures only
its own thread's ops. Jacobians computed in 8 threads at once must equal the
single-threaded results.
"""
from __future__ import annotations

import importlib
import threading

import numpy as np
import pytest

import pforjac as pj
from pforjac.testing import isolated_registries
from pforjac.core import current_state

pfor_mod = importlib.import_module("pforjac.pfor")  # `pforjac.pfor` is also the function

ROUNDS = 100
TIMEOUT = 10.0  # seconds a barrier waits before the test fails instead of hanging


def run_threads(targets) -> list:
    """Runs each callable in its own thread, started together; re-raises the first error."""
    results, errors = [None] * len(targets), []
    start = threading.Barrier(len(targets), timeout=TIMEOUT)

    def worker(k, fn):
        try:
            start.wait()
            results[k] = fn()
            state = current_state()
            assert state.tapes == [] and state.traces == [], "a thread left its context pushed"
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k, fn)) for k, fn in enumerate(targets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 3)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


# -- each thread's tapes record only that thread's ops ---------------------------------------
def test_tape_records_only_its_own_threads_ops():
    for _ in range(ROUNDS):
        x = pj.constant(np.array([1.0, 2.0, 3.0]))
        step = threading.Barrier(2, timeout=TIMEOUT)
        out = {}

        def thread_a():
            with pj.GradientTape(persistent=True) as tape:
                tape.watch(x)
                step.wait()          # 1: B computes x * x while this tape records
                step.wait()          # 2: B has opened its own tape
                ya = x * 3.0
                step.wait()          # 3: B computes sin(x) under its tape
                step.wait()          # 4
            out["a"] = tape, ya

        def thread_b():
            step.wait()
            yb = x * x
            with pj.GradientTape(persistent=True) as tape:
                tape.watch(x)
                step.wait()
                step.wait()
                zb = pj.sin(x)
                step.wait()
            out["b"] = tape, yb, zb

        run_threads([thread_a, thread_b])
        (tape_a, ya), (tape_b, yb, zb) = out["a"], out["b"]
        assert [e.prim.name for e in tape_a._entries] == ["multiply"]
        assert [e.prim.name for e in tape_b._entries] == ["sin"]
        np.testing.assert_array_equal(tape_a.gradient(ya, x).numpy(), [3.0, 3.0, 3.0])
        np.testing.assert_allclose(tape_b.gradient(zb, x).numpy(), np.cos([1.0, 2.0, 3.0]))
        for tape, other in ((tape_a, yb), (tape_a, zb), (tape_b, ya), (tape_b, yb)):
            with pytest.raises(ValueError, match="not recorded by this tape.*another thread"):
                tape.gradient(other, x)       # (TensorFlow: None, silently)


def test_trace_captures_only_its_own_threads_ops():
    for _ in range(ROUNDS):
        x = pj.constant(np.arange(4.0))
        step = threading.Barrier(2, timeout=TIMEOUT)
        out = {}

        def thread_a():      # traces a loop body, pausing in the middle
            def body(i):
                v = pj.cast(i, np.float64) * 2.0
                step.wait()  # 1: B runs ops on x while this trace is open
                step.wait()  # 2
                return v + x
            program = pj.make_program(body, [((), np.int32)])
            out["a"] = program, pj.pfor(body_of(program), 3)

        def thread_b():      # eager ops and its own trace, while A's trace is open
            step.wait()
            assert current_state().traces == []
            eager = x * x
            assert not isinstance(eager, pj.SymbolicTensor)
            out["b"] = eager, pj.pfor(lambda i: x[i] * 10.0, 4)
            step.wait()

        run_threads([thread_a, thread_b])
        program, a_result = out["a"]
        eager, b_result = out["b"]
        assert [e.prim.name for e in program.equations] == ["cast", "multiply", "add"]
        np.testing.assert_array_equal(eager.numpy(), [0.0, 1.0, 4.0, 9.0])
        np.testing.assert_array_equal(b_result.numpy(), [0.0, 10.0, 20.0, 30.0])
        np.testing.assert_array_equal(a_result.numpy(), np.arange(3)[:, None] * 2.0 + np.arange(4.0))


def body_of(program):
    return lambda i: program(i)


# -- the converter registry --------------------------------------------------------------------
def test_registry_under_concurrent_registration():
    names = [f"_thread_test_op_{t}_{k}" for t in range(8) for k in range(25)]
    with isolated_registries():
        for name in names + ["_thread_test_shared"]:
            pj.extend.defop(name, np.sin, pj.extend.same_shape)
        prims = [pj.core.primitives[n] for n in names]
        for _ in range(5):
            wins = []

            def registrar(t):
                def run():
                    for k in range(25):
                        pj.register_converter(f"_thread_test_op_{t}_{k}", override=True)(lambda *a: a)
                    try:   # all threads race for the same op: exactly one wins
                        pj.register_converter("_thread_test_shared")(lambda *a: a)
                        wins.append(t)
                    except ValueError:
                        pass
                    x = pj.constant(np.arange(6.0).reshape(2, 3))
                    return pj.pfor(lambda i: pj.exp(x[i]).sum(), 2).numpy()  # reads the registry
                return run

            results = run_threads([registrar(t) for t in range(8)])
            assert len(wins) == 1
            for r in results:
                np.testing.assert_allclose(r, np.exp(np.arange(6.0).reshape(2, 3)).sum(1))
            assert all(p in pfor_mod.converters for p in prims)
            pfor_mod.converters.pop(pj.core.primitives["_thread_test_shared"])


# -- Jacobians in 8 threads agree with single-threaded ones ------------------------------------
_rng = np.random.default_rng(0)
W1, W2 = _rng.standard_normal((6, 5)), _rng.standard_normal((5, 3))


def _mlp(x):
    h = pj.sigmoid(pj.matmul(x, pj.constant(W1.astype(x.dtype))))
    return pj.tanh(pj.matmul(h, pj.constant(W2.astype(x.dtype))))


def _mixed(x):
    s = pj.sum(x * x, axis=-1, keepdims=True)
    return pj.where(x > 0.0, x * s, pj.exp(x) * pj.max(x, axis=-1, keepdims=True))


def _jacobian_job(f, x, method="jacobian", use_pfor=True, parallel_iterations=None):
    def job():
        xt = pj.constant(x)
        with pj.GradientTape(persistent=not use_pfor) as tape:
            tape.watch(xt)
            y = f(xt)
        return getattr(tape, method)(y, xt, parallel_iterations=parallel_iterations,
                                     experimental_use_pfor=use_pfor).numpy()
    return job


def _hessian_job(x):
    def job():
        xt = pj.constant(x)
        with pj.GradientTape() as outer:
            outer.watch(xt)
            with pj.GradientTape() as inner:
                inner.watch(xt)
                y = pj.sum(pj.sin(xt) * xt)
            g = inner.gradient(y, xt)
        return outer.jacobian(g, xt).numpy()
    return job


def _pfor_job(x):
    return lambda: pj.vectorized_map(lambda r: pj.softmax(r) * pj.sum(r * r), pj.constant(x)).numpy()


JOBS = [
    _jacobian_job(_mlp, _rng.standard_normal((7, 6)).astype(np.float32)),
    _jacobian_job(_mlp, _rng.standard_normal((4, 6)), use_pfor=False),
    _jacobian_job(_mlp, _rng.standard_normal((9, 6)), "batch_jacobian", parallel_iterations=2),
    _jacobian_job(_mixed, _rng.standard_normal((5, 4)), "batch_jacobian", use_pfor=False),
    _jacobian_job(_mixed, _rng.standard_normal((3, 5)).astype(np.float32), parallel_iterations=4),
    _jacobian_job(_mixed, _rng.standard_normal((0, 5))),
    _hessian_job(_rng.standard_normal((2, 3))),
    _pfor_job(_rng.standard_normal((6, 4))),
]


def test_jacobians_in_8_threads_match_single_threaded():
    expected = [job() for job in JOBS]
    for round_ in range(ROUNDS):
        # each round, thread t runs a different job, so every job meets every other
        order = [(t + round_) % len(JOBS) for t in range(8)]
        results = run_threads([JOBS[k] for k in order])
        for k, result in zip(order, results):
            assert result.dtype == expected[k].dtype and result.shape == expected[k].shape
            np.testing.assert_array_equal(result, expected[k], err_msg=f"job {k}, round {round_}")


@pytest.mark.parametrize("use_pfor", [True, False])
def test_one_tape_per_thread_jacobians_of_a_shared_variable(use_pfor):
    """Several threads differentiate through the same Variable: each gets its own result."""
    v = pj.Variable(np.linspace(0.5, 1.5, 6).reshape(2, 3))

    def job(scale):
        def run():
            with pj.GradientTape(persistent=not use_pfor) as tape:
                y = pj.sin(v) * scale
            assert tape.watched_variables() == (v,)
            return tape.jacobian(y, v, experimental_use_pfor=use_pfor).numpy()
        return run

    for _ in range(20):
        results = run_threads([job(float(s)) for s in range(1, 9)])
        base = np.diag(np.cos(v.numpy()).ravel()).reshape(2, 3, 2, 3)
        for s, r in enumerate(results, start=1):
            np.testing.assert_allclose(r, s * base, rtol=1e-12)


def test_gradient_from_another_thread_while_the_tape_records():
    # Pausing the tape for the gradient used to look it up in the calling thread's stack.
    x = pj.constant([1.0, 2.0])
    out = {}
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        run_threads([lambda: out.update(g=tape.gradient(y, x))])
        z = x * 3.0                                  # still recording in this thread
    np.testing.assert_array_equal(out["g"].numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [3.0, 3.0])

