"""The row rule of the custom-derivative calls: the rows followed through the traced
primal, equation by equation, with the same rules (None, "could not check", where the
primal cannot be traced or an equation has no rule)."""
from __future__ import annotations

import dataclasses

from ..custom_calls import custom_jvp_call_p, custom_vjp_call_p, rules_of
from ..program import constant_values, eliminate_dead_code
from ._states import UNKNOWN
from .rules import _rules, rule


@_rules(custom_jvp_call_p, custom_vjp_call_p, rows_too=True)
def _call(eqn, ins, ctx):
    try:
        program = rules_of(eqn.params["rules"]).traced(eqn.inputs, eqn.params["residuals"])
    except TypeError:
        return None
    inner = dataclasses.replace(ctx, consts=constant_values(program))
    state = {id(v): s for v, s in zip(program.inputs, ins) if s is not None}
    for e in eliminate_dead_code(program).equations:
        sub = [state.get(id(v)) for v in e.inputs]
        if all(s is None for s in sub):
            continue
        outs = None if any(s is UNKNOWN for s in sub) else rule(e, sub, inner)
        if outs is None:
            return None
        for v, out in zip(e.outputs, outs if isinstance(outs, list) else [outs] * len(e.outputs)):
            state[id(v)] = out
    return [state.get(id(v)) for v in program.outputs]
