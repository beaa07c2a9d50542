"""Pytrees: nested containers of arrays, flattened to a list of leaves and rebuilt.

One registry of node types, used by every entry point (`grad`, `jacrev`, `jacobian`,
`vmap`, `pj.function`, the tapes' sources and targets): lists, tuples, namedtuples,
dicts (plain dicts by sorted keys, as JAX; `OrderedDict` in its own order;
`defaultdict` keeping its factory), `None` (a node with no leaves) and any type
registered with `register_pytree_node`, `register_pytree_with_keys` or
`register_dataclass`. Everything else is a leaf.

Example:
    >>> import numpy as np
    >>> from pforjac import tree_util
    >>> leaves, treedef = tree_util.tree_flatten({"b": [1.0, 2.0], "a": None})
    >>> leaves, treedef
    ([1.0, 2.0], PyTreeDef({'a': None, 'b': [*, *]}))
    >>> tree_util.tree_map(lambda x: 10 * x, {"w": 1.0, "b": (2.0, 3.0)})
    {'b': (20.0, 30.0), 'w': 10.0}
"""
from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict, defaultdict
from typing import Any, Callable, NamedTuple

import numpy as np

from .tensor import Tensor

__all__ = ["PyTreeDef", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
           "tree_map", "tree_all", "tree_reduce", "register_pytree_node",
           "register_pytree_with_keys", "register_dataclass", "treedef_is_leaf", "all_leaves",
           "GetAttrKey", "DictKey", "SequenceKey"]


class _Node(NamedTuple):
    """A registered node type: `flatten(x) -> (children, aux)`, `unflatten(aux, children)`."""
    flatten: Callable
    unflatten: Callable
    flatten_with_keys: Callable | None = None


_registry: dict[type, _Node] = {}
_registry_lock = threading.Lock()


class PyTreeDef:
    """The structure of a pytree: a node type, its auxiliary data, its children's
    structures. Equal structures compare equal and hash alike."""
    __slots__ = ("kind", "aux", "children", "num_leaves")

    def __init__(self, kind, aux, children: tuple):
        self.kind, self.aux, self.children = kind, aux, children
        self.num_leaves = 1 if kind is _LeafKind else sum(c.num_leaves for c in children)

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves) -> Any:
        return _build(self, iter(leaves))

    def _key(self):
        aux = self.aux
        if self.kind is dict:       # 1, 1.0 and True are different keys of a signature
            aux = (tuple((type(k), repr(k)) for k in aux[0]),) + aux[1:]
        return (self.kind, aux, tuple(c._key() for c in self.children))

    def __eq__(self, other) -> bool:
        return isinstance(other, PyTreeDef) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"PyTreeDef({_show(self)})"


class _LeafKind:
    """The kind of a leaf's PyTreeDef."""


_LEAF = PyTreeDef(_LeafKind, None, ())
_PLAIN_LEAVES = {np.ndarray, Tensor, float}    # leaves, unless registered as nodes
_NONE = PyTreeDef(type(None), None, ())


def _show(node: PyTreeDef) -> str:
    if node is _LEAF or node.kind is _LeafKind:
        return "*"
    kids = [_show(c) for c in node.children]
    if node.kind is type(None):
        return "None"
    if node.kind is list:
        return "[" + ", ".join(kids) + "]"
    if node.kind is tuple:
        return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
    if node.kind is dict:
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(node.aux[0], kids)) + "}"
    return f"{getattr(node.kind, '__name__', node.kind)}[{node.aux!r}](" + ", ".join(kids) + ")"


# -- flattening ------------------------------------------------------------------------------
def tree_flatten(tree: Any, is_leaf: Callable | None = None) -> tuple[list, PyTreeDef]:
    """The leaves of `tree` in order and its structure (`tree_unflatten` rebuilds it).

    `None` is a node with no leaves (as in JAX), so an unconnected gradient (`None`)
    comes back in its place. `is_leaf(x)` returning True stops the walk at `x`.
    """
    if is_leaf is None and type(tree) in _PLAIN_LEAVES and type(tree) not in _registry:
        return [tree], _LEAF            # (the common call: one array, one Tensor)
    if type(tree) is list and is_leaf is None and all(type(v) is Tensor for v in tree) \
            and Tensor not in _registry:     # (a tape's sources: a list of Tensors)
        return list(tree), PyTreeDef(list, None, (_LEAF,) * len(tree))
    leaves: list = []
    return leaves, _walk(tree, leaves, is_leaf)


def _walk(node, leaves: list, is_leaf) -> PyTreeDef:
    # (module-level recursion: a nested function that calls itself is a reference cycle,
    # which would keep the leaves, large Jacobians among them, alive until a collection)
    if is_leaf is not None and is_leaf(node):
        leaves.append(node)
        return _LEAF
    if node is None:
        return _NONE
    kind = type(node)
    if kind is list or kind is tuple:
        return PyTreeDef(kind, None, tuple([_walk(x, leaves, is_leaf) for x in node]))
    if isinstance(node, dict) and kind not in _registry:
        keys, aux = _dict_keys(node)
        return PyTreeDef(dict, (tuple(keys),) + aux,
                         tuple(_walk(node[k], leaves, is_leaf) for k in keys))
    entry = _registry.get(kind)
    if entry is not None:
        children, aux = entry.flatten(node)
        return PyTreeDef(kind, aux, tuple(_walk(x, leaves, is_leaf) for x in children))
    if isinstance(node, tuple) and hasattr(kind, "_fields"):     # a namedtuple
        return PyTreeDef(kind, None, tuple(_walk(x, leaves, is_leaf) for x in node))
    leaves.append(node)
    return _LEAF


def _dict_keys(node: dict) -> tuple[list, tuple]:
    """(the keys in flattening order, how the dict comes back): a plain dict by sorted keys
    (as JAX; mixed key types by their repr), an OrderedDict in its own order, a defaultdict
    with its default_factory. Other dict subclasses come back as plain dicts."""
    if isinstance(node, OrderedDict):
        return list(node), ("ordered",)
    try:
        keys = sorted(node)
    except TypeError:
        keys = sorted(node, key=repr)
    if isinstance(node, defaultdict):
        return keys, ("default", node.default_factory)
    return keys, ()


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    """The pytree of structure `treedef` holding `leaves` (in `tree_flatten`'s order)."""
    return _build(treedef, iter(leaves))


def _build(node: PyTreeDef, it):
    kind = node.kind
    if kind is _LeafKind:
        return next(it)
    if kind is type(None):
        return None
    values = [_build(c, it) for c in node.children]
    if kind is list:
        return values
    if kind is tuple:
        return tuple(values)
    if kind is dict:
        pairs = zip(node.aux[0], values)
        if len(node.aux) == 1:
            return dict(pairs)
        return OrderedDict(pairs) if node.aux[1] == "ordered" else defaultdict(node.aux[2], pairs)
    entry = _registry.get(kind)
    if entry is not None:
        return entry.unflatten(node.aux, values)
    return kind(*values)                                          # a namedtuple


def tree_leaves(tree: Any, is_leaf: Callable | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.kind is _LeafKind


def all_leaves(iterable) -> bool:
    """Whether every element of `iterable` is a leaf (flattens to itself)."""
    return all(tree_structure(x) == _LEAF for x in iterable)


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    """`f` applied to the leaves of `tree` (and the matching leaves of each tree in `rest`,
    which must have `tree`'s structure, or `tree`'s as a prefix)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [flatten_up_to(treedef, r) for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


def tree_all(tree: Any) -> bool:
    return all(tree_leaves(tree))


def tree_reduce(function: Callable, tree: Any, *initializer) -> Any:
    import functools
    return functools.reduce(function, tree_leaves(tree), *initializer)


# -- prefixes ----------------------------------------------------------------------------------
def flatten_up_to(treedef: PyTreeDef, tree: Any) -> list:
    """The subtrees of `tree` at the leaf positions of `treedef` (a prefix of its structure):
    `vmap`'s `in_axes` against the arguments. Raises ValueError where they differ."""
    out: list = []
    _up_to(treedef, tree, out, None)
    return out


def flatten_like(treedef: PyTreeDef, tree: Any) -> list:
    """As `flatten_up_to`, but a `None` in `tree` stands for `None` at every leaf below it
    (TensorFlow's `output_gradients=[None, g]`)."""
    out: list = []
    _up_to(treedef, tree, out, "none-fills")
    return out


def _up_to(node: PyTreeDef, value, out: list, mode) -> None:
    if node.kind is _LeafKind:
        out.append(value)
        return
    if node.kind is type(None):
        if value is not None:          # (JAX's rule: None is a node with no children)
            raise ValueError(f"expected None, got {value!r:.80}: a None in the first tree "
                             f"matches None alone, not a value")
        return
    if mode == "none-fills" and value is None:
        out.extend([None] * node.num_leaves)
        return
    if node.kind is dict:
        if not isinstance(value, dict) or _sorted_keys(value) != _sorted_keys(node.aux[0]):
            raise ValueError(f"expected a dict with keys {list(node.aux[0])}, got {value!r:.80}")
        children = [value[k] for k in node.aux[0]]
    else:
        children = _children_matching(node, value)
    for child, v in zip(node.children, children):
        _up_to(child, v, out, mode)


def _sorted_keys(keys) -> list:
    return sorted(keys, key=repr)


def _children_matching(node: PyTreeDef, value) -> list:
    if node.kind in (list, tuple) or hasattr(node.kind, "_fields"):
        if not isinstance(value, (list, tuple)) or len(value) != len(node.children):
            raise ValueError(f"expected a list or tuple of {len(node.children)}, "
                             f"got {value!r:.80}")
        return list(value)
    if type(value) is not node.kind:
        raise ValueError(f"expected a {node.kind.__name__}, got {type(value).__name__}")
    children, aux = _registry[node.kind].flatten(value)
    if len(children) != len(node.children) or aux != node.aux:
        raise ValueError(f"a {node.kind.__name__} with different structure ({aux!r:.80})")
    return list(children)


# -- registering node types --------------------------------------------------------------------
def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Makes instances of `nodetype` pytree nodes, as `jax.tree_util.register_pytree_node`:
    `flatten_func(x) -> (children, aux_data)` (aux_data hashable, compared between
    structures), `unflatten_func(aux_data, children) -> x`.

    Example:
        >>> from pforjac import tree_util
        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> tree_util.register_pytree_node(Pair, lambda p: ((p.a, p.b), None),
        ...                                lambda aux, ch: Pair(*ch))
        >>> tree_util.tree_leaves([Pair(1.0, 2.0), 3.0])
        [1.0, 2.0, 3.0]
    """
    if not isinstance(nodetype, type):
        raise TypeError(f"register_pytree_node: nodetype must be a class, got {nodetype!r}")
    with _registry_lock:
        if nodetype in _registry or nodetype in (list, tuple, dict, type(None)):
            raise ValueError(f"register_pytree_node: {nodetype.__name__} is already registered "
                             f"as a pytree node")
        _registry[nodetype] = _Node(flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable, flatten_func: Callable | None = None):
    """As `jax.tree_util.register_pytree_with_keys`: `flatten_with_keys(x) ->
    (((key, child), ...), aux_data)`."""
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


class GetAttrKey(NamedTuple):
    name: str


class DictKey(NamedTuple):
    key: Any


class SequenceKey(NamedTuple):
    idx: int


def register_dataclass(nodetype: type | None = None, data_fields=None, meta_fields=None):
    """Registers a dataclass as a pytree node (usable as a decorator), as
    `jax.tree_util.register_dataclass`: `data_fields` are children (arrays), `meta_fields`
    are static data (compared between structures, e.g. an activation's name). Without them,
    every field is data except those declared `field(metadata=dict(static=True))`.

    Example:
        >>> import dataclasses
        >>> from pforjac import tree_util
        >>> @tree_util.register_dataclass
        ... @dataclasses.dataclass
        ... class Params:
        ...     w: float
        ...     b: float
        >>> tree_util.tree_map(lambda x: x + 1, Params(1.0, 2.0))
        Params(w=2.0, b=3.0)
    """
    if nodetype is None:
        return lambda cls: register_dataclass(cls, data_fields, meta_fields)
    if not dataclasses.is_dataclass(nodetype):
        raise TypeError(f"register_dataclass: {nodetype!r} is not a dataclass; decorate it "
                        f"with @dataclasses.dataclass first (or use register_pytree_node)")
    if data_fields is None:
        fields = [f for f in dataclasses.fields(nodetype) if f.init]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data, meta = tuple(data_fields), tuple(meta_fields or ())
    missing = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(data) - set(meta)
    if missing:         # (a field in neither list would be dropped from every flatten)
        raise ValueError(f"register_dataclass: data_fields and meta_fields must name every "
                         f"field of {nodetype.__name__} taken by __init__; missing: "
                         f"{sorted(missing)}")

    def flatten_with_keys(x):
        return ([(GetAttrKey(k), getattr(x, k)) for k in data],
                tuple(getattr(x, k) for k in meta))

    def unflatten(aux, children):
        return nodetype(**dict(zip(data, children)), **dict(zip(meta, aux)))
    register_pytree_with_keys(nodetype, flatten_with_keys, unflatten)
    return nodetype

