"""Sparsity rules, one per primitive, and each primitive's second-order behaviour.

A sparsity rule says which elements of its inputs each output element reads, as one
relation per input (see `_sets`): `rule(eqn, ctx) -> [relation or None per input]`, a list
of those per output for an op with several results. `ctx.live[k]` says whether input k
carries any dependency (a rule may skip the others: None), `ctx.value(k)` gives input k's
value where it is a constant (gather's indices), else None. A rule never reads values the
function's input decides: the pattern holds for every x.

    sparsity_rules[prim]   the rule; elementwise primitives (Primitive.elementwise) need
                           none: they read the broadcast element of every input
    curvatures[prim]       what the op does to second derivatives (CURVATURES); default
                           "constant" for a primitive that is not differentiable, else
                           "nonlinear" (the safe answer)
    complex_curvatures[prim]  its curvature where an input is complex, if that differs
                           (abs: |x + iy| is not piecewise linear)
    product_terms[prim]    for a contraction (matmul, einsum of two operands): its products'
                           factors, so that its second-order pairs are exact

An op with no rule (and not elementwise) is handled conservatively: every output element
reads every element of every input, with one warning naming it.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .. import core, ops
from ..ops._einsum_plan import parse_einsum
from . import _sets
from ._sets import IDENTITY, Select, from_parts, kron_relation, ranges, scatter_relation

__all__ = ["sparsity_rules", "curvatures", "CURVATURES", "defsparsity", "defcurvature",
           "sparsity_rule_for", "curvature_of", "batched_matrix_rule", "elementwise_rule",
           "product_terms"]

CURVATURES = {
    "constant": "zero derivative (comparisons, floor, stop_gradient): no dependency at all",
    "linear": "outputs are linear in the inputs: second-order sets pass through",
    "piecewise_linear": "linear almost everywhere (abs, maximum, where): as linear",
    "bilinear": "linear in each input (multiply, matmul): adds the pairs across the factors "
                "of each product (`product_terms`; else across the inputs an element reads)",
    "quotient": "x / y: the pairs across x and y, and y's pairs with itself",
    "nonlinear": "adds every pair of the inputs an output element reads",
}

sparsity_rules: dict[core.Primitive, Callable] = {}
curvatures: dict[core.Primitive, str] = {}
# a primitive whose curvature differs on complex inputs: |z| is not piecewise linear
complex_curvatures: dict[core.Primitive, str] = {}


@core.on_rules_changed
def _drop_replaced(name: str, replaced: bool) -> None:
    """A primitive declared again is a new op: the old one's rules go."""
    if replaced:
        for table in (sparsity_rules, curvatures, complex_curvatures, product_terms):
            for prim in [p for p in table if p.name == name]:
                del table[prim]


def defsparsity(*prims: core.Primitive, curvature: str | None = None):
    """Registers `rule(eqn, ctx)` as the sparsity rule of each of `prims` (once), and their
    curvature when given."""
    def register(fn):
        core.register_once(sparsity_rules, prims, fn, "sparsity rule")
        if curvature is not None:
            defcurvature(curvature, *prims)
        return fn
    return register


def defcurvature(curvature: str, *prims: core.Primitive) -> None:
    if curvature not in CURVATURES:
        raise ValueError(f"unknown curvature {curvature!r}; choose from {list(CURVATURES)}")
    core.register_once(curvatures, prims, curvature, "curvature")


def curvature_of(prim: core.Primitive, eqn=None) -> str:
    """`prim`'s curvature; given the equation, its complex inputs' where that differs."""
    if prim in complex_curvatures and eqn is not None and \
            any(np.dtype(v.dtype).kind == "c" for v in eqn.inputs):
        return complex_curvatures[prim]
    if prim in curvatures:
        return curvatures[prim]
    return "nonlinear" if prim.differentiable else "constant"


def sparsity_rule_for(prim: core.Primitive) -> Callable | None:
    rule = sparsity_rules.get(prim)
    if rule is None and prim.elementwise:
        return elementwise_rule
    return rule


# -- helpers -------------------------------------------------------------------------------
def _positions(shape) -> np.ndarray:
    """Each element's flat (C-order) index, shaped like the value."""
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)


def _shape(var) -> tuple:
    return tuple(var.shape)


def _moved(eqn, move: Callable):
    """The relation of a data-movement op: `move(positions of the input)` is, for each
    output element, the input element it holds (or -1)."""
    src = np.asarray(move(_positions(_shape(eqn.inputs[0])))).ravel()
    if src.size == math.prod(_shape(eqn.inputs[0])) and np.array_equal(src, np.arange(src.size)):
        return IDENTITY
    return Select(src)


def elementwise_rule(eqn, ctx):
    """numpy broadcasting: output element e reads the broadcast element of each input."""
    out = _shape(eqn.outputs[0])
    rels = []
    for k, var in enumerate(eqn.inputs):
        if not ctx.live[k]:
            rels.append(None)
        elif _shape(var) == out:
            rels.append(IDENTITY)
        else:
            rels.append(Select(np.broadcast_to(_positions(_shape(var)), out)))
    return rels


def _lines(shape: tuple, axis: int) -> tuple:
    return math.prod(shape[:axis]), math.prod(shape[axis + 1:])


# -- data movement -------------------------------------------------------------------------
@defsparsity(ops.shape.reshape_p, curvature="linear")
def _reshape(eqn, ctx):
    return [IDENTITY]


@defsparsity(ops.indexing.getitem_p, curvature="linear")
def _getitem(eqn, ctx):
    return [_moved(eqn, lambda pos: pos[eqn.params["key"]])]


@defsparsity(ops.indexing.setitem_zeros_p, curvature="linear")
def _setitem_zeros(eqn, ctx):
    def move(pos):
        out = np.full(eqn.params["shape"], -1, np.int64)
        out[eqn.params["key"]] = pos
        return out
    return [_moved(eqn, move)]


@defsparsity(ops.indexing.index_update_p, curvature="linear")
def _index_update(eqn, ctx):
    """x's elements outside the key, v's at it: each assigned slice reads v alone."""
    shape, key = _shape(eqn.inputs[0]), eqn.params["key"]
    kept = _positions(shape)
    kept[key] = -1
    placed = np.full(shape, -1, np.int64)
    placed[key] = _positions(_shape(eqn.inputs[1]))
    return [Select(kept) if ctx.live[0] else None, Select(placed) if ctx.live[1] else None]


@defsparsity(ops.shape.transpose_p, curvature="linear")
def _transpose(eqn, ctx):
    return [_moved(eqn, lambda pos: pos.transpose(eqn.params["perm"]))]


@defsparsity(ops.shape.broadcast_to_p, curvature="linear")
def _broadcast_to(eqn, ctx):
    return [_moved(eqn, lambda pos: np.broadcast_to(pos, eqn.params["shape"]))]


@defsparsity(ops.shape.tile_p, curvature="linear")
def _tile(eqn, ctx):
    return [_moved(eqn, lambda pos: np.tile(pos, eqn.params["reps"]))]


@defsparsity(ops.shape.pad_p, curvature="linear")
def _pad(eqn, ctx):
    return [_moved(eqn, lambda pos: np.pad(pos, eqn.params["pad_width"], constant_values=-1))]


@defsparsity(ops.shape.concat_p, curvature="linear")
def _concat(eqn, ctx):
    """Input k's elements, numbered after those of inputs 0..k-1; -1 elsewhere."""
    sizes = [math.prod(_shape(v)) for v in eqn.inputs]
    starts = np.cumsum([0] + sizes)
    whole = np.concatenate([_positions(_shape(v)) + s for v, s in zip(eqn.inputs, starts)],
                           axis=eqn.params["axis"]).ravel()
    return [Select(np.where((whole >= a) & (whole < b), whole - a, -1)) if live else None
            for a, b, live in zip(starts[:-1], starts[1:], ctx.live)]


@defsparsity(ops.shape.split_p, curvature="linear")
def _split(eqn, ctx):
    parts = np.split(_positions(_shape(eqn.inputs[0])), eqn.params["indices"],
                     axis=eqn.params["axis"])
    return [[Select(p)] for p in parts]


@defsparsity(ops.indexing.gather_p, curvature="linear")
def _gather(eqn, ctx):
    x, axis = _shape(eqn.inputs[0]), eqn.params["axis"]
    indices = ctx.value(1)
    if indices is None:             # indices the input decides: any entry along the axis
        outer, inner = _lines(x, axis)
        taken = math.prod(_shape(eqn.inputs[1]))
        return [kron_relation(outer, np.ones((taken, x[axis]), bool), inner), None]
    return [_moved(eqn, lambda pos: np.take(pos, indices, axis=axis)), None]


@defsparsity(ops.indexing.scatter_add_p, curvature="linear")
def _scatter_add(eqn, ctx):
    out, axis = _shape(eqn.outputs[0]), eqn.params["axis"]
    indices = ctx.value(1)
    if indices is None:
        outer, inner = _lines(out, axis)
        taken = math.prod(_shape(eqn.inputs[1]))
        return [kron_relation(outer, np.ones((out[axis], taken), bool), inner), None]
    dst = np.take(_positions(out), indices, axis=axis)      # where each entry of g goes
    return [scatter_relation(dst, math.prod(out)), None]


# -- reductions and scans -------------------------------------------------------------------
def _reduce_rule(eqn, ctx):
    x, axes = _shape(eqn.inputs[0]), eqn.params["axes"]
    kept = tuple(1 if k in axes else d for k, d in enumerate(x))
    dst = np.broadcast_to(_positions(kept), x)               # the output entry each one joins
    return [scatter_relation(dst, math.prod(kept))]


defsparsity(ops.reductions.sum_p, curvature="linear")(_reduce_rule)
defsparsity(ops.reductions.max_p, ops.reductions.min_p, curvature="piecewise_linear")(_reduce_rule)
defsparsity(ops.reductions.prod_p, curvature="nonlinear")(_reduce_rule)


@defsparsity(ops.reductions.cumsum_p, curvature="linear")
def _cumsum(eqn, ctx):
    x, axis = _shape(eqn.inputs[0]), eqn.params["axis"]
    outer, inner = _lines(x, axis)
    return [kron_relation(outer, np.tri(x[axis], dtype=bool), inner)]


def _no_dependency(eqn, ctx):
    """Integer or boolean results, or a zero derivative: nothing to follow."""
    rels = [None] * len(eqn.inputs)
    return [rels] * len(eqn.outputs) if eqn.prim.multiple_results else rels


defsparsity(ops.reductions.argmax_p, ops.reductions.argmin_p, ops.reductions.all_finite_p,
            ops.indexing.one_hot_p, curvature="constant")(_no_dependency)
defsparsity(ops.elementwise.stop_gradient_p, curvature="constant")(_no_dependency)


# -- contractions ---------------------------------------------------------------------------
def _contraction(operand: str, out: str, in_shape: tuple, out_shape: tuple):
    """The relation of one einsum operand: output element e reads the operand's elements
    that agree with e on their shared axes (an axis the operand broadcasts, size 1 where
    the output's is not, is not shared), on the operand's diagonals where it repeats an
    axis."""
    first = {c: operand.index(c) for c in operand}
    diag = np.ones(in_shape, bool)
    grids = np.indices(in_shape, sparse=True)
    for k, c in enumerate(operand):
        diag = diag & (grids[k] == grids[first[c]])
    shared = [c for c in first if c in out and in_shape[first[c]] == out_shape[out.index(c)]]
    in_key = _key(grids, [first[c] for c in shared], in_shape, in_shape)
    out_grids = np.indices(out_shape, sparse=True)
    out_key = _key(out_grids, [out.index(c) for c in shared], out_shape, in_shape,
                   [first[c] for c in shared])
    return _join(np.broadcast_to(out_key, out_shape).ravel(),
                 np.where(diag, in_key, -1).ravel(), math.prod(in_shape))


def _key(grids, axes: list, shape: tuple, in_shape: tuple, in_axes: list | None = None):
    """A mixed-radix number over `axes` (the shared axes' sizes in the operand)."""
    key = np.zeros((1,) * len(shape), np.int64)
    for a, b in zip(axes, in_axes if in_axes is not None else axes):
        key = key * in_shape[b] + grids[a]
    return key


def _join(out_key: np.ndarray, in_key: np.ndarray, in_size: int):
    """The relation pairing each output element with every operand element of its key."""
    order = np.argsort(in_key, kind="stable")
    keys = in_key[order]
    lo = np.searchsorted(keys, out_key, side="left")
    hi = np.searchsorted(keys, out_key, side="right")
    indptr = np.concatenate([[0], np.cumsum(hi - lo)])
    return from_parts(indptr, order[ranges(lo, hi - lo)], (len(out_key), in_size), False)


def _matmul_subscripts(nx: int, ny: int, nout: int) -> tuple:
    batch = "abcdefghij"[:max(nout - (nx > 1) - (ny > 1), 0)]
    x = batch[len(batch) - max(nx - 2, 0):] + ("mk" if nx > 1 else "k")
    y = batch[len(batch) - max(ny - 2, 0):] + ("kn" if ny > 1 else "k")
    return x, y, batch + ("m" if nx > 1 else "") + ("n" if ny > 1 else "")


# The products a contraction sums, for its second-order pairs: a bilinear op's cross pairs
# are those of each product's two factors (x_ik y_kj for the same k), not of everything its
# output element reads (which would pair x_i1 with y_2j, and make x @ x's Hessian dense).
# `terms(eqn) -> (out, factors)`: per product, the output element it adds into and, per
# input, the element that is its factor. Elementwise products need none (one product each).
product_terms: dict[core.Primitive, Callable] = {}


def _iteration_space(operands: list, out: str, shapes: list, out_shape: tuple) -> tuple:
    """For every point of a contraction's iteration space (one axis per letter), the flat
    index of the output element and of each operand's element (a broadcast axis, size 1,
    at 0)."""
    size: dict = {}
    for subs, shape in zip(operands + [out], shapes + [out_shape]):
        for c, d in zip(subs, shape):
            size[c] = max(size.get(c, 1), d)
    full = tuple(size.values())
    if math.prod(full) > _sets.PAIR_LIMIT:
        raise MemoryError(f"pforjac.sparse.hessian_sparsity: the contraction "
                          f"{','.join(operands)}->{out} of shapes {shapes} sums "
                          f"{math.prod(full):,} products; its Hessian is nearly dense: "
                          f"compute it densely instead")
    coord = dict(zip(size, np.indices(full, sparse=True)))

    def flat(subs: str, shape: tuple) -> np.ndarray:
        index = np.zeros((1,) * len(full), np.int64)
        for c, d in zip(subs, shape):
            index = index * d + (coord[c] if d > 1 else 0)
        return np.broadcast_to(index, full).ravel()
    return flat(out, out_shape), [flat(s, shape) for s, shape in zip(operands, shapes)]


def _matmul_terms(eqn):
    x, y, out = (_shape(v) for v in (*eqn.inputs, eqn.outputs[0]))
    subs = _matmul_subscripts(len(x), len(y), len(out))
    return _iteration_space(list(subs[:2]), subs[2], [x, y], out)


def _einsum_terms(eqn):
    ins, out = parse_einsum(eqn.params["subscripts"], [len(v.shape) for v in eqn.inputs])
    return _iteration_space(ins, out, [_shape(v) for v in eqn.inputs], _shape(eqn.outputs[0]))


@defsparsity(ops.linalg.matmul_p, curvature="bilinear")
def _matmul(eqn, ctx):
    x, y, out = (_shape(v) for v in (*eqn.inputs, eqn.outputs[0]))
    subs = _matmul_subscripts(len(x), len(y), len(out))
    return [_contraction(s, subs[2], shape, out) if live else None
            for s, shape, live in zip(subs[:2], (x, y), ctx.live)]


@defsparsity(ops.linalg.einsum_p, curvature="bilinear")
def _einsum(eqn, ctx):
    ins, out = parse_einsum(eqn.params["subscripts"], [len(v.shape) for v in eqn.inputs])
    return [_contraction(s, out, _shape(v), _shape(eqn.outputs[0])) if live else None
            for s, v, live in zip(ins, eqn.inputs, ctx.live)]


product_terms[ops.linalg.matmul_p] = _matmul_terms
product_terms[ops.linalg.einsum_p] = _einsum_terms


# -- linear algebra: whole trailing matrices ------------------------------------------------
def batched_matrix_rule(*core_dims: int, out_core_dims=2):
    """A rule for an op whose outputs depend on whole trailing matrices of its inputs, the
    leading (batch) axes independent and broadcast (solve, cholesky, inv, det, eigh):
    `core_dims` per input (how many trailing axes make its matrix: 2, or 1 for a vector),
    `out_core_dims` per output (an int for all). Attach it with `defsparsity(prim,
    curvature="nonlinear")(batched_matrix_rule(2, 2))`."""
    def rule(eqn, ctx):
        outs = [_batched(eqn, v, out_core_dims if isinstance(out_core_dims, int)
                         else out_core_dims[o], core_dims, ctx)
                for o, v in enumerate(eqn.outputs)]
        return outs if eqn.prim.multiple_results else outs[0]
    return rule


def _batched(eqn, out_var, out_core: int, core_dims: tuple, ctx):
    out = _shape(out_var)
    batch = out[:len(out) - out_core]
    per_batch = math.prod(out[len(out) - out_core:])
    rels = []
    for k, var in enumerate(eqn.inputs):
        if not ctx.live[k]:
            rels.append(None)
            continue
        shape = _shape(var)
        split = len(shape) - core_dims[k]
        block = math.prod(shape[split:])
        src = np.broadcast_to(_positions(shape[:split]), batch).ravel()   # the input's batch
        starts = np.repeat(src * block, per_batch)
        indptr = np.arange(len(starts) + 1, dtype=np.int64) * block
        rels.append(from_parts(indptr, ranges(starts, np.full(len(starts), block)),
                               (len(starts), math.prod(shape)), True))
    return rels


# -- second-order behaviour of the elementwise ops --------------------------------------------
_E = ops.elementwise
defcurvature("linear", _E.neg_p, _E.add_p, _E.subtract_p, _E.cast_p)
defcurvature("piecewise_linear", _E.abs_p, _E.relu_p, _E.maximum_p, _E.minimum_p, _E.where_p)
defcurvature("bilinear", _E.multiply_p, _E.multiply_no_nan_p, _E.multiply_zero_safe_p)
defcurvature("quotient", _E.divide_p)
defcurvature("constant", _E.sign_p, _E.floor_p, _E.ceil_p, _E.round_p)   # zero derivative
# |x + iy| is not piecewise linear; numpy 2's complex sign x / |x| is no step
complex_curvatures[_E.abs_p] = complex_curvatures[_E.sign_p] = "nonlinear"


# -- dense linear algebra: each output matrix depends on all of its input matrices, batches apart
from ..ops import dense_linalg as _la, pseudo_inverse as _pinv, spectral as _spectral  # noqa: E402
from ..ops import determinant as _det, eigenvalues as _eig  # noqa: E402
from ..ops import triangular as _tri  # noqa: E402

defsparsity(_la.solve_p, _tri.triangular_solve_p, curvature="nonlinear")(batched_matrix_rule(2, 2))
defsparsity(_la.cholesky_p, _pinv.pinv_p, curvature="nonlinear")(batched_matrix_rule(2))
defsparsity(_la.eigh_p, curvature="nonlinear")(batched_matrix_rule(2, out_core_dims=(1, 2)))
defsparsity(_la.svd_p, curvature="nonlinear")(batched_matrix_rule(2, out_core_dims=(2, 1, 2)))
defsparsity(_la.qr_p, curvature="nonlinear")(batched_matrix_rule(2, out_core_dims=(2, 2)))
defsparsity(_la.slogdet_p, curvature="nonlinear")(batched_matrix_rule(2, out_core_dims=(0, 0)))


defsparsity(_det.det_p, curvature="nonlinear")(batched_matrix_rule(2, out_core_dims=0))
defsparsity(_eig.eigvalsh_p, _eig.svdvals_p, curvature="nonlinear")(
    batched_matrix_rule(2, out_core_dims=1))
defsparsity(_eig.eigh_lift_p, curvature="nonlinear")(batched_matrix_rule(2, 1))


@defsparsity(_spectral.sym_funm_p, _det.cofactor_p, curvature="nonlinear")
def _matrices_of_every_input(eqn, ctx):
    """Each output matrix depends on all of every input's matrix (any number of inputs)."""
    return batched_matrix_rule(*(2,) * len(eqn.inputs))(eqn, ctx)
