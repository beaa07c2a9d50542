"""Passes that change how values are laid out in memory, never what they hold.

- `compact_constants`: a large constant only ufuncs read (nothing depends on its layout)
  keeps one slice of each axis it repeats along, broadcast back by a view, and is stored
  C-ordered.
- `broadcasts_into_ufuncs`: a ufunc asked for C order broadcasts a `broadcast_to` operand
  itself.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ...ops.shape import broadcast_to_p, reshape_p
from ...program import Equation, Program, eliminate_dead_code
from ...tensor import SymbolicTensor, Variable, constant
from ..codegen import Layouts, plain_ufunc
from ._rewrite import producers
from .reshapes import cancel_reshapes, moves_only_unit_axes

__all__ = ["compact_constants", "broadcasts_into_ufuncs"]


_COMPACT_MIN = 4096     # elements: a smaller constant costs little to read as it is


def compact_constants(program: Program) -> Program:
    """A large constant that only ufuncs read, laid out as no value depends on
    (`Layouts.stretchable`), is stored compactly: along each axis where every slice holds
    the same bits it keeps one slice, broadcast back by a view (a Jacobian's identity seed,
    the same for every example of a batch), and a strided one (a transposed view eager code
    captured) is stored C-ordered. The ufuncs compute the same numbers from fewer bytes, read
    in order: the log-softmax head's (101, 64, 100) seed, stored with a 40 KB stride
    between examples, took 0.59 ms to add; its (101, 1, 100) compact form 0.1 ms."""
    if all(math.prod(c.shape) < _COMPACT_MIN for c in program.consts):
        return program                  # (no constant is large: no layout analysis)
    layouts = Layouts(program)
    consts, values, head, changed = [], [], [], False
    for c, value in zip(program.consts, program.const_values):
        eligible = not isinstance(value, (Variable, SymbolicTensor)) \
            and math.prod(c.shape) >= _COMPACT_MIN and layouts.stretchable(c)
        array = value.numpy() if eligible else None
        small = _compact(array) if eligible else array
        if small is array:                              # not eligible, or nothing to gain
            consts.append(c)
            values.append(value)
            continue
        changed = True
        if small.shape == array.shape:                  # the same values, C-ordered
            consts.append(c)
            values.append(constant(small))
            continue
        stored = SymbolicTensor(small.shape, c.dtype, c._trace, f"{c.name}_compact")
        consts.append(stored)
        values.append(constant(small))
        head.append(Equation(broadcast_to_p, [stored], {"shape": tuple(c.shape)}, [c]))
    if not changed:
        return program
    return replace(program, consts=consts, const_values=values,
                   equations=head + list(program.equations))


_COMPACT_INNER = 64     # elements: numpy's loop over a broadcast view runs along the axes
                        # after its last stretched one; a shorter run costs more than it saves
                        # (a (20, 500, 10) constant read as (20, 1, 10): 0.90 -> 1.04 ms)


def _compact(array: np.ndarray) -> np.ndarray:
    """`array` with one slice along each axis whose slices all hold the same bits (-0 is not
    +0, a NaN equals its own bits) and after which at least `_COMPACT_INNER` elements follow,
    C-ordered; `array` itself when it is C-ordered already and no axis repeats."""
    bits = np.ascontiguousarray(array).view(np.uint8).reshape(array.shape + (array.dtype.itemsize,))
    for axis, size in enumerate(array.shape):
        if size > 1 and math.prod(array.shape[axis + 1:]) >= _COMPACT_INNER and \
                bool((bits == bits[(slice(None),) * axis + (slice(0, 1),)]).all()):
            bits = bits[(slice(None),) * axis + (slice(0, 1),)]
    if bits.shape[:-1] == array.shape and array.flags.c_contiguous:
        return array
    return np.ascontiguousarray(bits).view(array.dtype).reshape(bits.shape[:-1])


def broadcasts_into_ufuncs(program: Program) -> Program:
    """A ufunc whose result is C-ordered broadcasts its operands itself: an operand that is
    `broadcast_to(x)`, perhaps transposed so that x's own axes keep their order, is read as a
    reshape of x when the other operands still give the result its shape. The same numbers
    and layout, without building a strided view (numpy's loops over it are slower, and
    np.broadcast_to costs 2.5 us a call: four of them in a small MLP's per-example gradient)."""
    if not any(e.prim is broadcast_to_p for e in program.equations):
        return program                  # (nothing to read through: no layout analysis)
    producer = producers(program)
    layouts = Layouts(program)
    kept, changed, views = [], False, {}        # (views: one per array and shape, made once)
    for eqn in program.equations:
        if plain_ufunc(eqn) and _c_ordered_result(eqn, layouts):
            inputs, touched = list(eqn.inputs), False
            for k, u in enumerate(inputs):
                small = _broadcast_source(u, producer)
                if small is None:
                    continue
                x, shape = small
                rest = [tuple(v.shape) for j, v in enumerate(inputs) if j != k]
                if np.broadcast_shapes(shape, *rest) != tuple(eqn.outputs[0].shape):
                    continue              # u's stretch gives the result an axis no one else does
                if tuple(x.shape) != shape and (id(x), shape) not in views:
                    view = SymbolicTensor(shape, x.dtype, x._trace, f"{u.name}_small")
                    kept.append(Equation(reshape_p, [x], {"shape": shape}, [view], eqn.origin))
                    views[id(x), shape] = view
                if tuple(x.shape) != shape:
                    x = views[id(x), shape]
                inputs[k], touched = x, True
            if touched:
                eqn, changed = replace(eqn, inputs=inputs), True
        kept.append(eqn)
    if not changed:
        return program
    return cancel_reshapes(eliminate_dead_code(replace(program, equations=kept)))


def _c_ordered_result(eqn: Equation, layouts: Layouts) -> bool:
    """The ufunc's result is C-ordered whatever its broadcast operands' strides: it is asked
    for C order, or an operand of the result's shape is C-ordered (where operands' layouts
    conflict, numpy's ufuncs lay the result out in C order), or no value reads its layout."""
    out = eqn.outputs[0]
    return eqn.params.get("order") == "C" or id(out) in layouts.blind or any(
        id(v) in layouts.c_ordered and tuple(v.shape) == tuple(out.shape) for v in eqn.inputs)


def _broadcast_source(u, producer: dict):
    """(x, shape) when u is broadcast_to(x), or a transpose of one that keeps x's axes in
    order: u is then x reshaped to `shape` (1 on every stretched axis) and broadcast."""
    eqn = producer.get(id(u))
    perm = None
    if eqn is not None and eqn.prim.name == "transpose":
        perm, eqn = tuple(eqn.params["perm"]), producer.get(id(eqn.inputs[0]))
    if eqn is None or eqn.prim.name != "broadcast_to":
        return None
    x = eqn.inputs[0]
    padded = (1,) * (len(eqn.params["shape"]) - x.ndim) + tuple(x.shape)
    if perm is None:
        return x, padded
    if not moves_only_unit_axes(padded, perm):
        return None
    return x, tuple(padded[p] for p in perm)
