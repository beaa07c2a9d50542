"""A traced, simplified and compiled Program: what pforjac.function and the loop cache run.

`trace_compiled(fn, avals, ...)` traces `fn` on symbolic inputs (Variables lifted, so
they are read when the code runs; structure guards collected), simplifies the Program
and generates its code (codegen.py). The `_Compiled` it returns runs that code on
arrays, and makes its dense twin (dense_twin.py) from the same trace when a guard
refuses the values of a call.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import core
from ..pfor import warn_wrong_result
from ..program import Program, make_program
from ..structure import structure_tracking
from ..tensor import Variable
from .codegen import compile_program, equation_at_line
from .dense_twin import dense_program
from .dot_products import reads_inputs
from .passes import PASSES, batch_major_products, simplify

__all__ = ["trace_compiled"]


class _Compiled:
    """One signature's Program and its generated code (plus its dense twin, where the code
    has structure guards)."""

    def __init__(self, program: Program, n_guards: int, name: str, stand_ins=(), exact=True):
        self.program, self.n_guards, self.name = program, n_guards, name
        self.exact = exact                # (codegen's: False lets an exact zero's sign differ)
        self._code: Callable | None = None    # what runs: made on first use (numba's replaces it)
        self._numpy_code: Callable | None = None
        self._lean_code: Callable | None = None
        self.dense: "_Compiled | None" = None
        self.traced: tuple | None = None   # (raw trace, its structured pfor regions, passes)
        self.warnings: list[str] = []     # wrong-result warnings: shown whenever the code runs
        # Constants are read once; Variables on every run (updating weights needs no re-trace).
        values = program.const_values
        self._consts = [None if isinstance(v, Variable) else v.numpy() for v in values]
        self.const_bytes = sum(a.nbytes for a in self._consts if a is not None)
        self._variables = [(k, v) for k, v in enumerate(values) if isinstance(v, Variable)]
        self.stand_ins = list(stand_ins)  # per Variable argument, what its trace read instead
        self.argument_slots = [(j, k) for j, s in enumerate(self.stand_ins)   # (argument,
                               for k, c in enumerate(values) if c is s]      # const slot)
        self.prims: frozenset = frozenset()   # the primitives its trace bound
        self.backend = "numpy"            # the backend whose code `code` is
        self.key = None                   # its signature in its Function's cache

    @property
    def code(self) -> Callable:
        """The code that runs: the generated numpy code unless a backend set its own."""
        return self.numpy_code() if self._code is None else self._code

    @code.setter
    def code(self, value: Callable) -> None:
        self._code = value

    def numpy_code(self) -> Callable:
        """The generated numpy code, made on first use: a program the numba backend runs
        whole needs it only as a fallback, and generating it is a good part of a trace."""
        if self._numpy_code is None:
            self._numpy_code = compile_program(self.program, self.name, self.exact)
        return self._numpy_code

    def lean_code(self) -> Callable:
        """The numpy code a lean entry runs (lean_call.py), which passes every input array
        C-contiguous: its 2-D products of inputs may be np.dot's (dot_products.py), with
        the same results as `numpy_code`'s; that code itself where no product reads one."""
        if self._lean_code is None:
            self._lean_code = compile_program(self.program, self.name, self.exact, c_inputs=True) \
                if reads_inputs(self.program) else self.numpy_code()
        return self._lean_code

    def dense_twin(self) -> "_Compiled":
        """The code of this trace with its structured vectorizations done densely, for
        values the guards refuse (NaN, Inf, a zero divisor): the same Program replayed
        (dense_twin.py), so the same function, whatever Python state changed since."""
        raw, regions, passes = self.traced
        n_outputs = len(raw.outputs) - self.n_guards
        program = _simplified(dense_program(raw, regions, n_outputs), passes)
        twin = _Compiled(program, 0, self.name + "_dense", self.stand_ins, self.exact)
        twin.prims = self.prims
        return twin

    def warn(self) -> None:
        """Shows the warnings its trace deferred (`pfor.deferred_warnings`), as every call
        that runs the code must."""
        for message in self.warnings:
            warn_wrong_result(message)

    def run(self, arrays: list, variables: list = ()) -> tuple:
        """The outputs for input `arrays` and this call's Variable arguments."""
        consts = list(self._consts)
        for k, v in self._variables:
            consts[k] = v.numpy()
        for j, k in self.argument_slots:
            consts[k] = variables[j].numpy()
        try:
            outs = self.code(*arrays, consts)
        except Exception as e:
            if self._code is None:         # the generated numpy code: its lines are ops
                self._note_op(e, self.numpy_code())
            elif isinstance(e, IndexError):   # a backend's own: its error names no op
                self._explain(arrays, consts, e)
            raise
        if self.n_guards:
            outs, guards = outs[:-self.n_guards], outs[-self.n_guards:]
            if not all(bool(g) for g in guards):
                return None
        return _c_ordered(outs)

    def _explain(self, arrays: list, consts: list, e: IndexError) -> None:
        """Raises, from `e`, the error the generated numpy code gives for these inputs (an
        index out of bounds, with the index, the axis and the op that read it) where it
        gives one: a backend's native code checks indices as numpy does, but its error
        can say neither which op nor which index."""
        numpy_code = self.numpy_code()
        try:
            numpy_code(*arrays, consts)
        except IndexError as numpy_error:
            self._note_op(numpy_error, numpy_code)
            raise numpy_error from e

    def _note_op(self, e: Exception, code: Callable) -> None:
        """Adds to `e` (unchanged otherwise) a note naming the op of the line of the
        generated `code` that raised it, as eager errors name their op (Python 3.11+:
        add_note)."""
        tb, line = e.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code is getattr(code, "__code__", None):
                line = tb.tb_lineno
            tb = tb.tb_next
        eqn = None if line is None else equation_at_line(self.program, line)
        if eqn is None or not hasattr(e, "add_note"):
            return
        origin = getattr(eqn.origin, "prim", None)
        e.add_note(f"in compiled code '{self.name}', line {line} of its source(): "
                   f"pforjac.{eqn.prim.name} of inputs of shapes "
                   f"{', '.join(str(tuple(v.shape)) for v in eqn.inputs)}"
                   + ("" if origin is None else f", from the derivative of pforjac.{origin.name}"))


def trace_compiled(fn: Callable, avals, structured: bool, name: str,
                   simplify_program: bool = True, passes=None, stand_ins=()) -> _Compiled:
    """Traces `fn(*symbolic inputs)` (Variables lifted, structure guards collected),
    simplifies the Program (`passes`, default all; none without `simplify_program`) and
    compiles it. `stand_ins`: the Variables traced in place of Variable arguments."""
    guards: list = []
    regions: list = []

    def traced(*symbols):
        result = fn(*symbols)
        lifting = core.current_state().lifting
        guards.extend(lifting.guards)
        regions.extend(lifting.regions)
        return result, list(guards)

    with structure_tracking(structured):
        raw = make_program(traced, avals, lift_variables=True)
    raw.out_tree = _first_of_pair(raw.out_tree)
    passes = (PASSES if passes is None else passes) if simplify_program else ()
    # the pass lists that let products round otherwise let outer products lose a zero's sign
    compiled = _Compiled(_simplified(raw, passes), len(guards), name, stand_ins,
                         exact=batch_major_products not in passes)
    compiled.prims = frozenset(e.prim for e in raw.equations)   # (before any folded)
    if guards:                                # kept for its dense twin
        compiled.traced = (raw, regions, passes)
    return compiled


def _simplified(program: Program, passes) -> Program:
    return simplify(program, passes) if passes else program


def _first_of_pair(tree):
    """The structure of `result` in the traced `(result, guards)` pair."""
    return tree.children[0]


def _c_ordered(outs) -> tuple:
    """Results as C-contiguous arrays, as every eager Jacobian path returns them (generated
    code may end in a transposed view: a per-example Jacobian assembled loop axis first)."""
    return tuple(np.ascontiguousarray(o) if isinstance(o, np.ndarray) and not o.flags.c_contiguous
                 else o for o in outs)
