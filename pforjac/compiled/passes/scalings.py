"""Products by constant numbers folded into one, with the same bits: a gradient scales a
value by a rule's factor, then by the seed's, then negates it (`-(2 * (x * 100))`).

- `-(x * c)` is `x * (-c)`: rounding to nearest is symmetric, so the product of the
  negated factor is the negated product, zeros' signs included (a NaN's sign may differ:
  NaNs are equal whatever their bits).
- `(x * p) * c`, with p = ±2**k >= 1 in magnitude and |c| >= 1, finite, is `x * (p * c)`:
  x * p is exact (a power of two moves the exponent) unless it overflows, and then so
  does x * p * c; p * c is exact too.

Only for 0-d float constants of the product's dtype, and a product nothing else reads.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ...ops.elementwise import multiply_p
from ...program import Equation, Program, constant_values, eliminate_dead_code
from ...tensor import SymbolicTensor, constant
from ._rewrite import producers, use_counts

__all__ = ["fold_scalings"]


def fold_scalings(program: Program) -> Program:
    """`program` with negated and doubly scaled products by constants folded (see above)."""
    if not any(c.ndim == 0 for c in program.consts):
        return program
    values, made, uses = constant_values(program), producers(program), use_counts(program)
    new_consts: list = []
    kept, dropped = [], set()
    for eqn in program.equations:
        folded = _folded(eqn, values, made, uses, new_consts)
        if folded is not None:
            eqn, product = folded
            dropped.add(id(product))
            made[id(eqn.outputs[0])] = eqn        # (a fold of it reads the folded product)
        kept.append(eqn)
    if not dropped:
        return program
    return eliminate_dead_code(replace(
        program, equations=[e for e in kept if id(e) not in dropped],
        consts=program.consts + [c for c, _ in new_consts],
        const_values=program.const_values + [v for _, v in new_consts]))


def _folded(eqn, values: dict, made: dict, uses: dict, new_consts: list):
    """(the equation computing `eqn`'s value as one product, the product it replaces)."""
    name = eqn.prim.name
    if name not in ("neg", "multiply") or eqn.params:
        return None
    out = eqn.outputs[0]
    for k, v in enumerate(eqn.inputs if name == "multiply" else eqn.inputs[:1]):
        product = made.get(id(v))
        inner = _scaled(product, values) if uses.get(id(v)) == 1 else None
        if inner is None or tuple(v.shape) != tuple(out.shape) or v.dtype != out.dtype:
            continue
        x, p = inner
        c = -1.0 if name == "neg" else _number(eqn.inputs[1 - k], values)
        if c is None or name == "multiply" and not _power_of_two_then(p, c):
            continue
        scale = _new_const(out, p * c, new_consts, values)
        return Equation(multiply_p, [x, scale], {}, eqn.outputs, eqn.origin), product
    return None


def _scaled(product, values: dict):
    """(x, c) where `product` is `x * c` by a 0-d constant c of the result's shape and dtype."""
    if product is None or product.prim is not multiply_p or product.params:
        return None
    out = product.outputs[0]
    if out.dtype.kind != "f":
        return None
    for j, c in enumerate(product.inputs):
        x, number = product.inputs[1 - j], _number(c, values)
        if number is not None and tuple(x.shape) == tuple(out.shape) and x.dtype == out.dtype:
            return x, number
    return None


def _number(c, values: dict):
    """The value of a 0-d float constant of a fixed value, as a numpy scalar, or None."""
    value = values.get(id(c))
    if value is None or c.ndim != 0 or c.dtype.kind != "f":
        return None
    return np.asarray(value.numpy())[()]


def _power_of_two_then(p, c) -> bool:
    """p = ±2**k with |p| >= 1, then c finite with |c| >= 1, their product finite."""
    mantissa, _ = math.frexp(float(p))
    return abs(mantissa) == 0.5 and abs(p) >= 1 and math.isfinite(c) and abs(c) >= 1 \
        and math.isfinite(float(p * c))


def _new_const(like: SymbolicTensor, value, new_consts: list, values: dict) -> SymbolicTensor:
    var = SymbolicTensor((), like.dtype, like._trace, f"{like.name}_scale")
    new_consts.append((var, constant(np.asarray(value, like.dtype))))
    values[id(var)] = new_consts[-1][1]          # (a later fold may read it)
    return var
