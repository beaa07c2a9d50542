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

What it can't see: mixing hidden inside a single op that has no rule here; a row's
value written back among the rows (`stack([f(x[b]) for b ...])`, whose gradient
writes each row's piece into zeros: which axis of the zeros is the batch's, the
value does not tell), which is Unknown; and mixing through values computed outside
the tape.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .program import Equation, Program
from .simplify import eliminate_dead_code
from .structure import _block_after_reshape

__all__ = ["analyze", "Proof", "Mixing", "Unknown"]

UNIFORM = "uniform"      # derived from the seed, but from no row in particular
MIXED = "mixed"
UNKNOWN = "unknown"
NO_ROW = -1


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
class _Axis:
    """A batch axis: entry k along `axis` comes from seed row `rows[k]` (NO_ROW: from none,
    as padding zeros). `moved`: the equation that last changed which rows are where."""
    axis: int
    rows: np.ndarray
    moved: Equation | None = None


@dataclass
class _Row:
    """A value of one seed row only, with no batch axis (`x[b]`)."""
    row: int


_ELEMENTWISE = {"neg", "add", "subtract", "multiply", "multiply_no_nan", "divide", "power",
                "maximum", "minimum",
                "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sigmoid", "relu",
                "softplus", "sqrt", "square", "abs", "sign", "reciprocal", "where", "cast",
                "stop_gradient", "equal", "not_equal", "less", "less_equal", "greater",
                "greater_equal", "logical_and", "logical_or", "logical_not", "zeros_like",
                "ones_like"}


def analyze(program: Program, seed) -> Proof | Mixing | Unknown:
    """Follows the batch axis (axis 0 of `seed`) to the program's outputs."""
    state: dict[int, object] = {id(seed): _Axis(0, np.arange(seed.shape[0]))}
    consts = {id(v): value for v, value in zip(program.consts, program.const_values)}
    unknown = None
    # only equations the outputs need: a rule's cotangent for an input that is not a
    # source (a weight's) may be computed and never used, and its mixing is harmless
    for eqn in eliminate_dead_code(program).equations:
        ins = [state.get(id(v)) for v in eqn.inputs]     # None: not derived from the seed
        if all(s is None for s in ins):
            continue
        if any(s is MIXED for s in ins):
            outs = MIXED
        elif any(s is UNKNOWN for s in ins):
            outs = UNKNOWN
        else:
            outs = _rule(eqn, ins, consts, seed.shape[0])
        if outs is None:
            unknown = unknown or eqn
            outs = UNKNOWN
        if outs is MIXED:
            return Mixing(eqn)
        for v, out in zip(eqn.outputs, outs if isinstance(outs, list) else [outs] * len(eqn.outputs)):
            state[id(v)] = out
    finals = [state.get(id(v)) for v in program.outputs]
    if unknown is not None or any(f is UNKNOWN for f in finals):
        return Unknown(unknown)
    for v, f in zip(program.outputs, finals):
        if v.size and _misplaced(f, seed.shape[0]):
            return Mixing(getattr(f, "moved", None) or program.equations[-1], moves=True)
    return Proof()


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


def _rule(eqn: Equation, ins, consts: dict, n: int):
    """The output's state (a list for an op with several results): an `_Axis`, a `_Row`,
    UNIFORM, MIXED, or None when there is no rule (`consts`: constant values by id; `n`:
    the batch size)."""
    name, p = eqn.prim.name, eqn.params
    if name in _ELEMENTWISE:
        return _elementwise(eqn, ins)
    if name == "matmul":
        return _matmul(eqn, ins)
    if name == "einsum":
        return _einsum(eqn, ins)
    if name == "setitem_zeros":
        return _setitem_zeros(eqn, ins, consts, n)
    if not any(isinstance(s, _Axis) for s in ins):   # no batch axis: whatever the op does,
        rows = {s.row for s in ins if isinstance(s, _Row)}   # one row's value (or none's)
        out = MIXED if len(rows) > 1 else _Row(rows.pop()) if rows else UNIFORM
        return [out] * len(eqn.outputs) if eqn.prim.multiple_results else out
    if name in ("gather", "scatter_add") and ins[1] is not None:
        return None                      # indices computed from the seed: no rule
    if name in _MOVING:
        return _MOVING[name](eqn, ins, consts, n)
    a = ins[0]
    if name in ("sum", "max", "min", "prod"):
        if a.axis in p["axes"]:
            return _one_row(a)
        return _Axis(a.axis if p["keepdims"] else a.axis - sum(1 for x in p["axes"] if x < a.axis),
                     a.rows, a.moved)
    if name == "reshape":
        shape_in = tuple(eqn.inputs[0].shape)
        block = _block_after_reshape(shape_in, a.axis, a.axis + 1, tuple(p["shape"]))
        if block is None or block[1] - block[0] != 1:
            return _one_row(a) if shape_in[a.axis] == 1 else None
        return _Axis(block[0], a.rows, a.moved)
    if name == "transpose":
        return _Axis(p["perm"].index(a.axis), a.rows, a.moved)
    if name == "broadcast_to":
        axis = a.axis + len(p["shape"]) - eqn.inputs[0].ndim
        size = p["shape"][axis]
        if len(a.rows) == size:
            return _Axis(axis, a.rows, a.moved)
        return _Axis(axis, np.repeat(a.rows, size), eqn)     # one row stretched over all
    return None


def _one_row(a: _Axis):
    """The batch axis summed over (or dropped): fine if at most one row is on it."""
    rows = set(a.rows[a.rows != NO_ROW].tolist())
    if len(rows) > 1:
        return MIXED
    return _Row(rows.pop()) if rows else UNIFORM


def _combine(eqn: Equation, parts: list):
    """The state of a value made entry by entry from `parts` (`_Axis`es already on the
    output's axes, `_Row`s): rows must agree wherever two meet."""
    axes = [s for s in parts if isinstance(s, _Axis)]
    singles = {s.row for s in parts if isinstance(s, _Row)}
    if len({s.axis for s in axes}) > 1 or len(singles) > 1:
        return MIXED                     # batch entries of two operands meet
    if not axes:
        return _Row(singles.pop()) if singles else UNIFORM
    size = max(len(s.rows) for s in axes)
    rows = np.full(size, NO_ROW)
    for s in axes:
        r = np.broadcast_to(s.rows, size) if len(s.rows) in (1, size) else None
        if r is None:
            return None
        clash = (rows != NO_ROW) & (r != NO_ROW) & (rows != r)
        if clash.any():
            return MIXED
        rows = np.where(rows == NO_ROW, r, rows)
    if singles:
        (row,) = singles
        if ((rows != NO_ROW) & (rows != row)).any():
            return MIXED
        rows = np.full(size, row)
    moved = next((s.moved for s in axes if s.moved is not None), None)
    if any(len(s.rows) != size for s in axes):
        moved = eqn                      # a row broadcast over the others
    return _Axis(axes[0].axis, rows, moved)


def _on_output(v, s, rank: int):
    """Operand state `s` moved to the axes of a broadcast result of `rank` axes."""
    return _Axis(s.axis + rank - v.ndim, s.rows, s.moved) if isinstance(s, _Axis) else s


def _elementwise(eqn: Equation, ins):
    rank = eqn.outputs[0].ndim
    return _combine(eqn, [_on_output(v, s, rank) for v, s in zip(eqn.inputs, ins)
                          if isinstance(s, (_Axis, _Row))])


def _matmul(eqn: Equation, ins):
    (x, y), (sx, sy) = eqn.inputs, ins
    if x.ndim < 2 or y.ndim < 2:
        return None
    rank = eqn.outputs[0].ndim
    parts = []
    for v, s, contracted, kept in ((x, sx, x.ndim - 1, x.ndim - 2), (y, sy, y.ndim - 2, y.ndim - 1)):
        if isinstance(s, _Axis):
            if s.axis == contracted:     # the batch axis is summed over
                s = _one_row(s)
                if s is MIXED:
                    return MIXED
            elif s.axis == kept:
                s = _Axis(rank - 2 if v is x else rank - 1, s.rows, s.moved)
            else:                        # a batch dimension of the product
                s = _Axis(s.axis + rank - v.ndim, s.rows, s.moved)
        if isinstance(s, (_Axis, _Row)):
            parts.append(s)
    return _combine(eqn, parts)


def _einsum(eqn: Equation, ins):
    """The batch axis's letter must survive into the output, and be one letter for all."""
    from .ops.linalg import parse_einsum
    letters, out = parse_einsum(eqn.params["subscripts"], [v.ndim for v in eqn.inputs])
    parts = []
    for subs, s in zip(letters, ins):
        if isinstance(s, _Axis):
            letter = subs[s.axis]
            if subs.count(letter) > 1:
                return None              # a diagonal along the batch axis: no rule
            if letter not in out:
                s = _one_row(s)     # the batch axis is summed over
                if s is MIXED:
                    return MIXED
            else:
                s = _Axis(out.index(letter), s.rows, s.moved)
        if isinstance(s, (_Axis, _Row)):
            parts.append(s)
    return _combine(eqn, parts)


# -- ops that pick, move or place rows (their input on a batch axis) -------------------------
def _getitem(eqn: Equation, ins, consts, n):
    a = ins[0]
    axis, out_axis = 0, 0
    for k in eqn.params["key"]:
        if k is None:
            out_axis += 1
            continue
        if axis == a.axis:
            if isinstance(k, slice):
                rows = a.rows[k]
                return _Axis(out_axis, rows, a.moved if len(rows) == len(a.rows) and
                             np.array_equal(rows, a.rows) else eqn)
            row = int(a.rows[k])         # one row picked out: its value alone
            return _Row(row) if row != NO_ROW else UNIFORM
        out_axis += 0 if isinstance(k, int) else 1
        axis += 1
    return _Axis(out_axis + (a.axis - axis), a.rows, a.moved)


def _setitem_zeros(eqn: Equation, ins, consts, n):
    """Its input written into `out[key]`, zeros (no row) elsewhere."""
    a, key, shape = ins[0], eqn.params["key"], eqn.outputs[0].shape
    if not isinstance(a, _Axis):         # a row's value (or none's) put in its place
        if not isinstance(a, _Row):
            return UNIFORM
        # placed among zeros: still that row's alone, unless an index along an axis of
        # the batch's size may put it back among the rows (x[b]'s gradient) or into
        # another row: which one the axis is, a row's value does not tell
        positions = _out_positions(key)
        if any(isinstance(key[p], int) and shape[q] == n for q, p in enumerate(positions)):
            return None
        return a
    in_axis, out_axis = 0, 0
    for k in key:
        if isinstance(k, int):
            out_axis += 1
            continue
        if in_axis == a.axis:
            rows = np.full(shape[out_axis], NO_ROW)
            rows[k] = a.rows
            return _Axis(out_axis, rows, a.moved if np.array_equal(rows, a.rows) else eqn)
        in_axis += 1
        out_axis += 0 if k is None else 1
    return _Axis(out_axis + (a.axis - in_axis), a.rows, a.moved)


def _out_positions(key) -> list:
    """For each axis of setitem_zeros' output, the position in `key` that indexes it."""
    return [p for p, k in enumerate(key) if k is not None]


def _whole_axis(k, size: int) -> bool:
    """`k` keeps every entry of an axis of `size`, in order (`:`, `0:`, `0:size`, `::1`)."""
    return isinstance(k, slice) and k.indices(size) == (0, size, 1)


def _concat(eqn: Equation, ins, consts, n):
    along = eqn.params["axis"]
    if all(s.axis != along for s in ins if isinstance(s, _Axis)):
        rank = eqn.outputs[0].ndim       # joined along another axis: entries side by side
        return _combine(eqn, [_on_output(v, s, rank) for v, s in zip(eqn.inputs, ins)
                              if isinstance(s, (_Axis, _Row))])
    if any(isinstance(s, _Axis) and s.axis != along for s in ins):
        return None                      # rows along two axes at once: no rule
    pieces = []
    for v, s in zip(eqn.inputs, ins):
        size = v.shape[along]
        pieces.append(s.rows if isinstance(s, _Axis) else
                      np.full(size, s.row if isinstance(s, _Row) else NO_ROW))
    rows = np.concatenate(pieces)
    first = next(s for s in ins if isinstance(s, _Axis))
    return _Axis(along, rows, first.moved if np.array_equal(rows, first.rows) else eqn)


def _pad(eqn: Equation, ins, consts, n):
    a = ins[0]
    before, after = eqn.params["pad_width"][a.axis]
    if (before, after) == (0, 0):
        return a
    return _Axis(a.axis, np.concatenate([np.full(before, NO_ROW), a.rows, np.full(after, NO_ROW)]), eqn)


def _split(eqn: Equation, ins, consts, n):
    a = ins[0]
    if eqn.params["axis"] != a.axis:
        return [a] * len(eqn.outputs)
    pieces = np.split(a.rows, eqn.params["indices"])
    return [_Axis(a.axis, r, eqn) for r in pieces]


def _tile(eqn: Equation, ins, consts, n):
    a = ins[0]                           # (reps has one entry per axis of the input)
    k = eqn.params["reps"][a.axis]
    return _Axis(a.axis, np.tile(a.rows, k), a.moved if k == 1 else eqn)


def _index_axis(idx: np.ndarray) -> int | None:
    """The one axis of an index array longer than 1 (0 if none is), else None."""
    long = [q for q, d in enumerate(idx.shape) if d != 1]
    return (long[0] if long else 0) if len(long) <= 1 else None


def _gather(eqn: Equation, ins, consts, n):
    a, axis = ins[0], eqn.params["axis"]
    idx_var = eqn.inputs[1]
    if a.axis != axis:
        k = idx_var.ndim
        return _Axis(a.axis if a.axis < axis else a.axis + k - 1, a.rows, a.moved)
    value = consts.get(id(idx_var))
    if value is None:
        return None                      # rows picked by computed indices: no rule
    idx = np.asarray(value.numpy())
    if idx.ndim == 0:
        row = int(a.rows[idx])
        return _Row(row) if row != NO_ROW else UNIFORM
    q = _index_axis(idx)
    if q is None:
        return None
    rows = a.rows[idx.reshape(-1)]
    return _Axis(axis + q, rows, a.moved if np.array_equal(rows, a.rows) else eqn)


def _scatter_add(eqn: Equation, ins, consts, n):
    a, axis, size = ins[0], eqn.params["axis"], eqn.params["size"]
    idx_var = eqn.inputs[1]
    k = idx_var.ndim
    if not axis <= a.axis < axis + k:
        return _Axis(a.axis if a.axis < axis else a.axis - k + 1, a.rows, a.moved)
    value = consts.get(id(idx_var))
    if value is None:
        return None
    idx = np.asarray(value.numpy())
    if _index_axis(idx) != a.axis - axis:
        return None
    rows = np.full(size, NO_ROW)
    for target, row in zip(np.where(idx.reshape(-1) < 0, idx.reshape(-1) + size, idx.reshape(-1)),
                           a.rows):
        if row != NO_ROW:
            if rows[target] not in (NO_ROW, row):
                return MIXED             # two rows added into one
            rows[target] = row
    return _Axis(axis, rows, a.moved if np.array_equal(rows, a.rows) else eqn)


_MOVING = {"getitem": _getitem, "setitem_zeros": _setitem_zeros, "concat": _concat, "pad": _pad,
           "split": _split, "tile": _tile, "gather": _gather, "scatter_add": _scatter_add}
