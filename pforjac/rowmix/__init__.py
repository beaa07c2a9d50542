"""Can batch_jacobian prove its own assumption? A batch-axis analysis of the loop body.

`batch_jacobian(y, x)` assumes row b of the target depends only on row b of
the source. Its loop body starts from a seed whose axis 0 is the batch axis;
this pass follows that axis, and which seed row each entry along it comes from,
through every equation of the body (the backward pass), and reports one of:

- `Proof()`: every output entry along the batch axis comes from its own seed row
  only, so the per-example Jacobians are exact;
- `Mixing(eqn)`: an equation combines different batch entries (a reduction or
  a matmul over the batch axis, an elementwise op on values whose rows disagree),
  or rows come out elsewhere than they went in (reversed, rolled, permuted by
  slicing, `concat`, `pad` or a gather): the result would be wrong, so
  batch_jacobian warns (or raises under strict=True) naming the equation;
- `Unknown(eqn)`: an equation this pass has no rule for; nothing is claimed, and
  batch_jacobian(strict=True) raises naming it (strict asks for a guarantee).

Rows are followed entry by entry along the batch axis: a slice, `concat`, `pad`,
`tile` or a gather with constant indices moves them, and the result is checked
to end where it started. A row picked out (`x[b]`) is a value of that row alone.

Only equations the outputs depend on count: a vjp rule may compute a cotangent for
an input that is not a source (a weight's, summed over the batch) and drop it.

A row's value written back among the rows (`stack([f(x[b]) for b ...])`, whose
gradient writes each row's piece into zeros) is followed when the zeros have the shape
of a result (the source's gradient): their axis 0 is the batch axis. Written into zeros
of another shape along an axis of the batch's size, which axis is the batch's the value
does not tell: that is Unknown. Unknown (an op without a rule, indices computed from
the seed, values of several rows added with no batch axis in sight) never passes
silently: batch_jacobian warns that it could not check, and strict=True raises. What it
can't see at all: mixing through values computed outside the tape.
"""
from __future__ import annotations

import numpy as np

from .. import ops as _ops
from ..program import Program, constant_values as _constant_values, eliminate_dead_code
from ._states import (MIXED_ROW, NO_ROW, UNKNOWN, Context, Mixing, Proof, Unknown, _Axis, _Row)
from .rules import has_rule, rowmix_rules, rule as _rule
from . import arrays as _arrays  # noqa: F401,E402  (rules of sort, take_along_axis, cumprod)
from . import calls as _calls  # noqa: F401,E402  (the rule of custom-derivative calls)

# results that read only their input's shape: zeros_like(g), a rule's zero cotangent (copysign's
# sign operand), carries no seed row, whatever the ops it then flows through do with rows
_SHAPE_ONLY = frozenset({_ops.elementwise.zeros_like_p, _ops.elementwise.ones_like_p})

__all__ = ["analyze", "Proof", "Mixing", "Unknown", "rowmix_rules", "has_rule"]


def analyze(program: Program, seed) -> Proof | Mixing | Unknown:
    """Follows the batch axis (axis 0 of `seed`) to the program's outputs."""
    state: dict[int, object] = {id(seed): _Axis(0, np.arange(seed.shape[0]))}
    # indices known now: not a Variable's (read when compiled code runs) nor a symbolic
    # value of an enclosing trace (a compiled function's argument)
    ctx = Context(_constant_values(program), seed.shape[0],
                  {tuple(v.shape) for v in program.outputs})
    unknown = None
    # only equations the outputs need: a rule's cotangent for an input that is not a
    # source (a weight's) may be computed and never used, and its mixing is harmless
    for eqn in eliminate_dead_code(program).equations:
        ins = [state.get(id(v)) for v in eqn.inputs]     # None: not derived from the seed
        if all(s is None for s in ins) or eqn.prim in _SHAPE_ONLY:
            continue
        outs = UNKNOWN if any(s is UNKNOWN for s in ins) else _rule(eqn, ins, ctx)
        if outs is None:
            mixed = [s for s in ins if isinstance(s, (_Axis, _Row)) and _has_mixed(s)]
            if mixed:                    # combined rows going where the check can't follow
                return Mixing(mixed[0].mixed or eqn)
            unknown = unknown or eqn
            outs = UNKNOWN
        for v, out in zip(eqn.outputs, outs if isinstance(outs, list) else [outs] * len(eqn.outputs)):
            state[id(v)] = out
    finals = [(v, state.get(id(v))) for v in program.outputs]
    for v, f in finals:                  # rows combined that reach a result
        if v.size and isinstance(f, (_Axis, _Row)) and _has_mixed(f):
            return Mixing(f.mixed or program.equations[-1])
    if unknown is not None or any(f is UNKNOWN for _, f in finals):
        return Unknown(unknown)
    for v, f in finals:
        if v.size and _misplaced(f, seed.shape[0]):
            return Mixing(f.moved or program.equations[-1], moves=True)
    return Proof()


def _has_mixed(s) -> bool:
    return bool(np.any(s.rows == MIXED_ROW)) if isinstance(s, _Axis) else s.row == MIXED_ROW


def _misplaced(final, n: int) -> bool:
    """An output whose rows are not where they started (entry b from seed row b)."""
    if isinstance(final, _Row):
        return n > 1 or final.row != 0
    if isinstance(final, _Axis):
        if final.axis != 0 or len(final.rows) != n:
            return True
        placed = final.rows != NO_ROW
        return not np.array_equal(final.rows[placed], np.arange(n)[placed])
    return False
