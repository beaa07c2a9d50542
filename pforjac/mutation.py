"""In-place assignment on Tensors, with value semantics that keep derivatives right.

`t[key] = v`, `t += v` (every augmented operator), and numpy's writing functions
(`pforjac.mutation_numpy`) compute the new value with pforjac ops (an `index_update`, a
`where`, or the operator's result) and then *rebind* the Tensor object `t` to it: the object
keeps its identity, so every name bound to it sees the new value, as with a numpy array.
Every record of its old value a tape or a trace holds moves to a new object that keeps the
old value, so nothing recorded ever changes and derivatives are those of the functional
rewrite (`pj.where`, `pj.concat`, a scatter). The new value is made in pforjac.updates,
the identity swap over tapes and traces in pforjac.rebinding.

Rules (docs/numpy.md, "In-place assignment"):
- a source a recording tape watches refuses assignment (the derivative is taken with
  respect to its value; copy it first: `x = x.copy()`), as PyTorch refuses an in-place
  op on a leaf that requires grad;
- a Variable assigns: `v[key] = x` is `v.assign(<v with v[key] = x>)`;
- a view taken before the assignment (`t[1:]`, `t.T`) sees the new value, as in numpy,
  and an assignment into a view writes into the tensor it was taken from
  (`pforjac.mutation_views`).
"""
from __future__ import annotations

import numpy as np

from . import mutation_views as views
from . import view_layouts
from . import ops
from .ops import indexing as ix
from .rebinding import rebind
from .state import _state
from .tensor import Tensor, Variable, as_tensor
from .updates import describe, updated

__all__ = ["setitem", "commit", "check_assignable", "assign_whole", "install"]

def setitem(t: Tensor, key, value) -> None:
    """`t[key] = value`: `t` rebound to the updated value (a Variable assigns it)."""
    if isinstance(t, Variable):
        t.assign(updated(t, key, value))
        return
    check_assignable(t, "t[...] = v")
    commit(t, updated(t, key, value), key)


def commit(t: Tensor, new: Tensor, key=views.ALL) -> None:
    """`t` rebound to `new`, the value the assignment `t[key] = ...` computed (views.ALL:
    one into all of `t`); then its views and the tensor it is a view of follow
    (pforjac.mutation_views). A Variable assigns `new` instead."""
    if isinstance(t, Variable):
        t.assign(new)
    elif new is not t:
        _keep_layout(t)
        changed = views.followers(t, key)
        for w in changed:
            _refuse_watched(t, w)
        rebind(t, new)
        views.after_write(t, changed)


def _keep_layout(t: Tensor) -> None:
    """Before `t` is rebound: the memory order of its array, if not C, kept on a view family
    of that order (numpy's assignment keeps an array's layout, which decides whether later
    reshapes are views; the new value's own order may differ)."""
    if views._node(t) is None and t.ndim >= 2 and views.linkable(t):
        order = view_layouts.order_of(t, views._node)
        if order is not None:
            t._links = views._family(t, order)


def _refuse_watched(t: Tensor, view: Tensor) -> None:
    if any(id(view) in tape._watched for tape in _state.tapes):
        raise TypeError(f"an assignment into {describe(t)} would change a view of it, "
                        f"{describe(view)}, that a recording GradientTape watches as a source "
                        f"(derivatives are taken with respect to its value); watch a copy "
                        f"of the view (v = v.copy()), or assign into a copy of the tensor")


def check_assignable(t: Tensor, what: str) -> None:
    """Refuses an assignment into a source a recording tape watches (or into a view of one,
    which writes into it), and one numpy refuses (a read-only view). A Variable assigns:
    the tape keeps the value it read."""
    source = None if isinstance(t, Variable) else t
    if source is not None:
        views.check_writable(t, what)
    while source is not None:
        if any(id(source) in tape._watched for tape in _state.tapes):
            raise TypeError(
                f"{what}: {describe(source)} is a source a recording GradientTape watches"
                f"{'' if source is t else ' (t is a view of it)'}, and derivatives are taken "
                f"with respect to its value; assign into a copy (y = x.copy(); y[...] = v) "
                f"or build the new value with pforjac ops")
        source = views.base_of(source)


# -- whole-tensor assignment (augmented operators, out=) ----------------------------------------
def assign_whole(t: Tensor, new, what: str, inputs=()) -> Tensor:
    """Rebinds `t` to `new` (an operator's or a ufunc's result, computed from `inputs`):
    numpy's rules for writing a result into an existing array (same shape; a cast of the
    same kind)."""
    new = as_tensor(new)
    if tuple(new.shape) != tuple(t.shape):
        raise ValueError(f"{what}: the result has shape {tuple(new.shape)}, which does not "
                         f"match the shape {tuple(t.shape)} of the tensor written into")
    if new.dtype != t.dtype:
        if not np.can_cast(new.dtype, t.dtype, "same_kind"):
            raise TypeError(f"{what}: cannot cast the result from {new.dtype.name} to "
                            f"{t.dtype.name} with casting rule 'same_kind' (numpy's rule)")
        new = ops.cast(new, t.dtype)
    if isinstance(t, Variable):
        return t.assign(new)
    check_assignable(t, what)
    commit(t, ix.fresh(new) if any(new is a for a in inputs) else new)
    return t


# -- Tensor's assignment operators -----------------------------------------------------------
_AUGMENTED = {"iadd": "+=", "isub": "-=", "imul": "*=", "itruediv": "/=", "ifloordiv": "//=",
              "ipow": "**=", "imod": "%=", "imatmul": "@=", "iand": "&=", "ior": "|="}


def _augmented(name: str, symbol: str):
    def method(self, other):
        if isinstance(self, Variable):        # a Variable: `v += x` rebinds the name, as in
            return NotImplemented             # TensorFlow (v.assign_add changes it)
        new = getattr(self, f"__{name[1:]}__")(other)
        if new is NotImplemented:
            return NotImplemented
        return assign_whole(self, new, f"t {symbol} v", (self, other))
    method.__name__ = f"__{name}__"
    return method


def _copying(method):
    """A method numpy's ndarray copies with (astype, flatten): a new tensor even where the
    value is unchanged, so that an assignment into the copy leaves the original alone."""
    def copying(self, *args, **kwargs):
        out = method(self, *args, **kwargs)
        return ix.fresh(out) if out is self else out
    copying.__name__ = method.__name__
    return copying


def install() -> None:
    views.install()
    Tensor.__setitem__ = setitem
    Tensor.astype, Tensor.flatten = _copying(Tensor.astype), _copying(Tensor.flatten)
    for name, symbol in _AUGMENTED.items():
        setattr(Tensor, f"__{name}__", _augmented(name, symbol))


install()
