"""Outer products in generated numpy code, computed by np.einsum.

A per-example weight gradient comes out of pfor as `x * y` with x (B, I, 1) and y (B, 1, J):
each operand stretches along an axis the other spans. numpy's multiply then runs one inner
loop per (b, i), J elements long, and pays its per-loop cost B * I times; np.einsum of the same
operands (`'abc,abc->abc'`, size-1 axes broadcast) runs a leaner loop: (256, 48, 36) float32
208 -> 136 us, (64, 32, 8) float64 23 -> 15 us, (64, 8, 3) 5.4 -> 4.5 us (2-core AMD EPYC,
2026-12-07). Each entry is the one product x_k * y_k, rounded once, as multiply's is, but
np.einsum adds it to a zeroed output: an exact zero product is +0 where multiply gives -0
(-1.0 * 0.0). Generated code computes outer products this way only where it may differ from
eager code in that sign (`pforjac.function`'s default, `batch_major=True`, which may already
round products otherwise); the loop cache and `batch_major=False` keep numpy's multiply.
"""
from __future__ import annotations

import math
import string

import numpy as np

from .. import core

__all__ = ["outer_subscripts", "outer_einsum", "outer_products", "OUTER_MIN", "EINSUM"]

OUTER_MIN = 1024      # elements: below this np.einsum's own cost (about 1.5 us) is not won back

# np.einsum's C function, without the 0.8 us of its Python wrapper (which only looks for
# `optimize=`); np.einsum where a numpy lacks it
EINSUM = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "c_einsum", np.einsum)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def outer_subscripts(eqn) -> str | None:
    """`'abc,abc->abc'` where equation `eqn` is a float32 or float64 multiply of two operands of its dtype
    that each stretch along an axis the other spans (every axis of each is 1 or the result's),
    of at least OUTER_MIN elements; None otherwise."""
    if core.impl_rules.get(eqn.prim) is not np.multiply or len(eqn.inputs) != 2 \
            or set(eqn.params) - {"order"}:
        return None
    out = eqn.outputs[0]
    dtype = np.dtype(out.dtype)
    if dtype not in _FLOATS or math.prod(out.shape) < OUTER_MIN or \
            any(np.dtype(v.dtype) != dtype for v in eqn.inputs):
        return None
    shape = tuple(out.shape)
    x, y = ((1,) * (len(shape) - v.ndim) + tuple(v.shape) for v in eqn.inputs)
    if not all(a in (1, n) and b in (1, n) for a, b, n in zip(x, y, shape)):
        return None
    if not (any(a == 1 < b for a, b in zip(x, y)) and any(b == 1 < a for a, b in zip(x, y))):
        return None
    letters = string.ascii_letters[:len(shape)]
    return ",".join(letters[len(shape) - v.ndim:] for v in eqn.inputs) + "->" + letters


def outer_einsum(eqn, layouts) -> tuple[str, dict] | None:
    """(subscripts, keywords) of the np.einsum call computing equation `eqn`, an outer
    product whose result is laid out as eager code's (`layouts`: codegen's `Layouts`) or
    whose layout no value reads; None for other equations. C order is asked for unless both
    operands are C-ordered (numpy then makes a C-ordered result)."""
    spec, out = outer_subscripts(eqn), eqn.outputs[0]
    if spec is None or not (id(out) in layouts.c_ordered or id(out) in layouts.blind):
        return None
    return spec, ({} if all(id(v) in layouts.c_ordered for v in eqn.inputs) else {"order": "C"})


def outer_products(program, layouts, skip: set) -> tuple[dict[int, tuple], set[int]]:
    """({equation index: (subscripts, operands, keywords)} of the outer products generated
    code computes by np.einsum (`outer_einsum`; none of the indices in `skip`), and the
    indices of the reshapes they make needless. An operand that a reshape made by adding
    unit axes, `v.reshape((64, 8, 1))`, is read as `v` (`'ab,ac->abc'`): the reshape then
    costs nothing where nothing else reads it (0.3 us each, two per product)."""
    producers = {id(e.outputs[0]): e for e in program.equations}
    chosen, unfolded = {}, {}
    for k, eqn in enumerate(program.equations):
        found = None if k in skip else outer_einsum(eqn, layouts)
        if found is not None:
            chosen[k] = _unfolded(found[0], eqn, producers, layouts)
            unfolded[id(eqn)] = {id(v) for v in eqn.inputs} - {id(v) for v in chosen[k][1]}
    results = {id(v) for v in program.outputs}
    needless = {j for j, e in enumerate(program.equations)
                if e.prim.name == "reshape" and id(e.outputs[0]) not in results
                and all(id(e.outputs[0]) in unfolded.get(id(r), ())
                        for r in layouts.readers.get(id(e.outputs[0]), [None]))}
    return chosen, needless


def _unfolded(spec: str, eqn, producers: dict, layouts) -> tuple:
    """(subscripts, operands, keywords) of outer product `eqn` (`spec`: outer_subscripts'),
    reading through the reshapes that only add unit axes to an operand."""
    ins, out = spec.split("->")
    subs, operands = ins.split(","), list(eqn.inputs)
    for i, v in enumerate(eqn.inputs):
        made = producers.get(id(v))
        if made is None or made.prim.name != "reshape" or \
                tuple(made.inputs[0].shape) != tuple(d for d in v.shape if d != 1):
            continue
        trial = subs[:i] + ["".join(s for s, d in zip(subs[i], v.shape) if d != 1)] + subs[i + 1:]
        if set(out) <= set("".join(trial)):          # (every result axis still named)
            subs[i], operands[i] = trial[i], made.inputs[0]
    keywords = {} if all(id(v) in layouts.c_ordered for v in operands) else {"order": "C"}
    return ",".join(subs) + "->" + out, operands, keywords
