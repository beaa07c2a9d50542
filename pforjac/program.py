"""Symbolic tracing into a Program: a flat list of equations `outs = op[params](ins)`.

A trace is opened by `make_program(fn, avals)`; while it is active, every op with
an input that belongs to it is appended to its Program instead of computed. Ops
whose inputs all come from outside (forward activations, weights) are bound in
the enclosing context: that is loop-invariant hoisting, for free. Tensors from
outside that the trace does use become the Program's captured constants.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from . import core
from .tensor import SymbolicTensor, Tensor, Variable
from .tree import tree_flatten, tree_unflatten

__all__ = ["Program", "Equation", "Trace", "make_program", "run_program", "eliminate_dead_code",
           "constant_values"]


@dataclass
class Equation:
    prim: core.Primitive
    inputs: list[SymbolicTensor]
    params: dict[str, Any]
    outputs: list[SymbolicTensor]
    origin: Any = None   # the forward tape entry whose vjp rule emitted this equation, if any
    note: str = ""       # shown after the equation, e.g. the structure pfor kept

    def __str__(self) -> str:
        outs = " ".join(_aval_str(v) for v in self.outputs)
        params = ""
        if self.params:
            params = "[" + ", ".join(f"{k}={_param_str(v)}" for k, v in self.params.items()) + "]"
        ins = " ".join(v.name for v in self.inputs)
        note = f"  # {self.note}" if self.note else ""
        return f"{outs} = {self.prim.name}{params} {ins}{note}"


def _aval_str(v: SymbolicTensor) -> str:
    dims = ",".join(str(d) for d in v.shape)
    return f"{v.name}:{_short_dtype(v.dtype)}[{dims}]"


def _short_dtype(dtype) -> str:
    dtype = np.dtype(dtype)
    return {"f": "f", "i": "i", "u": "u", "b": "bool", "c": "c"}[dtype.kind] + \
        ("" if dtype.kind == "b" else str(dtype.itemsize * 8))


def _param_str(value) -> str:
    if isinstance(value, np.dtype) or isinstance(value, type):
        return np.dtype(value).name
    return repr(value)


@dataclass
class Program:
    """A traced function: typed inputs, captured constants, equations, outputs."""
    inputs: list[SymbolicTensor]
    consts: list[SymbolicTensor]
    const_values: list[Tensor]
    equations: list[Equation]
    outputs: list[SymbolicTensor]
    out_tree: Any = None
    trace_level: int = field(default=0, repr=False)

    def __str__(self) -> str:
        ins = ", ".join(_aval_str(v) for v in self.inputs)
        lines = [f"{{ lambda {ins} ."]
        for var, value in zip(self.consts, self.const_values):
            lines.append(f"    {_aval_str(var)} = const {_const_summary(value)}")
        lines.extend(f"    {eqn}" for eqn in self.equations)
        lines.append("  in (" + ", ".join(_out_name(v) for v in self.outputs) + ") }")
        return "\n".join(lines)

    def __call__(self, *args):
        return tree_unflatten(self.out_tree, run_program(self, args))



def _out_name(v) -> str:
    return v.name if isinstance(v, SymbolicTensor) else "const"


def _const_summary(value: Tensor) -> str:
    if isinstance(value, SymbolicTensor):
        return f"from outer trace {value.describe()}"
    if value.size <= 4:
        return np.array2string(np.asarray(value.numpy()), separator=",")
    return f"<{value.dtype.name}{list(value.shape)}>"


class Trace:
    """An active trace: where symbolic ops go while a Program is being built."""

    def __init__(self, level: int):
        self.level = level
        self.active = True
        self.equations: list[Equation] = []
        self.consts: list[SymbolicTensor] = []
        self.const_values: list[Tensor] = []
        self._const_ids: dict[int, SymbolicTensor] = {}
        self.inputs: list[SymbolicTensor] = []
        self.guards: list[SymbolicTensor] = []   # run-time checks a compiled program must pass
        self.regions: list = []   # its loop bodies pfor vectorized with structure (pfor.Vectorized)
        self._counter = 0

    def describe(self) -> str:
        return f"trace at level {self.level}"

    def new_var(self, shape, dtype) -> SymbolicTensor:
        name = _var_name(self._counter)
        self._counter += 1
        return SymbolicTensor(shape, dtype, self, name)

    def capture(self, t: Tensor) -> SymbolicTensor:
        if t._trace is self:
            return t
        var = self._const_ids.get(id(t))
        if var is None:
            var = self.new_var(t.shape, t.dtype)
            self._const_ids[id(t)] = var
            self.consts.append(var)
            self.const_values.append(t)
        return var

    def add_equation(self, prim: core.Primitive, args, params) -> list[SymbolicTensor]:
        avals = core.abstract_eval(prim, args, params)
        ins = [self.capture(a) for a in args]
        outs = [self.new_var(shape, dtype) for shape, dtype in avals]
        for o in outs:
            o.made_by = prim.name
        self.equations.append(Equation(prim, ins, dict(params), outs, core.current_state().origin))
        return outs


def _var_name(k: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    name = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        name = letters[r] + name
    return name


def make_program(fn: Callable, avals: Sequence[tuple[tuple, Any]],
                 lift_variables: bool = False) -> Program:
    """Traces `fn(*symbolic_inputs)` once into a Program.

    `avals` gives each input's (shape, dtype). `fn` may return a nested
    structure of tensors; non-tensor leaves are converted with `as_tensor`.
    With `lift_variables`, every op reading a Variable is traced too (not
    computed now), so the Program reads the Variable's value when it runs.
    """
    state = core.current_state()
    trace = Trace(len(state.traces) + 1)
    # (kept on the trace: an assignment into an input rebinds it, pforjac.mutation)
    inputs = trace.inputs = [trace.new_var(shape, dtype) for shape, dtype in avals]
    state.traces.append(trace)
    saved_lifting = state.lifting
    if lift_variables:
        state.lifting = trace
    try:
        result = fn(*inputs)
    finally:
        state.traces.pop()
        state.lifting = saved_lifting
        trace.active = False
    leaves, tree = tree_flatten(result)
    from .tensor import as_tensor
    outputs = [trace.capture(as_tensor(leaf)) for leaf in leaves]
    program = Program(inputs, trace.consts, trace.const_values, trace.equations, outputs, tree,
                      trace.level)
    # The symbolic values keep pointing at their (finished) trace; emptying it breaks the
    # value -> trace -> equations -> value cycle, so a Program dropped is freed at once with
    # its captured constants (often large arrays) instead of at the next gc run.
    trace.equations, trace.consts, trace.const_values, trace.guards = [], [], [], []
    trace.inputs = []
    trace.regions = []
    trace._const_ids = {}
    return program


def run_program(program: Program, args: Sequence) -> list[Tensor]:
    """Binds the Program's equations in the current context (eager, taped or traced)."""
    if len(args) != len(program.inputs):
        raise TypeError(f"the program takes {len(program.inputs)} inputs, got {len(args)}")
    env: dict[int, Tensor] = {}
    for var, value in zip(program.inputs, args):
        env[id(var)] = value
    for var, value in zip(program.consts, program.const_values):
        env[id(var)] = value
    bind = core.bind
    for eqn in program.equations:
        outs = bind(eqn.prim, *[env[id(v)] for v in eqn.inputs], **eqn.params)
        if not eqn.prim.multiple_results:
            outs = (outs,)
        for var, out in zip(eqn.outputs, outs):
            env[id(var)] = out
    return [env[id(v)] for v in program.outputs]


def eliminate_dead_code(program: Program) -> Program:
    """`program` without the equations its outputs do not need (and their constants)."""
    live = {id(v) for v in program.outputs}
    kept = []
    for eqn in reversed(program.equations):
        if any(id(v) in live for v in eqn.outputs):
            kept.append(eqn)
            live.update(id(v) for v in eqn.inputs)
    used = [(c, v) for c, v in zip(program.consts, program.const_values) if id(c) in live]
    if len(kept) == len(program.equations) and len(used) == len(program.consts):
        return program                  # (nothing dead: programs are never changed in place)
    return dataclasses.replace(program, equations=kept[::-1], consts=[c for c, _ in used],
                   const_values=[v for _, v in used])


def constant_values(program: Program) -> dict:
    """{id(const var): its Tensor} for the constants whose values are fixed (not Variables,
    read when the code runs, nor symbolic values of an enclosing trace)."""
    return {id(c): v for c, v in zip(program.consts, program.const_values)
            if not isinstance(v, (Variable, SymbolicTensor))}
