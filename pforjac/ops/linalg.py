"""matmul (numpy's batched semantics, 1-D operands included) and einsum."""
from __future__ import annotations

import functools
import math
import string

import numpy as np

from .. import core
from ..core import defjvp, defvjp_all, defjvp_all
from ..tensor import Tensor, as_operands

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
    if not (isinstance(x, Tensor) and isinstance(y, Tensor)):
        x, y = as_operands((x, y))
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


def _einsum_shape(*xs, subscripts, order=None):
    ins, out = parse_einsum(subscripts, [x.ndim for x in xs])
    _check_order(order, len(xs), subscripts)
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
        _check_order(order, len(xs), subscripts)
    if len(xs) > 2:
        if order is None:
            order = contraction_order(subscripts, tuple(x.shape for x in xs))
        if not order:
            return np.einsum(subscripts, *xs)
        specs = None if order[0] == "einsum_path" else _pairwise_specs(subscripts, order)
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
    plan = _broadcast_plan(subscripts, x.ndim, y.ndim)
    if plan is not None:
        (perm_l, units_l), (perm_r, units_r), swap = plan
        left, right = (y, x) if swap else (x, y)
        left = np.expand_dims(left.transpose(perm_l), units_l)
        right = np.expand_dims(right.transpose(perm_r), units_r)
        return np.ascontiguousarray(_matmul_no_gemv(left, right))   # (F-ordered inputs: not C)
    plan = _rows_plan(subscripts, x.ndim, y.ndim)
    if plan is None:
        return np.einsum(subscripts, x, y)
    perm_x, perm_y, (nb, nl, nk), out_perm = plan
    x, y = x.transpose(perm_x), y.transpose(perm_y)
    b_shape, l_shape, r_shape = x.shape[:nb], x.shape[nb:nb + nl], y.shape[nb + nk:]
    k = math.prod(x.shape[nb + nl:])
    x = x.reshape(b_shape + (math.prod(l_shape), k))
    y = y.reshape(b_shape + (k, math.prod(r_shape)))
    z = _matmul_no_gemv(x, y).reshape(b_shape + l_shape + r_shape)
    return np.ascontiguousarray(z.transpose(out_perm))


# Costs in ns, to rank ways of evaluating an einsum only. Fitted to the times of 409
# contractions of 3-4 operands (benchmarks/einsum_orders.py's random ones, seeds 0-3, and its
# named ones) on a 2-core Zen 5 VM (OpenBLAS's Haswell kernel): the fitted rule's pick was
# 1.05x the fastest way measured by geometric mean (3.3x at worst: 0.018 against 0.005 ms;
# its five worst all under 0.06 ms), where always taking the cheapest BLAS order was 1.23x
# (6.8x at worst).
_ONE_CALL = 4.0, 4000.0          # one np.einsum call: per index point, per call
_GREEDY = 1.0, 16000.0           # a step of numpy's greedy path in its executor: per point, per step
_STEP = 6000.0                   # a step of a BLAS or product order (Python, allocation)
_PRODUCT = 2.0                   # ... per point of a step that sums nothing
_BLAS_FMA, _BLAS_MOVE = 0.04, 2.0   # ... a BLAS step: per multiply-add; per element read or written
_BLAS_SHORT, _SHORT_MOVE = 8, 2.0   # ... a BLAS step summing fewer points: per result element more
_EXHAUSTIVE = 5                  # operands up to which orders of BLAS and product steps are searched


def _remaining(operands: tuple, step: tuple, out: str) -> tuple:
    """The operands' subscripts left when those at the positions of `step` are contracted,
    their contraction's last (the letters of those that another operand or the output
    still needs)."""
    rest = tuple(s for k, s in enumerate(operands) if k not in step)
    needed = set(out).union(*rest)
    read = "".join(operands[k] for k in step)
    keep = "".join(c for c in dict.fromkeys(read) if c in needed) if rest else out
    return rest + (keep,)


def _blas_or_product(sx: str, sy: str, keep: str) -> bool:
    """Whether `_einsum_impl` computes this pair as a BLAS product, or it sums nothing."""
    spec = f"{sx},{sy}->{keep}"
    return set(sx + sy) <= set(keep) or \
        (_broadcast_plan(spec, len(sx), len(sy)) or _rows_plan(spec, len(sx), len(sy))) is not None


@functools.lru_cache(maxsize=512)
def _pairwise_specs(subscripts: str, order: tuple):
    """The two-operand subscripts of each step of `order` if every step is a pair that
    `_einsum_impl` computes as a BLAS product or that sums nothing; else None (numpy's
    executor runs the order: its two-operand loops are faster in the operand and axis orders
    it picks for intermediates)."""
    ins, out = subscripts.split("->")
    operands, specs = tuple(ins.split(",")), []
    for step in order:
        if len(step) != 2:
            return None
        after = _remaining(operands, step, out)
        if not _blas_or_product(operands[step[0]], operands[step[1]], after[-1]):
            return None
        specs.append(f"{operands[step[0]]},{operands[step[1]]}->{after[-1]}")
        operands = after
    return tuple(specs)


@functools.lru_cache(maxsize=512)
def contraction_order(subscripts: str, shapes: tuple) -> tuple:
    """How to evaluate an einsum of three or more operands: `()` for one np.einsum call, or
    steps, each the positions of the operands it contracts (they are replaced by their
    contraction, appended last), run by `_einsum_impl` where every step is a BLAS product or
    sums nothing, or after "einsum_path" (numpy's path format) by numpy's executor.

    The cheapest, by the cost model above, of:
    - one np.einsum call (an outer or broadcast product, a small index space);
    - the cheapest order whose every step is a BLAS product or sums nothing, run through
      `_einsum_impl`'s matmul, small operands first (`'ij,jk,kl->il'` 0.013 ms against
      numpy's `optimize=True` 0.030);
    - numpy's own greedy path, planned once here instead of on every call, and run by numpy's
      executor (its two-operand loops beat a BLAS step that sums over a few points, and its
      intermediates' axis orders are fast for them): `("einsum_path", *steps)`.

    Rounding follows the order, so pfor's converter fixes it once, as the `order` param, for
    every chunk size (`converters.linalg`)."""
    ins, out = parse_einsum(subscripts, [len(s) for s in shapes])
    size = {c: d for s, shape in zip(ins, shapes) for c, d in zip(s, shape)}
    if len(ins) < 3 or any(len(set(s)) != len(s) for s in ins + [out]):
        return ()
    volume = lambda letters: math.prod(size[c] for c in letters)  # noqa: E731
    per_point, per_call = _ONE_CALL
    plans = [(per_call + per_point * math.prod(size.values()), ())]

    def step_cost(sx, sy, keep):
        both = set(sx + sy)
        if both <= set(keep):
            return _STEP + _PRODUCT * volume(both)
        if not _blas_or_product(sx, sy, keep):
            return math.inf
        summed, result = volume(both - set(keep)), volume(keep)
        return (_STEP + _BLAS_FMA * volume(both) + _BLAS_MOVE * (volume(sx) + volume(sy) + result)
                + (_SHORT_MOVE * result if summed < _BLAS_SHORT else 0.0))

    def best(operands: tuple) -> tuple[float, tuple]:
        if len(operands) == 1:
            return 0.0, ()
        found = []
        for i in range(len(operands)):
            for j in range(i + 1, len(operands)):
                after = _remaining(operands, (i, j), out)
                cost = step_cost(operands[i], operands[j], after[-1])
                if cost < math.inf:
                    tail_cost, tail = best(after)
                    found.append((cost + tail_cost, ((i, j),) + tail))
        return min(found, default=(math.inf, ()), key=lambda p: p[0])
    if len(ins) <= _EXHAUSTIVE:
        plans.append(best(tuple(ins)))
    dummies = [np.broadcast_to(np.empty((), np.float32), shape) for shape in shapes]
    greedy = tuple(tuple(sorted(step)) for step in np.einsum_path(subscripts, *dummies, optimize="greedy")[0][1:])
    operands, cost = tuple(ins), 0.0
    for step in greedy:
        cost += _GREEDY[1] + _GREEDY[0] * volume(set().union(*(operands[k] for k in step)))
        operands = _remaining(operands, step, out)          # (cost: per step, per point)
    if len(greedy) > 1:                      # (one step of all operands is the one call)
        plans.append((cost, ("einsum_path",) + greedy))
    return min(plans, key=lambda p: p[0])[1]


def _check_order(order, n: int, subscripts: str) -> None:
    if order is None:
        return
    left, ok = n, isinstance(order, tuple) and (n >= 3 or order == ())
    steps = order[1:] if ok and order[:1] == ("einsum_path",) else order
    for step in steps if ok else ():
        ok = ok and isinstance(step, tuple) and len(step) >= 1 and list(step) == sorted(set(step)) \
            and 0 <= step[0] and step[-1] < left
        left -= len(step) - 1 if ok else 0
    if not ok or (order and left != 1):
        raise ValueError(f"einsum '{subscripts}': order={order!r} is not a contraction order of {n} "
                         "operands: () for one call, or steps, each a sorted tuple of the positions it "
                         "contracts among the operands left (its result appended last), down to one, "
                         "optionally after 'einsum_path' (see pforjac.ops.linalg.contraction_order)")


def _matmul_no_gemv(x, y):
    """np.matmul(x, y), a single row or column doubled into a gemm: numpy gives those to
    gemv, which rounds otherwise than gemm (and by the other side's size), so a pfor chunk
    whose rows come down to one would change the last bits."""
    rows, cols = x.shape[-2], y.shape[-1]
    if rows == 1:
        x = np.concatenate([x, x], axis=-2)
    if cols == 1:
        y = np.concatenate([y, y], axis=-1)
    z = np.matmul(x, y)
    if rows == 1 or cols == 1:
        z = np.ascontiguousarray(z[..., :1 if rows == 1 else rows, :1 if cols == 1 else cols])
    return z


def _product_letters(subscripts: str, ndim_x: int, ndim_y: int):
    """(x's, y's and the output's letters, the contracted ones) of a two-operand einsum that
    is a product: every letter at most once per operand and in at least two of (x, y,
    output); else None."""
    (sx, sy), so = parse_einsum(subscripts, [ndim_x, ndim_y])
    if any(len(set(s)) != len(s) for s in (sx, sy, so)):
        return None
    if any(c not in so and (c not in sx or c not in sy) for c in sx + sy):
        return None                                   # an axis summed away in one operand
    return sx, sy, so, [c for c in sx if c in sy and c not in so]


@functools.lru_cache(maxsize=512)
def _broadcast_plan(subscripts: str, ndim_x: int, ndim_y: int):
    """The output ends in (row, column), one only the left operand's, one only the right's
    (x or y: `swap` when y's row comes first), with one contracted axis: each operand's
    transpose to (its batch axes in output order, row, contracted) / (..., contracted,
    column), with unit axes where it lacks the other's batch axes."""
    letters = _product_letters(subscripts, ndim_x, ndim_y)
    if letters is None:
        return None
    sx, sy, so, contracted = letters
    if len(contracted) != 1 or len(so) < 2:
        return None
    (c,), (m, n) = contracted, so[-2:]
    if m in sx and m not in sy and n in sy and n not in sx:
        sl, sr, swap = sx, sy, False
    elif m in sy and m not in sx and n in sx and n not in sy:
        sl, sr, swap = sy, sx, True
    else:
        return None
    batch = so[:-2]

    def side(s, tail):
        perm = [s.index(b) for b in batch if b in s] + [s.index(t) for t in tail]
        units = tuple(k for k, b in enumerate(batch) if b not in s)
        return perm, units
    return side(sl, (m, c)), side(sr, (c, n)), swap


@functools.lru_cache(maxsize=512)
def _rows_plan(subscripts: str, ndim_x: int, ndim_y: int):
    """How `subscripts` is a batched matrix product over merged axes, or None: at least one
    axis each that is contracted, only x's, and only y's (a dot product per batch element,
    with no rows or columns to form, is faster in np.einsum). Returns x's and y's transposes
    to (batch, rows, contracted) and (batch, contracted, columns), the three counts, and the
    output transpose."""
    letters = _product_letters(subscripts, ndim_x, ndim_y)
    if letters is None:
        return None
    sx, sy, so, contracted = letters
    batch = [c for c in so if c in sx and c in sy]
    rows = [c for c in so if c in sx and c not in sy]
    cols = [c for c in so if c in sy and c not in sx]
    if not (rows and cols and contracted):
        return None
    result = batch + rows + cols
    return ([sx.index(c) for c in batch + rows + contracted],
            [sy.index(c) for c in batch + contracted + cols],
            (len(batch), len(rows), len(contracted)), [result.index(c) for c in so])


einsum_p = core.new_primitive("einsum", _einsum_impl, _einsum_shape)


def _einsum_vjp(g, ans, *xs, subscripts, order=None):
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


def einsum(subscripts: str, *operands):
    """Einstein summation over explicitly named axes, as `np.einsum` (no '...')."""
    operands = as_operands(operands)
    ins, out = parse_einsum(subscripts, [o.ndim for o in operands])
    return einsum_p.bind(*operands, subscripts=",".join(ins) + "->" + out)
