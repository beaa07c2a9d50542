"""Constants whose entries are all one number, read as that number.

A gradient's seed, pushed through a broadcast and folded, often ends as a small constant of
equal entries: `multiply([-1., -1., -1.], y)` for the `-sum(h * y)` of a cross-entropy.
numpy's loop over a (64, 3) result with a (3,) operand runs a short inner loop per row
(1.1 us); with a 0-d operand of the same dtype it runs one loop (0.55). The same numbers
(every entry has the same bits), the same dtype (a 0-d array promotes as the array did), and
the result's shape is set by the other operands alone. So is its layout: numpy orders a
ufunc's loop by its operands' strides, pair of axes by pair of axes, where both strides are
nonzero; a constant with one axis longer than 1 has one such axis (its broadcast ones are 0)
and orders no pair, so it may go (with more such axes: where the result is C-ordered anyway).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...program import Program
from ...tensor import SymbolicTensor, Variable, constant
from ..codegen import Layouts, plain_ufunc
from ._rewrite import rename
from .layouts import _c_ordered_result

__all__ = ["uniform_constants"]


def uniform_constants(program: Program) -> Program:
    """Every constant of equal entries that only C-ordered ufuncs read, none of which it
    gives its shape, as a 0-d constant (see above)."""
    layouts = Layouts(program)
    consts, values, alias = [], [], {}
    for c, value in zip(program.consts, program.const_values):
        single = _single_value(c, value, layouts)
        if single is None:
            consts.append(c)
            values.append(value)
            continue
        stored = SymbolicTensor((), c.dtype, c._trace, f"{c.name}_0d")
        alias[id(c)] = stored
        consts.append(stored)
        values.append(constant(single))
    if not alias:
        return program
    return replace(rename(program, program.equations, alias), consts=consts, const_values=values)


def _single_value(c, value, layouts: Layouts) -> np.ndarray | None:
    """The 0-d array of `c`'s one value, where `c` qualifies; None otherwise."""
    if c.ndim == 0 or isinstance(value, (Variable, SymbolicTensor)) or \
            id(c) in layouts.results:
        return None
    readers = layouts.readers.get(id(c), [])
    for eqn in readers:
        others = [tuple(v.shape) for v in eqn.inputs if v is not c]
        if not plain_ufunc(eqn) or not others or \
                np.broadcast_shapes(*others) != tuple(eqn.outputs[0].shape) or \
                sum(d > 1 for d in c.shape) > 1 and not _c_ordered_result(eqn, layouts):
            return None
    array = np.asarray(value.numpy())
    if not readers or array.size == 0:
        return None
    bits = np.ascontiguousarray(array).reshape(-1).view(np.uint8).reshape(array.size, -1)
    if not (bits == bits[:1]).all():
        return None
    return array.reshape(-1)[:1].reshape(())
