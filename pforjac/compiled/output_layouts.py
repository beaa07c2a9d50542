"""Which outputs generated numpy code returns C-ordered, known from the Program alone.

A lean entry (lean_call.py) hands every array output out as a read-only C-ordered array.
For an output it cannot vouch for, it calls a helper that checks the layout first (and
copies a transposed view); for one known C-ordered, it writes the read-only view inline
(0.12 us less an output: the per-example gradients of a small MLP return six).

The knowledge is codegen's own: `Layouts.c_ordered` (values C-ordered at run time in
generated and eager code alike: 2-D products, layout-free ops, reshapes of such, ufuncs
numpy lays out in C order), less the values whose layout may be a reused buffer's
(`plain_calls._laid_out_by_buffers`), plus the outputs the code copies to C order
(`np.ascontiguousarray` of a transposed broadcast operand; not `np.array` of a borrowed
output, which keeps a transposed input's layout) and the outer
products it computes by np.einsum (`outer_products.outer_einsum`: C order is asked for
unless both operands are C-ordered, and numpy makes a C-ordered result of those). Inputs
are never taken as C-ordered, though a lean entry passes them so.
"""
from __future__ import annotations

from ..program import Program
from .codegen import _Plan
from .plain_calls import _laid_out_by_buffers

__all__ = ["c_ordered_outputs"]


def c_ordered_outputs(program: Program, exact: bool = True) -> frozenset[int]:
    """Positions of the array outputs that `compile_program(program, exact=exact)`'s code
    surely returns C-contiguous, whatever its input arrays' layouts."""
    plan = _Plan(program, exact)
    c = plan.layouts.c_ordered
    c_ordered = c - _laid_out_by_buffers(program, c, plan.in_place)
    copied = {id(program.equations[k].outputs[0]) for k in set(plan.contiguous) | set(plan.outer)}
    return frozenset(k for k, v in enumerate(program.outputs)
                     if id(v) in c_ordered or id(v) in copied)
