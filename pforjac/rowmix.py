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

import math
from dataclasses import dataclass

import numpy as np

from . import ops
from .program import Equation, Program
from .program import constant_values as _constant_values, eliminate_dead_code
from .structure import _block_after_reshape

__all__ = ["analyze", "Proof", "Mixing", "Unknown", "rowmix_rules", "has_rule"]

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


def analyze(program: Program, seed) -> Proof | Mixing | Unknown:
    """Follows the batch axis (axis 0 of `seed`) to the program's outputs."""
    state: dict[int, object] = {id(seed): _Axis(0, np.arange(seed.shape[0]))}
    # indices known now: not a Variable's (read when compiled code runs) nor a symbolic
    # value of an enclosing trace (a compiled function's argument)
    consts = _constant_values(program)
    unknown = None
    # only equations the outputs need: a rule's cotangent for an input that is not a
    # source (a weight's) may be computed and never used, and its mixing is harmless
    for eqn in eliminate_dead_code(program).equations:
        ins = [state.get(id(v)) for v in eqn.inputs]     # None: not derived from the seed
        if all(s is None for s in ins):
            continue
        outs = UNKNOWN if any(s is UNKNOWN for s in ins) else _rule(eqn, ins, consts, seed.shape[0])
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


# -- the rules, keyed by primitive: `rule(eqn, ins, consts, n)` -------------------------------
# An elementwise primitive (Primitive.elementwise) needs none. A rule registered with
# `rows_too=False` is called only when an input has a batch axis: an op on values of single
# rows makes a value of those rows, whatever it does.
rowmix_rules: dict = {}


def _rules(*prims, rows_too: bool = False):
    def register(fn):
        for prim in prims:
            if prim in rowmix_rules:
                raise ValueError(f"a row rule for op '{prim.name}' is already registered")
            rowmix_rules[prim] = (fn, rows_too)
        return fn
    return register


def has_rule(prim) -> bool:
    """The row check can follow the batch axis through `prim`."""
    return prim.elementwise or prim in rowmix_rules


def _rule(eqn: Equation, ins, consts: dict, n: int):
    """The output's state (a list for an op with several results): an `_Axis`, a `_Row`,
    UNIFORM, or None when there is no rule (`consts`: constant values by id; `n`: the
    batch size)."""
    if eqn.prim.elementwise:
        return _elementwise(eqn, ins)
    fn, rows_too = rowmix_rules.get(eqn.prim, (None, False))
    if fn is not None and rows_too:
        return fn(eqn, ins, consts, n)
    if not any(isinstance(s, _Axis) for s in ins):   # no batch axis: whatever the op does,
        out = _combine(eqn, [s for s in ins if isinstance(s, _Row)])   # those rows' value
        return [out] * len(eqn.outputs) if eqn.prim.multiple_results else out
    return None if fn is None else fn(eqn, ins, consts, n)


@_rules(ops.reductions.sum_p, ops.reductions.max_p, ops.reductions.min_p, ops.reductions.prod_p,
        ops.reductions.all_finite_p)
def _reduce(eqn: Equation, ins, consts, n):
    a, axes = ins[0], eqn.params["axes"]
    if a.axis in axes:
        return _one_row(a, eqn)
    keep = eqn.params.get("keepdims", False)
    return _axis(a.axis if keep else a.axis - sum(1 for x in axes if x < a.axis), a)


@_rules(ops.reductions.argmax_p, ops.reductions.argmin_p)
def _arg_reduce(eqn: Equation, ins, consts, n):
    a, axis = ins[0], eqn.params["axis"]
    if axis is None or axis == a.axis:
        return _one_row(a, eqn)
    return _axis(a.axis - (1 if axis < a.axis else 0), a)


@_rules(ops.reductions.cumsum_p)
def _cumsum(eqn: Equation, ins, consts, n):
    """Along another axis rows stay; along the batch axis entry k adds rows 0..k."""
    a = ins[0]
    if eqn.params["axis"] != a.axis:
        return _axis(a.axis, a)
    rows = a.rows.copy()
    for k in range(1, len(rows)):
        rows[k] = _merged(rows[k - 1:k], rows[k:k + 1])[0]
    return _Axis(a.axis, rows, a.moved, a.mixed or (eqn if (rows == MIXED_ROW).any() else None))


@_rules(ops.indexing.one_hot_p)
def _one_hot(eqn: Equation, ins, consts, n):
    return _axis(ins[0].axis, ins[0])          # a new last axis: rows stay where they were


@_rules(ops.shape.reshape_p)
def _reshape(eqn: Equation, ins, consts, n):
    a, shape_in = ins[0], tuple(eqn.inputs[0].shape)
    shape_out = tuple(eqn.outputs[0].shape)
    block = _block_after_reshape(shape_in, a.axis, a.axis + 1, shape_out)
    if block is not None and block[1] - block[0] == 1:
        return _axis(block[0], a)
    if shape_in[a.axis] == 1:
        return _one_row(a, eqn)
    return _rows_through_reshape(a, shape_in, shape_out)


def _rows_through_reshape(a: _Axis, shape_in: tuple, shape_out: tuple):
    """The batch axis merged with others (or split back): the seed row of every entry,
    reshaped; the rows are on the one output axis along which alone they vary (a merged
    axis holds each row repeated), else no rule."""
    if math.prod(shape_in) > 1 << 22:
        return None
    lined = a.rows.reshape([-1 if k == a.axis else 1 for k in range(len(shape_in))])
    rows = np.broadcast_to(lined, shape_in).reshape(shape_out)
    if rows.size and (rows == rows.flat[0]).all():        # one row's value (or none's)
        row = int(rows.flat[0])
        return UNIFORM if row == NO_ROW else _Row(row, a.moved, a.mixed)
    for q in range(len(shape_out)):
        line = rows[tuple(slice(None) if k == q else 0 for k in range(len(shape_out)))]
        if np.array_equal(rows, np.broadcast_to(
                line.reshape([-1 if k == q else 1 for k in range(len(shape_out))]), shape_out)):
            return _Axis(q, line.copy(), a.moved, a.mixed)
    return None


@_rules(ops.shape.transpose_p)
def _transpose(eqn: Equation, ins, consts, n):
    return _axis(eqn.params["perm"].index(ins[0].axis), ins[0])


@_rules(ops.shape.broadcast_to_p)
def _broadcast_to(eqn: Equation, ins, consts, n):
    a, shape = ins[0], eqn.params["shape"]
    axis = a.axis + len(shape) - eqn.inputs[0].ndim
    if len(a.rows) == shape[axis]:
        return _axis(axis, a)
    return _axis(axis, a, np.repeat(a.rows, shape[axis]), eqn)     # one row stretched over all


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


@_rules(ops.linalg.matmul_p, rows_too=True)
def _matmul(eqn: Equation, ins, consts=None, n=None):
    (x, y), (sx, sy) = eqn.inputs, ins
    if x.ndim < 2 or y.ndim < 2:
        return None
    rank = eqn.outputs[0].ndim
    parts = []
    for v, s, contracted, kept in ((x, sx, x.ndim - 1, x.ndim - 2), (y, sy, y.ndim - 2, y.ndim - 1)):
        if isinstance(s, _Axis):
            if s.axis == contracted:     # the batch axis is summed over
                s = _one_row(s, eqn)
            elif s.axis == kept:
                s = _axis(rank - 2 if v is x else rank - 1, s)
            else:                        # a batch dimension of the product
                s = _axis(s.axis + rank - v.ndim, s)
        if isinstance(s, (_Axis, _Row)):
            parts.append(s)
    return _combine(eqn, parts)


@_rules(ops.linalg.einsum_p, rows_too=True)
def _einsum(eqn: Equation, ins, consts=None, n=None):
    """The batch axis's letter must survive into the output, and be one letter for all."""
    letters, out = ops.linalg.parse_einsum(eqn.params["subscripts"], [v.ndim for v in eqn.inputs])
    parts = []
    for subs, s in zip(letters, ins):
        if isinstance(s, _Axis):
            letter = subs[s.axis]
            if subs.count(letter) > 1:
                return None              # a diagonal along the batch axis: no rule
            s = _one_row(s, eqn) if letter not in out else _axis(out.index(letter), s)
        if isinstance(s, (_Axis, _Row)):
            parts.append(s)
    return _combine(eqn, parts)


# -- ops that pick, move or place rows (their input on a batch axis) -------------------------
def _placed(a: _Axis, axis: int, rows: np.ndarray, eqn: Equation) -> _Axis:
    """`a` with `rows` on `axis`: moved by `eqn` unless they are `a`'s, in `a`'s order."""
    same = len(rows) == len(a.rows) and np.array_equal(rows, a.rows)
    return _axis(axis, a, rows, None if same else eqn)


@_rules(ops.indexing.getitem_p)
def _getitem(eqn: Equation, ins, consts, n):
    a = ins[0]
    axis, out_axis = 0, 0
    for k in eqn.params["key"]:
        if k is None:
            out_axis += 1
            continue
        if axis == a.axis:
            if isinstance(k, slice):
                return _placed(a, out_axis, a.rows[k], eqn)
            row = int(a.rows[k])         # one row picked out: its value alone
            return _Row(row, eqn, a.mixed) if row != NO_ROW else UNIFORM
        out_axis += 0 if isinstance(k, int) else 1
        axis += 1
    return _axis(out_axis + (a.axis - axis), a)


@_rules(ops.indexing.setitem_zeros_p, rows_too=True)
def _setitem_zeros(eqn: Equation, ins, consts, n):
    """Its input written into `out[key]`, zeros (no row) elsewhere."""
    a, key, shape = ins[0], eqn.params["key"], eqn.outputs[0].shape
    if not isinstance(a, _Axis):         # a row's value (or none's) put in its place
        if not isinstance(a, _Row):
            return UNIFORM
        # placed among zeros: still that row's alone, unless an index along an axis of
        # the batch's size may put it back among the rows (x[b]'s gradient) or into
        # another row: which axis of the zeros is the batch's, a row's value does not tell
        # (a value of the same shape as a batched one may be a row's own)
        positions = _out_positions(key)
        batch_like = [q for q, p in enumerate(positions) if isinstance(key[p], int) and shape[q] == n]
        if batch_like == [0]:            # put at row k of a leading batch-sized axis: taken as
            rows = np.full(n, NO_ROW)    # the batch axis (x[b]'s gradient, rows built one by
            rows[key[positions[0]]] = a.row       # one); row b elsewhere than k is a move
            moved = None if key[positions[0]] % n == a.row else eqn
            return _Axis(0, rows, moved, a.mixed)
        return None if batch_like else a
    in_axis, out_axis = 0, 0
    for k in key:
        if isinstance(k, int):
            out_axis += 1
            continue
        if in_axis == a.axis:
            if k is None:                # the batch axis is a unit axis the output drops:
                row = _one_row(a, eqn)   # that row's value, placed as a row's value is
                return UNIFORM if row is UNIFORM else _setitem_zeros(eqn, [row], consts, n)
            rows = np.full(shape[out_axis], NO_ROW)
            rows[k] = a.rows
            return _placed(a, out_axis, rows, eqn)
        in_axis += 1
        out_axis += 0 if k is None else 1
    return _axis(out_axis + (a.axis - in_axis), a)


def _out_positions(key) -> list:
    """For each axis of setitem_zeros' output, the position in `key` that indexes it."""
    return [p for p, k in enumerate(key) if k is not None]


@_rules(ops.shape.concat_p)
def _concat(eqn: Equation, ins, consts, n):
    along = eqn.params["axis"]
    if all(s.axis != along for s in ins if isinstance(s, _Axis)):
        return _elementwise(eqn, ins)    # joined along another axis: entries side by side
    if any(isinstance(s, _Axis) and s.axis != along for s in ins):
        return None                      # rows along two axes at once: no rule
    pieces = []
    for v, s in zip(eqn.inputs, ins):
        size = v.shape[along]
        pieces.append(s.rows if isinstance(s, _Axis) else
                      np.full(size, s.row if isinstance(s, _Row) else NO_ROW))
    first = next(s for s in ins if isinstance(s, _Axis))
    mixed = next((s.mixed for s in ins if getattr(s, "mixed", None) is not None), None)
    out = _placed(first, along, np.concatenate(pieces), eqn)
    out.mixed = mixed
    return out


@_rules(ops.shape.pad_p)
def _pad(eqn: Equation, ins, consts, n):
    a = ins[0]
    before, after = eqn.params["pad_width"][a.axis]
    return _placed(a, a.axis, np.concatenate([np.full(before, NO_ROW), a.rows,
                                              np.full(after, NO_ROW)]), eqn)


@_rules(ops.shape.split_p)
def _split(eqn: Equation, ins, consts, n):
    a = ins[0]
    if eqn.params["axis"] != a.axis:
        return [a] * len(eqn.outputs)
    return [_placed(a, a.axis, rows, eqn) for rows in np.split(a.rows, eqn.params["indices"])]


@_rules(ops.shape.tile_p)
def _tile(eqn: Equation, ins, consts, n):
    a = ins[0]                           # (reps has one entry per axis of the input)
    return _placed(a, a.axis, np.tile(a.rows, eqn.params["reps"][a.axis]), eqn)


def _index_axis(idx: np.ndarray) -> int | None:
    """The one axis of an index array longer than 1 (0 if none is), else None."""
    long = [q for q, d in enumerate(idx.shape) if d != 1]
    return (long[0] if long else 0) if len(long) <= 1 else None


@_rules(ops.indexing.gather_p)
def _gather(eqn: Equation, ins, consts, n):
    if ins[1] is not None:
        return None                      # indices computed from the seed: no rule
    a, axis = ins[0], eqn.params["axis"]
    idx_var = eqn.inputs[1]
    if a.axis != axis:
        return _axis(a.axis if a.axis < axis else a.axis + idx_var.ndim - 1, a)
    value = consts.get(id(idx_var))
    if value is None:
        return None                      # rows picked by computed indices: no rule
    idx = np.asarray(value.numpy())
    if idx.ndim == 0:
        row = int(a.rows[idx])
        return _Row(row, eqn, a.mixed) if row != NO_ROW else UNIFORM
    q = _index_axis(idx)
    return None if q is None else _placed(a, axis + q, a.rows[idx.reshape(-1)], eqn)


@_rules(ops.indexing.scatter_add_p)
def _scatter_add(eqn: Equation, ins, consts, n):
    if ins[1] is not None:
        return None                      # indices computed from the seed: no rule
    a, axis, size = ins[0], eqn.params["axis"], eqn.params["size"]
    idx_var = eqn.inputs[1]
    k = idx_var.ndim
    if not axis <= a.axis < axis + k:
        return _axis(a.axis if a.axis < axis else a.axis - k + 1, a)
    value = consts.get(id(idx_var))
    if value is None:
        return None
    idx = np.asarray(value.numpy())
    if _index_axis(idx) != a.axis - axis:
        return None
    rows = np.full(size, NO_ROW)
    targets = idx.reshape(-1) % size if size else idx.reshape(-1)
    for target, row in zip(targets, a.rows):
        rows[target] = _merged(rows[target:target + 1], np.array([row]))[0]   # added into one
    out = _placed(a, axis, rows, eqn)
    if out.mixed is None and (rows == MIXED_ROW).any():
        out.mixed = eqn
    return out
