"""The lean call path of `pforjac.function`: numpy arrays in, numpy arrays out, in about a
microsecond on top of the generated code.

A call whose positional arguments are all plain `numpy.ndarray`s and Python floats, or
plain dicts (str keys), lists and tuples of them, nested, made at top level (no tape
recording, no trace open), is keyed by `lean_key`: each array's exact shape, strides and
dtype, each float's value, each container's type, length and (a dict's) keys in order. The first such call goes the general way
(binding the signature, flattening, the trace cache); it leaves a `lean_entry` under that
key, which later calls with the same key run directly: the arrays straight into the
compiled code, its outputs straight out as read-only arrays. Nothing else is looked at,
so an entry is made only where nothing else could change the result:

- a different dtype, shape or memory layout (strides), a dict's keys in another order or
  another set of them, a Tensor, an ndarray subclass, a namedtuple, a registered pytree
  node, a keyword argument or any other argument or leaf type gives another key, or none
  (the general path);
- rules registered since, or a changed `pforjac.config.backend`, make the Function drop
  its entries (it checks both on every call, before looking one up);
- a call that filled in a default argument (read at every call) makes no entry;
- code that has structure guards or reads Variables, or whose trace deferred warnings,
  runs through its `_Compiled.run`, as the general path does.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..tree_util import _LEAF, _LeafKind, tree_flatten, tree_unflatten

__all__ = ["lean_key", "lean_entry"]


def lean_key(args: tuple):
    """The lean key of positional arguments, or None when one is not a plain ndarray or a
    Python float. Floats are keys by value, as they are part of the trace signature; 0.0,
    -0.0 and NaN by their repr (0.0 == -0.0, and NaN equals nothing)."""
    key = ()
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            key += (a.shape, a.strides, a.dtype)
        elif kind is float:
            key += (a if a == a and a != 0.0 else repr(a),)
        elif kind is dict or kind is list or kind is tuple:
            return _tree_key(args)
        else:
            return None
    return key


class _Mark:
    """A container's place in a tree key (compares by identity: no leaf's token equals it)."""
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


_TREE, _DICT, _LIST, _TUPLE, _NONE = (_Mark(n) for n in ("tree", "dict", "list", "tuple",
                                                             "None"))


def _tree_key(args: tuple):
    """The lean key of arguments some of which are plain dicts, lists or tuples: a prefix
    code, each container a mark and its length or keys (in the dict's own order), then its
    children; each array one token (shape, strides, dtype), each float its value. None when
    a dict key is not a str (1, 1.0 and True are equal keys, different signatures) or a
    leaf is neither an ndarray nor a float nor None."""
    out = [_TREE]
    for a in args:
        kind = type(a)
        if kind is np.ndarray:      # (a model's usual arguments, arrays and a dict of
            out.append((a.shape, a.strides, a.dtype))     # arrays, without a call a leaf)
        elif kind is dict:
            out.append(_DICT)
            out.append(tuple(a))
            for k, v in a.items():
                if type(k) is not str:
                    return None
                if type(v) is np.ndarray:
                    out.append((v.shape, v.strides, v.dtype))
                elif not _walk(v, out):
                    return None
        elif not _walk(a, out):
            return None
    return tuple(out)


def _walk(node, out: list) -> bool:
    kind = type(node)
    if kind is np.ndarray:
        out.append((node.shape, node.strides, node.dtype))
    elif kind is dict:
        out += (_DICT, tuple(node))
        for k, v in node.items():
            if type(k) is not str:
                return False
            if type(v) is np.ndarray:        # (the common leaf, without a call)
                out.append((v.shape, v.strides, v.dtype))
            elif not _walk(v, out):
                return False
    elif kind is float:
        out.append(node if node == node and node != 0.0 else repr(node))
    elif kind is list or kind is tuple:
        out += (_LIST if kind is list else _TUPLE, len(node))
        for v in node:
            if type(v) is np.ndarray:
                out.append((v.shape, v.strides, v.dtype))
            elif not _walk(v, out):
                return False
    elif node is None:
        out.append(_NONE)
    else:
        return False
    return True


def lean_entry(compiled, args: tuple, dense: Callable) -> Callable | None:
    """`call(args) -> result` for calls whose `lean_key` is that of `args`, running
    `compiled` (a `_Compiled`); `dense(compiled)` is its dense twin, for structure guards
    that refuse a call's values. None if the arguments' input arrays, taken as the entry
    would take them, are not those the general path flattened (then no entry)."""
    if all(type(a) is np.ndarray or type(a) is float for a in args):
        slots = [k for k, a in enumerate(args) if type(a) is np.ndarray]
        copy = [not args[k].flags.c_contiguous for k in slots]
        take = _taker(slots, copy, len(args))
    else:
        take = _tree_taker(args)
        if take is None:
            return None
    finish = _finisher(compiled.program)
    if compiled.n_guards or compiled._variables or compiled.warnings:
        return _checked_entry(compiled, take, finish, dense)
    code, tail = _code(compiled)
    if take is not None:
        return lambda args: finish(code(*take(args), *tail))
    if finish is not _one_array:
        return lambda args: finish(code(*args, *tail))

    def call(args):         # the common case, written out: a frame less is 5% of a call
        o = code(*args, *tail)[0]
        if not o.flags.c_contiguous:
            o = np.ascontiguousarray(o)
        return np.asarray(memoryview(o).toreadonly())
    return call


def _code(compiled) -> tuple[Callable, tuple]:
    """(code, the arguments after the inputs): a backend's runner that can skip its own
    preparation (numba's dispatcher itself) gives a direct function of the inputs;
    generated numpy code takes the constants last."""
    direct = getattr(compiled.code, "direct", None)
    if direct is not None:
        return direct(compiled._consts), ()
    return compiled.code, (compiled._consts,)


def _checked_entry(compiled, take, finish, dense) -> Callable:
    def call(args):
        arrays = args if take is None else take(args)
        outs = compiled.run(arrays)
        if outs is None:                # a structure guard failed: NaN/Inf/zero present
            twin = dense(compiled)
            outs = twin.run(arrays)
            twin.warn()
        else:
            compiled.warn()
        return finish(outs)
    return call


def _taker(slots: list, copy: list, n_args: int) -> Callable | None:
    """`take(args) -> input arrays` (C-ordered, as `pforjac.constant` makes them), or None
    when the arguments are those arrays already."""
    if len(slots) == n_args and not any(copy):
        return None
    if not any(copy):
        return lambda args: [args[k] for k in slots]
    pairs = list(zip(slots, copy))
    return lambda args: [np.ascontiguousarray(args[k]) if c else args[k] for k, c in pairs]


def _tree_taker(args: tuple) -> Callable | None:
    """`take(args) -> input arrays` for arguments of this tree key: one generated
    expression per array leaf, in the general path's flattening order (plain dicts by
    sorted keys), copied C-ordered where the leaf is not; checked once against
    `tree_flatten` of `args` itself."""
    paths: list = []
    _paths(args, "a", paths)
    exprs = [f"C({p})" if not leaf.flags.c_contiguous else p for p, leaf in paths]
    take = eval(f"lambda a: [{', '.join(exprs)}]", {"C": np.ascontiguousarray})
    leaves = [x for x in tree_flatten(args)[0] if type(x) is np.ndarray]
    if len(leaves) != len(paths) or any(x is not leaf for x, (_, leaf) in zip(leaves, paths)):
        return None
    return take


def _paths(node, path: str, out: list) -> None:
    """(expression, array) of each array leaf under `node`, reached as `path`."""
    kind = type(node)
    if kind is np.ndarray:
        out.append((path, node))
    elif kind is dict:
        for k in sorted(node):               # (str keys alone: lean_key saw to that)
            _paths(node[k], f"{path}[{k!r}]", out)
    elif kind is list or kind is tuple:
        for i, v in enumerate(node):
            _paths(v, f"{path}[{i}]", out)


def _finisher(program) -> Callable:
    """`finish(outputs) -> result`: the program's output tree of read-only C-ordered arrays,
    0-d outputs numpy scalars of their dtype (as `pforjac.boundary.numpy_result`)."""
    wraps = [_out_wrapper(v) for v in program.outputs]
    tree = program.out_tree
    if tree == _LEAF:
        wrap = wraps[0]
        return _one_array if wrap is _read_only else lambda outs: wrap(outs[0])
    built = _builder(tree, wraps)
    if built is not None:
        return built
    return lambda outs: tree_unflatten(tree, [w(o) for w, o in zip(wraps, outs)])


def _builder(tree, wraps: list) -> Callable | None:
    """`finish(outputs)` as one generated expression building the output tree (`W3(o[3])`
    for a leaf, dict/list/tuple displays for the containers), or None where the tree has
    another node type (an OrderedDict, a namedtuple, a registered node): `tree_unflatten`
    builds those. A plain dict's keys come in the order `tree_unflatten` inserts them."""
    names: dict = {f"W{i}": w for i, w in enumerate(wraps)}
    counter = iter(range(len(wraps)))

    def build(node) -> str | None:
        if node.kind is _LeafKind:
            i = next(counter)
            return f"W{i}(o[{i}])"
        parts = [build(c) for c in node.children]
        if any(p is None for p in parts):
            return None
        if node.kind is type(None):
            return "None"
        if node.kind is list:
            return f"[{', '.join(parts)}]"
        if node.kind is tuple:
            return f"({''.join(p + ', ' for p in parts)})"
        if node.kind is dict and len(node.aux) == 1:
            keys = [f"K{len(names) + j}" for j in range(len(parts))]
            names.update(zip(keys, node.aux[0]))
            return "{" + ", ".join(f"{k}: {p}" for k, p in zip(keys, parts)) + "}"
        return None
    source = build(tree)
    return None if source is None else eval(f"lambda o: {source}", names)


def _out_wrapper(var) -> Callable:
    dtype = np.dtype(var.dtype)
    if len(var.shape) == 0:
        scalar = dtype.type
        return lambda o: scalar(o)
    if dtype.kind in "OMm":       # (no buffer protocol for these: the array itself)
        return lambda o: o if o.flags.c_contiguous else np.ascontiguousarray(o)
    return _read_only


def _read_only(o: np.ndarray) -> np.ndarray:
    if not o.flags.c_contiguous:      # generated code may end in a transposed view
        o = np.ascontiguousarray(o)
    return np.asarray(memoryview(o).toreadonly())


def _one_array(outs) -> np.ndarray:
    return _read_only(outs[0])
