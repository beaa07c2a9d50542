"""The dense twin of a compiled program, made from its own trace.

A compiled function's trace vectorizes its loop bodies with structure (structure.py):
one-hot seeds stay compact where zeros stay zeros, on the assumption that the values
they meet are finite, which the generated code checks when it runs (its guards). When
a guard fails, the dense twin runs instead: the same traced Program with every
vectorization pfor did with structure done again densely. It is made by replaying the
Program's equations into a new trace (pfor recorded each structured vectorization,
`pfor.Vectorized`, with the loop body it vectorized), never by running the Python
function again: one trace, one function, whatever the function's globals hold since.
"""
from __future__ import annotations

from .. import core
from ..pfor import vectorize_stacked
from ..program import Program, make_program
from ..structure import structure_tracking
from ..tensor import SymbolicTensor

__all__ = ["dense_program"]


def dense_program(program: Program, regions: list, n_outputs: int) -> Program:
    """`program` (a trace with Variables lifted) with the structured vectorizations in
    `regions` (made in it, `pfor.vectorize_stacked`) done densely; its first `n_outputs`
    outputs (the guards after them go)."""
    made_by = {id(v): r for r in regions for v in r.outputs if isinstance(v, SymbolicTensor)}
    avals = [(tuple(v.shape), v.dtype) for v in program.inputs]
    with structure_tracking(False):
        dense = make_program(lambda *inputs: _replay(program, inputs, made_by)[:n_outputs],
                             avals, lift_variables=True)
    dense.out_tree = program.out_tree
    return dense


def _replay(program: Program, args, made_by: dict) -> list:
    """Binds `program`'s equations on `args` (as run_program does), but gives the outputs
    of each structured vectorization in `made_by` their dense values, made when the first
    of them is (the ops that made them structured are left unused)."""
    env = {id(v): a for v, a in zip(program.inputs, args)}
    env.update((id(v), c) for v, c in zip(program.consts, program.const_values))
    done: set[int] = set()
    for eqn in program.equations:
        for region in (made_by.get(id(o)) for o in eqn.outputs):
            if region is not None and id(region) not in done:
                done.add(id(region))
                _vectorize_densely(region, env)
        if all(id(o) in env for o in eqn.outputs):
            continue
        outs = core.bind(eqn.prim, *[env[id(v)] for v in eqn.inputs], **eqn.params)
        for var, out in zip(eqn.outputs, outs if eqn.prim.multiple_results else [outs]):
            env.setdefault(id(var), out)
    return [env[id(v)] for v in program.outputs]


def _vectorize_densely(region, env: dict) -> None:
    """Puts in `env` the stacked outputs of `region`'s loop body vectorized densely, on the
    replayed values of its constants."""
    body = region.program
    given = body.const_values if region.const_values is None else region.const_values
    with structure_tracking(False):
        dense = vectorize_stacked(body, region.indices, region.index_range,
                                  region.per_iteration, [env.get(id(c), c) for c in given])
    env.update((id(o), d) for o, d in zip(region.outputs, dense) if isinstance(o, SymbolicTensor))
