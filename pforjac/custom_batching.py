"""A custom function mapped over a leading axis: what pfor's converter of a custom call
binds. Each of the user's functions (primal, jvp, fwd, bwd) is vectorized by pfor, so a
custom rule inside a per-example Jacobian runs without a loop. A primal pfor cannot trace
(a solver on numpy values) runs once per iteration instead, and says so in
`pforjac.fallback_report()`.
"""
from __future__ import annotations

from typing import Callable

from . import ops
from .custom_calls import CallRules, _avals_key, register_rules
from .diagnostics import record_fallback
from .tree import tree_flatten, tree_map, tree_unflatten

__all__ = ["mapped_rules"]


def _mapped(fn: Callable, n: int, what: str) -> Callable:
    """`fn` applied to slice i of every (stacked) Tensor among its arguments, for i < n."""
    def mapped(*args):
        from .pfor import pfor
        try:
            return pfor(lambda i: fn(*tree_map(lambda a: a[i], args)), n)
        except Exception as e:  # noqa: BLE001  (a primal pfor could not trace: run it per row)
            record_fallback("per-iteration", what, f"{n} rows", f"not traceable: {e}", n)
            return _looped(fn, n, args)
    return mapped


def _looped(fn: Callable, n: int, args):
    rows = [fn(*tree_map(lambda a: a[k], args)) for k in range(n)]
    leaves = [tree_flatten(r) for r in rows]
    tree = leaves[0][1]
    columns = zip(*(flat for flat, _ in leaves))
    return tree_unflatten(tree, [ops.stack(list(c)) for c in columns])


class _Batched(CallRules):
    """`base` over a leading axis of size n of every input."""

    def __init__(self, base: CallRules, n: int):
        what = f"custom_{base.kind}_call ({base.name})"
        super().__init__(f"{base.name} mapped", _mapped(base.fun, n, what),
                         jvp=None if base.jvp is None else _mapped(base.jvp, n, what),
                         fwd=None if base.fwd is None else _mapped(base.fwd, n, what),
                         bwd=None if base.bwd is None else _mapped(base.bwd, n, what))
        self.base, self.n = base, n

    @staticmethod
    def _row(avals):
        return [_Aval(a.shape[1:], a.dtype) for a in avals]

    def out_avals(self, avals, residuals: bool) -> list[tuple]:
        return [((self.n,) + tuple(s), d)
                for s, d in self.base.out_avals(self._row(avals), residuals)]

    def layout(self, xs) -> tuple:
        key = _avals_key(self._row(xs))
        if key not in self.base.layouts:
            self.base.out_avals(self._row(xs), self.base.kind == "vjp")
        return self.base.layout(self._row(xs))


class _Aval:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype
        self.ndim = len(self.shape)


def mapped_rules(base: CallRules, n: int) -> CallRules:
    """`base` mapped over n rows, registered once per n (its key is the call's param)."""
    if n not in base.batched:
        base.batched[n] = register_rules(_Batched(base, n))
    return base.batched[n]
