"""The sparsity rule of the custom-derivative call primitives: which inputs each output
element reads, from the traced primal and from the traced rule (a straight-through
estimator's rule reads what its primal's rounding does not), united. A function pforjac
cannot trace gets the conservative answer: every output reads every input.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..custom_calls import clean_state, custom_jvp_call_p, custom_vjp_call_p, rules_of
from ..program import constant_values, eliminate_dead_code, make_program
from . import _sets
from ._sets import ALL
from .pattern import _equation
from .pattern_rules import defsparsity

__all__ = ["program_relations"]


def _size(v) -> int:
    return int(np.prod(v.shape, dtype=np.int64))


def program_relations(program, sources: list[int]) -> list[list]:
    """Per output, per input in `sources`, the csr relation (output elements x input
    elements) of `program`'s Jacobian pattern."""
    program = eliminate_dead_code(program)
    sizes = [_size(program.inputs[k]) for k in sources]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    env = {}
    for k, size, start in zip(sources, sizes, offsets):
        rows = np.arange(size)
        env[id(program.inputs[k])] = _Seed(_sets.from_rows(rows, rows + start, (size, n)))
    fixed = constant_values(program)
    for eqn in program.equations:
        ins = [env.get(id(v)) for v in eqn.inputs]
        if all(p is None for p in ins):
            continue
        for var, pattern in zip(eqn.outputs, _equation(eqn, ins, n, False, fixed)):
            if pattern is not None:
                env[id(var)] = pattern
    out = []
    for v in program.outputs:
        p = env.get(id(v))
        grad = _sets.empty(_size(v), n) if p is None else p.grad
        out.append([grad[:, offsets[j]:offsets[j + 1]] for j in range(len(sources))])
    return out


class _Seed:
    def __init__(self, grad):
        self.grad, self.hess = grad, None


def _zero_filled(values, like) -> list:
    return [ops.zeros_like(w) if v is None else v for v, w in zip(values, like)]


def _rule_relations(rec, avals, n_out: int) -> list[list]:
    """Per primal output, per input: the pattern of the custom rule's Jacobian."""
    m = len(avals)
    specs = [(a.shape, a.dtype) for a in avals]
    if rec.kind == "jvp":
        def tangent_map(*args):
            outs, t_outs = rec.jvp(list(args[:m]), list(args[m:]))
            return _zero_filled(t_outs, outs)
        program = make_program(tangent_map, specs + specs)
        return [row for row in program_relations(program, list(range(m, 2 * m)))]
    outs = rec.out_avals(avals, False)

    def cotangent_map(*args):
        _, res = rec.fwd(*args[:m])
        return _zero_filled(rec.bwd(res, list(args[m:])), args[:m])
    program = make_program(cotangent_map, specs + outs)
    by_input = program_relations(program, list(range(m, m + n_out)))
    return [[by_input[k][j].T.tocsr() for k in range(m)] for j in range(n_out)]


@defsparsity(custom_jvp_call_p, custom_vjp_call_p, curvature="nonlinear")
def _call_rule(eqn, ctx):
    rec, residuals = rules_of(eqn.params["rules"]), eqn.params.get("residuals", False)
    avals = list(eqn.inputs)
    try:
        with clean_state():
            primal = program_relations(rec.traced(avals, residuals), list(range(len(avals))))
            n_out = rec.layout(avals)[1]
            rule = _rule_relations(rec, avals, n_out)
    except Exception:  # noqa: BLE001  (not traceable: the conservative pattern)
        return [[ALL if live else None for live in ctx.live]] * len(eqn.outputs)
    rels = []
    for j, row in enumerate(primal):
        extra = rule[j] if j < n_out else [None] * len(row)
        rels.append([None if not live else _canonical(a, b)
                     for live, a, b in zip(ctx.live, row, extra)])
    return rels


def _canonical(a, b):
    m = a if b is None else (a + b)
    m = m.tocsr().astype(bool)
    m.sum_duplicates()
    m.sort_indices()
    return m
