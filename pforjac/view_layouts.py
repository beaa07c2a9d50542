"""The memory order numpy would give a tensor's array, which decides whether some of
numpy's reshapes are views or copies (a C reshape of a Fortran-ordered array copies).

- A concrete tensor: the order of its array (pforjac computes it with numpy).
- A copy a view-making call made (a Fortran reshape of a transpose): numpy's own copy,
  made on the proxies (pforjac.mutation_views records it).
- A value a trace has not computed: the order numpy's ufuncs give their result (they keep
  their operands' order) for an elementwise op whose full-shape operands agree on one;
  C order otherwise.
"""
from __future__ import annotations

import numpy as np

__all__ = ["order_of", "stride_order"]

_DEPTH = 8          # how far back through a trace's elementwise ops to look
_RECENT = 64        # how many of a trace's last equations to search for a tensor's


def stride_order(a: np.ndarray) -> tuple | None:
    """The axes of `a` from the largest stride to the smallest, size-1 axes last (None:
    C order): the order numpy's ufuncs give a result of `a`'s shape."""
    if a.ndim < 2 or a.flags.c_contiguous:
        return None
    keep = [k for k, n in enumerate(a.shape) if n > 1]
    ranked = sorted(keep, key=lambda k: -abs(a.strides[k]))
    if ranked == keep:
        return None
    return tuple(ranked + [k for k, n in enumerate(a.shape) if n <= 1])


def order_of(t, links_of, depth: int = _DEPTH) -> tuple | None:
    """The memory order (None: C) numpy would give `t`'s array; `links_of(u)`: the view
    node or family of `u`, if any (their proxies know their strides)."""
    node = links_of(t)
    if node is not None:
        return node.order if hasattr(node, "views") else stride_order(node.proxy)
    if t._trace is None:
        return stride_order(t._value)
    if depth == 0:
        return None
    eqn = _made_by(t)
    if eqn is None or not (eqn.prim.elementwise or eqn.prim.name in ("copy", "cast")):
        return None
    orders = {order_of(u, links_of, depth - 1) for u in eqn.inputs
              if tuple(u.shape) == tuple(t.shape)}
    return orders.pop() if len(orders) == 1 else None


def _made_by(t):
    """The equation that made `t`, among the trace's last few (views are taken soon after
    their tensor is made; further back, C order is assumed)."""
    for eqn in reversed(t._trace.equations[-_RECENT:]):
        if any(o is t for o in eqn.outputs):
            return eqn
    return None


def memory_reading(t, order: str, proxy: np.ndarray) -> tuple:
    """`t` and a C or F order that read it as numpy's memory-layout order does ("A": F for
    a Fortran-contiguous array, else C; "K": axes from the largest stride to the smallest,
    a broadcast one where it is); `proxy`: `t`'s index proxy, whose strides are numpy's."""
    from . import ops
    if order not in ("A", "K"):
        return t, order
    if proxy.ndim < 2 or proxy.flags.c_contiguous:
        return t, "C"
    if proxy.flags.f_contiguous:
        return t, "F"
    if order == "A":
        return t, "C"
    moving = [k for k, s in enumerate(proxy.strides) if s != 0]   # (numpy keeps a stride-0
    ranked = iter(sorted(moving, key=lambda k: -abs(proxy.strides[k])))   # axis in place)
    order = tuple(next(ranked) if k in moving else k for k in range(proxy.ndim))
    return ops.transpose(t, order), "C"
