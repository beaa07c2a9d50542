"""Rebinding a Tensor object to a new value: the object keeps its identity (every name bound
to it sees the new value), and every record of its old value a tape or a trace holds moves
to a new object that keeps the old value, so nothing recorded ever changes."""
from __future__ import annotations

import weakref

from .state import _state
from .tensor import Tensor

__all__ = ["rebind"]

# the slots that hold a value (a view's links stay with the object: pforjac.mutation_views)
_SLOTS = [Tensor.__dict__[name] for name in Tensor.__slots__
          if name not in ("__weakref__", "_links")]


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
