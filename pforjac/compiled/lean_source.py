"""The source of a lean entry (lean_call.py): one generated Python function that checks a
call's arguments against those its entry was made for, runs the compiled code on their
arrays and builds the result, with no Python frame between these steps.

For a call `f(params, X, Y)` with a dict of two arrays, the entry reads

    def call(args):
        if len(args) != 3:
            return MISS
        a0, a1, a2 = args
        if type(a0) is not dict or tuple(a0) != K0:
            return MISS
        a0_0, a0_1 = a0.values()
        if not (type(a0_0) is ndarray and a0_0.shape == S0 and a0_0.strides == T0
                and a0_0.dtype is D0 and ...):
            return MISS
        o = code(a0_1, a0_0, a1, a2)
        return {N0: asarray(memoryview(o[0]).toreadonly()), ...}

(the code's inputs in the general path's flattening order: a dict's by sorted keys). Each
array is checked by its exact shape, strides and dtype, each float by its value (its bits
for 0.0, -0.0 and NaN), each container by its type, length and (a dict's) keys in order:
what `lean_key` keys. A call that does not match gets `MISS`, and takes the keyed way.
"""
from __future__ import annotations

import os
import struct
from typing import Callable

import numpy as np

from .. import core
from ..state import _state
from ..tree_util import _LeafKind

__all__ = ["MISS", "entry_source", "float_bits"]


class _Miss:
    """What an entry returns for arguments it was not made for."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISS"


MISS = _Miss()


class _Source:
    """Lines of the entry being written and the objects they name."""

    def __init__(self):
        self.lines: list[str] = []
        self.space: dict = {"MISS": MISS, "ndarray": np.ndarray, "C": np.ascontiguousarray,
                            "asarray": np.asarray, "B": float_bits,
                            "FLOATS": frozenset((float, np.float64))}
        self.inputs: dict[str, str] = {}    # path of an array leaf -> expression
        self.floats: dict[str, str] = {}    # path of an argument a float may be -> expression
        self.miss = "MISS"                  # what a call the entry was not made for gets

    def name(self, prefix: str, value) -> str:
        name = f"{prefix}{len(self.space)}"
        self.space[name] = value
        return name

    def refuse_unless(self, conditions: list[str]) -> None:
        if conditions:
            self.lines.append(f"    if not ({' and '.join(conditions)}):")
            self.lines.append(f"        return {self.miss}")


def entry_source(args: tuple, paths: list[str], code, tail: tuple, result: str,
                 guards: list[int], space: dict, floats: dict | None = None,
                 full: Callable | None = None) -> Callable:
    """The entry for calls like `args`: `paths` are its array leaves' paths (`a[0]['w']`) in
    the code's input order, `result` the expression of the result from the code's outputs
    `o` (its names in `space`), `guards` the positions of outputs that must be true, else
    the outputs are those of `dense(*input arrays)` (in `space`). `floats`: {position of a
    0-d float64 array argument: how it is passed, as a format string of its name (`"{}"`,
    `"F({})"`)}; a Python float (or a numpy float64, as scipy's solvers pass their time)
    may be given there instead. With `full`, the entry is
    `call(*args)`, which calls `full(*args)` instead of answering MISS, and also at a call
    inside a tape or a trace, or after rules were registered (Function.specialize)."""
    src = _Source()
    src.space.update(space, code=code, tail=tail)
    src.floats = {f"a[{k}]": e for k, e in (floats or {}).items()}
    if full is not None:
        src.miss = "full(*args)"
        src.space.update(full=full, state=_state, core=core, GENERATION=core.rules_generation)
        src.lines += ["def call(*args):",
                      "    s = state.__dict__",      # (one read of the thread-local)
                      "    if s['tapes'] or s['traces'] or core.rules_generation != GENERATION:",
                      "        return full(*args)"]
    else:
        src.lines.append("def call(args):")
    names = [f"a{k}" for k in range(len(args))]
    if args:                      # (unpacking checks the count: no len() call)
        src.lines += ["    try:", f"        {''.join(n + ', ' for n in names)}= args",
                      "    except ValueError:", f"        return {src.miss}"]
    else:
        src.lines += ["    if args:", f"        return {src.miss}"]
    _check_children(src, list(zip(args, names, [f"a[{k}]" for k in range(len(args))])))
    inputs = ", ".join(src.inputs[p] for p in paths)
    after = [src.name("A", t) for t in tail]      # (no tuple unpacked a call; no inputs: a
    call = f"code({', '.join([inputs] * bool(paths) + after)})"      # float's call)
    if full is None:
        src.lines.append(f"    o = {call}")
    else:        # (an index out of bounds: the Function's own call names the op and index)
        src.lines += ["    try:", f"        o = {call}",
                      "    except IndexError:", "        o = None",
                      "    if o is None:", "        return full(*args)"]
    if guards:
        src.lines.append(f"    if not ({' and '.join(f'o[{k}]' for k in guards)}):")
        src.lines.append(f"        o = dense({inputs})")
    src.lines.append(f"    return {result}")
    return _compiled("\n".join(src.lines) + "\n", src.space)


def _compiled(source: str, space: dict) -> Callable:
    """The function `call` of `source`, under a file name in this package, so warnings the
    code shows point past it, at the user's line. The bytecode is kept per source text
    (what varies between entries of one text, the arrays and functions it calls, is in
    `space`), so a function traced again, as a solver helper does once per solve, does
    not compile the same text again."""
    code = _CODE.get(source)
    if code is None:
        if len(_CODE) >= _CODE_MAX:
            _CODE.clear()
        code = _CODE[source] = compile(source, _FILE, "exec")
    exec(code, space)
    return space["call"]


_CODE: dict = {}
_CODE_MAX = 512                    # texts kept (an entry's text is a few hundred bytes)


_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "<lean entry>")



def _check_children(src: _Source, children: list) -> None:
    """Checks of `children` ((value, name, path)): their own conditions together, then, for
    each container among them, its unpacking and its children's."""
    conditions, containers = [], []
    for value, name, path in children:
        kind = type(value)
        if kind is np.ndarray and path in src.floats:
            conditions.append(f"(type({name}) in FLOATS or {_array_check(src, value, name)})")
            src.inputs[path] = src.floats[path].format(name)
        elif kind is np.ndarray:
            conditions.append(_array_check(src, value, name))
            src.inputs[path] = name if value.flags.c_contiguous else f"C({name})"
        elif kind is float:
            conditions.append(_float_check(src, value, name))
        elif value is None:
            conditions.append(f"{name} is None")
        else:
            conditions.append(_container_check(src, value, name))
            containers.append((value, name, path))
    src.refuse_unless(conditions)
    for value, name, path in containers:
        _unpack(src, value, name, path)


def _array_check(src: _Source, a: np.ndarray, name: str) -> str:
    shape, strides, dtype = (src.name(p, v) for p, v in
                             (("S", a.shape), ("T", a.strides), ("D", a.dtype)))
    return (f"type({name}) is ndarray and {name}.shape == {shape} and "
            f"{name}.strides == {strides} and {name}.dtype is {dtype}")


def _float_check(src: _Source, value: float, name: str) -> str:
    if value == value and value != 0.0:
        return f"type({name}) is float and {name} == {src.name('V', value)}"
    return f"type({name}) is float and B({name}) == {src.name('V', float_bits(value))}"


def float_bits(x: float) -> bytes:
    """A float's bits: the key of 0.0, -0.0 and NaN (of each sign and payload), which
    equality cannot tell apart or match."""
    return struct.pack("<d", x)


def _container_check(src: _Source, node, name: str) -> str:
    kind = type(node)
    if kind is dict:
        return f"type({name}) is dict and tuple({name}) == {src.name('K', tuple(node))}"
    return f"type({name}) is {kind.__name__} and len({name}) == {len(node)}"


def _unpack(src: _Source, node, name: str, path: str) -> None:
    """Names the children of a checked container (a dict's values in its own order, which
    its key check fixed), then checks them."""
    if type(node) is dict:
        items = list(node.items())
        children = [(v, f"{name}_{j}", f"{path}[{k!r}]") for j, (k, v) in enumerate(items)]
        source = f"{name}.values()"
    else:
        children = [(v, f"{name}_{j}", f"{path}[{j}]") for j, v in enumerate(node)]
        source = name
    if children:
        src.lines.append(f"    {''.join(c[1] + ', ' for c in children)}= {source}")
    _check_children(src, children)


def result_source(tree, wraps: list, c_wrap: Callable, plain_wrap: Callable,
                  space: dict, as_is: Callable | None = None,
                  fresh_wrap: Callable | None = None) -> str | None:
    """The expression building the program's output tree from its outputs `o`: a C-ordered
    array leaf (`c_wrap`) written out, one the code made afresh (`fresh_wrap`, lean_call's
    `_read_only_fresh`) too, `plain_wrap` as `R(o[i])`, `as_is` as `o[i]`, other leaves
    `Wi(o[i])`;
    dict/list/tuple displays for the containers (a plain dict's keys in the order
    `tree_unflatten` inserts them). None where the tree has another node type (an
    OrderedDict, a namedtuple, a registered node): `tree_unflatten` builds those."""
    counter = iter(range(len(wraps)))

    def leaf(i: int) -> str:
        w = wraps[i]
        if w is as_is:
            return f"o[{i}]"
        if w is c_wrap:
            return f"asarray(memoryview(o[{i}]).toreadonly())"
        if w is fresh_wrap:
            return (f"(x{i}.setflags(write=False) or x{i}.view()) if (x{i} := o[{i}]).flags.owndata"
                    f" else asarray(memoryview(x{i}).toreadonly())")
        if w is plain_wrap:
            return f"R(o[{i}])"
        space[f"W{i}"] = w
        return f"W{i}(o[{i}])"

    def build(node) -> str | None:
        if node.kind is _LeafKind:
            return leaf(next(counter))
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
            keys = [f"N{len(space) + j}" for j in range(len(parts))]
            space.update(zip(keys, node.aux[0]))
            return "{" + ", ".join(f"{k}: {p}" for k, p in zip(keys, parts)) + "}"
        return None
    space["R"] = plain_wrap
    return build(tree)
