"""Constants whose entries are all one number, read as that number; sums with a negated
operand as differences (`negated_sums`).

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

from ...ops.elementwise import add_p, multiply_p, subtract_p
from ...program import Program, constant_values, eliminate_dead_code
from ...tensor import SymbolicTensor, Tensor, Variable, constant
from ..codegen import Layouts, plain_ufunc
from ._rewrite import producers, rename, use_counts
from .layouts import _c_ordered_result

__all__ = ["uniform_constants", "negated_sums"]


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


def negated_sums(program: Program) -> Program:
    """`x + (-1) * y` (a 0-d constant -1, the product read there only) as `x - y`: one
    numpy call fewer. The same bits for real dtypes: -1 * y is -y exactly (a NaN keeps its
    sign in both), and x - y is x + (-y) exactly. Not for complex ones: numpy's (-1+0j) *
    (inf+0j) is -inf+nanj (0 * inf in the imaginary part), and a -0.0 part may differ."""
    values = constant_values(program)
    made, uses = producers(program), use_counts(program)
    kept, dropped = [], set()
    for eqn in program.equations:
        negated = _negated_operand(eqn, made, uses, values) if eqn.prim is add_p else None
        if negated is not None:
            k, y, product = negated
            dropped.add(id(product))
            eqn = replace(eqn, prim=subtract_p, inputs=[eqn.inputs[1 - k], y])
        kept.append(eqn)
    if not dropped:
        return program
    return eliminate_dead_code(replace(program, equations=[e for e in kept if id(e) not in dropped]))


def _negated_operand(eqn, made: dict, uses: dict, values: dict):
    """(position, y, the product) where operand `position` of the add is (-1) * y."""
    for k, v in enumerate(eqn.inputs):
        product = made.get(id(v))
        if product is None or product.prim is not multiply_p or uses.get(id(v)) != 1 \
                or product.params:
            continue
        for j, c in enumerate(product.inputs):
            y, value = product.inputs[1 - j], values.get(id(c))
            if c.ndim == 0 and c.dtype.kind != "c" and isinstance(value, Tensor) and \
                    not isinstance(value, (Variable, SymbolicTensor)) and \
                    np.asarray(value.numpy()) == -1 \
                    and c.dtype == y.dtype == eqn.outputs[0].dtype \
                    and tuple(y.shape) == tuple(v.shape):
                return k, y, product
    return None
