"""What the passes share to rewrite a Program: aliases, producers, fresh variables."""
from __future__ import annotations

from dataclasses import replace

from ...program import Equation, Program
from ...tensor import SymbolicTensor


class LazyLayouts:
    """codegen's `Layouts(program)`, worked out at the first question asked of it: a pass
    that finds nothing to rewrite asks none."""

    def __init__(self, program: Program):
        self._program, self._layouts = program, None

    def __getattr__(self, name: str):
        if self._layouts is None:
            from ..codegen import Layouts
            self._layouts = Layouts(self._program)
        return getattr(self._layouts, name)


def resolve(v, alias: dict):
    """The value `v` stands for after the aliases `alias` ({id(var): var}) are followed."""
    while id(v) in alias:
        v = alias[id(v)]
    return v


def renamed(eqn: Equation, alias: dict) -> Equation:
    """`eqn` reading the values `alias` gives for its inputs (itself where none is aliased)."""
    if not any(id(v) in alias for v in eqn.inputs):
        return eqn
    return replace(eqn, inputs=[resolve(v, alias) for v in eqn.inputs])


def rename(program: Program, equations, alias: dict[int, SymbolicTensor]) -> Program:
    """A copy of `program` with `equations`, every use of an aliased var replaced (an
    equation that reads none is kept as it is: equations are never changed in place)."""
    eqns = [renamed(e, alias) for e in equations] if alias else list(equations)
    return replace(program, equations=eqns, outputs=[resolve(v, alias) for v in program.outputs])


def producers(program: Program) -> dict[int, Equation]:
    """{id(var): the equation that makes it}."""
    return {id(v): eqn for eqn in program.equations for v in eqn.outputs}


def use_counts(program: Program) -> dict[int, int]:
    """{id(var): how many equation inputs and program outputs read it}."""
    uses: dict[int, int] = {}
    for v in [v for eqn in program.equations for v in eqn.inputs] + list(program.outputs):
        uses[id(v)] = uses.get(id(v), 0) + 1
    return uses


def fresh_vars(like: SymbolicTensor):
    """`fresh(shape, dtype)`: a new variable of `like`'s trace, named after it."""
    count = [0]

    def fresh(shape, dtype) -> SymbolicTensor:
        count[0] += 1
        return SymbolicTensor(tuple(shape), dtype, like._trace, f"{like.name}_{count[0]}")
    return fresh
