"""Converters of matmul and einsum.

matmul is reduced to the matrix case per iteration (a 1-D operand becomes a
row or column), batch ranks are padded to agree, and the common Jacobian case
(stacked cotangent times an unstacked weight matrix) is one large gemm.
"""
from __future__ import annotations

import string

import math

import numpy as np

from .. import ops
from ..ops.linalg import einsum_p, matmul_p, parse_einsum
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


def _gemm(a, b, loop_rows: bool):
    """a (m, k) @ b (k, p), where the loop axis is folded into the rows (`loop_rows`) or
    the columns, computed the same way whatever the number of iterations. numpy hands a
    product with one row or one column to gemv, whose sums round differently from gemm's,
    so a chunk of one iteration (`parallel_iterations`) would change the last bit. The
    single row or column is doubled into a gemm and the copy dropped (only on the stacked
    side: the unstacked operand is never copied)."""
    if loop_rows and a.shape[0] == 1 and a.shape[1] and b.shape[1]:
        return ops.getitem(ops.matmul(ops.concat([a, a], axis=0), b), (slice(0, 1),))
    if not loop_rows and b.shape[1] == 1 and b.shape[0] and a.shape[0]:
        return ops.getitem(ops.matmul(a, ops.concat([b, b], axis=1)), (slice(None), slice(0, 1)))
    return ops.matmul(a, b)


@register_converter("matmul")
def _convert_matmul(n, args, stacked, **params):
    (x, y), (xs, ys) = args, stacked
    x_vec, y_vec = x.ndim - xs == 1, y.ndim - ys == 1
    if xs and not ys and y.ndim == 2:
        # [n, ..., m, k] @ [k, p] (or [n, k] @ [k, p] for a 1-D x): one gemm over all rows.
        rows = math.prod(x.shape[:-1])  # not -1: x may have no elements
        out = _gemm(ops.reshape(x, (rows, x.shape[-1])), y, loop_rows=True)
        return ops.reshape(out, tuple(x.shape[:-1]) + (y.shape[-1],)), True
    if ys and not xs and y_vec:
        # x @ y_k for every k is x @ Y^T (x's rows flattened), with the loop axis moved first.
        lead = tuple(x.shape[:-1])
        out = _gemm(ops.reshape(x, (math.prod(lead), x.shape[-1])), ops.transpose(y),
                    loop_rows=False)
        return ops.moveaxis(ops.reshape(out, lead + (y.shape[0],)), -1, 0), True
    if ys and not xs and x.ndim == 2 and y.ndim == 3:
        # [m, k] @ [n, k, p]: one gemm with the loop axis folded into the columns
        # (a broadcast matmul would run n small products).
        k, p = y.shape[1], y.shape[2]
        cols = ops.reshape(ops.moveaxis(y, 0, 1), (k, n * p))
        out = ops.reshape(_gemm(x, cols, loop_rows=False), (x.shape[0], n, p))
        return ops.moveaxis(out, 1, 0), True
    x2, y2 = _as_matrix(x, xs, column=False), _as_matrix(y, ys, column=True)
    batch = max(x2.ndim - xs, y2.ndim - ys) - 2
    out = ops.matmul(_pad_batch(x2, xs, batch), _pad_batch(y2, ys, batch))
    shape = tuple(out.shape)
    if y_vec:
        shape = shape[:-1]
    if x_vec:
        shape = shape[:-1] if y_vec else shape[:-2] + shape[-1:]
    return ops.reshape(out, shape), True


@register_converter("einsum")
def _convert_einsum(n, args, stacked, subscripts):
    ins, out = parse_einsum(subscripts, [a.ndim - s for a, s in zip(args, stacked)])
    free = next(c for c in string.ascii_letters if c not in subscripts)
    ins = [free + s if st else s for s, st in zip(ins, stacked)]
    return einsum_p.bind(*args, subscripts=",".join(ins) + "->" + free + out), True
