"""Generated numpy code calls what a primitive's forward would end in, where the trace shows
which that is (`Primitive.plain_forward`): `x.reshape((64, 1))` for `reshape_impl(x, ...)`,
`np.add.reduce(x, axis=(1,), keepdims=False)` for a sum of C-ordered data that no short-axis
path takes. The forward's own Python (its checks of type, layout and shape, np.sum's
wrapper) costs 0.2-1.5 us a call, paid per equation: the per-example gradients of a small
MLP run 13 such calls in about 60 us. The values are the forward's, bit for bit: the same
numpy call on the same data.

A method is called only on a numpy value (an input, a constant, the result of a numpy
ufunc or of an op with a `plain_forward`, pforjac's own); a user's op may return other things.
"""
from __future__ import annotations

import ast

import numpy as np

from .. import core
from ..program import Program

__all__ = ["plain_calls", "plain_call_ast"]


def plain_calls(program: Program, c_ordered: set, in_place: dict) -> dict[int, str]:
    """{equation index: numpy expression in `x`} for the equations generated code computes
    by the numpy calls their forward ends in (`c_ordered`: `Layouts.c_ordered`; `in_place`:
    the equations that write into an input's buffer, `in_place_outputs`)."""
    known = {id(v) for v in list(program.inputs) + list(program.consts)}
    c_ordered = c_ordered - _laid_out_by_buffers(program, c_ordered, in_place)
    chosen: dict[int, str] = {}
    for k, eqn in enumerate(program.equations):
        plain = _plain(eqn, known, c_ordered)
        if plain is not None:
            chosen[k] = plain
        if eqn.prim.plain_forward is not None or isinstance(core.impl_rules[eqn.prim], np.ufunc):
            known.update(id(o) for o in eqn.outputs)
    return chosen


def _laid_out_by_buffers(program: Program, c_ordered: set, in_place: dict) -> set[int]:
    """Values whose layout may be a reused buffer's: a ufunc writing into a transposed
    buffer (`out=`) makes a transposed result, where eager code's is fresh and C-ordered,
    and what is made from it follows (but for results laid out afresh: layout-free ops, 2-D
    products). numpy sums in an order set by the layout: a sum of those is left to its
    forward, which copies its input to C order first."""
    doubtful: set[int] = set()
    for k, eqn in enumerate(program.equations):
        out = eqn.outputs[0]
        if eqn.prim.layout == "free" or eqn.prim.name == "matmul" and out.ndim <= 2:
            continue
        buffer = eqn.inputs[in_place[k]] if k in in_place else None
        if buffer is not None and (id(buffer) not in c_ordered or id(buffer) in doubtful) \
                or any(id(v) in doubtful for v in eqn.inputs):
            doubtful.update(id(o) for o in eqn.outputs)
    return doubtful


def _plain(eqn, known: set, c_ordered: set) -> str | None:
    forward = eqn.prim.plain_forward
    if forward is None or len(eqn.inputs) != 1 or id(eqn.inputs[0]) not in known:
        return None
    x = eqn.inputs[0]
    return forward(x, id(x) in c_ordered, **eqn.params)


def plain_call_ast(plain: str, x: ast.expr) -> ast.expr:
    """The expression `plain` (in `x`) with the input expression `x` in place of `x`."""
    tree = ast.parse(plain, mode="eval").body
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.Name) and value.id == "x":
                setattr(node, field, x)
            elif isinstance(value, list):
                value[:] = [x if isinstance(v, ast.Name) and v.id == "x" else v for v in value]
    return x if isinstance(tree, ast.Name) and tree.id == "x" else tree
