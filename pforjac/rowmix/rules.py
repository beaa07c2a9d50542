"""The row check's rules, one per primitive (elementwise ones need none)."""
from __future__ import annotations

import math

import numpy as np

from .. import core, ops
from ..program import Equation
from ..structure import _block_after_reshape
from ._states import (MIXED_ROW, NO_ROW, UNIFORM, _Axis, _Row, _axis, _combine, _elementwise,
                      _merged, _one_row, _placed)

__all__ = ["rowmix_rules", "has_rule", "rule"]


# -- the rules, keyed by primitive: `rule(eqn, ins, consts, n)` -------------------------------
# An elementwise primitive (Primitive.elementwise) needs none. A rule registered with
# `rows_too=False` is called only when an input has a batch axis: an op on values of single
# rows makes a value of those rows, whatever it does.
rowmix_rules: dict = {}


def _rules(*prims, rows_too: bool = False):
    def register(fn):
        core.register_once(rowmix_rules, prims, (fn, rows_too), "row rule")
        return fn
    return register


def has_rule(prim) -> bool:
    """The row check can follow the batch axis through `prim`."""
    return prim.elementwise or prim in rowmix_rules


def rule(eqn: Equation, ins, ctx):
    """The output's state (a list for an op with several results): an `_Axis`, a `_Row`,
    UNIFORM, or None when there is no rule (`ctx`: what the rules know of the program)."""
    if eqn.prim.elementwise:
        return _elementwise(eqn, ins)
    fn, rows_too = rowmix_rules.get(eqn.prim, (None, False))
    if fn is not None and rows_too:
        return fn(eqn, ins, ctx)
    if not any(isinstance(s, _Axis) for s in ins):   # no batch axis: whatever the op does,
        out = _combine(eqn, [s for s in ins if isinstance(s, _Row)])   # those rows' value
        return [out] * len(eqn.outputs) if eqn.prim.multiple_results else out
    return None if fn is None else fn(eqn, ins, ctx)


@_rules(ops.reductions.sum_p, ops.reductions.max_p, ops.reductions.min_p, ops.reductions.prod_p,
        ops.reductions.all_finite_p)
def _reduce(eqn: Equation, ins, ctx):
    a, axes = ins[0], eqn.params["axes"]
    if a.axis in axes:
        return _one_row(a, eqn)
    keep = eqn.params.get("keepdims", False)
    return _axis(a.axis if keep else a.axis - sum(1 for x in axes if x < a.axis), a)


@_rules(ops.reductions.argmax_p, ops.reductions.argmin_p)
def _arg_reduce(eqn: Equation, ins, ctx):
    a, axis = ins[0], eqn.params["axis"]
    if axis is None or axis == a.axis:
        return _one_row(a, eqn)
    return _axis(a.axis - (1 if axis < a.axis else 0), a)


@_rules(ops.reductions.cumsum_p)
def _cumsum(eqn: Equation, ins, ctx):
    """Along another axis rows stay; along the batch axis entry k adds rows 0..k."""
    a = ins[0]
    if eqn.params["axis"] != a.axis:
        return _axis(a.axis, a)
    rows = a.rows.copy()
    for k in range(1, len(rows)):
        rows[k] = _merged(rows[k - 1:k], rows[k:k + 1])[0]
    return _Axis(a.axis, rows, a.moved, a.mixed or (eqn if (rows == MIXED_ROW).any() else None))


@_rules(ops.indexing.one_hot_p)
def _one_hot(eqn: Equation, ins, ctx):
    return _axis(ins[0].axis, ins[0])          # a new last axis: rows stay where they were


@_rules(ops.shape.reshape_p)
def _reshape(eqn: Equation, ins, ctx):
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
    if rows.size == 0:
        return UNIFORM                   # no entries: no row goes anywhere
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
def _transpose(eqn: Equation, ins, ctx):
    return _axis(eqn.params["perm"].index(ins[0].axis), ins[0])


@_rules(ops.shape.broadcast_to_p)
def _broadcast_to(eqn: Equation, ins, ctx):
    a, shape = ins[0], eqn.params["shape"]
    axis = a.axis + len(shape) - eqn.inputs[0].ndim
    if len(a.rows) == shape[axis]:
        return _axis(axis, a)
    return _axis(axis, a, np.repeat(a.rows, shape[axis]), eqn)     # one row stretched over all


@_rules(ops.linalg.matmul_p, rows_too=True)
def _matmul(eqn: Equation, ins, ctx=None):
    (x, y), rank = eqn.inputs, eqn.outputs[0].ndim
    batch = rank - (x.ndim >= 2) - (y.ndim >= 2)        # the output: batch, rows of x, cols of y
    parts = []
    for v, s in zip((x, y), ins):
        if isinstance(s, _Axis):
            s = _matmul_axis(s, v, v is x, x.ndim >= 2, batch, eqn)
        if isinstance(s, (_Axis, _Row)):
            parts.append(s)
    return _combine(eqn, parts)


def _matmul_axis(s: _Axis, v, is_x: bool, x_is_matrix: bool, batch: int, eqn: Equation):
    """Where an operand's batch axis goes in a product (a 1-D operand's only axis, and
    a matrix's contracted one, is summed over)."""
    contracted = 0 if v.ndim == 1 else v.ndim - 1 if is_x else v.ndim - 2
    kept = v.ndim - 2 if is_x else v.ndim - 1
    if s.axis == contracted:
        return _one_row(s, eqn)
    if s.axis == kept:
        return _axis(batch + (0 if is_x else int(x_is_matrix)), s)
    return _axis(s.axis + batch - (v.ndim - 2), s)       # a batch dimension of the product


@_rules(ops.linalg.einsum_p, rows_too=True)
def _einsum(eqn: Equation, ins, ctx=None):
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


@_rules(ops.indexing.getitem_p)
def _getitem(eqn: Equation, ins, ctx):
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
def _setitem_zeros(eqn: Equation, ins, ctx):
    """Its input written into `out[key]`, zeros (no row) elsewhere."""
    a, key, shape, n = ins[0], eqn.params["key"], eqn.outputs[0].shape, ctx.n
    if not isinstance(a, _Axis):         # a row's value (or none's) put in its place
        if not isinstance(a, _Row):
            return UNIFORM
        # placed among zeros: still that row's alone, unless an index along an axis of
        # the batch's size may put it back among the rows (x[b]'s gradient) or into
        # another row: which axis of the zeros is the batch's, a row's value does not tell
        # (a value of the same shape as a batched one may be a row's own)
        positions = _out_positions(key)
        batch_like = [q for q, p in enumerate(positions) if isinstance(key[p], int) and shape[q] == n]
        if batch_like == [0] and tuple(shape) in ctx.out_shapes:   # at row k of the result
            rows = np.full(n, NO_ROW)    # (x[b]'s gradient: rows built one by one); row b
            rows[key[positions[0]]] = a.row       # elsewhere than k is a move
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
                return UNIFORM if row is UNIFORM else _setitem_zeros(eqn, [row], ctx)
            rows = np.full(shape[out_axis], NO_ROW)
            rows[k] = a.rows
            return _placed(a, out_axis, rows, eqn)
        in_axis += 1
        out_axis += 0 if k is None else 1
    return _axis(out_axis + (a.axis - in_axis), a)


@_rules(ops.indexing.index_update_p, rows_too=True)
def _index_update(eqn: Equation, ins, ctx):
    """x with v written at a basic key: row by row where the key keeps x's batch axis whole
    (`d[:, 0] = ...`); no rule otherwise (the positions form, a key along the batch axis)."""
    (x, v), key = ins, eqn.params["key"]
    if ops.indexing.positions_key(key) or isinstance(v, _Axis) and not isinstance(x, _Axis):
        return None
    x_axes = _x_axes_of_update(key, eqn.inputs[0].ndim)
    if isinstance(x, _Axis):
        entry = next((k for k, a in zip(key, _consumed(key)) if a == x.axis), slice(None))
        if not (isinstance(entry, slice) and
                entry.indices(eqn.inputs[0].shape[x.axis]) == (0, eqn.inputs[0].shape[x.axis], 1)):
            return None
    parts = [s for s in (x, v) if isinstance(s, _Row)]
    if isinstance(x, _Axis):
        parts.append(x)
    if isinstance(v, _Axis):
        if x_axes[v.axis] is None:
            return None
        parts.append(_axis(x_axes[v.axis], v))
    return _combine(eqn, parts)


def _consumed(key) -> list:
    """For each entry of a basic key, the axis of x it indexes (None for a None entry)."""
    axes, axis = [], 0
    for k in key:
        axes.append(None if k is None else axis)
        axis += k is not None
    return axes


def _x_axes_of_update(key, ndim: int) -> list:
    """For each axis of x[key], the axis of x it runs along (None: one a None entry adds)."""
    out = [a for k, a in zip(key, _consumed(key)) if not isinstance(k, int)]
    used = sum(1 for k in key if k is not None)
    return out + list(range(used, ndim))


def _out_positions(key) -> list:
    """For each axis of setitem_zeros' output, the position in `key` that indexes it."""
    return [p for p, k in enumerate(key) if k is not None]


@_rules(ops.shape.concat_p)
def _concat(eqn: Equation, ins, ctx):
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
def _pad(eqn: Equation, ins, ctx):
    a = ins[0]
    before, after = eqn.params["pad_width"][a.axis]
    return _placed(a, a.axis, np.concatenate([np.full(before, NO_ROW), a.rows,
                                              np.full(after, NO_ROW)]), eqn)


@_rules(ops.shape.split_p)
def _split(eqn: Equation, ins, ctx):
    a = ins[0]
    if eqn.params["axis"] != a.axis:
        return [a] * len(eqn.outputs)
    return [_placed(a, a.axis, rows, eqn) for rows in np.split(a.rows, eqn.params["indices"])]


@_rules(ops.shape.tile_p)
def _tile(eqn: Equation, ins, ctx):
    a = ins[0]                           # (reps has one entry per axis of the input)
    return _placed(a, a.axis, np.tile(a.rows, eqn.params["reps"][a.axis]), eqn)


def _index_axis(idx: np.ndarray) -> int | None:
    """The one axis of an index array longer than 1 (0 if none is), else None."""
    long = [q for q, d in enumerate(idx.shape) if d != 1]
    return (long[0] if long else 0) if len(long) <= 1 else None


@_rules(ops.indexing.gather_p)
def _gather(eqn: Equation, ins, ctx):
    if ins[1] is not None:
        return None                      # indices computed from the seed: no rule
    a, axis = ins[0], eqn.params["axis"]
    idx_var = eqn.inputs[1]
    if a.axis != axis:
        return _axis(a.axis if a.axis < axis else a.axis + idx_var.ndim - 1, a)
    value = ctx.consts.get(id(idx_var))
    if value is None:
        return None                      # rows picked by computed indices: no rule
    idx = np.asarray(value.numpy())
    if idx.ndim == 0:
        row = int(a.rows[idx])
        return _Row(row, eqn, a.mixed) if row != NO_ROW else UNIFORM
    q = _index_axis(idx)
    return None if q is None else _placed(a, axis + q, a.rows[idx.reshape(-1)], eqn)


@_rules(ops.indexing.scatter_add_p)
def _scatter_add(eqn: Equation, ins, ctx):
    if ins[1] is not None:
        return None                      # indices computed from the seed: no rule
    a, axis, size = ins[0], eqn.params["axis"], eqn.params["size"]
    idx_var = eqn.inputs[1]
    k = idx_var.ndim
    if not axis <= a.axis < axis + k:
        return _axis(a.axis if a.axis < axis else a.axis - k + 1, a)
    value = ctx.consts.get(id(idx_var))
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


@_rules(ops.dense_linalg.solve_p, ops.dense_linalg.cholesky_p, ops.dense_linalg.eigh_p,
        ops.dense_linalg.svd_p, ops.dense_linalg.qr_p, ops.dense_linalg.slogdet_p,
        ops.triangular.triangular_solve_p, ops.pseudo_inverse.pinv_p, ops.determinant.det_p,
        ops.determinant.cofactor_p, ops.spectral.sym_funm_p, ops.eigenvalues.eigvalsh_p,
        ops.eigenvalues.svdvals_p)
def _matrix_stack(eqn: Equation, ins, ctx, core=None):
    """numpy.linalg's ops map each matrix of a stack (the last two axes; `core` axes per
    input if given) on its own: a batch axis among the leading axes keeps its place
    (right-aligned, as batch axes broadcast); one among a matrix's own axes has no rule."""
    core = core or (2,) * len(eqn.inputs)
    batch = len(np.broadcast_shapes(*(tuple(v.shape[:v.ndim - k]) for v, k in zip(eqn.inputs, core))))
    parts = []
    for v, s, k in zip(eqn.inputs, ins, core):
        if isinstance(s, _Axis):
            if s.axis >= v.ndim - k:
                return None
            s = _axis(s.axis + batch - (v.ndim - k), s)
        if isinstance(s, (_Axis, _Row)):
            parts.append(s)
    out = _combine(eqn, parts)
    return [out] * len(eqn.outputs) if eqn.prim.multiple_results else out


@_rules(ops.eigenvalues.eigh_lift_p)
def _matrix_and_vector_stack(eqn: Equation, ins, ctx):
    """eigh_lift(a, c): a's matrices and c's vectors (its last axis) pair by batch axes."""
    return _matrix_stack(eqn, ins, ctx, core=(2, 1))
