"""Reshapes and transposes cancelled: reshape-of-reshape, transpose-of-transpose, no-op
reshapes, transposes and broadcasts, and any chain of reshapes and transposes that leaves the
elements in order (one reshape).

A chain whose first reshape copies non-C-ordered data (eager code does) must not become a
view of that data where a product reads the result: it rounds by layout. So a chain is
shortened only from C-ordered data, or where no value depends on the result's layout.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ...ops.shape import reshape_p
from ...program import Equation, Program, eliminate_dead_code
from ...tensor import SymbolicTensor
from ..codegen import Layouts
from ._rewrite import LazyLayouts, rename, renamed

__all__ = ["cancel_reshapes", "view_chain_in_order", "moves_only_unit_axes"]

_VIEWS = ("reshape", "transpose", "broadcast_to")


def cancel_reshapes(program: Program) -> Program:
    """Every chain of reshapes, transposes and broadcasts as short as it can be (see above)."""
    layouts = LazyLayouts(program)
    producer: dict[int, Equation] = {}
    alias: dict[int, SymbolicTensor] = {}
    kept = []
    for eqn in program.equations:
        eqn = renamed(eqn, alias)
        if eqn.prim.name in _VIEWS:
            eqn = _shortened(eqn, producer, layouts)
        if not isinstance(eqn, Equation):          # the value the output equals
            alias[id(eqn[0])] = eqn[1]
            continue
        producer[id(eqn.outputs[0])] = eqn
        kept.append(eqn)
    return eliminate_dead_code(rename(program, kept, alias))


def _shortened(eqn: Equation, producer: dict, layouts: Layouts):
    """`eqn` with its chain of views shortened, or (its output, the value it equals)."""
    for step in (_no_op, _unit_transpose, _from_in_order_root, _merged_reshapes, _merged_transposes):
        eqn = step(eqn, producer, layouts)
        if not isinstance(eqn, Equation):
            return eqn
    return eqn


def _no_op(eqn: Equation, producer, layouts):
    """A reshape or broadcast to its input's shape, an identity transpose: the input."""
    x, out = eqn.inputs[0], eqn.outputs[0]
    if eqn.prim.name in ("reshape", "broadcast_to") and tuple(x.shape) == tuple(out.shape):
        return out, x
    if eqn.prim.name == "transpose" and tuple(eqn.params["perm"]) == tuple(range(x.ndim)):
        return out, x
    return eqn


def _unit_transpose(eqn: Equation, producer, layouts):
    """A transpose that only moves unit axes is a reshape."""
    if eqn.prim.name == "transpose" and moves_only_unit_axes(eqn.inputs[0].shape, eqn.params["perm"]):
        return replace(eqn, prim=reshape_p, params={"shape": tuple(eqn.outputs[0].shape)})
    return eqn


def _from_in_order_root(eqn: Equation, producer: dict, layouts: Layouts):
    """A chain of views that leaves the elements in order: one reshape of its root."""
    root = _in_order_root(eqn, producer) if eqn.prim.name in ("reshape", "transpose") else None
    out = eqn.outputs[0]
    if root is None or not _may_view(root, out, layouts):
        return eqn
    if tuple(root.shape) == tuple(out.shape):
        return out, root
    return replace(eqn, prim=reshape_p, inputs=[root], params={"shape": tuple(out.shape)})


def _merged_reshapes(eqn: Equation, producer: dict, layouts: Layouts):
    """reshape(reshape(x)): reshape(x), or x itself."""
    inner, out = producer.get(id(eqn.inputs[0])), eqn.outputs[0]
    if eqn.prim.name != "reshape" or inner is None or inner.prim.name != "reshape" \
            or not _may_view(inner.inputs[0], out, layouts):
        return eqn
    if tuple(inner.inputs[0].shape) == tuple(out.shape):
        return out, inner.inputs[0]
    return replace(eqn, inputs=[inner.inputs[0]])


def _merged_transposes(eqn: Equation, producer: dict, layouts: Layouts):
    """transpose(transpose(x)): one transpose of x, or x itself."""
    inner = producer.get(id(eqn.inputs[0]))
    if eqn.prim.name != "transpose" or inner is None or inner.prim.name != "transpose":
        return eqn
    perm = tuple(inner.params["perm"][p] for p in eqn.params["perm"])
    if perm == tuple(range(len(perm))):
        return eqn.outputs[0], inner.inputs[0]
    return replace(eqn, inputs=[inner.inputs[0]], params={"perm": perm})


def _may_view(source, out, layouts: Layouts) -> bool:
    """Whether `out` may be a view of `source`: it is C-ordered, or `out`'s layout is blind."""
    return id(source) in layouts.c_ordered or id(out) in layouts.blind


def _in_order_root(eqn: Equation, producer: dict) -> SymbolicTensor | None:
    """The earliest value before `eqn` in its chain of reshapes and transposes from which
    the chain is one reshape (elements stay in C order), if there is one further back than
    `eqn`'s own input."""
    chain = [eqn]
    while True:
        inner = producer.get(id(chain[0].inputs[0]))
        if inner is None or inner.prim.name not in ("reshape", "transpose"):
            break
        chain.insert(0, inner)
    for start in range(len(chain) - 1):       # longest first; a lone eqn is handled as before
        if view_chain_in_order(tuple(chain[start].inputs[0].shape),
                               [(e.prim.name, e.params) for e in chain[start:]]):
            return chain[start].inputs[0]
    return None


def view_chain_in_order(shape: tuple, steps) -> bool:
    """Whether reshapes and transposes `steps` ([("reshape", {"shape": ...}) or
    ("transpose", {"perm": ...})]) applied to a C-ordered array of `shape` give a view
    whose elements are in C order, i.e. whether the chain equals one reshape. Follows the
    strides as numpy would, without touching memory; a reshape that numpy could only make
    with a copy ends the check (False)."""
    if math.prod(shape) == 0:
        return False
    strides = _c_strides(shape)
    for name, params in steps:
        if name == "transpose":
            perm = params["perm"]
            shape, strides = tuple(shape[p] for p in perm), tuple(strides[p] for p in perm)
        else:
            new_shape = tuple(params["shape"])
            strides = _reshaped_strides(shape, strides, new_shape)
            if strides is None:
                return False
            shape = new_shape
    return all(s == c for d, s, c in zip(shape, strides, _c_strides(shape)) if d != 1)


def _c_strides(shape) -> tuple:
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


def _reshaped_strides(shape, strides, new_shape):
    """Strides (in elements) viewing the same elements as `new_shape` without a copy, or
    None when the axes that must merge are not laid out one after another."""
    old = [(d, s) for d, s in zip(shape, strides) if d != 1]
    new_strides = [0] * len(new_shape)
    live = [k for k, d in enumerate(new_shape) if d != 1]
    oi = ni = 0
    while oi < len(old) and ni < len(live):
        oj, nj = oi + 1, ni + 1
        o_size, n_size = old[oi][0], new_shape[live[ni]]
        while o_size != n_size:
            if n_size < o_size:
                n_size *= new_shape[live[nj]]
                nj += 1
            else:
                o_size *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):              # merged old axes must be contiguous
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        step = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            new_strides[live[k]] = step
            step *= new_shape[live[k]]
        oi, ni = oj, nj
    return tuple(new_strides)


def moves_only_unit_axes(shape, perm) -> bool:
    """A transpose that keeps the order of the axes longer than 1 is a reshape."""
    return [p for p in perm if shape[p] != 1] == [a for a in range(len(shape)) if shape[a] != 1]
