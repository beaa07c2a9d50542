"""Constant folding: equations whose inputs are all fixed constants are evaluated once."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ... import core
from ...program import Program, constant_values, eliminate_dead_code
from ...tensor import Tensor
from ..codegen import Layouts
from ._rewrite import LazyLayouts

__all__ = ["fold_constants"]

_FOLD_LIMIT = 1 << 20   # elements: folding must not turn a broadcast into a huge constant
_SHAPE_ONLY = ("ones_like", "zeros_like")    # outputs that depend on the input's shape alone


def fold_constants(program: Program) -> Program:
    """Evaluates the equations whose inputs are all fixed constants (not Variables, which
    are read when the program runs), and `ones_like(h)` / `zeros_like(h)` whatever `h`
    holds, where a C-ordered constant in their place is laid out as eager code's."""
    fixed = constant_values(program)
    consts, values = list(program.consts), list(program.const_values)
    layouts = LazyLayouts(program)
    kept = []
    for eqn in program.equations:
        small = all(math.prod(v.shape) <= _FOLD_LIMIT for v in eqn.outputs)
        if small and eqn.prim.name in _SHAPE_ONLY and _laid_out_as_c(eqn, fixed, layouts):
            like = Tensor._from_array(np.empty(eqn.inputs[0].shape, eqn.inputs[0].dtype))
            outs = [core.bind(eqn.prim, like, **eqn.params)]
        elif eqn.inputs and small and all(id(v) in fixed for v in eqn.inputs):
            outs = core.bind(eqn.prim, *[fixed[id(v)] for v in eqn.inputs], **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
        else:
            kept.append(eqn)
            continue
        for var, out in zip(eqn.outputs, outs):
            fixed[id(var)] = out
            consts.append(var)
            values.append(out)
    return eliminate_dead_code(replace(program, equations=kept, consts=consts, const_values=values))


def _laid_out_as_c(eqn, fixed: dict, layouts: Layouts) -> bool:
    """ones_like(h) is laid out as h is: a C-ordered constant in its place only where h is
    C-ordered too, or nothing depends on the layout (a product would round otherwise)."""
    if not eqn.inputs:
        return False
    h, out = eqn.inputs[0], eqn.outputs[0]
    if sum(d > 1 for d in out.shape) <= 1:
        return True                     # (one axis or none: every layout of it is C order)
    return id(h) in layouts.c_ordered or id(out) in layouts.blind or (
        id(h) in fixed and fixed[id(h)].numpy().flags.c_contiguous)
