"""Numpy calls generated code makes in place of an op's usual one where they give the same
bits with less set-up: sums of bools cast to floats by np.einsum (count_sums.py), 2-D
products of contiguous operands by np.dot (dot_products.py). Code generated with
`c_inputs=True` (a lean entry's, `_Compiled.lean_code`) may only be called with C-contiguous,
aligned input arrays: it takes them as known contiguous."""
from __future__ import annotations

from ..program import Program
from .count_sums import count_sums
from .dot_products import dot_products

__all__ = ["cheap_calls"]


def cheap_calls(program: Program, layouts, in_place: dict, plain: dict, c_inputs: bool) -> set:
    """Adds to `plain` (codegen's {equation index: numpy expression in `x`}) the sums
    `count_sums` chooses; returns the indices of the matmuls to call as np.dot
    (`dot_products`; `c_inputs`: the code's input arrays are C-contiguous)."""
    plain.update(count_sums(program))
    return dot_products(program, layouts, in_place, c_inputs)
