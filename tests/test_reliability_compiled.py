"""The compiled layer gives the eager result or an error, never another one (issue 24)."""
import gc
import re
import warnings
import weakref

import numpy as np
import pytest

import pforjac as pj
from pforjac import extend
from pforjac.compiled import loopcache
from pforjac.compiled.loopcache import same_bits
from pforjac.testing import isolated_registries


def _diagonal_of_scaled_identity(op, x):
    with pj.GradientTape() as g:
        g.watch(x)
        y = op(x)
    return np.diag(g.jacobian(y, x).numpy())


@pytest.mark.unverified                 # the loop cache's own path: compiled at the second call
def test_the_loop_cache_does_not_freeze_state_a_contributor_vjp_reads():
    scale = {"k": 1.0}
    loopcache.clear_cache()
    with isolated_registries():
        op = extend.defop("reliab_scaled", lambda x: x * 1.0, extend.same_shape,
                          vjp=lambda g, ans, x: g * scale["k"])
        extend.register_converter(op)(extend.elementwise_converter(op))
        for k in (1.0, 2.0, 3.0, 4.0):
            scale["k"] = k
            assert _diagonal_of_scaled_identity(op, pj.constant(np.ones(3))).tolist() == [k] * 3
        pure = extend.defop("reliab_pure", lambda x: x * 2.0, extend.same_shape,
                            vjp=lambda g, ans, x: g * 2.0, pure_rules=True)
        extend.register_converter(pure)(extend.elementwise_converter(pure))
        with loopcache.verifying():
            _diagonal_of_scaled_identity(op, pj.constant(np.ones(3)))
            _diagonal_of_scaled_identity(pure, pj.constant(np.ones(3)))
        declined = " ".join(loopcache.verify_info()["not_compiled"])
        assert "reliab_scaled" in declined and "reliab_pure" not in declined


def test_the_dense_twin_computes_the_function_the_first_trace_did():
    state, runs = {"s": 1.0}, []

    @pj.function
    def jac(x):
        runs.append(1)
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.sin(x) * state["s"]
        return g.jacobian(y, x)

    def eager(x):
        x = pj.constant(x)
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.sin(x) * 1.0              # the value the trace read
        return g.jacobian(y, x).numpy()
    finite, with_nan = np.array([0.1, 0.4]), np.array([0.1, np.nan])
    jac(finite)
    state["s"] = 5.0                         # after the trace: changes no result
    assert same_bits(jac(finite).numpy(), eager(finite))
    assert same_bits(jac(with_nan).numpy(), eager(with_nan))     # the dense twin
    assert jac.trace_count == 1 and len(runs) == 1               # Python ran once


@pytest.mark.parametrize("name", ["abs", "relu", "maximum"])
def test_a_ufunc_reading_a_gather_of_every_row_compiles(name):
    act = {"abs": pj.abs, "relu": pj.relu, "maximum": lambda t: pj.maximum(t, 0.5)}[name]

    def jac(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = act(pj.scatter_add(pj.sin(x), np.arange(4), 0, 4))
        return g.jacobian(y, x)
    x = np.random.default_rng(0).normal(size=(4, 3))
    assert same_bits(pj.function(jac)(x).numpy(), jac(pj.constant(x)).numpy())


def test_a_codegen_failure_is_an_error_under_verifying(monkeypatch):
    from pforjac.compiled import codegen

    def broken(program, name="program"):
        module = real(program, name)
        module.body[0].args.args.append(codegen.ast.arg(arg="consts"))   # a repeated argument
        return module
    real = codegen.program_to_ast
    monkeypatch.setattr(codegen, "program_to_ast", broken)
    loopcache.clear_cache()
    x = pj.constant(np.ones((2, 3)))
    with loopcache.verifying(), pytest.raises(Exception, match="generated code"):
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.tanh(x) * 3.0
        g.jacobian(y, x)


def _gradient_of_square(x):
    with pj.GradientTape() as g:
        g.watch(x)
        y = x * x
    return g.gradient(y, x)


def test_a_compiled_function_watching_its_array_argument_runs_where_it_is_inlined():
    grad = pj.function(_gradient_of_square)
    x = np.array([1.0, 2.0])
    want = grad(x).numpy()
    assert want.tolist() == [2.0, 4.0]
    with pj.GradientTape():
        assert same_bits(grad(x).numpy(), want)                          # under a tape
    assert same_bits(pj.function(lambda a: grad(x) + a)(np.zeros(2)).numpy(), want)   # a trace
    rows = pj.pfor(lambda i: grad(x)[i], 2)                             # a pfor body
    assert same_bits(rows.numpy(), want)


def test_a_compiled_method_of_a_temporary_object():
    class Model:
        def __init__(self, w):
            self.w = w

        @pj.function
        def scaled(self, x):
            return x * self.w
    assert Model(3.0).scaled(np.ones(2)).numpy().tolist() == [3.0, 3.0]
    method = Model(4.0).scaled                  # holds its object, as a bound method does
    gc.collect()
    assert method(np.ones(2)).numpy().tolist() == [4.0, 4.0] and method.trace_count == 1
    m = Model(5.0)
    assert m.scaled is m.scaled
    gone = weakref.ref(m)
    m.scaled(np.ones(2))
    del m, method
    gc.collect()
    assert gone() is None and Model.scaled._bindings == {}


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
