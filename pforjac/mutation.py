"""In-place assignment on Tensors, with value semantics that keep derivatives right.

`t[key] = v`, `t += v` (every augmented operator), and numpy's writing functions
(`pforjac.mutation_numpy`) compute the new value with pforjac ops (an `index_update`, a
`where`, or the operator's result) and then *rebind* the Tensor object `t` to it: the object
keeps its identity, so every name bound to it sees the new value, as with a numpy array.
Every record of its old value a tape or a trace holds moves to a new object that keeps the
old value, so nothing recorded ever changes and derivatives are those of the functional
rewrite (`pj.where`, `pj.concat`, a scatter).

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

import weakref

import numpy as np

from . import mutation_views as views
from . import ops
from .ops import indexing as ix
from .state import _state
from .tensor import Tensor, Variable, as_tensor

__all__ = ["setitem", "updated", "at_positions", "commit", "rebind", "assign_whole"]

# the slots that hold a value (a view's links stay with the object: pforjac.mutation_views)
_SLOTS = [Tensor.__dict__[name] for name in Tensor.__slots__
          if name not in ("__weakref__", "_links")]


def setitem(t: Tensor, key, value) -> None:
    """`t[key] = value`: `t` rebound to the updated value (a Variable assigns it)."""
    if isinstance(t, Variable):
        t.assign(updated(t, key, value))
        return
    check_assignable(t, "t[...] = v")
    commit(t, updated(t, key, value), _region(t, key))


def commit(t: Tensor, new: Tensor, region=views.ALL) -> None:
    """`t` rebound to `new`, the value an assignment into `region` of it computed (flat
    bounds, or views.ALL); then its views and its base follow (pforjac.mutation_views).
    A Variable assigns `new` instead."""
    if isinstance(t, Variable):
        t.assign(new)
    elif new is not t:
        rebind(t, new)
        views.after_write(t, region)


def _region(t: Tensor, key):
    """The flat bounds `key` writes to in `t` (views.ALL for an advanced index)."""
    key = key if isinstance(key, tuple) else (key,)
    if any(_is_index_array(k) for k in key):
        return views.ALL
    return views.region_of_key(tuple(t.shape), ix._normalize_key(key, t.ndim))


def check_assignable(t: Tensor, what: str) -> None:
    """Refuses an assignment into a source a recording tape watches (or into a view of one,
    which writes into it). A Variable assigns: the tape keeps the value it read."""
    source = None if isinstance(t, Variable) else t
    while source is not None:
        if any(id(source) in tape._watched for tape in _state.tapes):
            raise TypeError(
                f"{what}: {_describe(source)} is a source a recording GradientTape watches"
                f"{'' if source is t else ' (t is a view of it)'}, and derivatives are taken "
                f"with respect to its value; assign into a copy (y = x.copy(); y[...] = v) "
                f"or build the new value with pforjac ops")
        source = views.base_of(source)


def _describe(t: Tensor) -> str:
    return f"the tensor {t.dtype.name}{list(t.shape)}"


# -- the updated value ---------------------------------------------------------------------
def updated(t: Tensor, key, value) -> Tensor:
    """`t` with `t[key] = value`, as a new tensor (numpy's indexing and casting rules)."""
    key = key if isinstance(key, tuple) else (key,)
    if not any(_is_index_array(k) for k in key):
        key = ix._normalize_key(key, t.ndim)
        if not any(_is_index_array(k) for k in key):       # (a range becomes a list)
            return _basic(t, key, value)
    traced = [k for k in key if isinstance(k, Tensor) and k._trace is not None]
    if traced:
        return _traced_index(t, key, value)
    positions = np.arange(t.size).reshape(t.shape)[tuple(_concrete(k) for k in key)]
    return at_positions(t, positions, value)


def _is_index_array(k) -> bool:
    return isinstance(k, (Tensor, np.ndarray, list, range)) or \
        isinstance(k, (bool, np.bool_))


def _concrete(k):
    return k.numpy() if isinstance(k, Tensor) else k


def _basic(t: Tensor, key: tuple, value) -> Tensor:
    shape = ix._view_of_shape(t.shape)[key].shape
    return ix.index_update(t, value_for(t, value, shape), key)


def at_positions(t: Tensor, positions: np.ndarray, value) -> Tensor:
    """The update at flat positions (any advanced index, read by numpy): the last value
    written to a position wins, as in numpy."""
    v = value_for(t, value, positions.shape)
    if positions.size == 0:
        return t
    flat_pos, v = positions.ravel().astype(np.intp), ops.reshape(v, (-1,))
    keep = _last_occurrences(flat_pos)
    if keep is not None:
        flat_pos, v = flat_pos[keep], ops.gather(v, keep)
    new = ix.index_update(ops.reshape(t, (-1,)), v, (flat_pos,))
    return ops.reshape(new, t.shape)


def _last_occurrences(pos: np.ndarray):
    """The indices that keep the last write to each position, or None if none repeats."""
    if pos.size < 2 or ix.distinct_indices(pos, max(int(pos.max()) + 1, 1)):
        return None
    _, first_from_end = np.unique(pos[::-1], return_index=True)
    return np.sort(pos.size - 1 - first_from_end)


def _traced_index(t: Tensor, key: tuple, value) -> Tensor:
    """An index a trace computes: a boolean mask over t's leading axes, or one integer
    scalar along the first axis, as a `where` (its shape is static)."""
    (k,) = key if len(key) == 1 else (None,)
    if k is not None and k.dtype == np.bool_ and tuple(k.shape) == tuple(t.shape[:k.ndim]):
        mask = ops.reshape(k, tuple(k.shape) + (1,) * (t.ndim - k.ndim))
        return _where(t, mask, value, t.shape[k.ndim:])
    if k is not None and k.ndim == 0 and k.dtype.kind in "iu" and t.ndim:
        n = t.shape[0]
        k = ops.where(ops.less(k, 0), k + k.dtype.type(n), k)
        hit = ops.equal(Tensor._from_array(np.arange(n, dtype=k.dtype)), k)
        return _where(t, ops.reshape(hit, (n,) + (1,) * (t.ndim - 1)), value, t.shape[1:])
    raise IndexError(
        f"t[index] = v with an index computed inside a trace (pforjac.function, a pfor body): "
        f"pforjac takes a boolean mask over t's leading axes or one integer scalar there; "
        f"write the update as pj.where(mask, v, t)")


def _where(t: Tensor, mask, value, inner: tuple) -> Tensor:
    v = value_for(t, value, None)
    if v.ndim > len(inner) and any(d != 1 for d in v.shape[:v.ndim - len(inner)]):
        raise ValueError(
            f"t[mask] = v with a mask computed inside a trace: v of shape {tuple(v.shape)} "
            f"would need the number of True entries, which only the data decides; pass a "
            f"value that broadcasts to {tuple(inner) or 'a scalar'}, or use pj.where(mask, v, t)")
    return ops.where(mask, v, t)


def value_for(t: Tensor, value, shape) -> Tensor:
    """`value` as a tensor of t's dtype (numpy's casting; a complex value into a real
    tensor is refused), broadcast to `shape` (None: left as it is)."""
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        from .numpy import array
        value = array(value)
    if isinstance(value, Tensor):
        if value.dtype.kind == "c" and t.dtype.kind != "c":
            raise TypeError(f"assigning a complex value into {_describe(t)} would drop its "
                            f"imaginary part; take pj.real(v) first, or make the tensor complex")
        v = value if value.dtype == t.dtype else ops.cast(value, t.dtype)
    else:
        v = Tensor._from_array(_constant_of(value, t.dtype))
    return v if shape is None else _broadcast(v, tuple(shape))


def _constant_of(value, dtype) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        raise TypeError(f"assigning a complex value into a {np.dtype(dtype).name} tensor "
                        f"would drop its imaginary part; make the tensor complex")
    return array.astype(dtype)


def _broadcast(v: Tensor, shape: tuple) -> Tensor:
    if v.ndim > len(shape):                     # numpy drops leading axes of size 1
        extra = v.ndim - len(shape)
        if any(d != 1 for d in v.shape[:extra]):
            raise ValueError(f"could not broadcast the assigned value of shape "
                             f"{tuple(v.shape)} into the indexed shape {shape}")
        v = ops.reshape(v, tuple(v.shape[extra:]))
    if tuple(v.shape) == shape:
        return v
    try:
        np.broadcast_shapes(tuple(v.shape), shape)
    except ValueError:
        raise ValueError(f"could not broadcast the assigned value of shape {tuple(v.shape)} "
                         f"into the indexed shape {shape}") from None
    return ops.broadcast_to(v, shape)


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


# -- rebinding -----------------------------------------------------------------------------------
def rebind(t: Tensor, new: Tensor) -> None:
    """Makes the object `t` hold `new`'s value, and every tape and trace record of `t`'s old
    value refer to a new object holding it, and those of `new` to `t` (`new`, just made,
    is then dropped)."""
    old = object.__new__(type(t))
    _copy_slots(t, old)
    mapping = {id(t): old, id(new): t}
    from .tape import live_tapes
    for tape in list(live_tapes):
        _substitute_tape(tape, mapping)
    for trace in _state.traces:
        _substitute_trace(trace, mapping)
    if type(new) is not type(t):
        t.__class__ = type(new)
    _copy_slots(new, t)


def _copy_slots(src: Tensor, dst: Tensor) -> None:
    for slot in _SLOTS:
        try:
            slot.__set__(dst, slot.__get__(src))
        except AttributeError:                      # unset in src: unset in dst
            try:
                slot.__delete__(dst)
            except AttributeError:
                pass


def _swap_items(seq, mapping) -> list | None:
    """`seq` with the mapped objects swapped in, or None if none is there."""
    if not any(id(a) in mapping for a in seq):
        return None
    return [mapping.get(id(a), a) for a in seq]


class _Holders:
    """id(tensor) -> the records (tape entries, trace equations) that hold it as an input or
    an output, kept for one list of records and extended with those appended since the
    last use: a rebinding then visits the records of its tensor only, not every record (a
    loop of assignments under a tape would otherwise cost the square of its length)."""

    def __init__(self):
        self.records, self.seen, self.of = None, 0, {}

    def update(self, records: list) -> dict:
        if records is not self.records or len(records) < self.seen:   # (a tape's reset)
            self.records, self.seen, self.of = records, 0, {}
        for record in records[self.seen:]:
            for a in (*record.inputs, *record.outputs):
                self.of.setdefault(id(a), []).append(record)
        self.seen = len(records)
        return self.of


_holders: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _substitute_records(owner, records: list, mapping: dict, as_tuple: bool) -> None:
    holders = _holders.get(owner)
    if holders is None:
        holders = _holders[owner] = _Holders()
    of = holders.update(records)
    moved = {k: of.pop(k) for k in mapping if k in of}
    unique = {id(r): r for held in moved.values() for r in held}    # each swapped once
    for record in unique.values():
        for name in ("inputs", "outputs"):
            swapped = _swap_items(getattr(record, name), mapping)
            if swapped is not None:
                setattr(record, name, tuple(swapped) if as_tuple and name == "inputs"
                        else swapped)
    for k, held in moved.items():
        of.setdefault(id(mapping[k]), []).extend(held)


def _rekey(table: dict, mapping: dict, values: bool = True) -> None:
    """`table`'s entries keyed by a mapped object's id moved to its replacement's (and
    their values replaced by it, where `values`)."""
    moved = {k: table.pop(k) for k in mapping if k in table}
    for k, value in moved.items():
        table[id(mapping[k])] = mapping[k] if values else value


def _substitute_tape(tape, mapping: dict) -> None:
    _substitute_records(tape, tape._entries, mapping, as_tuple=True)
    _rekey(tape._tracked, mapping)
    _rekey(tape._watched, mapping)
    made = [k for k in mapping if k in tape._made]
    for k in made:
        del tape._made[k]
    tape._made.update((id(mapping[k]), weakref.ref(mapping[k])) for k in made)


def _substitute_trace(trace, mapping: dict) -> None:
    _substitute_records(trace, trace.equations, mapping, as_tuple=False)
    for seq in (trace.inputs, trace.const_values, trace.guards):
        swapped = _swap_items(seq, mapping)
        if swapped is not None:
            seq[:] = swapped
    _rekey(trace._const_ids, mapping, values=False)


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
