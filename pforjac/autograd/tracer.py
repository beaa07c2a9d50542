"""autograd's `tracer`: `trace(start_node, fun, x)` runs `fun` on `x` and builds a graph of
the user's `Node` subclass, one node for each primitive operation that depends on `x`.

pforjac's operations are recorded by tapes, so the trace is a tape that, for each op it
records, makes a node: `node_type(value, fun, args, kwargs, parent_argnums, parents)`,
with numpy values, `fun` the op (its `__name__` is the primitive's name) and `parents`
the nodes of the arguments that depend on `x`. Traces nest as autograd's do: a trace
around `grad(f)` sees the forward ops and the backward ones.

Example:
    >>> import pforjac.autograd.numpy as np
    >>> from pforjac.autograd.tracer import Node, trace
    >>> class Names(Node):
    ...     def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
    ...         self.names = [n for p in parents for n in p.names] + [fun.__name__]
    ...     def initialize_root(self, x):
    ...         self.names = []
    >>> value, node = trace(Names.new_root(1.0), lambda x: np.exp(np.sin(x)), 1.0)
    >>> node.names
    ['sin', 'exp']
"""
from __future__ import annotations

import warnings

import numpy as np

from ..tape import GradientTape
from ..tensor import Tensor
from .vspace import getval

__all__ = ["Node", "trace", "getval", "isbox"]


class Node:
    """A node of a trace: subclass it with `__init__(self, value, fun, args, kwargs,
    parent_argnums, parents)` and `initialize_root(self, *args)`."""

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        raise NotImplementedError("a Node subclass defines __init__(value, fun, args, kwargs, "
                                  "parent_argnums, parents)")

    def initialize_root(self, *args, **kwargs):
        raise NotImplementedError("a Node subclass defines initialize_root")

    @classmethod
    def new_root(cls, *args, **kwargs):
        root = cls.__new__(cls)
        root.initialize_root(*args, **kwargs)
        return root


class _Op:
    """The `fun` a node is given: the primitive, named, callable with its parameters."""

    def __init__(self, prim, params: dict):
        self.__name__ = prim.name
        self.prim, self.params = prim, params

    def __call__(self, *args):
        return self.prim.bind(*args, **self.params)

    def __repr__(self) -> str:
        return f"<op {self.__name__}>"


def isbox(value) -> bool:
    """Whether `value` is one of pforjac's traced values (a Tensor) or a box."""
    from .vspace import Box
    return isinstance(value, (Tensor, Box))


class _TraceTape(GradientTape):
    """A tape that makes a node of the trace's type for every op it records."""

    def __init__(self, node_type):
        super().__init__(persistent=True)
        self._node_type = node_type
        self._nodes: dict[int, tuple] = {}       # id -> (tensor, its node)

    def start(self, x: Tensor, node) -> None:
        self.watch(x)
        self._nodes[id(x)] = (x, node)

    def node_of(self, value):
        hit = self._nodes.get(id(value))
        return hit[1] if hit is not None and hit[0] is value else None

    def _record(self, prim, args, params, outs) -> None:
        before = len(self._entries)
        super()._record(prim, args, params, outs)
        if len(self._entries) == before:
            return
        argnums = [k for k, a in enumerate(args) if self.node_of(a) is not None]
        parents = [self.node_of(args[k]) for k in argnums]
        plain = tuple(getval(a) for a in args)
        for out in outs:
            node = self._node_type(getval(out), _Op(prim, params), plain, params, argnums,
                                   parents)
            self._nodes[id(out)] = (out, node)


def trace(start_node: Node, fun, x):
    """`(fun(x), the node of its value)`: `fun` runs on `x` under a trace whose nodes are
    of `start_node`'s type, `start_node` standing for `x`."""
    tape = _TraceTape(type(start_node))
    start = Tensor._from_array(np.array(getval(x), dtype=float))
    with tape:
        tape.start(start, start_node)
        end = fun(start)
    node = tape.node_of(end)
    if node is None:
        warnings.warn("Output seems independent of input.")
        return getval(end), None
    return getval(end), node

