"""Elementwise results as explicit loop nests, and views as index maps, for numba_codegen.

numba compiles a whole-array expression over operands of other shapes or layouts (a
broadcast row, a transposed view) through its generic broadcasting iterators, which
walk strides and check shapes for every element, and compiling them is a good part of
a program's compile time. A loop nest over the result's shape that reads each operand
at its own index (a broadcast axis at 0, a transposed one with its loop's index) is what
numba compiles best: scalar loads, the inner loop along the result's last axis, and every
value that does not change along the inner loops computed once, outside them.

The views (`view_map`: transpose, broadcast_to, a reshape adding or dropping axes of
length 1, basic indexing, identities) become index maps: a loop reads the array under
them directly, and a view is made (by its lowering rule) only where other code names it.
"""
from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Callable

import numpy as np

from .numba_lowering import NotLowered, new_array
from .numba_merge import merged_loops

__all__ = ["view_maps", "basic_index", "broadcast", "LoopNest", "scalar_equation", "ScalarContext"]

IndexMap = Callable[[list], list]       # a view's index texts -> its operand's index texts


def view_maps(eqn, ctx=None, args=None) -> list[IndexMap] | None:
    """The index maps of a view equation (from each output's index texts to its operand's),
    or None where the equation is not one. A gather along an axis is one too: reading an
    element reads its position, which a kernel checks once (`ctx`: where its statement
    goes, `args`: the equation's operands). A reshape that merges or splits axes is one
    only of a value that is not a plain array (strided, or computed where it is read):
    of an array, numba's reshape is free and its loops index it without arithmetic."""
    if eqn.prim.name == "gather" and ctx is not None:
        return _gather_map(eqn, ctx, args)
    if len(eqn.inputs) != 1 or eqn.inputs[0].ndim == 0:
        return None
    x, out, name = eqn.inputs[0], eqn.outputs[0], eqn.prim.name
    if name == "split":
        axis, bounds = eqn.params["axis"] % x.ndim, [0, *eqn.params["indices"], x.shape[eqn.params["axis"] % x.ndim]]
        return [_basic_index((slice(None),) * axis + (slice(int(a), int(b)),), tuple(x.shape))
                for a, b in zip(bounds, bounds[1:])]
    if name == "transpose":
        perm = tuple(eqn.params["perm"])
        return [lambda idx: [idx[perm.index(k)] for k in range(x.ndim)]]
    if name == "broadcast_to":
        lead = out.ndim - x.ndim
        return [lambda idx: ["0" if d == 1 else idx[lead + k] for k, d in enumerate(x.shape)]]
    found = {"reshape": lambda: _unit_reshape(tuple(x.shape), tuple(out.shape)) or (
                 _reshape(tuple(x.shape), tuple(out.shape)) if ctx is not None and (
                     id(x) in ctx.strided or id(x) in ctx.inlined) else None),
             "setitem_zeros": lambda: _placed(eqn.params["key"], tuple(out.shape), tuple(x.shape)),
             "getitem": lambda: _basic_index(eqn.params["key"], tuple(x.shape))}.get(name, lambda: None)()
    return None if found is None else [found]


def _gather_map(eqn, ctx, args) -> list[IndexMap] | None:
    from .numba_lowering import positioned
    from .numba_lowering_arrays import flat_indices
    x, idx = eqn.inputs
    if x.ndim == 0 or idx.ndim == 0 or idx.dtype.kind not in "iu":
        return None
    axis = eqn.params["axis"] % x.ndim
    call = f"K.positions({flat_indices(ctx, idx, args[1])}, {int(x.shape[axis])})"
    at = ctx.positions.get(call) if _unchanging(ctx, args[1]) else None
    if at is None:
        at = ctx.fresh()
        ctx.emit(f"{at} = {call}")
        ctx.positions[call] = at
    return [lambda index: positioned(index, axis, tuple(idx.shape), at)]


def _unchanging(ctx, name: str) -> bool:
    """Whether the array `name` is an input or a constant (no statement assigns it: its
    values are those of the first read), whose positions a second gather reads again
    instead of computing them (a statement fewer to compile)."""
    if re.fullmatch(r"\w+", name) is None or name in ctx.pending:
        return False
    assigned = re.compile(rf"^(?:\w+, )*{name}(?:, \w+)* = ")
    return not any(assigned.match(line) for line in ctx.lines)


def _placed(key, shape: tuple, part: tuple) -> IndexMap | None:
    """The map of zeros of `shape` with `part` written at `key` (ints and slices of step 1,
    `part` the shape of that region): (the part's index, the conditions of being inside
    it); outside, a read gives 0."""
    found = basic_index(key, shape)
    parts = list(key) if isinstance(key, tuple) else [key]
    if found is None or found[1] != part or any(k is None or k is Ellipsis for k in parts) \
            or any(isinstance(k, slice) and k.step not in (None, 1) for k in parts):
        return None
    bounds = [(k, None) if not isinstance(k, slice) else k.indices(d)[:2]
              for k, d in zip(parts + [slice(None)] * (len(shape) - len(parts)), shape)]

    def index(idx):
        inside, at = [], []
        for i, (lo, hi), d in zip(idx, bounds, shape):
            if hi is None:
                inside.append(f"{i} == {int(lo) % d}")
                continue
            at.append(i if lo == 0 else f"({i} - {lo})")
            if (lo, hi) != (0, d):
                inside.append(f"{i} >= {lo} and {i} < {hi}")
        return at, inside
    return index


def _unit_reshape(shape: tuple, new: tuple) -> IndexMap | None:
    """A reshape that only adds or drops axes of length 1."""
    kept, new_kept = [k for k, d in enumerate(shape) if d != 1], [k for k, d in enumerate(new) if d != 1]
    if [shape[k] for k in kept] != [new[k] for k in new_kept]:
        return None

    def index(idx):
        out = ["0"] * len(shape)
        for a, b in zip(kept, new_kept):
            out[a] = idx[b]
        return out
    return index


def _reshape(shape: tuple, new: tuple) -> IndexMap | None:
    """A C-order reshape: axes of length 1 added or dropped, else each group of axes whose
    sizes multiply alike read at its flat position (merged axes: a sum of strided indices;
    split ones: quotients and remainders)."""
    found = _unit_reshape(shape, new)
    if found is not None or 0 in shape:
        return found
    groups = _groups(shape, new)

    def index(idx):
        out = []
        for ins, outs in groups:
            terms = [idx[o] if _size(new[o + 1:outs[-1] + 1]) == 1 else f"{idx[o]} * {_size(new[o + 1:outs[-1] + 1])}"
                     for o in outs if idx[o] != "0"]
            flat = " + ".join(terms) or "0"
            for p, j in enumerate(ins):
                inner, d = _size(shape[j + 1:ins[-1] + 1]), shape[j]
                part = f"({flat})" if inner == 1 else f"(({flat}) // {inner})"
                out.append("0" if d == 1 else part if p == 0 else f"({part} % {d})")
        return out
    return index


def _size(dims) -> int:
    return int(np.prod(dims, dtype=np.int64))


def _groups(shape: tuple, new: tuple) -> list[tuple[list, list]]:
    """The axes of `shape` and `new` in groups of equal products, in order."""
    groups, i, j = [], 0, 0
    while i < len(shape) and j < len(new):
        ins, outs, a, b = [i], [j], shape[i], new[j]
        i, j = i + 1, j + 1
        while a != b:
            if a < b:
                ins.append(i)
                a, i = a * shape[i], i + 1
            else:
                outs.append(j)
                b, j = b * new[j], j + 1
        groups.append((ins, outs))
    groups[-1][0].extend(range(i, len(shape)))      # (axes of length 1 left over)
    groups[-1][1].extend(range(j, len(new)))
    return groups


def _basic_index(key, shape: tuple) -> IndexMap | None:
    found = basic_index(key, shape)
    return None if found is None else found[0]


def basic_index(key, shape: tuple) -> tuple[IndexMap, tuple] | None:
    """(the index map of x[key], the shape of x[key]) for a key of ints, slices, None and
    one Ellipsis: per axis of x, a fixed position or (start, step, the output axis it runs
    along); None for any other key."""
    parts = list(key) if isinstance(key, tuple) else [key]
    if sum(k is Ellipsis for k in parts) > 1:
        return None
    taking = sum(k is not None and k is not Ellipsis for k in parts)
    if any(k is Ellipsis for k in parts):
        at = next(j for j, k in enumerate(parts) if k is Ellipsis)
        parts[at:at + 1] = [slice(None)] * (len(shape) - taking)
    parts += [slice(None)] * (len(shape) - sum(k is not None for k in parts))
    plan, result, axis = [], [], 0
    for k in parts:
        if k is None:
            result.append(1)
            continue
        if isinstance(k, slice) and all(v is None or isinstance(v, (int, np.integer))
                                        for v in (k.start, k.stop, k.step)):
            start, stop, step = k.indices(shape[axis])
            plan.append((start, step, len(result)))
            result.append(len(range(start, stop, step)))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool) and -shape[axis] <= k < shape[axis]:
            plan.append((int(k) % shape[axis], 0, None))
        else:
            return None
        axis += 1
    return (lambda idx: [_affine(start, step, None if a is None else idx[a]) for start, step, a in plan],
            tuple(result))


def _affine(start: int, step: int, index: str | None) -> str:
    if index is None or step == 0 or index == "0":
        return str(start)
    scaled = index if step == 1 else f"{step} * {index}"
    return scaled if start == 0 else f"({start} + {scaled})"


class _ScalarVar(SimpleNamespace):
    """An equation's value seen as one element: shape (), its dtype (`whole_ndim`: the rank
    of the value it is an element of)."""


def scalar_equation(eqn):
    """The equation on single elements (0-d operands and result of the same dtypes): its
    lowering rule then gives the code computing one element."""
    def one(v):
        return _ScalarVar(shape=(), ndim=0, dtype=v.dtype, name=v.name, whole_ndim=v.ndim)
    return SimpleNamespace(prim=eqn.prim, params=eqn.params, inputs=[one(v) for v in eqn.inputs],
                           outputs=[one(v) for v in eqn.outputs])


class ScalarContext:
    """What a rule sees while it writes the code of one element: no statements (a rule
    that needs them declines, and the equation is lowered as a whole array)."""

    def __init__(self):
        self.strided: set[int] = set()

    def emit(self, line: str) -> None:
        raise NotLowered("a rule needing statements, inside a loop")

    def follow(self, out, x) -> None:
        pass

    def contiguous(self, var, expr: str) -> str:
        return expr


_LOOP_INDEX = re.compile(r"\bi_(\d+)\b")


def _depth(text: str) -> int:
    """How many loops deep a text must be computed: one past its innermost loop index."""
    return max((int(m) + 1 for m in _LOOP_INDEX.findall(text)), default=0)


class LoopNest:
    """One loop nest writing an array of `shape`: values are computed at the shallowest
    loop that has every index they read (`value`, `load`), the result is stored in the
    innermost (`render`). Axes of length 1 get no loop. Given `arrays` (the shape of a
    C-contiguous array by name, else None), adjacent loops that every array indexes
    alike run as one (numba_merge.py)."""

    def __init__(self, shape: tuple, fresh: Callable[[], str],
                 arrays: Callable[[str], tuple | None] | None = None):
        self.shape, self.fresh, self.arrays = tuple(shape), fresh, arrays
        self.index = ["0" if d == 1 else f"i_{k}" for k, d in enumerate(self.shape)]
        self.levels: list[list[str]] = [[] for _ in range(len(self.shape) + 1)]
        self.after: list[list[str]] = [[] for _ in range(len(self.shape) + 1)]
        self.loads: dict[str, tuple[str, int]] = {}
        self.elements: dict[tuple, tuple[str, int]] = {}    # (id(equation), index) -> its value
        self.target: str | None = None      # the element of a reused array it writes, as read
        self.tables: dict[str, str] | None = {}     # element read -> its table (numba_context; None: none)
        self.before: list[str] = []         # lines filling the tables, before the loops

    def load(self, text: str) -> tuple[str, int]:
        """(a scalar holding `text`, an element read, and its depth), each read once."""
        if text not in self.loads:
            self.loads[text] = self.value(text, _depth(text))
        return self.loads[text]

    def value(self, expr: str, depth: int) -> tuple[str, int]:
        name = "s_" + self.fresh()
        self.levels[depth].append(f"{name} = {expr}")
        return name, depth

    def render(self, out: str, dtype, result: str, into: str | None = None) -> list[str]:
        """The lines making array `out` (a new one of `dtype`, or the array `into`, which
        the loops overwrite: `LoweringContext.reused`) and filling it."""
        return [f"{out} = {into or new_array(self.shape, dtype)}",
                *self.render_store(into and self.target or f"{out}[{', '.join(self.index)}]", result)]

    def render_store(self, target: str | None, result: str | None, op: str = "=") -> list[str]:
        """The lines storing `result` at `target` (an element's text; None: no store) for
        every index, and each level's `after` lines once its inner loops are done."""
        texts = [*self.levels_text(), *([] if target is None else [f"{target} {op} {result}"])]
        found = None if self.arrays is None else merged_loops(self, texts, self.arrays)
        extents, views = {k: d for k, d in enumerate(self.shape) if d != 1}, []
        if found is not None:
            extents, texts, views = found
        text = iter(texts)
        lines, indent, indents = self.before + views + [next(text) for _ in self.levels[0]], "", [""]
        for k, d in enumerate(self.shape):
            if k in extents:
                lines.append(f"{indent}for i_{k} in range({extents[k]}):")
                indent += "    "
            indents.append(indent)
            lines += [indent + next(text) for _ in self.levels[k + 1]]
        after = [[next(text) for _ in level] for level in self.after]
        if target is not None:
            lines.append(indent + next(text))
        for k in reversed(range(len(self.shape) + 1)):
            lines += [indents[k] + line for line in after[k]]
        return lines

    def levels_text(self) -> list[str]:
        """The statements of every level, then the `after` lines of every level, in order."""
        return [line for level in self.levels for line in level] + \
            [line for level in self.after for line in level]


def broadcast(index: list, shape: tuple) -> list[str]:
    """The index texts of an operand of `shape` read at `index` (numpy's broadcasting:
    trailing axes aligned, length-1 axes at 0)."""
    lead = len(index) - len(shape)
    return ["0" if d == 1 else index[lead + k] for k, d in enumerate(shape)]
