"""2-D matrix products in generated numpy code by np.dot, where it makes np.matmul's BLAS call.

np.matmul is a generalized ufunc: each call sets up the ufunc machinery (about 0.35 us over
np.dot's for the small products of a per-example gradient, five of them in the small MLP's
program). For two 2-D float32 or float64 operands, each C- or F-contiguous and aligned,
every dimension at least 2, both functions end in the same BLAS call (numpy's
`cblas_matrixproduct` and matmul's `matmul_matrixmatrix`): gemm in row-major order with
the transposition and leading dimension each operand's contiguity gives, into a fresh
C-ordered result, or syrk with the same arguments where one operand is the other's
transpose. So the result is the same, bit for bit, in the same layout. Where an operand
may be laid out otherwise (strided slices, which np.dot copies and np.matmul reads in
place; a dimension of 1, where either takes a BLAS level-1 or -2 path of its own) the
product stays np.matmul.

An operand is known contiguous from the Program: codegen's C-ordered values (less those a
reused buffer may lay out, `plain_calls._laid_out_by_buffers`), reshapes of those, their
transposes (a view, F-contiguous) and, for code that a lean entry runs
(`c_inputs=True`, lean_call.py passes every input array C-contiguous), the inputs.
Constants are not taken as known (their arrays are made after the code).
"""
from __future__ import annotations

import numpy as np

from ..program import Program
from .plain_calls import _laid_out_by_buffers

__all__ = ["dot_products", "reads_inputs"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def dot_products(program: Program, layouts, in_place: dict, c_inputs: bool = False) -> set[int]:
    """Indices of the matmul equations generated code computes by np.dot (`layouts`:
    codegen's `Layouts`; `in_place`: `in_place_outputs`; `c_inputs`: the code's input
    arrays are C-contiguous and aligned when it runs)."""
    c = layouts.c_ordered - _laid_out_by_buffers(program, layouts.c_ordered, in_place)
    c_known = set(c) | ({id(v) for v in program.inputs} if c_inputs else set())
    f_known: set[int] = set()
    chosen = set()
    for k, eqn in enumerate(program.equations):
        name, out = eqn.prim.name, eqn.outputs[0]
        if name == "reshape" and id(eqn.inputs[0]) in c_known:
            c_known.add(id(out))                   # (a view of C-contiguous data, or a copy)
        elif name == "transpose" and eqn.inputs[0].ndim == 2:
            if id(eqn.inputs[0]) in c_known:
                f_known.add(id(out))               # (a view: x.T)
            elif id(eqn.inputs[0]) in f_known:
                c_known.add(id(out))
        elif name == "matmul" and _plain_2d(eqn) and \
                all(id(v) in c_known or id(v) in f_known for v in eqn.inputs):
            chosen.add(k)
    return chosen


def reads_inputs(program: Program) -> bool:
    """Whether some 2-D product `dot_products` may choose reads an input (or a reshape or
    transpose of one): only then does code made with `c_inputs` differ from code without."""
    derived = {id(v) for v in program.inputs}
    for eqn in program.equations:
        if eqn.prim.name in ("reshape", "transpose") and id(eqn.inputs[0]) in derived:
            derived.add(id(eqn.outputs[0]))
        elif eqn.prim.name == "matmul" and _plain_2d(eqn) and \
                any(id(v) in derived for v in eqn.inputs):
            return True
    return False


def _plain_2d(eqn) -> bool:
    """Two 2-D operands of one real float dtype (the result's), every dimension at least 2."""
    x, y = eqn.inputs
    out = eqn.outputs[0]
    return x.ndim == y.ndim == 2 and np.dtype(out.dtype) in _FLOATS and \
        np.dtype(x.dtype) == np.dtype(y.dtype) == np.dtype(out.dtype) and \
        min(x.shape + y.shape) >= 2 and not eqn.params
