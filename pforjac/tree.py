"""Flattening nested lists, tuples and dicts of tensors (the structure of `sources`)."""
from __future__ import annotations

from typing import Any

__all__ = ["tree_flatten", "tree_unflatten", "tree_map"]

_LEAF = "*"


def tree_flatten(tree: Any) -> tuple[list, Any]:
    """Returns the leaves in order and a description to rebuild the structure.

    `None` is kept as structure (it has no leaves), as TensorFlow's nest does not,
    because an unconnected gradient is `None` and must come back in its place.
    (The recursions here are module-level functions: a nested function that calls
    itself is a reference cycle, which would keep the leaves, large Jacobians
    among them, alive until the next garbage collection.)
    """
    leaves: list = []
    return leaves, _walk(tree, leaves)


def _walk(node, leaves: list):
    if node is None:
        return None
    if isinstance(node, (list, tuple)):
        kind = type(node) if type(node) in (list, tuple) else _namedtuple_kind(node)
        return (kind, [_walk(x, leaves) for x in node])
    if isinstance(node, dict):
        keys = sorted(node, key=repr)
        return (dict, keys, [_walk(node[k], leaves) for k in keys])
    leaves.append(node)
    return _LEAF


def _namedtuple_kind(node):
    return type(node)


def tree_unflatten(tree: Any, leaves) -> Any:
    return _build(tree, iter(leaves))


def _build(node, it):
    if node is None:
        return None
    if node is _LEAF:
        return next(it)
    if node[0] is dict:
        return {k: _build(c, it) for k, c in zip(node[1], node[2])}
    kind, children = node
    values = [_build(c, it) for c in children]
    if kind is list:
        return values
    if kind is tuple:
        return tuple(values)
    return kind(*values)


def tree_map(fn, tree: Any) -> Any:
    leaves, structure = tree_flatten(tree)
    return tree_unflatten(structure, [fn(x) for x in leaves])
