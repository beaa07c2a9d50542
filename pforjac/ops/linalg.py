"""matmul (numpy's batched semantics, 1-D operands included) and einsum.

How einsum's forward plans a contraction (its parser, the matmul plans of two operands, the
order of three or more) is `_einsum_plan`; the gemv-free product, `_kernels.matmul_no_gemv`.
"""
from __future__ import annotations

import math
import string

import numpy as np

from .. import core
from ..core import defjvp, defvjp_all, defjvp_all
from ..tensor import Tensor, as_operands
from ._einsum_forms import explicit, from_sublists
from ._einsum_plan import (broadcast_plan, check_order, contraction_order, pairwise_specs,
                           parse_einsum, rows_plan)
from ._kernels import matmul_no_gemv
from .broadcasting import broadcast_to, reshape, unbroadcast
from .shape import expand_dims, swapaxes, transpose

__all__ = ["matmul", "einsum", "dot", "parse_einsum", "contraction_order"]


def _matmul_shape(x, y):
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("matmul operands must have rank >= 1 (use multiply for scalars)")
    k_x = x.shape[-1]
    k_y = y.shape[0] if y.ndim == 1 else y.shape[-2]
    if k_x != k_y:
        raise ValueError(f"contracting dimensions differ: {k_x} (last of {x.shape}) vs {k_y} of {y.shape}")
    batch = np.broadcast_shapes(tuple(x.shape[:-2]), tuple(y.shape[:-2]))
    rows = () if x.ndim == 1 else (x.shape[-2],)
    cols = () if y.ndim == 1 else (y.shape[-1],)
    return tuple(batch) + rows + cols, np.result_type(x.dtype, y.dtype)


matmul_p = core.new_primitive("matmul", np.matmul, _matmul_shape)


def _matmul_vjp_x(g, ans, x, y):
    if x.ndim <= 2 and y.ndim <= 2:          # the common cases, in as few ops as possible
        if y.ndim == 1:
            return g * y if x.ndim == 1 else reshape(g, (x.shape[0], 1)) * y
        return matmul(g, transpose(y))        # (m,p)@(p,k), or (p,)@(p,k) for a 1-D x
    x2 = expand_dims(x, 0) if x.ndim == 1 else x
    y2 = expand_dims(y, -1) if y.ndim == 1 else y
    g2 = reshape(g, tuple(np.broadcast_shapes(x2.shape[:-2], y2.shape[:-2])) + (x2.shape[-2], y2.shape[-1]))
    return reshape(unbroadcast(matmul(g2, swapaxes(y2, -1, -2)), x2.shape), x.shape)


def _matmul_vjp_y(g, ans, x, y):
    if x.ndim <= 2 and y.ndim <= 2:
        if x.ndim == 1:
            return g * x if y.ndim == 1 else reshape(x, (x.shape[0], 1)) * g
        return matmul(transpose(x), g) if y.ndim == 2 else matmul(g, x)
    x2 = expand_dims(x, 0) if x.ndim == 1 else x
    y2 = expand_dims(y, -1) if y.ndim == 1 else y
    g2 = reshape(g, tuple(np.broadcast_shapes(x2.shape[:-2], y2.shape[:-2])) + (x2.shape[-2], y2.shape[-1]))
    return reshape(unbroadcast(matmul(swapaxes(x2, -1, -2), g2), y2.shape), y.shape)


core.defvjp(matmul_p, _matmul_vjp_x, _matmul_vjp_y)
defjvp(matmul_p, lambda t, ans, x, y: matmul(t, y), lambda t, ans, x, y: matmul(x, t))


def matmul(x, y):
    """Matrix product with numpy's batching and 1-D rules, as `np.matmul` / `@`."""
    if not (isinstance(x, Tensor) and isinstance(y, Tensor)):
        x, y = as_operands((x, y))
    return matmul_p.bind(x, y)


def dot(x, y):
    return matmul(x, y)


# -- einsum --------------------------------------------------------------------------
def _einsum_shape(*xs, subscripts, order=None):
    ins, out = parse_einsum(subscripts, [x.ndim for x in xs])
    check_order(order, len(xs), subscripts)
    sizes: dict[str, int] = {}
    for s, x in zip(ins, xs):
        for c, d in zip(s, x.shape):
            if sizes.setdefault(c, d) != d:
                raise ValueError(f"einsum '{subscripts}': axis '{c}' has sizes {sizes[c]} and {d}")
    return tuple(sizes[c] for c in out), np.result_type(*(x.dtype for x in xs))


def _einsum_impl(*xs, subscripts, order=None):
    """np.einsum, but a two-operand contraction that is a (batched) matrix product goes to
    np.matmul: np.einsum of two operands never calls BLAS (`'abqk,bqd->abkd'`, as pfor
    makes of batched attention: 16.7 ms against 0.8). Where the output ends in a row axis
    of one operand and a column axis of the other, with one contracted axis, the operands'
    views broadcast over the other axes and the product comes out in the output's order (no
    copy); other products are transposed to (batch, rows, contracted) @ (batch, contracted,
    columns) first. The result is C-ordered. Three or more operands are contracted in
    `order` (`contraction_order` of their shapes if None)."""
    if order is not None:
        check_order(order, len(xs), subscripts)
    if len(xs) > 2:
        if order is None:
            order = contraction_order(subscripts, tuple(x.shape for x in xs))
        if not order:
            return np.einsum(subscripts, *xs)
        specs = None if order[0] == "einsum_path" else pairwise_specs(subscripts, order)
        if specs is None:
            return np.einsum(subscripts, *xs, optimize=["einsum_path", *order[order[0] == "einsum_path":]])
        xs = list(xs)
        for (i, j), spec in zip(order, specs):
            y = xs.pop(j)
            xs.append(_einsum_impl(xs.pop(i), y, subscripts=spec))
        return xs[0]
    if len(xs) == 1:
        return np.einsum(subscripts, *xs)
    x, y = xs
    plan = broadcast_plan(subscripts, x.ndim, y.ndim)
    if plan is not None:
        (perm_l, units_l), (perm_r, units_r), swap = plan
        left, right = (y, x) if swap else (x, y)
        left = np.expand_dims(left.transpose(perm_l), units_l)
        right = np.expand_dims(right.transpose(perm_r), units_r)
        return np.ascontiguousarray(matmul_no_gemv(left, right))   # (F-ordered inputs: not C)
    plan = rows_plan(subscripts, x.ndim, y.ndim)
    if plan is None:
        return np.einsum(subscripts, x, y)
    perm_x, perm_y, (nb, nl, nk), out_perm = plan
    x, y = x.transpose(perm_x), y.transpose(perm_y)
    b_shape, l_shape, r_shape = x.shape[:nb], x.shape[nb:nb + nl], y.shape[nb + nk:]
    k = math.prod(x.shape[nb + nl:])
    x = x.reshape(b_shape + (math.prod(l_shape), k))
    y = y.reshape(b_shape + (k, math.prod(r_shape)))
    z = matmul_no_gemv(x, y).reshape(b_shape + l_shape + r_shape)
    return np.ascontiguousarray(z.transpose(out_perm))


einsum_p = core.new_primitive("einsum", _einsum_impl, _einsum_shape, may_alias=True)


def _einsum_vjp(g, ans, *xs, subscripts, order=None):
    """Operand k's cotangent contracts g with the other operands onto k's axes; an
    axis that only operand k has was summed away, so its cotangent is broadcast along it.
    An axis an operand repeats ('ii->i' reads a diagonal) gets its cotangent on that
    diagonal: computed over the distinct axes, then embedded with identity matrices."""
    ins, out = parse_einsum(subscripts, [x.ndim for x in xs])
    cts = []
    for k, (s, x) in enumerate(zip(ins, xs)):
        distinct = "".join(dict.fromkeys(s))
        size = dict(zip(s, x.shape))
        others = [(out, g)] + [(ins[j], xs[j]) for j in range(len(xs)) if j != k]
        have = set("".join(o for o, _ in others))
        kept = "".join(c for c in distinct if c in have)
        ct = einsum(",".join(o for o, _ in others) + "->" + kept, *[v for _, v in others])
        if kept != distinct:
            ct = broadcast_to(reshape(ct, tuple(size[c] if c in have else 1 for c in distinct)),
                              tuple(size[c] for c in distinct))
        if distinct != s:
            ct = _onto_diagonals(ct, distinct, s, size, subscripts)
        cts.append(ct)
    return cts


def _onto_diagonals(ct, distinct: str, s: str, size: dict, subscripts: str):
    """`ct` over the distinct axes of `s`, placed where the repeated axes of `s` agree
    (zero elsewhere): einsum with one identity matrix per repeated occurrence."""
    free = iter(c for c in string.ascii_letters if c not in subscripts)
    seen: set = set()
    renamed, eyes = "", []
    for c in s:
        if c in seen:
            fresh = next(free)
            renamed += fresh
            eyes.append((c + fresh, np.eye(size[c], dtype=ct.dtype)))
        else:
            seen.add(c)
            renamed += c
    spec = ",".join([distinct] + [e for e, _ in eyes]) + "->" + renamed
    return einsum(spec, ct, *[e for _, e in eyes])


defvjp_all(einsum_p, _einsum_vjp)
defjvp_all(einsum_p, lambda ts, ans, *xs, subscripts, order=None: _einsum_jvp(ts, xs, subscripts, order))


def _einsum_jvp(ts, xs, subscripts, order):
    out = None
    params = {"subscripts": subscripts} if order is None else {"subscripts": subscripts, "order": order}
    for k, t in enumerate(ts):
        if t is None:
            continue
        term = einsum_p.bind(*[t if j == k else x for j, x in enumerate(xs)], **params)
        out = term if out is None else out + term
    return out


def einsum(subscripts, *operands):
    """Einstein summation as `np.einsum`: `einsum('ij,jk->ik', a, b)`, implicit outputs,
    `'...'` (`einsum('...ij,...jk->...ik', a, b)`), numpy's interleaved form
    `einsum(a, [0, 1], b, [1, 2], [0, 2])`, and size-1 axes broadcast; the primitive only
    sees explicit subscripts (`_einsum_forms`)."""
    if not isinstance(subscripts, str):
        subscripts, operands = from_sublists((subscripts, *operands))
    operands = as_operands(operands)
    spec, squeezes = explicit(subscripts, [o.shape for o in operands])
    operands = [reshape(o, tuple(d for i, d in enumerate(o.shape) if i not in drop)) if drop else o
                for o, drop in zip(operands, squeezes)]
    return einsum_p.bind(*operands, subscripts=spec)


# -- examples for the generated checks ------------------------------------------------------
_MATMUL_SHAPES = [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)),
                  ((5, 2, 3), (3, 4)), ((5, 2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2))]
_EINSUMS = [("ij,jk->ik", [(2, 3), (3, 4)]), ("ij->ji", [(2, 3)]), ("ii->i", [(3, 3)]),
            ("ij,ij->", [(2, 3), (2, 3)]), ("i,j->ij", [(2,), (3,)]),
            ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("bqd,bkd->bqk", [(2, 3, 4), (2, 5, 4)])]

core.defexamples(matmul_p)(lambda rng: [
    core.Example(rng.uniform(-1, 1, a), rng.uniform(-1, 1, b)) for a, b in _MATMUL_SHAPES])
core.defexamples(einsum_p)(lambda rng: [
    core.Example(*(rng.uniform(-1, 1, s) for s in shapes), subscripts=sub) for sub, shapes in _EINSUMS])
