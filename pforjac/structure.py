"""Structured stacked values: one-hot along a block of axes, stored compactly.

A Jacobian's loop body starts from a one-hot seed: in iteration k the seed is
zero except at position k. Carried densely, every op of the backward pass
works on `n` copies of mostly zeros. A `OneHot` value instead stores one
per-iteration-shaped `compact` array and a block of tied axes `[start, stop)`:

    value[k][..., j, ...] = compact[..., j, ...]  if ravel(j) == indices[k]
                          = 0                     otherwise

where `j` runs over the tied block (row-major). Structure-aware converters
below keep that form (elementwise ops with an unstacked operand, reductions
and matmuls over other axes, reshapes/transposes/slices that keep the block);
any other converter receives an ordinary dense stacked value made on demand by
`densify`, so no converter has to know about structure and correctness never
depends on it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import core, ops
from .ops import elementwise as ew
from .ops.indexing import scatter_add_p
from .ops.reductions import _all_finite_impl, all_finite_p
from .switch import Switch
from .tensor import Tensor, Variable, constant

__all__ = ["OneHot", "densify", "structured_converters", "structured_converter_for",
           "structure_tracking", "tracking_enabled"]


@dataclass
class OneHot:
    compact: Tensor
    start: int
    stop: int
    indices: Tensor          # (n,) loop index values
    index_range: tuple       # (lo, hi): indices are lo..hi-1

    @property
    def n(self) -> int:
        return int(self.indices.shape[0])

    @property
    def shape(self) -> tuple:
        return (self.n,) + tuple(self.compact.shape)

    @property
    def dtype(self):
        return self.compact.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def block_size(self) -> int:
        return math.prod(self.compact.shape[self.start:self.stop])

    def with_compact(self, compact: Tensor, start: int, stop: int) -> "OneHot":
        return OneHot(compact, start, stop, self.indices, self.index_range)

    def same_tie(self, other: "OneHot") -> bool:
        return (self.indices is other.indices and self.compact.ndim == other.compact.ndim
                and (self.start, self.stop) == (other.start, other.stop))

    def describe(self) -> str:
        return (f"one-hot {self.dtype.name}{list(self.shape)} tied on axes "
                f"{list(range(self.start, self.stop))} (stored {list(self.compact.shape)})")


# -- on/off switch (thread-local) for comparing against the dense path -------------------
_tracking = Switch(True)


def tracking_enabled() -> bool:
    return _tracking.enabled


def structure_tracking(enabled: bool):
    """Context manager: `with structure_tracking(False): ...` runs pfor densely."""
    return _tracking.setting(enabled)


# -- dense forms ----------------------------------------------------------------------
def _split3(oh: OneHot) -> tuple[int, int, int]:
    s = oh.compact.shape
    return math.prod(s[:oh.start]), oh.block_size, math.prod(s[oh.stop:])


def _safe_indices(oh: OneHot):
    """(indices clipped into the block, validity mask or None when all are in range)."""
    lo, hi = oh.index_range
    size = oh.block_size
    if 0 <= lo and hi <= size:
        return oh.indices, None
    valid = ops.logical_and(ops.greater_equal(oh.indices, 0), ops.less(oh.indices, size))
    clipped = ops.where(valid, oh.indices, ops.zeros_like(oh.indices))
    return clipped, valid


def _block_rows(oh: OneHot) -> Tensor:
    """Each iteration's tied entry of `compact`: shape (outer, n, inner), zero where the
    index falls outside the block."""
    outer, size, inner = _split3(oh)
    idx, valid = _safe_indices(oh)
    rows = ops.gather(ops.reshape(oh.compact, (outer, size, inner)), idx, axis=1)
    if valid is not None:
        rows = rows * ops.cast(ops.reshape(valid, (1, oh.n, 1)), rows.dtype)
    return rows


def take_diagonal(oh: OneHot) -> Tensor:
    """The non-zero entries per iteration: shape (n, *compact.shape without the block)."""
    s = tuple(oh.compact.shape)
    rows = ops.moveaxis(_block_rows(oh), 1, 0)
    return ops.reshape(rows, (oh.n,) + s[:oh.start] + s[oh.stop:])


def densify(value):
    """An ordinary stacked Tensor (n, *shape) from a OneHot; other values pass through.

    Built with scatter_add into fresh zeros, so only the non-zero entries are
    written (the zero pages of a large result are never touched). The result is laid out
    (outer axes, iteration, block, inner axes): a view with the iteration axis moved first,
    so that batch_jacobian's own swap of the two leading axes hands back a C-ordered
    per-example Jacobian (writing it C-ordered here would make that a strided view, and the
    64 MiB elementwise batch_jacobian would need a copy).
    """
    if not isinstance(value, OneHot):
        return value
    oh = value
    outer, size, inner = _split3(oh)
    n, s = oh.n, tuple(oh.compact.shape)
    idx, _ = _safe_indices(oh)
    if n * size > np.iinfo(idx.dtype).max:               # (int32 loop indices)
        idx = ops.cast(idx, np.int64)
    flat = idx + constant(np.arange(n, dtype=idx.dtype) * idx.dtype.type(size))
    # row i's index lies in [i*size, (i+1)*size): no position repeats, whatever idx holds
    dense = scatter_add_p.bind(_block_rows(oh), flat, axis=1, size=n * size,
                               unique=True)                           # (outer, n*size, inner)
    dense = ops.moveaxis(ops.reshape(dense, (outer, n, size, inner)), 1, 0)
    return ops.reshape(dense, (n,) + s)


# -- structure-aware converters -----------------------------------------------------------
structured_converters: dict[core.Primitive, Callable] = {}


@core.on_rules_changed
def _drop_replaced(name: str, replaced: bool) -> None:
    """A primitive declared again is a new op: the structure rules of the old one go."""
    if replaced:
        for prim in [p for p in structured_converters if p.name == name]:
            del structured_converters[prim]


def _structured(*prims: core.Primitive):
    """Registers `fn(prim, ctx, args, stacked, **params)`, returning (value, stacked) or
    None for "use the dense converter", for each of `prims` (once)."""
    def register(fn):
        core.register_once(structured_converters, prims, fn, "structured converter")
        return fn
    return register


def structured_converter_for(prim: core.Primitive) -> Callable | None:
    """`prim`'s structured converter; a zero-preserving op keeps a one-hot value one-hot."""
    conv = structured_converters.get(prim)
    if conv is None and prim.zero_preserving:
        return _zero_preserving
    return conv


def _aligned_block(oh: OneHot, out_shape: tuple):
    """The block of `oh` in a broadcast result of `out_shape`, or None if broadcasting
    would stretch a tied axis."""
    shift = len(out_shape) - oh.compact.ndim
    start, stop = oh.start + shift, oh.stop + shift
    if tuple(out_shape[start:stop]) != tuple(oh.compact.shape[oh.start:oh.stop]):
        return None
    return start, stop


def _zero_preserving(prim, ctx, args, stacked, **params):
    (oh,) = args
    return oh.with_compact(prim.bind(oh.compact, **params), oh.start, oh.stop), True


def _zero_times_is_zero(u: Tensor, divide: bool = False) -> bool:
    """Whether 0 * u (or 0 / u) is 0 everywhere, so the off-block zeros stay zeros exactly as
    the dense path computes them (NaN and Inf must propagate identically).

    An eager value is checked now. A symbolic value of a compiled function's trace, or a
    Variable (read when the compiled program runs), is assumed finite and the check becomes
    a guard the compiled program evaluates when it runs (it switches to its dense version
    if one fails); other symbolic values take the dense path."""
    lifting = core.current_state().lifting
    if u._trace is not None or (lifting is not None and isinstance(u, Variable)):
        # symbolic, or a Variable the compiled code reads when it runs: guard it then
        if lifting is None or (u._trace is not None and u._trace is not lifting):
            return False
        lifting.guards.append(all_finite_p.bind(u, axes=tuple(range(u.ndim)), nonzero=divide))
        return True
    return bool(_all_finite_impl(u.numpy(), None, divide))


@_structured(ew.multiply_p, ew.multiply_no_nan_p, ew.divide_p, ew.add_p, ew.subtract_p)
def _binary(prim, ctx, args, stacked, **params):
    (x, y), (xs, ys) = args, stacked
    name = prim.name
    if isinstance(x, OneHot) and isinstance(y, OneHot):
        if not x.same_tie(y) or name == "divide" or \
                x.compact.shape[x.start:x.stop] != y.compact.shape[y.start:y.stop]:
            return None
        out = prim.bind(x.compact, y.compact)
        block = _aligned_block(x, out.shape)
        return (x.with_compact(out, *block), True) if block else None
    if name in ("add", "subtract"):
        return None                      # zero + something is not zero
    if isinstance(x, OneHot) and not ys and _zero_times_is_zero(y, divide=name == "divide"):
        out = prim.bind(x.compact, y)
        block = _aligned_block(x, out.shape)
        return (x.with_compact(out, *block), True) if block else None
    if isinstance(y, OneHot) and not xs and name in ("multiply", "multiply_no_nan") \
            and _zero_times_is_zero(x):        # rows past the block are masked by a product
        out = prim.bind(x, y.compact)
        block = _aligned_block(y, out.shape)
        return (y.with_compact(out, *block), True) if block else None
    return None


@_structured(ew.zeros_like_p, ew.ones_like_p)
def _like(prim, ctx, args, stacked):
    (oh,) = args
    fill = ops.zeros if prim.name == "zeros_like" else ops.ones
    return fill(oh.compact.shape, oh.dtype), False


@_structured(ops.reductions.sum_p)
def _sum(prim, ctx, args, stacked, axes, keepdims):
    (oh,) = args
    block = set(range(oh.start, oh.stop))
    if not block & set(axes):
        out = prim.bind(oh.compact, axes=axes, keepdims=keepdims)
        shift = 0 if keepdims else sum(1 for a in axes if a < oh.start)
        return oh.with_compact(out, oh.start - shift, oh.stop - shift), True
    if block <= set(axes):
        diag = take_diagonal(oh)         # (n, compact shape without the block)
        rest = [a - (oh.stop - oh.start if a >= oh.stop else 0) for a in axes if a not in block]
        out = prim.bind(diag, axes=tuple(a + 1 for a in rest), keepdims=False)
        if keepdims:
            out = ops.reshape(out, (oh.n,) + tuple(1 if k in axes else d
                                                   for k, d in enumerate(oh.compact.shape)))
        return out, True
    return None


def _block_after_reshape(old: tuple, start: int, stop: int, new: tuple):
    """Where a contiguous block of axes of `old` lands in `new`, if the reshape keeps it
    whole: the axes before it must hold the same number of entries, and so must it."""
    outer, size = math.prod(old[:start]), math.prod(old[start:stop])
    if outer * size == 0:
        return None
    starts = [b for b in range(len(new) + 1) if math.prod(new[:b]) == outer]
    if not starts:
        return None
    b0 = starts[-1] if size > 1 else starts[0]  # leading size-1 axes stay outside the block
    for b1 in range(b0, len(new) + 1):
        if math.prod(new[b0:b1]) == size:
            return b0, b1
        if math.prod(new[b0:b1]) > size:
            break
    return None


@_structured(ops.shape.reshape_p)
def _reshape(prim, ctx, args, stacked, shape):
    (oh,) = args
    block = _block_after_reshape(tuple(oh.compact.shape), oh.start, oh.stop, tuple(shape))
    if block is None:
        return None
    return oh.with_compact(prim.bind(oh.compact, shape=shape), *block), True


@_structured(ops.shape.transpose_p)
def _transpose(prim, ctx, args, stacked, perm):
    (oh,) = args
    where = [perm.index(a) for a in range(oh.start, oh.stop)]
    if not where or where != list(range(where[0], where[0] + len(where))):
        return None
    return oh.with_compact(prim.bind(oh.compact, perm=perm), where[0], where[-1] + 1), True


@_structured(ops.shape.broadcast_to_p)
def _broadcast_to(prim, ctx, args, stacked, shape):
    (oh,) = args
    block = _aligned_block(oh, tuple(shape))
    if block is None:
        return None
    return oh.with_compact(prim.bind(oh.compact, shape=shape), *block), True


@_structured(ops.indexing.getitem_p)
def _getitem(prim, ctx, args, stacked, key):
    (oh,) = args
    axis, out_axis, start = 0, 0, None
    for k in key:
        if k is None:
            if oh.start < axis < oh.stop:    # a new axis inside the block splits the tie
                return None
            out_axis += 1
            continue
        if oh.start <= axis < oh.stop:
            if not (isinstance(k, slice) and k == slice(None)):
                return None
            if axis == oh.start:
                start = out_axis
        out_axis += 0 if isinstance(k, int) else 1
        axis += 1
    if start is None:                    # the block lies in the axes the key leaves implicit
        start = out_axis + (oh.start - axis)
    return oh.with_compact(prim.bind(oh.compact, key=key), start, start + oh.stop - oh.start), True


@_structured(ops.linalg.matmul_p)
def _matmul(prim, ctx, args, stacked):
    (x, y), (xs, ys) = args, stacked
    if isinstance(x, OneHot) and not ys and y.ndim == 2 and _zero_times_is_zero(y):
        if x.compact.ndim >= 2 and x.stop < x.compact.ndim:
            return x.with_compact(prim.bind(x.compact, y), x.start, x.stop), True  # rows pass
        if x.start == x.compact.ndim - 1:  # tied contracted axis: x_k @ y = column k outer row k
            rows = _gather_rows(y, x, axis=0)                          # (n, p)
            diag = take_diagonal(x)                                     # (n, ..., m) or (n,)
            return ops.expand_dims(diag, -1) * ops.reshape(
                rows, (x.n,) + (1,) * (diag.ndim - 1) + (y.shape[1],)), True
        if x.stop == x.compact.ndim and x.indices._trace is None:   # a jacobian's seed, reshaped
            return _tied_rows_and_columns_times(x, y), True
    if isinstance(y, OneHot) and not xs and y.compact.ndim <= 2 and x.ndim == 2 \
            and _zero_times_is_zero(x):
        if (y.start, y.stop) == (1, 2):  # tied columns pass through
            return y.with_compact(prim.bind(x, y.compact), 1, 2), True
        if (y.start, y.stop) == (0, 1):  # tied contracted axis: column k of x times row k
            cols = _gather_rows(x, y, axis=1)                          # (n, m)
            diag = take_diagonal(y)                                     # (n, p) or (n,)
            if diag.ndim == 1:
                return cols * ops.expand_dims(diag, -1), True
            return ops.expand_dims(cols, -1) * ops.expand_dims(diag, 1), True
    return None


def _tied_rows_and_columns_times(x: OneHot, y: Tensor) -> Tensor:
    """x @ y where x's block spans its last (contracted) axis and the row axes before it
    (the seed of a jacobian of a matrix target, reshaped): iteration i's only non-zero row
    is r = i // m, holding x's entry times row c = i % m of y. Made as the (n, ..., p)
    result directly; densifying x first would make n times x's size (n^2 for a seed)."""
    s = tuple(x.compact.shape)
    m, p = s[-1], int(y.shape[1])
    lead = s[x.start:-1]                                         # the tied row axes
    idx, valid = _safe_indices(x)                                # concrete: the loop's indices
    row, column = np.divmod(idx.numpy(), m)
    rows = ops.gather(y, constant(column), axis=0)               # (n, p): row c of y
    diag = take_diagonal(x)                                      # (n, *s[:start])
    values = ops.reshape(diag, tuple(diag.shape) + (1,) * len(lead) + (1,)) * ops.reshape(
        rows, (x.n,) + (1,) * (diag.ndim - 1 + len(lead)) + (p,))
    n_rows = math.prod(lead)
    if diag.ndim == 1:
        # each iteration's row r written into fresh zeros (+0 elsewhere, as the gemm gives):
        # a scatter of n rows, where a `where` over the whole (n, L, p) result read a mask
        # and the values for every entry (attention's Jacobian: 0.9 -> 0.06 ms)
        values = ops.reshape(values, (x.n, p))
        if valid is not None:
            values = ops.where(ops.reshape(valid, (x.n, 1)), values, ops.zeros((), values.dtype))
        flat = constant(row + np.arange(x.n, dtype=row.dtype) * row.dtype.type(n_rows))
        dense = scatter_add_p.bind(values, flat, axis=0, size=x.n * n_rows, unique=True)
        return ops.reshape(dense, (x.n,) + lead + (p,))
    place = row[:, None] == np.arange(n_rows)                    # (n, L): where row r lies
    if valid is not None:
        place &= valid.numpy()[:, None]
    place = constant(place.reshape((x.n,) + (1,) * (diag.ndim - 1) + lead + (1,)))
    return ops.where(place, values, ops.zeros((), values.dtype))   # +0 elsewhere, as the gemm


def _gather_rows(u: Tensor, oh: OneHot, axis: int) -> Tensor:
    """u's entries at each iteration's tied index along `axis`, loop axis first; zero
    where the index is out of range."""
    idx, valid = _safe_indices(oh)
    out = ops.moveaxis(ops.gather(u, idx, axis=axis), axis, 0)
    if valid is not None:
        out = out * ops.cast(ops.reshape(valid, (oh.n,) + (1,) * (out.ndim - 1)), out.dtype)
    return out


@_structured(ops.indexing.one_hot_p)
def _one_hot(prim, ctx, args, stacked, depth, dtype):
    (indices,) = args
    if indices is not ctx.indices or depth < 2:
        return None
    compact = ops.ones((depth,), dtype)
    return OneHot(compact, 0, 1, ctx.indices, ctx.index_range), True
