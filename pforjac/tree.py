"""Flattening nested lists, tuples and dicts of tensors (the structure of `sources`)."""
from __future__ import annotations

from typing import Any

__all__ = ["tree_flatten", "tree_unflatten", "tree_map"]

_LEAF = "*"


def tree_flatten(tree: Any) -> tuple[list, Any]:
    """Returns the leaves in order and a description to rebuild the structure.

    `None` is kept as structure (it has no leaves), as TensorFlow's nest does not,
    because an unconnected gradient is `None` and must come back in its place.
    """
    leaves: list = []

    def walk(node):
        if node is None:
            return None
        if isinstance(node, (list, tuple)):
            kind = type(node) if type(node) in (list, tuple) else _namedtuple_kind(node)
            return (kind, [walk(x) for x in node])
        if isinstance(node, dict):
            keys = sorted(node, key=repr)
            return (dict, keys, [walk(node[k]) for k in keys])
        leaves.append(node)
        return _LEAF

    return leaves, walk(tree)


def _namedtuple_kind(node):
    return type(node)


def tree_unflatten(tree: Any, leaves) -> Any:
    it = iter(leaves)

    def build(node):
        if node is None:
            return None
        if node is _LEAF:
            return next(it)
        if node[0] is dict:
            return {k: build(c) for k, c in zip(node[1], node[2])}
        kind, children = node
        values = [build(c) for c in children]
        if kind is list:
            return values
        if kind is tuple:
            return tuple(values)
        return kind(*values)

    return build(tree)


def tree_map(fn, tree: Any) -> Any:
    leaves, structure = tree_flatten(tree)
    return tree_unflatten(structure, [fn(x) for x in leaves])
