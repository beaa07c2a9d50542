"""The row check's rules for numpy's array functions (pforjac.ops.sorting, .scans,
.convolution)."""
from __future__ import annotations

from ..ops.convolution import convolve_p
from ..ops.scans import cumprod_p
from ..ops.sorting import (argpartition_p, argsort_p, put_along_axis_add_p, searchsorted_p,
                           sort_p, take_along_axis_p)
from ..program import Equation
from ._states import _Axis, _axis
from .rules import _cumsum, _rules

_rules(cumprod_p)(_cumsum)          # along the batch axis entry k combines rows 0..k


@_rules(sort_p, argsort_p, argpartition_p, take_along_axis_p, put_along_axis_add_p)
def _along_another_axis(eqn: Equation, ins, ctx):
    """Entries moved along an axis other than the batch axis, by indices the seed does not
    reach: every row stays where it is. Along the batch axis, or by indices computed from
    the seed: no rule."""
    a = ins[0]
    if not isinstance(a, _Axis) or a.axis == eqn.params["axis"] or \
            any(s is not None for s in ins[1:]):
        return None
    return _axis(a.axis, a)


@_rules(searchsorted_p)
def _searchsorted(eqn: Equation, ins, ctx):
    """Positions of v's entries in a sorted array the seed does not reach: v's rows stay."""
    a, v = ins
    return _axis(v.axis, v) if a is None and isinstance(v, _Axis) else None


@_rules(convolve_p)
def _convolve(eqn: Equation, ins, ctx):
    """A 1-D operand's one axis is the batch axis: its rows are summed together (no rule)."""
    return None
