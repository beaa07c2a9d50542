"""The lean call path of `pforjac.function`: numpy arrays in, numpy arrays out, in about a
microsecond on top of the compiled code.

A call whose positional arguments are all plain `numpy.ndarray`s and Python floats, or
plain dicts (str keys), lists and tuples of them, nested, made at top level (no tape
recording, no trace open), is keyed by `lean_key`: each array's exact shape, strides and
dtype, each float's value, each container's type, length and (a dict's) keys in order.
The first such call goes the general way (binding the signature, flattening, the trace
cache); it leaves a `lean_entry` under that key: one generated function (lean_source.py)
that checks a call's arguments against that key itself (answering `MISS` for others),
runs the compiled code on their arrays (numba's compiled entry point on that backend)
and hands its outputs out as read-only arrays. The Function tries the entry of its last
lean call first, then the entry under the call's key. Nothing else is looked at, so an
entry is made only where nothing else could change the result:

- a different dtype, shape or memory layout (strides), a dict's keys in another order or
  another set of them, a Tensor, an ndarray subclass, a namedtuple, a registered pytree
  node, a keyword argument or any other argument or leaf type gives another key, or none
  (the general path);
- rules registered since, or a changed `pforjac.config.backend`, make the Function drop
  its entries (it checks both on every call, before trying one);
- a call that filled in a default argument (read at every call) makes no entry;
- code with structure guards checks them in the entry (the dense twin runs when one
  refuses); code that reads Variables, or whose trace deferred warnings, runs through its
  `_Compiled.run`, as the general path does.
"""
from __future__ import annotations

from typing import Callable, Container

import numpy as np

from ..tree_util import tree_flatten, tree_unflatten
from .lean_source import MISS, entry_source, float_bits, result_source
from .output_layouts import c_ordered_outputs

__all__ = ["lean_key", "lean_entry", "MISS"]


def lean_key(args: tuple):
    """The lean key of positional arguments, or None when one is not a plain ndarray or a
    Python float. Floats are keys by value, as they are part of the trace signature; 0.0,
    -0.0 and NaN by their bits (0.0 == -0.0, and NaN equals nothing)."""
    key = ()
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            key += (a.shape, a.strides, a.dtype)
        elif kind is float:
            key += (a if a == a and a != 0.0 else float_bits(a),)
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
        out.append(node if node == node and node != 0.0 else float_bits(node))
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


def lean_entry(compiled, args: tuple, dense: Callable, floats_at: tuple = (),
               writable: bool = False, full: Callable | None = None) -> Callable | None:
    """`call(args) -> result` for calls whose `lean_key` is that of `args`, running
    `compiled` (a `_Compiled`), that returns `MISS` for other arguments (lean_source.py);
    `dense(compiled)` is its dense twin, for structure guards that refuse a call's values.
    None if the arguments' input arrays, taken as the entry would take them, are not
    those the general path flattened (then no entry). `floats_at`: positions of 0-d
    float64 arguments that may be given as Python floats; `writable`: outputs the code
    makes afresh (sharing no memory with an input, a constant or another output) handed
    out as they are, writable; `full`: the entry is `call(*args)`, calling `full(*args)` for
    the calls it was not made for (`Function.specialize`, lean_source.py)."""
    paths = _input_paths(args)
    if paths is None:
        return None
    program = compiled.program
    if compiled._variables or compiled.warnings:     # (read, shown at every call)
        code, tail, c_ordered, guards = _checked_code(compiled, dense), (), (), []
    else:
        code, tail, c_ordered = _code(compiled)
        guards = _guard_positions(compiled)
    wraps = [_out_wrapper(v, k in c_ordered) for k, v in enumerate(program.outputs)]
    if compiled.backend == "numpy":     # (generated numpy code: fresh arrays of its own)
        wraps = [_read_only_fresh if w is _read_only_c else w for w in wraps]
    if writable:
        wraps = _writable_wraps(wraps, compiled, _probe(code, tail, args, paths))
    space: dict = {"dense": (lambda *arrays: _dense_run(compiled, dense, arrays)),
                   "F": _as_float64}
    result = result_source(program.out_tree, wraps, _read_only_c, _read_only, space, _as_is,
                           _read_only_fresh)
    if result is None:
        space["finish"] = _finisher(program, wraps)
        result = "finish(o)"
    direct = not tail and code is not compiled.code and not compiled._variables and \
        not compiled.warnings          # (numba's entry point: it takes a number for a 0-d)
    floats = {k: "{}" if direct else "F({})" for k in floats_at}
    return entry_source(args, paths, code, tail, result, guards, space, floats, full)


def _as_float64(x) -> np.ndarray:
    return np.asarray(x, np.float64)


def _as_is(o):
    return o


def _probe(code, tail: tuple, args: tuple, paths: list[str]) -> tuple:
    """The code's outputs for the arrays of `args` (C-ordered, as an entry passes them)."""
    arrays = [_c_ordered(eval(p, {"a": args})) for p in paths]
    return tuple(code(*arrays, *tail)), arrays


def _writable_wraps(wraps: list, compiled, probed: tuple) -> list:
    """`wraps` with the array outputs that share no memory with an input, a constant or
    another output handed out as they are (C-ordered)."""
    outs, arrays = probed
    held = [a for a in arrays if a.ndim] + [c for c in compiled._consts
                                            if isinstance(c, np.ndarray) and c.ndim]
    new = list(wraps)
    for k, (w, o) in enumerate(zip(wraps, outs)):
        if w is not _read_only and w is not _read_only_c and w is not _read_only_fresh:
            continue
        others = held + [p for j, p in enumerate(outs) if j != k and isinstance(p, np.ndarray)]
        if not any(np.may_share_memory(o, h) for h in others):
            new[k] = _c_ordered if w is _read_only else _as_is
    return new


def _c_ordered(o: np.ndarray) -> np.ndarray:
    return o if o.flags.c_contiguous else np.ascontiguousarray(o)


def _input_paths(args: tuple) -> list[str] | None:
    """The paths (`a[0]['w']`) of the arguments' array leaves in the general path's
    flattening order (plain dicts by sorted keys), checked once against `tree_flatten`
    of `args` itself; None if they differ."""
    paths: list = []
    _paths(args, "a", paths)
    leaves = [x for x in tree_flatten(args)[0] if type(x) is np.ndarray]
    if len(leaves) != len(paths) or any(x is not leaf for x, (_, leaf) in zip(leaves, paths)):
        return None
    return [p for p, _ in paths]


def _paths(node, path: str, out: list) -> None:
    """(path, array) of each array leaf under `node`, reached as `path`."""
    kind = type(node)
    if kind is np.ndarray:
        out.append((path, node))
    elif kind is dict:
        for k in sorted(node):               # (str keys alone: lean_key saw to that)
            _paths(node[k], f"{path}[{k!r}]", out)
    elif kind is list or kind is tuple:
        for i, v in enumerate(node):
            _paths(v, f"{path}[{i}]", out)


def _guard_positions(compiled) -> list:
    """The positions of the code's structure guards among its outputs (the last ones),
    each guard once (a trace may return one guard twice)."""
    outputs = compiled.program.outputs
    first = len(outputs) - compiled.n_guards
    seen: dict = {}
    for k in range(first, len(outputs)):
        seen.setdefault(id(outputs[k]), k)
    return list(seen.values())


def _code(compiled) -> tuple[Callable, tuple, Container[int]]:
    """(code, the arguments after the inputs, the positions of the array outputs it returns
    C-ordered whatever the inputs): a backend's runner that can skip its own preparation
    (numba's compiled entry point) gives a direct function of the inputs; generated numpy
    code (made for C-contiguous inputs, as the entry passes them) takes the constants last
    (its C-ordered outputs: output_layouts.py)."""
    direct = getattr(compiled.code, "direct", None)
    if direct is not None:
        code, c_ordered = direct(compiled._consts)
        return code, (), range(len(compiled.program.outputs)) if c_ordered else ()
    if compiled.backend != "numpy":
        return compiled.code, (compiled._consts,), ()
    return (compiled.lean_code(), (compiled._consts,),
            c_ordered_outputs(compiled.program, compiled.exact))


def _checked_code(compiled, dense: Callable) -> Callable:
    """The code as `_Compiled.run` runs it (Variables read, the dense twin where a guard
    refuses), its deferred warnings shown, as every call must."""
    def code(*arrays):
        outs = compiled.run(arrays)
        if outs is None:                # a structure guard failed: NaN/Inf/zero present
            return _dense_run(compiled, dense, arrays)
        compiled.warn()
        return outs
    return code


def _dense_run(compiled, dense: Callable, arrays) -> tuple:
    """The dense twin's outputs (a number given for a 0-d input as the 0-d array it is)."""
    twin = dense(compiled)
    outs = twin.run([a if type(a) is np.ndarray else np.asarray(a, np.float64)
                     for a in arrays])
    twin.warn()
    return outs


def _finisher(program, wraps: list) -> Callable:
    """`finish(outputs) -> result` for output trees of other node types than plain dicts,
    lists and tuples (`tree_unflatten` builds them)."""
    tree = program.out_tree
    return lambda outs: tree_unflatten(tree, [w(o) for w, o in zip(wraps, outs)])


def _out_wrapper(var, c_ordered: bool = False) -> Callable:
    """How an output is handed out: a read-only C-ordered array, 0-d outputs numpy scalars
    of their dtype (as `pforjac.boundary.numpy_result`); `c_ordered`: the code's array
    outputs are C-ordered already."""
    dtype = np.dtype(var.dtype)
    if len(var.shape) == 0:
        return dtype.type
    if dtype.kind in "OMm":       # (no buffer protocol for these: the array itself)
        return lambda o: o if o.flags.c_contiguous else np.ascontiguousarray(o)
    return _read_only_c if c_ordered else _read_only


def _read_only(o: np.ndarray) -> np.ndarray:
    if not o.flags.c_contiguous:      # generated code may end in a transposed view
        o = np.ascontiguousarray(o)
    return np.asarray(memoryview(o).toreadonly())


def _read_only_c(o: np.ndarray) -> np.ndarray:
    return np.asarray(memoryview(o).toreadonly())


def _read_only_fresh(o: np.ndarray) -> np.ndarray:
    """A read-only view of C-ordered `o`, an array the code made for this call: where `o`
    owns its data, `o` itself is made read-only and a view of it handed out (numpy refuses
    to make that view writable again, as it refuses a view of a read-only memoryview; 0.14
    us less an output), else the read-only memoryview's view. Nothing else holds `o`."""
    if o.flags.owndata:
        o.setflags(write=False)
        return o.view()
    return np.asarray(memoryview(o).toreadonly())
