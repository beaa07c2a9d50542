"""Arrays the numba backend's loop nests overwrite in place instead of making new ones.

A product's result read by one elementwise equation only (the per-example Jacobian's
`(rows @ W.T) * tanh'`, a layer's `x @ W + b` before its activation) is dead once that
equation has read it: the loop nest computing the equation writes its result into the
product's array, element by element, each element read and then overwritten by the same
iteration. That saves an allocation the size of the product and a pass of memory traffic
(the loop reads and writes the same lines instead of streaming a second array).

`note(walk, eqn, made)` runs after each equation the code generator lowers: a result
that is a new array (`made`: a product's, a loop nest's), or a reshape of one nothing
else reads (no other equation, not the results), is recorded as fresh; a fresh array
whose only reader reads each of its elements once, at its own position (`_read_once_in_place`), becomes
`LoweringContext.reusable`, and the nest that reads it at the position it writes
(`LoweringContext.reused`) takes it.
"""
from __future__ import annotations

import numpy as np

__all__ = ["note"]


def note(walk, eqn, made: bool) -> None:
    """Record `eqn`'s result as fresh where `made` says it is a new array, or it is a
    reshape of a fresh array; a fresh array read once in place becomes reusable."""
    out = eqn.outputs[0]
    fresh = walk.fresh
    if not (made or eqn.prim.name == "reshape" and _reshaped_alone(eqn.inputs[0], walk)) \
            or not out.ndim:
        return
    fresh.add(id(out))
    if _read_once_in_place(out, walk.readers, walk.results):
        walk.ctx.reusable[walk.names[id(out)]] = (tuple(out.shape), out.dtype)


def _reshaped_alone(var, walk) -> bool:
    """Whether `var` is fresh and its reshape is all that reads it: the reshape (a view of
    it) is then fresh too; where another equation or the program's results read `var`,
    a loop writing into the reshape would change what they read."""
    return id(var) in walk.fresh and id(var) not in walk.results \
        and len(walk.readers.get(id(var), [])) == 1


def _read_once_in_place(var, readers, results) -> bool:
    """Whether `var` (not a result of the program) is read by one equation, once, that
    reads each of its elements once at its own position: an elementwise equation of as
    many elements (no broadcast repeats it), maybe through reshapes read the same way."""
    while True:
        users = readers.get(id(var), [])
        if id(var) in results or len(users) != 1:
            return False
        user = users[0]
        if user.prim.elementwise:
            return _size(user.outputs[0].shape) == _size(var.shape) and len(user.outputs) == 1
        if user.prim.name != "reshape":
            return False
        var = user.outputs[0]


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))
