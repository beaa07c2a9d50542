"""How `einsum_p`'s numpy forward evaluates a contraction: parsing the subscripts, the plans
of a two-operand product as one (batched) np.matmul, and the order of an einsum of three or
more operands (`contraction_order`).

What it does. A two-operand einsum that is a matrix product runs as np.matmul (np.einsum of
two operands never calls BLAS): `broadcast_plan` and `rows_plan` say how. Three or more
operands are contracted in the cheapest, by a cost model, of one np.einsum call, an order
whose every step is a BLAS product or sums nothing (run pair by pair through that matmul),
and numpy's own greedy path, planned once here and run by numpy's executor. The order is
a parameter of the einsum equation, so pfor fixes one order for every chunk size.

The measurement that justifies it. `benchmarks/einsum_orders.py` times the planned order
against `np.einsum(optimize=True)` (numpy's greedy path, planned on every call) and one
np.einsum call; `benchmarks/results/einsum_orders.md` (2026-12-01 02:50, 2-core Zen 5 VM,
OpenBLAS Haswell kernel): 0.35x numpy's time by geometric mean over 120 random contractions
of 3-4 operands (worst 1.28x, 0.042 against 0.032 ms) and 0.68x over 9 named ones; 0.34x
(worst 0.98x) over 120 random ones of a seed the fit never saw (`--seed 7`).

The cost constants below (`_ONE_CALL` to `_EXHAUSTIVE`) were fitted on that one machine.
To re-fit them on another:

1. Fix the machine as the results file's header records it (BLAS kernel and threads,
   `benchmarks/_common.machine_header`); run on an idle machine.
2. Take the fit's contractions: `benchmarks/einsum_orders.py`'s `named(rng)` and
   `random_cases(rng, 100, seed)` for seeds 0-3 (9 + 400 = 409 contractions).
3. Time every way of evaluating each one with `_einsum_impl(*xs, subscripts=s, order=o)`
   (`pforjac.ops.linalg`) and `benchmarks/_common.time_reps` (median of >= 7 calls):
   `o = ()` (one call), the greedy path (the `("einsum_path", ...)` order `candidates`
   lists), and every order of BLAS or product steps (the pairs `_cheapest_order` walks;
   any order `check_order` accepts runs).
4. For each way, record the quantities its cost multiplies a constant by (`_step_cost`,
   `_greedy_plan`, `candidates`): index points and one call; points and steps of the
   greedy path; per BLAS step its multiply-adds, the elements it reads and writes, and its
   result's elements where it sums fewer than `_BLAS_SHORT` points; per product step its
   points; one `_STEP` per step. Each cost is linear in the constants but for the
   thresholds `_BLAS_SHORT` and `_EXHAUSTIVE`.
5. Choose the constants (the thresholds on a small grid) that minimize the geometric mean,
   over the contractions, of the measured time of the way the model prices cheapest over
   the fastest way measured. Last fit: 1.05x (3.3x at worst: 0.018 against 0.005 ms; its
   five worst all under 0.06 ms), where always taking the cheapest BLAS order was 1.23x
   (6.8x at worst).
6. Check on contractions the fit never saw: `python benchmarks/einsum_orders.py --seed 7
   --no-write` must not be worse than before; then `python benchmarks/einsum_orders.py`
   writes the results file. tests/test_linalg.py pins a few orders
   (`test_contraction_order_*`): change one only where the machine's timings pick another.
7. Update the figures here and in the README's ops row and benchmarks/README.md.
"""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["parse_einsum", "check_order", "contraction_order", "candidates", "pairwise_specs",
           "broadcast_plan", "rows_plan"]


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


def check_order(order, n: int, subscripts: str) -> None:
    """A ValueError unless `order` is None or a contraction order of `n` operands."""
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


# -- two operands as one matmul -------------------------------------------------------------
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
def broadcast_plan(subscripts: str, ndim_x: int, ndim_y: int):
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
def rows_plan(subscripts: str, ndim_x: int, ndim_y: int):
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


# -- three or more operands: the order ------------------------------------------------------
# Costs in ns, to rank ways of evaluating an einsum only; fitted on one machine (the module's
# docstring: the fit, its figures and how to re-fit).
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
        (broadcast_plan(spec, len(sx), len(sy)) or rows_plan(spec, len(sx), len(sy))) is not None


@functools.lru_cache(maxsize=512)
def pairwise_specs(subscripts: str, order: tuple):
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
    if len(ins) < 3 or any(len(set(s)) != len(s) for s in ins + [out]):
        return ()
    return min(candidates(subscripts, shapes), key=lambda p: p[0])[1]


def candidates(subscripts: str, shapes: tuple) -> list[tuple[float, tuple]]:
    """The ways `contraction_order` picks the cheapest of, each (its cost in ns by the
    model, its order): one call, the cheapest BLAS or product order (up to `_EXHAUSTIVE`
    operands), numpy's greedy path (unless it is one step)."""
    ins, out = parse_einsum(subscripts, [len(s) for s in shapes])
    size = {c: d for s, shape in zip(ins, shapes) for c, d in zip(s, shape)}
    per_point, per_call = _ONE_CALL
    plans = [(per_call + per_point * math.prod(size.values()), ())]
    if len(ins) <= _EXHAUSTIVE:
        plans.append(_cheapest_order(tuple(ins), out, size))
    greedy = _greedy_plan(subscripts, shapes, tuple(ins), out, size)
    if greedy is not None:
        plans.append(greedy)
    return plans


def _volume(size: dict, letters) -> int:
    return math.prod(size[c] for c in letters)


def _step_cost(sx: str, sy: str, keep: str, size: dict) -> float:
    """The cost of one step of a BLAS or product order (inf for another kind of step)."""
    both = set(sx + sy)
    if both <= set(keep):
        return _STEP + _PRODUCT * _volume(size, both)
    if not _blas_or_product(sx, sy, keep):
        return math.inf
    summed, result = _volume(size, both - set(keep)), _volume(size, keep)
    return (_STEP + _BLAS_FMA * _volume(size, both)
            + _BLAS_MOVE * (_volume(size, sx) + _volume(size, sy) + result)
            + (_SHORT_MOVE * result if summed < _BLAS_SHORT else 0.0))


def _cheapest_order(operands: tuple, out: str, size: dict) -> tuple[float, tuple]:
    """(cost, steps) of the cheapest order of pairwise BLAS or product steps that contracts
    `operands` down to one, searched over every such order ((inf, ()) if there is none)."""
    if len(operands) == 1:
        return 0.0, ()
    found = []
    for i in range(len(operands)):
        for j in range(i + 1, len(operands)):
            after = _remaining(operands, (i, j), out)
            cost = _step_cost(operands[i], operands[j], after[-1], size)
            if cost < math.inf:
                tail_cost, tail = _cheapest_order(after, out, size)
                found.append((cost + tail_cost, ((i, j),) + tail))
    return min(found, default=(math.inf, ()), key=lambda p: p[0])


def _greedy_plan(subscripts: str, shapes: tuple, operands: tuple, out: str, size: dict):
    """(cost, ("einsum_path", *steps)) of numpy's greedy path, priced per step and per index
    point of each step; None where it is a single step (that is the one call)."""
    dummies = [np.broadcast_to(np.empty((), np.float32), shape) for shape in shapes]
    path = np.einsum_path(subscripts, *dummies, optimize="greedy")[0][1:]
    greedy = tuple(tuple(sorted(step)) for step in path)
    cost = 0.0
    for step in greedy:
        cost += _GREEDY[1] + _GREEDY[0] * _volume(size, set().union(*(operands[k] for k in step)))
        operands = _remaining(operands, step, out)
    return (cost, ("einsum_path",) + greedy) if len(greedy) > 1 else None
