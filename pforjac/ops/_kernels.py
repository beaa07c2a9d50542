"""Numeric kernels: faster ways to compute what one numpy call computes, with the same bits.

The ops' numpy forwards call these (and code that codegen generates calls `by_last_axis`);
each docstring gives the measurement that justifies the kernel and what it guarantees:
numpy's result bit for bit, NaN, infinities and zeros' signs included (tests/test_reductions.py
and tests/test_layouts.py compare each with numpy on such values), but for `matmul_no_gemv`,
which rounds as gemm does where numpy would call gemv, so that the bits do not depend on
how many rows a product has. Figures are of the 2-core
Zen 5 VM; the commits that added the kernels give more (e44de12, 452288f, e37418f, d67b451,
edf7a55, 38afe9a, 9ea009c, 691745d, 52918a3).

Most of them work around one habit of numpy: its loops run along an array's last axis, so an
array whose rows along it are short (2-16 elements) is copied or reduced in as many loops of
that length. Seen with each row as one void item (`row_items`), the same bytes move in long
loops; taken one position of the short axis at a time, the same arithmetic runs over all
the others.
"""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["short_rows", "row_items", "sum_short_axis", "sum_is_plain", "extremum_is_plain",
           "axis_first", "extremum", "setitem",
           "rows_concatenable", "concat_rows", "add_at", "matmul_no_gemv", "by_last_axis",
           "BY_LAST_AXIS_UFUNCS"]


# -- short rows as void items ---------------------------------------------------------------
def short_rows(x, most: int = 16) -> bool:
    """x's rows along its last axis have 2 to `most` elements, contiguous, of plain numbers."""
    return x.ndim >= 1 and 2 <= x.shape[-1] <= most and x.dtype.kind in "biufc" \
        and x.strides[-1] == x.itemsize


def row_items(x) -> np.ndarray:
    """`x`, its last axis contiguous, viewed with each row along it as one void item: shape
    x.shape[:-1] (`short_rows` says where moving those pays)."""
    return x.view(np.dtype((np.void, x.shape[-1] * x.itemsize)))[..., 0]


# -- reductions over one short axis ---------------------------------------------------------
def sum_short_axis(x, axis=None, keepdims=False):
    """np.sum of C-ordered `x`, bit for bit, but faster over one axis where numpy's
    reduction loop is slow. Along the last axis numpy adds fewer than 8 elements one by one
    (pairwise from 8): the slices are added instead (a (96, 32, 32, 3) array over its last
    axis: 1.5 -> 0.085 ms, the Lennard-Jones Hessian 5.4 -> 2.7 ms; numpy's sum starts from
    +0, which the final `+ 0.0` gives, as -0 + -0 stays -0). Along an axis with 2 to 16
    elements after it numpy adds one by one, with an inner loop of those few: a copy with
    that axis first (`axis_first`), summed over it, adds the same numbers in the same order
    in long rows ((1000, 50, 2) over axis 1: 0.73 -> 0.25 ms with numpy's copy, 0.05 with
    `axis_first`'s; (96, 32, 32, 3) over axis 2: 0.40 -> 0.20)."""
    if not sum_is_plain(x.shape, x.dtype, axis):
        (a,) = axis
        if _short_last(x.shape, a):
            out = _fold_slices(np.add, x, a, keepdims)
            out += 0.0
            return out
        out = axis_first(x, a, math.prod(x.shape[a + 1:])).sum(axis=0)
        return out.reshape(x.shape[:a] + (1,) + x.shape[a + 1:]) if keepdims else out
    return np.add.reduce(x, axis=axis, keepdims=keepdims)    # (np.sum's own call, 2 us sooner)


def sum_is_plain(shape: tuple, dtype, axis) -> bool:
    """Whether `sum_short_axis` sums C-ordered data of this shape and dtype over `axis` (a
    tuple or None) by np.add.reduce, its last line (generated code then calls that itself)."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f" or dtype.itemsize < 4 or axis is None or len(axis) != 1 \
            or math.prod(shape) < _SMALL_SUM:
        return True
    (a,) = axis
    inner = math.prod(shape[a + 1:])
    return not (_short_last(shape, a) or shape[a] >= 2 and 2 <= inner <= 16 and a > 0)


def _short_last(shape: tuple, a: int, rows: int = 256) -> bool:
    """Axis `a` of an array of `shape` is its last (but for unit axes) and has 2-7 elements,
    over `rows` rows: numpy's reductions run a loop per row there."""
    n = shape[a]
    return 2 <= n < 8 and math.prod(shape[a + 1:]) == 1 and math.prod(shape) // n >= rows


# numpy's max of short rows costs more than the slices' maximum from 32 rows on ((64, 3):
# 3.2 against 2.0 us); its sum only from about 128 (1.9 against 2.3 us at (64, 3))
_EXTREMUM_ROWS = 32
_SMALL_SUM = 512       # elements: below this np.add.reduce beats every other path


def _fold_slices(ufunc, x, a: int, keepdims: bool = False, **first):
    """ufunc(...ufunc(x[0], x[1]), ..., x[n-1]) over the slices of axis `a`, in place after the
    first call (which gets `first`, e.g. order="C"); with `keepdims` reshaped to keep axis `a`
    (np.expand_dims would cost 1-2 us more; slices that keep it make numpy's loops slower)."""
    lead = (slice(None),) * a
    out = ufunc(x[lead + (0,)], x[lead + (1,)], **first)
    for k in range(2, x.shape[a]):
        ufunc(out, x[lead + (k,)], out=out)
    return out.reshape(x.shape[:a] + (1,) + x.shape[a + 1:]) if keepdims else out


def axis_first(x, a: int, inner: int):
    """A C-ordered copy of C-ordered `x` with axis `a` first, the same bytes as
    `np.ascontiguousarray(np.moveaxis(x, a, 0))`. The `inner` elements after it move as one
    item each (a void dtype): numpy copies element by element otherwise, in loops of `inner`
    ((96, 32, 32, 3) with axis 2 first, as a pair potential's Hessian sums: 0.38 -> 0.16 ms;
    (1000, 50, 2) with axis 1 first: 0.195 -> 0.040)."""
    moved = np.ascontiguousarray(np.moveaxis(row_items(x.reshape(x.shape[:a + 1] + (inner,))), a, 0))
    return moved.view(x.dtype).reshape((x.shape[a],) + x.shape[:a] + x.shape[a + 1:])


def extremum(reduce, pairwise, x, axis=None, keepdims=False):
    """`reduce(x, axis, keepdims)` (np.max or np.min, with `pairwise` np.maximum or
    np.minimum), bit for bit, but faster over a short last axis: numpy reduces each of its
    rows in a separate inner loop (a (64, 32, 4) array over its last axis, as a max-pool by
    4 makes: 0.065 ms), where the slices' elementwise maximum takes 0.007 (zoo maxpool
    compiled 1.65x -> 1.25x JAX). Same result, NaN and zeros' signs included: the fold is
    used only for the row lengths and dtypes where it gives numpy's bits on this machine
    (`_fold_is_numpys`; tests/test_reductions.py compares every float32 and float64 row of
    2 to 7 elements drawn from +-0, +-1, +-inf and NaN). The result is C-ordered."""
    x = np.asarray(x)
    if not extremum_is_plain(x.shape, x.dtype, axis):
        return _fold_slices(pairwise, x, axis[0], keepdims, order="C")
    return reduce(x, axis=axis, keepdims=keepdims)


def extremum_is_plain(shape: tuple, dtype, axis) -> bool:
    """Whether `extremum` reduces an array of this shape and dtype over `axis` by `reduce`."""
    dtype = np.dtype(dtype)
    return not (dtype.kind == "f" and axis is not None and len(axis) == 1
                and _short_last(shape, axis[0], _EXTREMUM_ROWS)
                and _fold_is_numpys(shape[axis[0]], dtype))


@functools.lru_cache(maxsize=None)
def _fold_is_numpys(n: int, dtype: np.dtype) -> bool:
    """Whether np.maximum and np.minimum folded over the n slices of a last axis give numpy's
    own max and min reductions, bit for bit, on this machine. Which of two equal values (+0
    and -0) a loop keeps depends on the SIMD code numpy runs on the CPU: with AVX-512 the fold
    and the reductions agree for n = 2-7; on an AVX2 CPU (where np.maximum(0.0, -0.0) is -0.0)
    numpy's reduction of a float64 row of 5 to 7 keeps a zero that depends on where the row
    lies in memory, and the fold does not always match it: numpy's reduction is used there.
    Checked once per n and dtype (1-50 ms), on rows of n values drawn from +-0, +-1, +-inf
    and NaN (every one up to n = 5, 10,000 of them beyond), C-ordered at four offsets from a
    64-byte boundary (with rows of up to 7 elements, every alignment a SIMD loop can see)
    and transposed."""
    values = np.array([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf], dtype)
    count = len(values) ** n
    rows = np.arange(count) if n < 6 else np.random.default_rng(1).choice(count, 10000, replace=False)
    x = values[rows[:, None] // len(values) ** np.arange(n) % len(values)]
    layouts = [shifted_copy(x, s) for s in range(4)] + [np.asfortranarray(x)]
    with np.errstate(invalid="ignore"):
        for a in layouts:
            for reduce, pairwise in ((np.maximum.reduce, np.maximum), (np.minimum.reduce, np.minimum)):
                got, want = _fold_slices(pairwise, a, 1, order="C"), reduce(a, axis=1)
                numbers = ~np.isnan(want)
                if not (np.array_equal(got, want, equal_nan=True)
                        and np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))):
                    return False
    return True


def shifted_copy(x: np.ndarray, shift: int) -> np.ndarray:
    """A C-ordered copy of `x` whose data starts `shift` elements past a 64-byte boundary."""
    step = max(1, 64 // x.itemsize)
    buffer = np.empty(x.size + 2 * step + shift, x.dtype)
    start = (-buffer.ctypes.data // x.itemsize) % step + shift
    out = buffer[start:start + x.size].reshape(x.shape)
    out[...] = x
    return out


# -- copies of short rows ---------------------------------------------------------------------
def setitem(out, key, g) -> None:
    """`out[key] = g`, the same bytes. Where g's rows along the last axis are short (2-16
    elements, contiguous in g and in their place), each row moves as one item: numpy copies
    element by element otherwise, in loops of a row's length (a convolution's gradient by
    slices, (10, 32, 60, 4) from a (..., 5, 4) block into (10, 32, 64, 4): 0.087 -> 0.023 ms;
    zoo conv1d_slices compiled 0.76 -> 0.47 ms)."""
    target = out[key]
    if g.size >= 1024 and target.shape == g.shape and not target.flags.owndata \
            and short_rows(g) and short_rows(target):          # (a view: basic indexing)
        row_items(target)[...] = row_items(g)
    else:
        out[key] = g


def _c_like(x) -> bool:
    """Strides that fall along the axes (those of size 1 aside): numpy lays out a result made
    from such operands in C order."""
    strides = [st for d, st in zip(x.shape, x.strides) if d > 1]
    return strides == sorted(strides, reverse=True)


def rows_concatenable(xs, axis: int) -> bool:
    """Whether `concat_rows` applies: along an axis before the last, at least 1024 elements,
    one dtype, every operand's rows short and contiguous and its strides C-like."""
    first = xs[0]
    return bool(first.ndim) and axis % first.ndim != first.ndim - 1 \
        and sum(x.size for x in xs) >= 1024 \
        and all(x.dtype == first.dtype and short_rows(x) and _c_like(x) for x in xs)


def concat_rows(xs, axis: int, shape: tuple) -> np.ndarray:
    """`np.concatenate(xs, axis)` (of result `shape`, where `rows_concatenable`) with the rows
    along the last axis moved as one void item each: numpy copies element by element
    otherwise, in loops of a row's length (a 1-D convolution's five shifted (32, 60, 1, 4)
    slices: 0.043 -> 0.013 ms). The same bytes, and the C order numpy gives such operands."""
    out = np.empty(shape, xs[0].dtype)
    np.concatenate([row_items(x) for x in xs], axis=axis % xs[0].ndim, out=row_items(out))
    return out


# -- repeated positions of a scatter ----------------------------------------------------------
def add_at(out, g, indices, axis: int, size: int) -> None:
    """`np.add.at(out, (:,) * axis + (indices,), g)` with repeated positions, bit for bit,
    in passes numpy vectorizes: the k-th slice of g that goes to each position (in the
    order of `indices`, as np.add.at adds them) is added in pass k, where the positions
    are distinct. np.add.at with a slice before the index, or a broadcast g, loops element
    by element: 7.4 ms against 0.9 for the Jacobian of an embedding lookup. Out-of-range
    indices (np.add.at names them) and positions repeated more than 64 times (as many
    passes) go to np.add.at."""
    flat, lead = indices.ravel(), (slice(None),) * axis
    if flat.size == 0 or flat.min() < -size or flat.max() >= size or not out.flags.c_contiguous:
        np.add.at(out, lead + (indices,), g)
        return
    if out.size == 0:
        return
    flat = np.where(flat < 0, flat + size, flat)
    order = np.argsort(flat, kind="stable")
    targets = flat[order]
    first = np.concatenate(([True], targets[1:] != targets[:-1]))
    starts = np.flatnonzero(first)
    rank = np.arange(flat.size) - starts[np.cumsum(first) - 1]    # k-th slice to its target
    passes = int(rank.max()) + 1
    if passes > 64:
        np.add.at(out, lead + (indices,), g)
        return
    rows = g.reshape(g.shape[:axis] + (flat.size,) + g.shape[axis + indices.ndim:])
    # Each pass gathers its positions' sums, adds, and writes them back with everything after
    # `axis` seen as one opaque (void) element: numpy's fancy `+=` along a middle axis with a
    # small block after it copies element by element (im2col conv1d: 2.2 -> 0.6 ms a call)
    blocks = row_items(out.reshape(out.shape[:axis + 1] + (-1,)))
    for k in range(passes):
        picked = order[rank == k]
        to = flat[picked]
        sums = np.take(out, to, axis=axis)
        sums += np.take(rows, picked, axis=axis)
        blocks[lead + (to,)] = row_items(sums.reshape(sums.shape[:axis + 1] + (-1,)))


# -- products -----------------------------------------------------------------------------------
def matmul_no_gemv(x, y, matmul=np.matmul, concat=np.concatenate):
    """`matmul(x, y)` computed the same way whatever the number of rows of x or columns of y.
    numpy hands a product with one row or one column to gemv (or dot), whose sums round
    differently from gemm's and, in OpenBLAS, differently again for a different number of
    the other side's columns or rows; so a pfor chunk of one iteration (`parallel_iterations`)
    or a one-row weight against n stacked columns would change the last bit. A single row or
    column, on either side, is doubled into a gemm and the copy dropped (only ever one row
    or column is copied): the bits of the gemm's first row or column (both found by the long
    hypothesis profile, 452288f and 9f9e94a; the cost is that one row or column's copy).

    Written for anything that slices as numpy does: einsum's numpy forward passes numpy's
    functions, the matmul converter pforjac's `matmul` and `concat` (its rules are made of
    primitives). The result may be a view of the doubled product."""
    one_row, one_col = x.shape[-2] == 1, y.shape[-1] == 1
    if not (x.shape[-2] and x.shape[-1] and y.shape[-1]) or not (one_row or one_col):
        return matmul(x, y)
    if one_row:
        x = concat([x, x], axis=-2)
    if one_col:
        y = concat([y, y], axis=-1)
    return matmul(x, y)[..., slice(0, 1) if one_row else slice(None),
                        slice(0, 1) if one_col else slice(None)]


# -- elementwise arithmetic along a short last axis -----------------------------------------
# Binary arithmetic is correctly rounded in every numpy loop (SIMD or not), so computing it
# one position of the last axis at a time gives the same bits: by_last_axis is exact for these.
BY_LAST_AXIS_UFUNCS = (np.add, np.subtract, np.multiply, np.true_divide)


def by_last_axis(ufunc, *xs, out=None, order="K"):
    """`ufunc(*xs)` (one of `BY_LAST_AXIS_UFUNCS`) for a result whose last axis has 2-4
    elements and an operand broadcast along it: numpy then runs its inner loop over that axis
    alone, 2-4 elements a call (Lennard-Jones forces, (96, 32, 32, 1) * (32, 32, 3): 0.55 ms);
    one call per position of the last axis runs over all the others (0.18 ms; zoo lj_hessian
    compiled 1.78 -> 1.30 ms). The same bits; the result is C-ordered (or `out`), so codegen
    calls this only where eager code's result is C-ordered too, or its layout reaches no
    value."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in xs))
    n = shape[-1] if shape else 0
    if not 2 <= n <= 4 or not any(np.ndim(x) and (np.shape(x)[-1] == 1 or np.asarray(x).strides[-1] == 0)
                                  for x in xs):
        return ufunc(*xs, out=out, order=order) if out is not None else ufunc(*xs, order=order)

    def at(k):          # (operands align on the last axis; a 0-d one is the same everywhere)
        return [x[..., k if np.shape(x)[-1] == n else 0] if np.ndim(x) else x for x in xs]
    if out is None:
        first = ufunc(*at(0))
        out = np.empty(shape, first.dtype)
        out[..., 0] = first
    else:
        ufunc(*at(0), out=out[..., 0])
    for k in range(1, n):
        ufunc(*at(k), out=out[..., k])
    return out
