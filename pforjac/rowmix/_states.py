"""The states the row check follows through a program: where each seed row is."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..program import Equation


UNIFORM = "uniform"      # derived from the seed, but from no row in particular
UNKNOWN = "unknown"
NO_ROW = -1              # an entry of no seed row (zeros a pad or a scatter put there)
MIXED_ROW = -2           # an entry combining several seed rows


@dataclass
class Proof:
    pass


@dataclass
class Mixing:
    eqn: Equation
    moves: bool = False      # rows put elsewhere (not combined): reversed, rolled, permuted


@dataclass
class Unknown:
    eqn: Equation


@dataclass
class Context:
    """What the rules know besides the states: constant values by id (indices that move
    rows), the batch size, and the shapes of the program's results (the gradients)."""
    consts: dict
    n: int
    out_shapes: set


@dataclass
class _Axis:
    """A batch axis: entry k along `axis` comes from seed row `rows[k]` (NO_ROW: from none;
    MIXED_ROW: from several, combined by `mixed`). `moved`: the equation that last
    changed which rows are where."""
    axis: int
    rows: np.ndarray
    moved: Equation | None = None
    mixed: Equation | None = None


@dataclass
class _Row:
    """A value of one seed row only (MIXED_ROW: of several, combined by `mixed`), with no
    batch axis (`x[b]`, a sum over the batch). `moved`: the equation that picked it."""
    row: int
    moved: Equation | None = None
    mixed: Equation | None = None


def _axis(axis: int, a: _Axis, rows=None, moved=None) -> _Axis:
    """`a`'s rows (or `rows`) on `axis`; `moved` if they are no longer where they were."""
    return _Axis(axis, a.rows if rows is None else rows, moved or a.moved, a.mixed)


def _one_row(a: _Axis, eqn: Equation):
    """The batch axis summed over (or dropped): one row's value, or several rows combined."""
    rows = set(a.rows[a.rows != NO_ROW].tolist())
    if len(rows) > 1 or MIXED_ROW in rows:
        return _Row(MIXED_ROW, None, a.mixed or eqn)
    return _Row(rows.pop(), eqn, a.mixed) if rows else UNIFORM


def _merged(rows: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Entry by entry: the one row both come from (or either's, where the other has none);
    MIXED_ROW where they differ."""
    same = (rows == other) | (other == NO_ROW)
    return np.where(rows == NO_ROW, other, np.where(same, rows, MIXED_ROW))


def _combine(eqn: Equation, parts: list):
    """The state of a value made entry by entry from `parts` (`_Axis`es already on the
    output's axes, `_Row`s): where rows meet they must be the same row, else the entry
    is MIXED_ROW (and `eqn` the op that mixed them)."""
    axes = [s for s in parts if isinstance(s, _Axis)]
    singles = [s for s in parts if isinstance(s, _Row)]
    mixed = next((s.mixed for s in parts if s.mixed is not None), None)
    moved = next((s.moved for s in parts if s.moved is not None), None)
    row = np.array([NO_ROW])
    for s in singles:
        row = _merged(row, np.array([s.row]))
    if not axes:
        if not singles:
            return UNIFORM
        if row[0] == MIXED_ROW and mixed is None:
            return None       # values of several rows side by side: where their entries
        return _Row(int(row[0]), moved, mixed)   # go (their zeros) the check cannot tell
    axis = axes[0].axis
    size = eqn.outputs[0].shape[axis]        # (an operand's may be 1: broadcast)
    rows = np.full(size, NO_ROW)
    for s in axes:
        if s.axis != axis:                   # batch axes of two operands meet: all mixed
            return _Axis(axis, np.full(size, MIXED_ROW), moved, mixed or eqn)
        if len(s.rows) not in (1, size):
            return None
        if len(s.rows) != size:
            moved = eqn                      # a row broadcast over the others
        rows = _merged(rows, np.broadcast_to(s.rows, size))
    rows = _merged(rows, np.broadcast_to(row, size)) if singles else rows
    if mixed is None and (rows == MIXED_ROW).any():
        mixed = eqn
    return _Axis(axis, rows, moved, mixed)


def _on_output(v, s, rank: int):
    """Operand state `s` moved to the axes of a broadcast result of `rank` axes."""
    return _axis(s.axis + rank - v.ndim, s) if isinstance(s, _Axis) else s


def _elementwise(eqn: Equation, ins):
    rank = eqn.outputs[0].ndim
    return _combine(eqn, [_on_output(v, s, rank) for v, s in zip(eqn.inputs, ins)
                          if isinstance(s, (_Axis, _Row))])


def _placed(a: _Axis, axis: int, rows: np.ndarray, eqn: Equation) -> _Axis:
    """`a` with `rows` on `axis`: moved by `eqn` unless they are `a`'s, in `a`'s order."""
    same = len(rows) == len(a.rows) and np.array_equal(rows, a.rows)
    return _axis(axis, a, rows, None if same else eqn)
