"""matmul (numpy's batched semantics, 1-D operands included) and einsum."""
from __future__ import annotations

import string

import numpy as np

from .. import core
from ..core import defjvp, defvjp_all, defjvp_all
from ..tensor import as_tensor

__all__ = ["matmul", "einsum", "dot", "parse_einsum"]


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
    from .elementwise import unbroadcast
    from .shape import expand_dims, reshape, swapaxes, transpose
    if x.ndim <= 2 and y.ndim <= 2:          # the common cases, in as few ops as possible
        if y.ndim == 1:
            return g * y if x.ndim == 1 else reshape(g, (x.shape[0], 1)) * y
        return matmul(g, transpose(y))        # (m,p)@(p,k), or (p,)@(p,k) for a 1-D x
    x2 = expand_dims(x, 0) if x.ndim == 1 else x
    y2 = expand_dims(y, -1) if y.ndim == 1 else y
    g2 = reshape(g, tuple(np.broadcast_shapes(x2.shape[:-2], y2.shape[:-2])) + (x2.shape[-2], y2.shape[-1]))
    return reshape(unbroadcast(matmul(g2, swapaxes(y2, -1, -2)), x2.shape), x.shape)


def _matmul_vjp_y(g, ans, x, y):
    from .elementwise import unbroadcast
    from .shape import expand_dims, reshape, swapaxes, transpose
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
    return matmul_p.bind(x, y)


def dot(x, y):
    return matmul(x, y)


# -- einsum --------------------------------------------------------------------------
def parse_einsum(subscripts: str, ndims) -> tuple[list[str], str]:
    """Explicit form `'ij,jk->ik'` (implicit output filled in); no ellipsis."""
    subscripts = subscripts.replace(" ", "")
    if "." in subscripts:
        raise ValueError("pforjac.einsum does not support '...'; name every axis")
    if "->" in subscripts:
        lhs, out = subscripts.split("->")
    else:
        lhs = subscripts
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        raise ValueError(f"einsum '{subscripts}' names {len(ins)} operands, got {len(ndims)}")
    for s, nd in zip(ins, ndims):
        if len(s) != nd:
            raise ValueError(f"einsum '{subscripts}': operand subscripts '{s}' don't match rank {nd}")
    return ins, out


def _einsum_shape(*xs, subscripts):
    ins, out = parse_einsum(subscripts, [x.ndim for x in xs])
    sizes: dict[str, int] = {}
    for s, x in zip(ins, xs):
        for c, d in zip(s, x.shape):
            if sizes.setdefault(c, d) != d:
                raise ValueError(f"einsum '{subscripts}': axis '{c}' has sizes {sizes[c]} and {d}")
    return tuple(sizes[c] for c in out), np.result_type(*(x.dtype for x in xs))


einsum_p = core.new_primitive(
    "einsum", lambda *xs, subscripts: np.einsum(subscripts, *xs, optimize=len(xs) > 2), _einsum_shape)


def _einsum_vjp(g, ans, *xs, subscripts):
    """Operand k's cotangent contracts g with the other operands onto k's axes; an
    axis that only operand k has was summed away, so its cotangent is broadcast along it.
    An axis an operand repeats ('ii->i' reads a diagonal) gets its cotangent on that
    diagonal: computed over the distinct axes, then embedded with identity matrices."""
    from .shape import broadcast_to, reshape
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
defjvp_all(einsum_p, lambda ts, ans, *xs, subscripts: _einsum_jvp(ts, xs, subscripts))


def _einsum_jvp(ts, xs, subscripts):
    out = None
    for k, t in enumerate(ts):
        if t is None:
            continue
        term = einsum_p.bind(*[t if j == k else x for j, x in enumerate(xs)], subscripts=subscripts)
        out = term if out is None else out + term
    return out


def einsum(subscripts: str, *operands):
    """Einstein summation over explicitly named axes, as `np.einsum` (no '...')."""
    operands = [as_tensor(o) for o in operands]
    ins, out = parse_einsum(subscripts, [o.ndim for o in operands])
    return einsum_p.bind(*operands, subscripts=",".join(ins) + "->" + out)
