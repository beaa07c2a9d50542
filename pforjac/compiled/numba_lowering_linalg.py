"""numba lowering rules of the products and the dense linear algebra (part of the one table,
`numba_lowering.numba_rules`): einsum as sums, broadcast products and BLAS products (one
`np.dot` per matrix of a batch), and numpy.linalg's factorizations and solves through
numba's LAPACK bindings, one matrix of a stack at a time (`K.<op>_stack`).

numba's np.linalg takes float32 and float64 matrices; other dtypes (and float16, which
pforjac computes in float32) are declined, and the program runs on numpy.
"""
from __future__ import annotations

import math

import numpy as np

from .numba_lowering import NotLowered, _p, as_dtype, lowers, numba_dtype, reshaped

__all__: list = []

_LAPACK_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _contiguous_as(ctx, var, expr: str, dtype) -> str:
    return as_dtype(ctx.contiguous(var, expr), var, dtype)


# -- einsum ----------------------------------------------------------------------------------
class _Operand:
    """An einsum operand while it is lowered: its source expression, its subscripts (one
    letter an axis), whether it may be strided (a transposed view)."""

    def __init__(self, expr: str, letters: str, strided: bool, var=None, dtype=None):
        self.expr, self.letters, self.strided, self.var, self.dtype = expr, letters, strided, var, dtype

    def contiguous(self) -> str:
        return f"np.ascontiguousarray({self.expr})" if self.strided else self.expr


def _sum_letters(ctx, x: _Operand, drop: set) -> _Operand:
    """x summed over the axes of the letters in `drop` (highest axis first)."""
    expr, letters = x.expr, x.letters
    for a in reversed([k for k, c in enumerate(letters) if c in drop]):
        expr, letters = f"np.sum({expr}, axis={a})", letters[:a] + letters[a + 1:]
    if letters == x.letters:
        return x
    name = ctx.fresh()
    ctx.emit(f"{name} = {expr}" if letters else f"{name} = np.full((1,), {expr})")
    return _Operand(name, letters, False, dtype=x.dtype)


def _permuted(ctx, x: _Operand, letters: str, sizes: dict, grouped: tuple) -> str:
    """x's axes in the order of `letters`, reshaped to the sizes of the letter `grouped`s
    (a loop nest copies it where it is not already C-contiguous in that order)."""
    perm = tuple(x.letters.index(c) for c in letters)
    shape = tuple(math.prod(sizes[c] for c in g) for g in grouped)
    if perm == tuple(range(len(perm))) and not x.strided:
        return reshaped(x.expr, shape)
    if hasattr(ctx, "loop"):
        copy = ctx.loop(tuple(sizes[c] for c in letters), x.dtype, lambda nest: _read(
            ctx, nest, x, [nest.index[letters.index(c)] for c in x.letters]))
        return reshaped(copy, shape)
    return reshaped(f"np.ascontiguousarray(np.transpose({x.expr}, {perm}))", shape)


def _pair(ctx, x: _Operand, y: _Operand, keep: str, sizes: dict, order: str = "") -> _Operand:
    """The contraction of two operands to the letters `keep` (in an order of its choosing):
    letters only one operand has and `keep` lacks are summed first; then the shared letters
    `keep` has are batch axes, the shared ones it lacks are contracted (a BLAS product per
    matrix) or, if there are none, the product is a broadcast multiplication. Where the
    context writes loops, a broadcast product and a contraction too small for BLAS to pay
    for its call are one loop nest (`_loop_pair`)."""
    x = _sum_letters(ctx, x, set(x.letters) - set(y.letters) - set(keep))
    y = _sum_letters(ctx, y, set(y.letters) - set(x.letters) - set(keep))
    batch = "".join(c for c in x.letters if c in y.letters and c in keep)
    summed = "".join(c for c in x.letters if c in y.letters and c not in keep)
    left = "".join(c for c in x.letters if c not in y.letters)
    right = "".join(c for c in y.letters if c not in x.letters)
    letters = batch + left + right
    m, n, k = (math.prod(sizes[c] for c in g) for g in (left, right, summed))
    if hasattr(ctx, "reduce") and (not summed or m * n * k < _SMALL_PRODUCT) and x.letters and y.letters:
        letters = order if sorted(order) == sorted(letters) else letters     # (any order: the asked one)
        return _Operand(_loop_pair(ctx, x, y, letters, summed, sizes), letters, False, dtype=x.dtype)
    a = _permuted(ctx, x, batch + left + summed, sizes, (batch, left, summed))
    b = _permuted(ctx, y, batch + summed + right, sizes, (batch, summed, right))
    shape = tuple(sizes[c] for c in letters) or (1,)       # (no letters: one value)
    name = ctx.fresh()
    if summed and not batch:                # (one product: BLAS straight into the result)
        ctx.emit(f"{name} = {reshaped(f'np.dot({reshaped(a, (m, k))}, {reshaped(b, (k, n))})', shape)}")
    elif summed:
        ctx.emit(f"{name} = {reshaped(f'K.batched_dot({a}, {b})', shape)}")
    else:
        m, n = math.prod(sizes[c] for c in left), math.prod(sizes[c] for c in right)
        batch_size = math.prod(sizes[c] for c in batch)
        product = f"({numba_dtype(x.dtype)}(0) + {reshaped(a, (batch_size, m, 1))} * " \
                  f"{reshaped(b, (batch_size, 1, n))})"
        ctx.emit(f"{name} = {reshaped(product, shape)}")   # (as in the loop)
    return _Operand(name, letters, False, dtype=x.dtype)


_SMALL_PRODUCT = 4096   # multiply-adds per matrix product under which loops beat a BLAS call


def _loop_pair(ctx, x: _Operand, y: _Operand, letters: str, summed: str, sizes: dict) -> str:
    """The contraction of x and y to `letters` by one loop nest: the result's letters
    outside, the summed ones inside (in order), an accumulator per result element."""
    from .numba_loops import LoopNest
    nest = LoopNest(tuple(sizes[c] for c in letters + summed) or (1,), ctx.fresh)
    at = dict(zip(letters + summed, nest.index))
    (a, da), (b, db) = (_read(ctx, nest, o, [at[c] for c in o.letters]) for o in (x, y))
    product, depth = nest.value(f"{a} * {b}", max(da, db))
    name, shape = ctx.fresh(), tuple(sizes[c] for c in letters) or (1,)
    if not summed:      # (a sum of one product, from zero, as np.einsum's: -0.0 becomes 0.0)
        lines = nest.render(name, x.dtype, f"{numba_dtype(x.dtype)}(0) + {product}")
    else:
        acc = "s_" + ctx.fresh()
        nest.levels[len(letters)].append(f"{acc} = {numba_dtype(x.dtype)}(0)")
        nest.levels[len(letters) + len(summed)].append(f"{acc} = {acc} + {product}")
        nest.after[len(letters)].append(f"{name}[{', '.join(nest.index[:len(letters)]) or '0'}] = {acc}")
        lines = [f"{name} = np.empty({shape}, {numba_dtype(x.dtype)})", *nest.render_store(None, None)]
    for line in lines:
        ctx.emit(line)
    return name


def _read(ctx, nest, operand: _Operand, index: list) -> tuple[str, int]:
    """An element of an einsum operand: through its variable's views where it has one."""
    if operand.var is not None:
        return ctx.read(nest, operand.var, index=index)
    return nest.load(f"{operand.expr}[{', '.join(index)}]")


def _einsum_steps(subscripts: str, ins: list, out: str, shapes: tuple, order) -> list:
    """The pairs of operand positions contracted in turn (each pair's result appended last):
    the equation's own `order` where every step is a pair, else left to right."""
    from ..ops._einsum_plan import contraction_order
    if order is None and len(ins) > 2:
        order = contraction_order(subscripts, shapes)
    steps = tuple(order or ())[1:] if order and order[0] == "einsum_path" else tuple(order or ())
    if steps and all(len(s) == 2 for s in steps):
        return list(steps)
    return [(0, 1)] * (len(ins) - 1)


def _elements(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _einsum_work(eqn) -> int:
    """Every letter's size multiplied: the whole contraction's multiply-adds."""
    from ..ops._einsum_plan import parse_einsum
    ins, _ = parse_einsum(eqn.params["subscripts"], [x.ndim for x in eqn.inputs])
    letters = {c: d for s, x in zip(ins, eqn.inputs) for c, d in zip(s, x.shape)}
    return _elements(tuple(letters.values()))


def _stack_work(eqn) -> int:
    """A bound of a factorization's or solve's multiply-adds: n per element of each operand."""
    return sum(_elements(x.shape) * int(x.shape[-1]) for x in eqn.inputs if x.ndim)


@lowers(_p("einsum"), blas=_einsum_work)
def _einsum(ctx, eqn, args) -> str:
    """Pairwise contractions (`_pair`) in the equation's order, then the sums over the
    letters left that the output lacks and a transpose to its order."""
    from ..ops._einsum_plan import _remaining, parse_einsum
    xs, out = eqn.inputs, eqn.outputs[0]
    subscripts = eqn.params["subscripts"].replace(" ", "")
    ins, result = parse_einsum(subscripts, [x.ndim for x in xs])
    if any(len(set(s)) != len(s) for s in ins + [result]) or out.dtype not in _LAPACK_DTYPES \
            or not all(ins):
        raise NotLowered(f"subscripts '{subscripts}' (a repeated letter, a 0-d operand) or "
                         f"dtype {out.dtype}")
    sizes = {c: d for s, x in zip(ins, xs) for c, d in zip(s, x.shape)}
    subs = f"{','.join(ins)}->{result}"
    operands = [_Operand(as_dtype(a, x, out.dtype), s, id(x) in ctx.strided,
                         x if np.dtype(x.dtype) == np.dtype(out.dtype) else None)
                for a, x, s in zip(args, xs, ins)]
    for o in operands:
        o.dtype = out.dtype
        if o.var is None and not o.expr.isidentifier():     # (loops read it: made once)
            name = ctx.fresh()
            ctx.emit(f"{name} = {o.expr}")
            o.expr = name
    names = tuple(ins)
    for step in _einsum_steps(subs, ins, result, tuple(tuple(x.shape) for x in xs),
                              eqn.params.get("order")):
        names = _remaining(names, step, result)
        pair = _pair(ctx, operands[step[0]], operands[step[1]], names[-1], sizes, result)
        operands = [o for k, o in enumerate(operands) if k not in step] + [pair]
        names = names[:-1] + (pair.letters,)
    last = _sum_letters(ctx, operands[0], set(operands[0].letters) - set(result))
    if not result:
        return f"{last.expr}[0]"
    if last.letters == result:
        return last.expr
    ctx.strided.add(id(out))
    return f"np.transpose({last.expr}, {tuple(last.letters.index(c) for c in result)})"


# -- numpy.linalg, one matrix of a stack at a time -----------------------------------------------
def _stacked(ctx, eqn, args, dtype, core_ranks) -> tuple[list[str], tuple]:
    """The operands as C-contiguous (count, *core) stacks of `dtype` over their broadcast
    batch axes (the axes before the last `core_ranks` of each), and that batch shape."""
    xs = eqn.inputs
    batch = tuple(np.broadcast_shapes(*(tuple(x.shape[:x.ndim - r]) for x, r in zip(xs, core_ranks))))
    count = math.prod(batch)
    stacks = []
    for a, x, r in zip(args, xs, core_ranks):
        core = tuple(x.shape[x.ndim - r:])
        expr = as_dtype(a, x, dtype)
        if tuple(x.shape[:x.ndim - r]) != batch:
            expr = f"np.broadcast_to({expr}, {batch + core})"
            stacks.append(reshaped(f"np.ascontiguousarray({expr})", (count,) + core))
        else:
            stacks.append(reshaped(_contiguous_as(ctx, x, a, dtype), (count,) + core))
    return stacks, batch


def _lapack_rule(kernel: str, core_ranks: tuple, extra=lambda params: (), pick: int | None = None):
    """The rule of a linear algebra primitive computed by `K.<kernel>` on stacks: its
    operands with `core_ranks` matrix (2) or vector (1) axes each, its outputs reshaped
    from (count, ...) to their shapes (0-d ones taken as scalars); `pick`: the one result
    of the kernel's that is the equation's output."""
    def rule(ctx, eqn, args) -> str:
        dtype = eqn.outputs[0].dtype
        if dtype not in _LAPACK_DTYPES or any(0 in x.shape for x in eqn.inputs):
            raise NotLowered(f"dtype {dtype} or an empty matrix")
        stacks, batch = _stacked(ctx, eqn, args, dtype, core_ranks)
        params = [repr(p) for p in extra(eqn.params)]
        name = ctx.fresh()
        picked = "" if pick is None else f"[{pick}]"
        ctx.emit(f"{name} = K.{kernel}({', '.join(stacks + params)}){picked}")
        parts = [name] if len(eqn.outputs) == 1 else [f"{name}[{k}]" for k in range(len(eqn.outputs))]
        outs = [f"{p}[0]" if out.ndim == 0 else reshaped(p, out.shape)
                for p, out in zip(parts, eqn.outputs)]
        return outs[0] if len(outs) == 1 else f"({', '.join(outs)},)"
    return rule


def _lower_only(rule):
    """A rule for an op reading one triangle: the lower one only (numba's eigh reads it)."""
    def checked(ctx, eqn, args) -> str:
        if not eqn.params.get("lower", True):
            raise NotLowered("the upper triangle (numba's LAPACK bindings read the lower)")
        return rule(ctx, eqn, args)
    return checked


lowers(_p("solve"), blas=_stack_work)(_lapack_rule("solve_stack", (2, 2)))
lowers(_p("det"), blas=_stack_work)(_lapack_rule("det_stack", (2,)))
lowers(_p("slogdet"), blas=_stack_work)(_lapack_rule("slogdet_stack", (2,)))
lowers(_p("cholesky"), blas=_stack_work)(_lapack_rule("cholesky_stack", (2,)))
lowers(_p("eigh"), blas=_stack_work)(_lower_only(_lapack_rule("eigh_stack", (2,))))
lowers(_p("eigvalsh"), blas=_stack_work)(_lower_only(_lapack_rule("eigvalsh_stack", (2,))))
lowers(_p("svd"), blas=_stack_work)(_lapack_rule("svd_stack", (2,)))
lowers(_p("qr"), blas=_stack_work)(_lapack_rule("qr_stack", (2,)))
lowers(_p("triangular_solve"))(_lapack_rule(
    "triangular_solve_stack", (2, 2),
    lambda p: (bool(p["lower"]), bool(p["transpose"]), bool(p["unit_diagonal"]))))


@lowers(_p("pinv"), blas=_stack_work)
def _pinv(ctx, eqn, args) -> str:
    rcond = eqn.params["rcond"]
    if not isinstance(rcond, (float, int, np.floating, np.integer)):
        raise NotLowered("a cutoff per matrix")
    return _lapack_rule("pinv_stack", (2,), lambda p: (float(rcond),))(ctx, eqn, args)


lowers(_p("svdvals"), blas=_stack_work)(_lapack_rule("svd_stack", (2,), pick=1))   # (numba: no compute_uv=False)


@lowers(_p("convolve"))
def _convolve(ctx, eqn, args) -> str:
    """numba's np.convolve (the full convolution), sliced to the mode's span."""
    from ..ops.convolution import output_span
    a, v = eqn.inputs
    out = eqn.outputs[0]
    if out.dtype not in _LAPACK_DTYPES:
        raise NotLowered(f"dtype {out.dtype}")
    start, length = output_span(a.shape[0], v.shape[0], eqn.params["mode"])
    full = f"np.convolve({as_dtype(args[0], a, out.dtype)}, {as_dtype(args[1], v, out.dtype)})"
    ctx.strided.add(id(out))
    return full if length == a.shape[0] + v.shape[0] - 1 else f"{full}[{start}:{start + length}]"
