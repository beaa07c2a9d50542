"""Products and matrix structure, as numpy's functions: outer, inner, tensordot, kron, vdot,
cross; trace, diagonal, diag, diagflat, tril, triu.

All are composites: products are einsum, matmul or broadcast multiplies (cross: numpy's
component formulas); a diagonal is a gather of flat positions (its cotangent a scatter_add
back); a triangle is a `where` with a constant mask. Each gets every rule (vjp, jvp, pfor converter) from those primitives.
"""
from __future__ import annotations

import string

import numpy as np

from ..tensor import as_operands, as_tensor
from ._family import axis_index, broadcast_shapes, int_arg, int_tuple
from .broadcasting import broadcast_to, reshape, sum as _sum
from .elementwise import add, cast, multiply, neg, subtract, where, zeros_like
from .indexing import gather, scatter_add
from .linalg import einsum, matmul
from .shape import moveaxis, stack, transpose
from .complex_parts import conj

__all__ = ["outer", "inner", "tensordot", "kron", "vdot", "cross", "trace", "diagonal",
           "diag", "diagflat", "tril", "triu"]

_LETTERS = string.ascii_letters


# -- products ---------------------------------------------------------------------------
def outer(a, b):
    """np.outer: `a.ravel()[i] * b.ravel()[j]`, a matrix."""
    a, b = as_operands((a, b))
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def inner(a, b):
    """np.inner: the sum over the last axes of `a` and `b` (a product if either is 0-d);
    the result has `a`'s other axes, then `b`'s."""
    a, b = as_operands((a, b))
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"inner: the last axes of shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)} differ in length")
    left, right = _LETTERS[:a.ndim - 1], _LETTERS[a.ndim - 1:a.ndim + b.ndim - 2]
    return einsum(f"{left}z,{right}z->{left}{right}", a, b)


def _tensordot_axes(axes, a_ndim: int, b_ndim: int) -> tuple:
    """np.tensordot's `axes` (an int N, or a pair of ints or sequences) as two tuples."""
    if not isinstance(axes, (list, tuple)):
        n = int_arg(axes, "tensordot: axes")
        if not 0 <= n <= min(a_ndim, b_ndim):
            raise ValueError(f"tensordot: axes={n} needs both tensors to have at least {n} "
                             f"axes (they have {a_ndim} and {b_ndim})")
        return tuple(range(a_ndim - n, a_ndim)), tuple(range(n))
    if len(axes) != 2:
        raise ValueError(f"tensordot: axes must be an int or a pair (axes_a, axes_b), got "
                         f"{axes!r}")
    xa, xb = int_tuple(axes[0], "tensordot: axes[0]"), int_tuple(axes[1], "tensordot: axes[1]")
    if len(xa) != len(xb):
        raise ValueError(f"tensordot: axes {axes!r} pair {len(xa)} axes of a with {len(xb)} of b")
    return (tuple(axis_index(k, a_ndim, "tensordot (a)") for k in xa),
            tuple(axis_index(k, b_ndim, "tensordot (b)") for k in xb))


def tensordot(a, b, axes=2):
    """np.tensordot: sums `a`'s axes `axes[0]` against `b`'s `axes[1]` (an int N: a's last
    N against b's first N); the result has a's free axes, then b's."""
    a, b = as_operands((a, b))
    xa, xb = _tensordot_axes(axes, a.ndim, b.ndim)
    sa, sb = list(_LETTERS[:a.ndim]), list(_LETTERS[a.ndim:a.ndim + b.ndim])
    for i, j in zip(xa, xb):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: axis {i} of a {tuple(a.shape)} and axis {j} of b "
                             f"{tuple(b.shape)} differ in length")
        sb[j] = sa[i]
    out = [c for k, c in enumerate(sa) if k not in xa] + [c for k, c in enumerate(sb)
                                                          if k not in xb]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


def kron(a, b):
    """np.kron: the Kronecker product, blocks `a[i, j] * b` (ranks evened by leading 1s)."""
    a, b = as_operands((a, b))
    n = max(a.ndim, b.ndim)
    sa, sb = (1,) * (n - a.ndim) + tuple(a.shape), (1,) * (n - b.ndim) + tuple(b.shape)
    a2 = reshape(a, tuple(d for s in sa for d in (s, 1)))
    b2 = reshape(b, tuple(d for s in sb for d in (1, s)))
    return reshape(multiply(a2, b2), tuple(p * q for p, q in zip(sa, sb)))


def vdot(a, b):
    """np.vdot: the dot product of the flattened `a` and `b`, `a` conjugated (complex)."""
    a, b = as_operands((a, b))
    if a.size != b.size:
        raise ValueError(f"vdot: shapes {tuple(a.shape)} and {tuple(b.shape)} have different "
                         f"sizes ({a.size} and {b.size})")
    return matmul(conj(reshape(a, (-1,))), reshape(b, (-1,)))


# cross's component i is the sum of sign * a[j] * b[k] over these (j, k, sign), numpy's
# formulas: a term with a missing third component (a 2-vector) is left out, never multiplied
# by a zero (so an infinity in the other vector gives numpy's inf, not 0 * inf = NaN)
_CROSS_TERMS = {0: ((1, 2, 1), (2, 1, -1)), 1: ((2, 0, 1), (0, 2, -1)), 2: ((0, 1, 1), (1, 0, -1))}


def _cross_component(a, b, i: int):
    out = None
    for j, k, sign in _CROSS_TERMS[i]:
        if j < a.shape[-1] and k < b.shape[-1]:
            term = multiply(gather(a, np.asarray(j), -1), gather(b, np.asarray(k), -1))
            if out is None:
                out = term if sign > 0 else neg(term)
            else:
                out = add(out, term) if sign > 0 else subtract(out, term)
    return out


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """np.cross of 3-vectors (and 2-vectors, taken as having a zero third component; two
    2-vectors give the scalar z component) along `axisa` of a and `axisb` of b, the result's
    vectors along `axisc` (`axis` sets all three). numpy's component formulas, broadcast."""
    a, b = as_operands((a, b))
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(a, axis_index(axisa, a.ndim, "cross (axisa)"), -1)
    b = moveaxis(b, axis_index(axisb, b.ndim, "cross (axisb)"), -1)
    if not {a.shape[-1], b.shape[-1]} <= {2, 3}:
        raise ValueError(f"cross: the vector axes have lengths {a.shape[-1]} and "
                         f"{b.shape[-1]}; both must be 2 or 3")
    batch = broadcast_shapes(a.shape[:-1], b.shape[:-1])
    if a.shape[-1] == b.shape[-1] == 2:
        return broadcast_to(_cross_component(a, b, 2), batch)
    c = stack([broadcast_to(_cross_component(a, b, i), batch) for i in range(3)], -1)
    return moveaxis(c, -1, axis_index(axisc, c.ndim, "cross (axisc)"))


# -- diagonals and triangles --------------------------------------------------------------
def _diagonal_positions(n: int, m: int, offset: int) -> np.ndarray:
    """Flat positions in an n x m matrix of its `offset` diagonal."""
    rows = np.arange(max(0, -offset), n)
    rows = rows[rows + offset < m]
    return rows * m + rows + offset


def diagonal(a, offset=0, axis1=0, axis2=1):
    """np.diagonal: the `offset` diagonal of the matrices over `axis1` x `axis2`, as the
    result's last axis (the other axes kept, in order)."""
    a = as_tensor(a)
    if a.ndim < 2:
        raise ValueError(f"diagonal needs a tensor of rank 2 or more, got shape {tuple(a.shape)}")
    i, j = axis_index(axis1, a.ndim, "diagonal (axis1)"), axis_index(axis2, a.ndim,
                                                                     "diagonal (axis2)")
    if i == j:
        raise ValueError(f"diagonal: axis1 and axis2 are both axis {i}")
    a = transpose(a, [k for k in range(a.ndim) if k not in (i, j)] + [i, j])
    n, m = a.shape[-2:]
    offset = int_arg(offset, "diagonal: offset")
    if offset == 0 and n == m:          # one op, whose rules embed back onto the diagonal
        rest = _LETTERS[:a.ndim - 2]
        return einsum(f"{rest}zz->{rest}z", a)
    flat = reshape(a, tuple(a.shape[:-2]) + (n * m,))
    return gather(flat, _diagonal_positions(n, m, offset), -1)


def trace(a, offset=0, axis1=0, axis2=1):
    """np.trace: the sum of the `offset` diagonal over `axis1` x `axis2`."""
    a = as_tensor(a)
    if a.dtype.kind in "biu" and a.dtype.itemsize < 8:    # (numpy sums small ints as int64)
        a = cast(a, np.uint64 if a.dtype.kind == "u" else np.int64)
    if a.ndim == 2 and a.shape[0] == a.shape[1] and offset == 0:    # (the common case: one op)
        axes = {axis_index(axis1, 2, "trace (axis1)"), axis_index(axis2, 2, "trace (axis2)")}
        if len(axes) == 2:          # (the same axis twice: diagonal's error)
            return einsum("zz->", a)
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1)


def diag(v, k=0):
    """np.diag: a 1-D `v` laid on the `k` diagonal of a square matrix (zeros elsewhere);
    a 2-D `v`'s `k` diagonal."""
    v = as_tensor(v)
    k = int_arg(k, "diag: k")
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag takes a 1-D or 2-D tensor, got shape {tuple(v.shape)}; use "
                         f"diagflat, or diagonal with axis1/axis2")
    n = v.shape[0]
    size = n + abs(k)
    positions = _diagonal_positions(size, size, k)
    if n == 0:
        return reshape(scatter_add(v, positions, 0, size * size), (size, size))
    # a gather, then zeros off the diagonal: v's entries as they are (a -0.0 stays one; a
    # scatter_add onto zeros would add it to +0.0)
    on, source = np.zeros(size * size, bool), np.zeros(size * size, np.int64)
    on[positions], source[positions] = True, np.arange(n)
    spread = gather(v, source, 0)
    return reshape(where(on, spread, zeros_like(spread)), (size, size))


def diagflat(v, k=0):
    """np.diagflat: the flattened `v` on the `k` diagonal of a square matrix."""
    return diag(reshape(as_tensor(v), (-1,)), k)


def _triangle(m, keep: np.ndarray):
    return where(keep, m, zeros_like(m))


def tril(m, k=0):
    """np.tril: zeros above the `k` diagonal of the last two axes."""
    m = as_tensor(m)
    return _triangle(m, np.tri(*m.shape[-2:], k=int_arg(k, "tril: k"), dtype=bool))


def triu(m, k=0):
    """np.triu: zeros below the `k` diagonal of the last two axes."""
    m = as_tensor(m)
    return _triangle(m, ~np.tri(*m.shape[-2:], k=int_arg(k, "triu: k") - 1, dtype=bool))
