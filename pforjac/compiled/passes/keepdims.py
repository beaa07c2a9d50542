"""Reductions that keep the axes a reshape would put back.

A reduction's gradient and the max-shifted softmax read a reduced value with its axes
restored, `reshape(sum(x, axes, keepdims=False), (64, 1))`, often after an elementwise op
or two on the reduced value (`reshape(reciprocal(sum(x)), (64, 1))`). `keep_reduced_axes`
makes the reduction keep its axes and applies the elementwise ops to that: the reshape, one
numpy call, goes, and the values are the same bits (elementwise ops, the same reduction).

Only where each value of the chain has no other reader (nor is a result), and the
elementwise ops' other operands are 0-d (they broadcast to either shape alike).
"""
from __future__ import annotations

from dataclasses import replace

from ...ops.broadcasting import REDUCTIONS
from ...program import Equation, Program, eliminate_dead_code
from ._rewrite import fresh_vars, producers, use_counts

__all__ = ["keep_reduced_axes"]

_CHAIN = 4          # elementwise ops between the reduction and the reshape, at most


def keep_reduced_axes(program: Program) -> Program:
    """Every reshape that restores a reduction's axes folded into the reduction (see above)."""
    made, uses = producers(program), use_counts(program)
    replaced: dict[int, list[Equation]] = {}      # id(reshape) -> the equations it becomes
    dropped: set[int] = set()
    for eqn in program.equations:
        chain = _chain(eqn, made, uses) if eqn.prim.name == "reshape" else None
        if chain is not None and not dropped & {id(e) for e in chain}:
            dropped.update(id(e) for e in chain)
            replaced[id(eqn)] = _rewritten(chain, eqn)
    if not replaced:
        return program
    kept = [new for e in program.equations if id(e) not in dropped
            for new in replaced.get(id(e), [e])]
    return eliminate_dead_code(replace(program, equations=kept))


def _chain(reshape_eqn: Equation, made: dict, uses: dict) -> list[Equation] | None:
    """[reduction, elementwise ops...] from the reduction to the reshape's input, where the
    reshape's shape is the reduction's with its axes kept; None otherwise."""
    chain, v = [], reshape_eqn.inputs[0]
    while len(chain) <= _CHAIN:
        eqn = made.get(id(v))
        if eqn is None or uses.get(id(v), 0) != 1 or len(eqn.outputs) != 1:
            return None
        chain.insert(0, eqn)
        if eqn.prim in REDUCTIONS.values() and not eqn.params.get("keepdims", True):
            return chain if _kept_shape(eqn) == tuple(reshape_eqn.outputs[0].shape) else None
        others = [u for u in eqn.inputs if u.ndim]
        if not eqn.prim.elementwise or eqn.prim.multiple_results or len(others) != 1:
            return None
        v = others[0]
    return None


def _kept_shape(eqn: Equation) -> tuple:
    x, axes = eqn.inputs[0], eqn.params["axes"]
    return tuple(1 if a in axes else d for a, d in enumerate(x.shape))


def _rewritten(chain: list[Equation], reshape_eqn: Equation) -> list[Equation]:
    """The chain computed at the reshape's shape, its last value the reshape's output."""
    out = reshape_eqn.outputs[0]
    fresh = fresh_vars(chain[0].outputs[0])
    new: dict[int, object] = {}
    eqns = []
    for k, eqn in enumerate(chain):
        v = eqn.outputs[0]
        nv = out if k == len(chain) - 1 else fresh(out.shape, v.dtype)
        new[id(v)] = nv
        params = dict(eqn.params, keepdims=True) if k == 0 else eqn.params
        eqns.append(replace(eqn, inputs=[new.get(id(u), u) for u in eqn.inputs],
                            params=params, outputs=[nv]))
    return eqns
