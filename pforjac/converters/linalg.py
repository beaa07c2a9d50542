"""Converters of matmul and einsum.

matmul is reduced to the matrix case per iteration (a 1-D operand becomes a
row or column), batch ranks are padded to agree, and the common Jacobian case
(stacked cotangent times an unstacked weight matrix) is one large gemm.
"""
from __future__ import annotations

import string

import math


from .. import ops
from ..ops._kernels import matmul_no_gemv
from ..ops.linalg import contraction_order, einsum_p, matmul_p, parse_einsum
from ..pfor import register_converter


def _as_matrix(x, stacked: bool, column: bool):
    """Per iteration, a 1-D operand becomes (1, k) on the left or (k, 1) on the right."""
    if x.ndim - stacked != 1:
        return x
    lead = tuple(x.shape[:-1])
    return ops.reshape(x, lead + ((x.shape[-1], 1) if column else (1, x.shape[-1])))


def _pad_batch(x, stacked: bool, batch_rank: int):
    """Inserts size-1 batch axes after the loop axis so per-iteration batch ranks agree."""
    rank = x.ndim - stacked - 2
    if rank >= batch_rank or not stacked:
        return x
    return ops.reshape(x, (x.shape[0],) + (1,) * (batch_rank - rank) + tuple(x.shape[1:]))


def _gemm(a, b):
    """a (m, k) @ b (k, p), computed the same way whatever the number of iterations folded
    into its rows or columns: never by gemv (`matmul_no_gemv`, in pforjac's own ops)."""
    return matmul_no_gemv(a, b, matmul=ops.matmul, concat=ops.concat)


@register_converter(matmul_p)
def _convert_matmul(n, args, stacked, **params):
    (x, y), (xs, ys) = args, stacked
    x_vec, y_vec = x.ndim - xs == 1, y.ndim - ys == 1
    if xs and not ys and y.ndim == 2:
        # [n, ..., m, k] @ [k, p] (or [n, k] @ [k, p] for a 1-D x): one gemm over all rows.
        rows = math.prod(x.shape[:-1])  # not -1: x may have no elements
        out = _gemm(ops.reshape(x, (rows, x.shape[-1])), y)
        return ops.reshape(out, tuple(x.shape[:-1]) + (y.shape[-1],)), True
    if ys and not xs and y_vec:
        # x @ y_k for every k is row k of Y @ x^T (x's rows flattened): the loop axis comes
        # out first and the result C-ordered (x @ Y^T, then moving the loop axis first,
        # left a transposed array that every later reduction had to copy).
        lead = tuple(x.shape[:-1])
        out = _gemm(y, ops.transpose(ops.reshape(x, (math.prod(lead), x.shape[-1]))))
        return ops.reshape(out, (y.shape[0],) + lead), True
    # ([m, k] @ [n, k, p] is a broadcast matmul, below: folding the loop axis into one
    # gemm's columns needed two transposing copies, 1.5-10x slower at every size measured)
    x2, y2 = _as_matrix(x, xs, column=False), _as_matrix(y, ys, column=True)
    batch = max(x2.ndim - xs, y2.ndim - ys) - 2
    out = ops.matmul(_pad_batch(x2, xs, batch), _pad_batch(y2, ys, batch))
    shape = tuple(out.shape)
    if y_vec:
        shape = shape[:-1]
    if x_vec:
        shape = shape[:-1] if y_vec else shape[:-2] + shape[-1:]
    return ops.reshape(out, shape), True


# The loop axis's size when pfor picks the contraction order of an einsum of three or more
# operands: one order for every chunk size, so `parallel_iterations` keeps every bit.
_ORDER_LOOP_SIZE = 64


@register_converter(einsum_p)
def _convert_einsum(n, args, stacked, subscripts, order=None):
    ins, out = parse_einsum(subscripts, [a.ndim - s for a, s in zip(args, stacked)])
    free = next(c for c in string.ascii_letters if c not in subscripts)
    ins = [free + s if st else s for s, st in zip(ins, stacked)]
    spec = ",".join(ins) + "->" + free + out
    if len(args) < 3:
        return einsum_p.bind(*args, subscripts=spec), True
    if order is None:
        order = contraction_order(spec, tuple((_ORDER_LOOP_SIZE,) + a.shape[1:] if st else a.shape
                                              for a, st in zip(args, stacked)))
    return einsum_p.bind(*args, subscripts=spec, order=order), True
