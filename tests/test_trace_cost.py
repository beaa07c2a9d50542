"""What makes a compiled function's first call cheaper keeps its meaning: line numbers of the
generated code, the layout analyses (checked against their plain definitions), the impl facts
read once per rules generation, and passes that keep unchanged equations as they are."""
import ast

import numpy as np
from hypothesis import given, settings

import pforjac as pj
from pforjac import core, extend
from pforjac.compiled import codegen
from pforjac.compiled.passes import PASSES
from pforjac.compiled.passes._rewrite import rename
from pforjac.program import make_program
from pforjac.testing import isolated_registries
from random_programs import random_programs


def _rosenbrock_gradient_program():
    def f(x):
        return pj.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    return make_program(pj.grad(f), [((6,), np.dtype(float))])


def test_every_node_of_the_generated_code_is_on_its_statements_line():
    program = _rosenbrock_gradient_program()
    tree = codegen.program_to_ast(program, "g")
    fn = tree.body[0]
    assert (fn.lineno, fn.col_offset) == (1, 0)
    assert all(a.lineno == 1 for a in fn.args.args)
    for line, stmt in enumerate(fn.body, 2):
        lines = {n.lineno for n in ast.walk(stmt) if "lineno" in n._attributes}
        assert lines == {line}
    code = compile(tree, "<test>", "exec")          # (compile refuses a node without one)
    space = codegen.namespace_of(program)
    exec(code, space)
    x = np.linspace(-1.0, 1.5, 6)
    want = pj.grad(lambda t: pj.sum(100.0 * (t[1:] - t[:-1] ** 2) ** 2 + (1 - t[:-1]) ** 2))(x)
    consts = [v.numpy() for v in program.const_values]
    np.testing.assert_array_equal(space["g"](x, consts)[0], want)
    # the rendered source parses back, and its lines are the AST's
    source = codegen.program_to_source(program, "g")
    assert len(source.splitlines()) == len(fn.body) + 1
    ast.parse(source)


def _blind_by_definition(program, readers):
    """layout_blind as first written: every reader asked again for every value."""
    blind = set()
    for eqn in reversed(program.equations):
        for v in eqn.outputs:
            if all(r.prim.layout == "free"
                   or codegen.plain_ufunc(r) and r.params.get("order") == "C"
                   or (r.prim.layout == "following" or codegen._ufunc(r))
                   and all(id(o) in blind for o in r.outputs)
                   for r in readers.get(id(v), ())):
                blind.add(id(v))
    return blind


@settings(max_examples=25, deadline=None)
@given(random_programs())
def test_layout_blind_is_its_definition(rp):
    program = make_program(lambda x: pj.grad(lambda y: pj.sum(rp.function()(y)))(x),
                           [(rp.x_shape, np.dtype(float))])
    for p in PASSES:
        readers = codegen._readers(program)
        assert codegen.layout_blind(program, readers) == _blind_by_definition(program, readers)
        program = p(program)


def test_impl_facts_follow_a_replaced_forward():
    with isolated_registries():
        op = extend.defop("twice_for_facts", lambda x: x * 2.0, extend.same_shape)
        eqn = make_program(op, [((3,), np.dtype(float))]).equations[-1]
        assert not codegen._fresh_result(eqn) and not codegen.plain_ufunc(eqn)

        def forward(x, out=None):
            return np.multiply(x, 2.0, out=out)
        forward.elementwise_out = True
        core.impl_rules[eqn.prim] = forward          # a forward registered anew, as
        core.rules_changed("twice_for_facts")        # every registration announces it
        assert codegen._fresh_result(eqn) and codegen._elementwise(eqn)
        assert not codegen.plain_ufunc(eqn)               # (not a numpy ufunc itself)
        core.impl_rules[eqn.prim] = np.negative
        core.rules_changed("twice_for_facts")
        assert codegen.plain_ufunc(eqn)


def _reads(eqn, v) -> bool:
    return any(u is v for u in eqn.inputs)


def test_rename_keeps_the_equations_it_does_not_change():
    program = _rosenbrock_gradient_program()
    old = program.equations[0].outputs[0]
    readers = [e for e in program.equations if _reads(e, old)]
    stand_in = program.inputs[0]
    renamed = rename(program, program.equations, {id(old): stand_in})
    changed = [(a, b) for a, b in zip(program.equations, renamed.equations) if a is not b]
    assert readers and [a for a, _ in changed] == readers
    assert all(_reads(b, stand_in) and not _reads(b, old) for _, b in changed)
    assert all(_reads(e, old) for e in readers)          # (the input program is unchanged)
    kept = rename(program, program.equations, {})
    assert all(a is b for a, b in zip(kept.equations, program.equations))


def test_dead_code_elimination_keeps_a_program_with_nothing_dead():
    from pforjac.program import eliminate_dead_code
    def f(x):
        pj.sin(x)                                   # (dead)
        return x * 2.0
    program = make_program(f, [((3,), np.dtype(float))])
    clean = eliminate_dead_code(program)
    assert clean is not program and [e.prim.name for e in clean.equations] == ["multiply"]
    assert len(program.equations) == 2               # (its input is left as it was)
    assert eliminate_dead_code(clean) is clean


def test_broadcast_shapes_as_numpys():
    from pforjac.ops._family import broadcast_shapes
    for shapes in [((3,), ()), ((), ()), ((),), ((2, 3), (2, 3), ()), ((1, 3), (3,)),
                   ((2, 1), (1, 2)), ((4,), (4,), (4,)), ((0,), ()), ((5, 1), (5, 1))]:
        assert broadcast_shapes(*shapes) == tuple(np.broadcast_shapes(*shapes))
    try:
        broadcast_shapes((2,), (3,))
    except ValueError as e:
        assert "(2,) and (3,)" in str(e)
    else:
        raise AssertionError("incompatible shapes were accepted")


def test_passes_with_nothing_to_rewrite_work_out_no_layouts(monkeypatch):
    from pforjac.compiled.passes import (broadcasts_into_ufuncs, cancel_reshapes,
                                         compact_constants, fold_constants)
    program = _rosenbrock_gradient_program()
    made = []
    real = codegen.Layouts
    monkeypatch.setattr(codegen, "Layouts", lambda p: made.append(p) or real(p))
    for p in (fold_constants, cancel_reshapes, compact_constants, broadcasts_into_ufuncs):
        program = p(program)
    assert made == []
    assert not any(e.prim.name in ("ones_like", "reshape") for e in program.equations)
