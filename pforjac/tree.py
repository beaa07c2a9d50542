"""Flattening nested lists, tuples and dicts of tensors (the structure of `sources`)."""
from __future__ import annotations

from collections import OrderedDict, defaultdict
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
        kind = _dict_kind(node)
        keys = list(node) if isinstance(node, OrderedDict) else sorted(node, key=repr)
        return (dict, keys, [_walk(node[k], leaves) for k in keys], kind)
    leaves.append(node)
    return _LEAF


def _dict_kind(node: dict):
    """How a dict comes back: None for a plain dict (keys sorted, as JAX's), ("ordered",) for
    an OrderedDict (its own key order), ("default", factory) for a defaultdict (sorted keys, its
    default_factory). Other dict subclasses come back as plain dicts."""
    if isinstance(node, OrderedDict):
        return ("ordered",)
    if isinstance(node, defaultdict):
        return ("default", node.default_factory)
    return None


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
        pairs = [(k, _build(c, it)) for k, c in zip(node[1], node[2])]
        kind = node[3]
        if kind is None:
            return dict(pairs)
        return OrderedDict(pairs) if kind[0] == "ordered" else defaultdict(kind[1], pairs)
    kind, children = node
    values = [_build(c, it) for c in children]
    if kind is list:
        return values
    if kind is tuple:
        return tuple(values)
    return kind(*values)


def flatten_like(structure: Any, tree: Any) -> list:
    """The leaves of `tree` at the leaf positions of `structure` (from `tree_flatten`), where
    a `None` in `tree` stands for `None` at every leaf below it (TensorFlow's
    `output_gradients=[None, g]`). Raises ValueError where the two structures differ."""
    out: list = []
    _like(structure, tree, out)
    return out


def _like(node, value, out: list) -> None:
    if node is None:
        return
    if value is None:
        out.extend([None] * _count(node))
    elif node is _LEAF:
        out.append(value)
    elif node[0] is dict:
        if not isinstance(value, dict) or sorted(value, key=repr) != sorted(node[1], key=repr):
            raise ValueError(f"expected a dict with keys {node[1]}, got {value!r:.80}")
        for k, child in zip(node[1], node[2]):
            _like(child, value[k], out)
    else:
        children = node[1]
        if not isinstance(value, (list, tuple)) or len(value) != len(children):
            raise ValueError(f"expected a list or tuple of {len(children)}, got {value!r:.80}")
        for child, v in zip(children, value):
            _like(child, v, out)


def _count(node) -> int:
    if node is None:
        return 0
    if node is _LEAF:
        return 1
    return sum(_count(c) for c in (node[2] if node[0] is dict else node[1]))


def tree_map(fn, tree: Any) -> Any:
    leaves, structure = tree_flatten(tree)
    return tree_unflatten(structure, [fn(x) for x in leaves])
