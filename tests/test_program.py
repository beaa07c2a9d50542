"""Tracing into Programs: printing, rendering as source, hoisting, running, and tapes that
record inside a trace (a compiled function's or a pfor body's)."""
import ast

import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.codegen import compile_program, program_to_source
from pforjac.core import current_state


def _body_program():
    x = pj.constant(np.arange(6.0).reshape(2, 3))
    w = pj.constant(np.linspace(-1, 1, 12).reshape(3, 4))

    def body(i):
        row = x[i]
        return pj.tanh(row @ w)[::-1].sum(), row[None, 1:], pj.exp(w).sum()

    return pj.make_program(body, [((), np.int32)]), x, w


def test_str_has_one_line_per_equation_with_shapes():
    program, _, _ = _body_program()
    text = str(program)
    lines = text.splitlines()
    assert lines[0] == "{ lambda a:i32[] ."
    assert len([l for l in lines if " = " in l]) == len(program.equations) + len(program.consts)
    assert "= gather[axis=0]" in text and "= matmul " in text and "= tanh " in text
    assert "f64[3,4] = const" in text


def test_loop_invariant_work_is_hoisted_out_of_the_trace():
    program, _, w = _body_program()
    names = [e.prim.name for e in program.equations]
    assert "exp" not in names  # exp(w).sum() does not depend on the index
    assert any(program.outputs[2] is c for c in program.consts)


def test_to_source_parses_back_and_runs_like_the_program():
    program, x, _ = _body_program()
    src = program_to_source(program)
    ast.parse(src)  # astunparse's tuple-with-slice rendering must not appear
    assert "slice(None, None, -1)" in src
    fn = compile_program(program)
    consts = [c.numpy() for c in program.const_values]
    for k in range(2):
        want = program(pj.constant(np.int32(k)))
        got = fn(np.int32(k), consts)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b.numpy())


def test_program_run_under_a_tape_is_differentiable():
    x = pj.constant(np.array([0.5, -1.0, 2.0]))
    program = pj.make_program(lambda v: pj.sin(v) * v, [((3,), np.float64)])
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = program(x)
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(g, np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy()))


def test_symbolic_values_refuse_python_control_flow():
    def body(v):
        if v.sum() > 0:
            return v
        return -v
    with pytest.raises(TypeError, match="symbolic value .* pforjac.where"):
        pj.make_program(body, [((3,), np.float32)])
    assert current_state().traces == []


def test_escaped_symbolic_value_is_a_clear_error():
    leaked = []
    pj.make_program(lambda v: leaked.append(v) or v * 2.0, [((2,), np.float32)])
    with pytest.raises(RuntimeError, match="finished trace"):
        leaked[0] + 1.0


# -- buffer reuse in generated code ------------------------------------------------------------
def _in_place_lines(program):
    return [line.strip() for line in program_to_source(program).splitlines() if "out=" in line]


def test_dead_temporaries_are_reused_but_inputs_consts_and_live_views_never():
    from pforjac.compiled.codegen import in_place_outputs
    c = pj.constant(np.linspace(-1, 1, 64 * 64).reshape(64, 64))

    def f(x):
        a = x @ c                    # a fresh buffer ...
        b = pj.tanh(a + 1.0)         # ... `a + 1.0` and then tanh reuse it: a is dead after
        v = pj.reshape(b, (4096,))   # a view of b, read at the end: b must not be overwritten
        d = b * x                    # so this one is fresh (x, the input, is never written)
        e = d - c                    # d is dead: reused (c, a constant, never)
        return e * 2.0, pj.sum(v)    # e is dead once doubled: the result takes its buffer
    program = pj.make_program(f, [((64, 64), np.float64)])
    chosen = in_place_outputs(program)
    eqns = program.equations
    assert [eqns[k].prim.name for k in sorted(chosen)] == ["add", "tanh", "subtract", "multiply"]
    product = next(k for k, e in enumerate(eqns) if e.prim.name == "multiply")
    assert product not in chosen                  # b * x: b has a live view, x is the input
    written = {eqns[k].inputs[pos].name for k, pos in chosen.items()}
    assert program.inputs[0].name not in written and not written & {v.name for v in program.consts}
    assert len(_in_place_lines(program)) == 4
    x = np.random.default_rng(0).standard_normal((64, 64))
    x_copy, c_copy = x.copy(), c.numpy().copy()
    got = compile_program(program)(x, [v.numpy() for v in program.const_values])
    want = f(pj.constant(x))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b.numpy())
    np.testing.assert_array_equal(x, x_copy)
    np.testing.assert_array_equal(c.numpy(), c_copy)


def test_no_reuse_across_dtypes_of_non_ufunc_results_or_for_small_arrays():
    from pforjac.compiled.codegen import in_place_outputs

    def f(x):
        z = pj.cast(pj.exp(x), np.float64) + 1.0     # float64: exp's float32 buffer does not fit
        w = pj.reshape(pj.exp(x), (64, 64)) + pj.ones((64, 64), np.float32)   # fits: reused
        small = pj.exp(x[:10]) + 1.0                   # 10 elements: not worth it
        return z, w, small
    program = pj.make_program(f, [((4096,), np.float32)])
    chosen = in_place_outputs(program)
    assert [program.equations[k].outputs[0].shape for k in chosen] == [(64, 64)]


def test_an_elementwise_result_that_is_reshaped_is_made_c_contiguous():
    w = pj.constant(np.ones((6, 4)))

    def f(x):
        y = pj.transpose(w) * x              # numpy would lay this out like w.T (F order)
        return pj.reshape(y, (24,)) + 0.0
    program = pj.make_program(f, [((4, 6), np.float64)])
    src = program_to_source(program)
    assert "order='C'" in src
    x = np.random.default_rng(1).standard_normal((4, 6))
    got = compile_program(program)(x, [v.numpy() for v in program.const_values])[0]
    np.testing.assert_array_equal(got, f(pj.constant(x)).numpy())


def test_sigmoid_reuses_a_dead_buffer_and_is_never_given_a_layout_argument():
    w = pj.constant(np.ones((6, 64)))

    def f(x):
        s = pj.sigmoid(x @ w)                    # x @ w is dead after: sigmoid writes into it
        t = pj.sigmoid(pj.transpose(s) * 2.0)    # reshaped below; sigmoid takes no `order`
        return pj.reshape(t, (-1,)) + 0.0
    program = pj.make_program(f, [((32, 6), np.float64)])
    src = program_to_source(program)
    assert "sigmoid_impl(" in src and ", out=" in src.split("sigmoid_impl(", 1)[1].split("\n")[0]
    assert "order=" not in "".join(line for line in src.splitlines() if "sigmoid_impl" in line)
    x = np.random.default_rng(2).standard_normal((32, 6))
    got = compile_program(program)(x, [v.numpy() for v in program.const_values])[0]
    np.testing.assert_array_equal(got, f(pj.constant(x)).numpy())


def test_a_small_transposed_operand_broadcast_by_a_ufunc_is_made_contiguous_first():
    def f(x, w):
        wt = pj.reshape(pj.transpose(w), (5, 1, 8))      # strided along the last axis
        big = wt * pj.sum(x, axis=0)                     # (5, 64, 8): broadcast 8x and more
        same_size = pj.transpose(x[0, 0, :8, :5]) + 1.0  # not broadcast: stays a view
        return big, same_size
    program = pj.make_program(f, [((2, 5, 64, 8), np.float64), ((8, 5), np.float64)])
    src = program_to_source(program)
    lines = [line.strip() for line in src.splitlines() if "ascontiguousarray" in line]
    assert len(lines) == 1 and "np.ascontiguousarray(b.T)" in lines[0]
    # without an operand of the result's shape known to be C-ordered, the small operand's
    # layout decides the result's: eager's view is kept (a product may read the result)
    unknown = pj.make_program(lambda x, w: pj.reshape(
        pj.reshape(pj.transpose(w), (5, 1, 8)) * x, (320, 8)) @ pj.constant(np.ones((8, 2))),
        [((64, 8), np.float64), ((8, 5), np.float64)])
    assert "ascontiguousarray" not in program_to_source(unknown)
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 5, 64, 8)), rng.standard_normal((8, 5))
    got = compile_program(program)(x, w, [v.numpy() for v in program.const_values])
    for a, b in zip(got, f(pj.constant(x), pj.constant(w))):
        np.testing.assert_array_equal(a, b.numpy())


# -- tapes inside traces ---------------------------------------------------------------
W = np.array([1.0, 2.0, 3.0])


def _gradient_of_watched_constant(x):
    w = pj.constant(W)
    with pj.GradientTape() as g:
        g.watch(w)
        y = pj.sum(w * w) * x            # w * w alone has no symbolic input
    return g.gradient(y, w)


def _jacobian_of_watched_constant(x):
    w = pj.constant(W)
    with pj.GradientTape() as g:
        g.watch(w)
        y = pj.sin(w) * x
    return g.jacobian(y, w)


@pytest.mark.parametrize("f, want", [
    (_gradient_of_watched_constant, lambda x: 2.0 * W * x),
    (_jacobian_of_watched_constant, lambda x: np.diag(np.cos(W)) * x)])
def test_a_tape_in_a_trace_records_ops_on_the_constants_it_watches(f, want):
    """Such ops ran eagerly, below the tape's trace level: the compiled gradient was None."""
    np.testing.assert_allclose(f(pj.constant(2.0)).numpy(), want(2.0), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(pj.function(f)(np.array(2.0))), want(2.0), rtol=1e-15)
    rows = pj.pfor(lambda i: f(pj.cast(i, np.float64) + 1.0), 3).numpy()
    np.testing.assert_allclose(rows, [want(k + 1.0) for k in range(3)], rtol=1e-15)


def test_a_tape_in_a_pfor_body_watches_the_variables_it_reads_as_eagerly():
    v = pj.Variable(np.array([1.0, 2.0, 3.0]))

    def body(i):
        with pj.GradientTape() as g:                  # watch_accessed_variables: no watch()
            y = pj.sum(v * v * v)
        return g.gradient(y, v)
    want = 3.0 * v.numpy() ** 2
    np.testing.assert_array_equal(body(pj.constant(0)).numpy(), want)
    np.testing.assert_array_equal(pj.pfor(body, 2).numpy(), [want, want])
    np.testing.assert_array_equal(np.asarray(pj.function(body)(np.int32(0))), want)
