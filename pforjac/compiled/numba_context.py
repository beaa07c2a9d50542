"""What the numba lowering rules see while one program is lowered (`LoweringContext`):
the statements so far, fresh names, which values may not be C-contiguous, the views not
made yet (index maps, numba_loops.py), the elementwise results inlined into their
readers, and the loop nests that read through both: an elementwise result, a copy, a
store into part of an array, a reduction.
"""
from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Callable

import numpy as np

from .numba_lowering import NotLowered, _index_source, new_array, numba_dtype, reshaped, rule_for
from .numba_loops import LoopNest, ScalarContext, basic_index, broadcast, scalar_equation

__all__ = ["LoweringContext", "cheaper_calls"]

_NAME = re.compile(r"\bv_\w+")
_LOOP_INDEX = re.compile(r"\bi_(\d+)\b")
_TABLE_REPEATS = 4          # outer steps reading the same values, from which a table pays
_TABLE_MAX = 1 << 16        # elements of a table (256 KiB of float32: it stays in L2)
_TABLE_MIN_NEST = 1 << 12   # elements of a nest under which a table's allocation costs more
_TRANSPOSE = re.compile(r"\bnp\.transpose\((\w+), \(([\d, ]*)\)\)")


def cheaper_calls(line: str) -> str:
    """`line` with the numpy calls whose numba implementation is slow to compile made
    through cheaper equivalents: transposes of named arrays by `as_strided`; products and
    allocations by the kernels' `K.dot`, `K.empty`, `K.zeros`, cached on disk (numba
    compiles them once per machine and types, not once per program)."""
    return _KERNEL.sub(r"K.\1(", _TRANSPOSE.sub(_strided_transpose, line))


_KERNEL = re.compile(r"\bnp\.(dot|empty|zeros)\(")
_PAIRWISE_MIN = {"f": 8, "c": 4}    # values from which numpy's pairwise order differs from a loop's


def _strided_transpose(found: re.Match) -> str:
    """`np.transpose(x, perm)` of an array named `x` as the same view made by `as_strided`:
    numba's transpose checks its axes with error messages whose formatting takes seconds
    to compile (most of a small program's compile), `as_strided` a fraction of one."""
    name, perm = found.group(1), [p.strip() for p in found.group(2).split(",") if p.strip()]
    shape = "".join(f"{name}.shape[{p}], " for p in perm)
    strides = "".join(f"{name}.strides[{p}], " for p in perm)
    return f"np.lib.stride_tricks.as_strided({name}, ({shape.rstrip()}), ({strides.rstrip()}))"


def _narrow_integer(dtype) -> bool:
    """Whether an element of `dtype` is computed in int64 and truncated to it: numba's
    arithmetic on int8, int16 and int32 scalars may overflow (signed overflow is undefined
    in LLVM, which then keeps the wide value: int8 12 * 12 read as 144, not numpy's -112),
    where int64 arithmetic on their values cannot, and truncating wraps as numpy does."""
    dtype = np.dtype(dtype)
    return dtype.kind in "iu" and dtype.itemsize < 8


def integer_element(eqn, args: list, compute: Callable[[list], str]) -> str:
    """`compute(args)`: the code of an element of the elementwise `eqn` (or of its 0-d
    value); for a narrow integer result, computed on the integer operands as int64 and
    truncated to its dtype (`_narrow_integer`: numba's int8 -45 * -45 was read as 233)."""
    if not _narrow_integer(eqn.outputs[0].dtype):
        return compute(args)
    args = [f"np.int64({a})" if np.dtype(v.dtype).kind in "iu" else a for a, v in zip(args, eqn.inputs)]
    return f"{numba_dtype(eqn.outputs[0].dtype)}({compute(args)})"


class LoweringContext:
    """Statements, fresh names, strided values; views not made yet (`defer`: loops read
    through them; one is made where a statement first names it); inlined results."""

    def __init__(self, names: dict | None = None):
        self.lines: list[str] = []
        self.strided: set[int] = set()
        self.names = names or {}
        self.views: dict[int, tuple] = {}           # id(view) -> (its operand, index map)
        self.pending: dict[str, Callable] = {}      # name of a view not made yet -> makes it
        self.inlined: dict[int, object] = {}        # id(result) -> its elementwise equation
        self.kinds: dict[int, str] = {}             # id(view) -> the op making it
        self.kept: list = []                        # (stand-ins whose ids name arrays)
        self.reusable: dict[str, tuple] = {}        # array its one reader may overwrite -> (shape, dtype)
        self.reads: dict[int, int] = {}             # id(value) -> how many reads of it the program has
        self._copies: dict[int, str] = {}
        self._count = 0
        self.values: dict[str, object] = {}         # name -> the program's variable (array_shape)
        self.made: dict[str, tuple] = {}            # name of a new C array a nest made -> shape
        self.positions: dict[str, str] = {}         # a gather's `K.positions(...)` call -> its name

    def emit(self, line: str) -> None:
        for token in _NAME.findall(line):
            make = self.pending.pop(token, None)
            if make is not None:
                make()
        self.lines.append(cheaper_calls(line))

    def array_shape(self, name: str) -> tuple | None:
        """The shape of the array `name` where numba types it C-contiguous (a new array, an
        input, a constant, a result no view or strided value stands for), else None."""
        if name in self.made:
            return self.made[name]
        var = self.values.get(name)
        if var is None or var.ndim == 0 or id(var) in self.strided or id(var) in self.views \
                or id(var) in self.inlined:
            return None
        return tuple(var.shape)

    def nest(self, shape: tuple) -> LoopNest:
        """A loop nest over `shape` whose adjacent loops may merge (`array_shape`)."""
        return LoopNest(tuple(shape), self.fresh, self.array_shape)

    def fresh(self) -> str:
        self._count += 1
        return f"t_{self._count}"

    def follow(self, out, x) -> None:
        """`out` is `x` itself (an identity): laid out as it is."""
        if id(x) in self.strided:
            self.strided.add(id(out))

    def contiguous(self, var, expr: str) -> str:
        """`expr` as a C-contiguous array (reshape and BLAS need one): a strided view not
        made yet is copied by a loop nest reading the array under it."""
        if id(var) not in self.strided:
            return expr
        if id(var) in self.views and var.ndim and expr == self.names.get(id(var)):
            if id(var) not in self._copies:
                self._copies[id(var)] = self._copy(var)
            return self._copies[id(var)]
        return f"np.ascontiguousarray({expr})"

    def _copy(self, var) -> str:
        """A C-contiguous copy of the view `var` by a loop nest. Of a reshape (merging or
        splitting axes) of a value computed in loops or strided, the loops run over that
        value's own axes, indexing what they read without quotients and remainders, and
        their array is reshaped (free, in C order)."""
        source = var
        while self.kinds.get(id(source)) == "reshape" and id(source) in self.views:
            source = self.views[id(source)][0]
        if source is var or source.ndim == 0:
            return self.loop(var.shape, var.dtype, lambda nest: self.read(nest, var))
        name = self.loop(source.shape, var.dtype, lambda nest: self.read(nest, source))
        return reshaped(name, var.shape)

    def blas_operand(self, var, expr: str) -> str:
        """`expr` as an operand of numba's np.dot: a matrix transposed from a C-contiguous
        one, read by this product only, is passed as its `.T` (F-contiguous: BLAS reads it
        transposed, nothing is copied); any other strided value is made C-contiguous
        (`contiguous`: one copy, which every product reading it shares; BLAS's kernels
        for small products are slower on a transposed operand: a 32x32 product 1.2 us
        against 0.7)."""
        if var.ndim == 2 and self.kinds.get(id(var)) == "transpose" and expr == self.names.get(id(var)) \
                and self.reads.get(id(var), 1) == 1:
            under = self.views[id(var)][0]
            if under.ndim == 2 and id(under) in self.names and id(under) not in self.strided \
                    and id(under) not in self.inlined:
                return f"{self.names[id(under)]}.T"
        return self.contiguous(var, expr)

    def defer(self, eqn, index_maps: list, make: Callable) -> None:
        """A view equation: read through `index_maps` by loops, made by `make` (once) where
        a statement names one of its outputs."""
        x, made = eqn.inputs[0], []

        def once():
            if not made:
                made.append(True)
                make()
        for out, index_map in zip(eqn.outputs, index_maps):
            self.views[id(out)] = (x, index_map)
            self.kinds[id(out)] = eqn.prim.name
            self.pending[self.names[id(out)]] = once
            if eqn.prim.name == "reshape" and id(x) not in self.inlined:
                self.follow(out, x)
            else:
                self.strided.add(id(out))

    def stand_in(self, name: str, shape: tuple, dtype):
        """A variable standing for the array `name` (of `shape`) in the views."""
        var = SimpleNamespace(shape=tuple(shape), ndim=len(shape), dtype=dtype)
        self.kept.append(var)
        self.names[id(var)] = name
        return var

    def broadcast_rows(self, var):
        """(the smaller array, the broadcast) where `var` (2-D) is a reshape merging the
        leading axes of a broadcast along some of them (its last axis kept), else None."""
        if var.ndim != 2 or self.kinds.get(id(var)) != "reshape":
            return None
        x = self.views[id(var)][0]
        if x.ndim < 3 or x.shape[-1] != var.shape[-1] or self.kinds.get(id(x)) != "broadcast":
            return None
        small = self.views[id(x)][0]
        if small.ndim != x.ndim or small.shape[-1] != x.shape[-1]:
            return None
        return small, x

    def product_view(self, out, name: str, small: tuple, full: tuple) -> None:
        """`out` becomes a reshape of the broadcast to `full` of the array `name` (`small`)."""
        from .numba_loops import _reshape
        under, wide = self.stand_in(name, small, out.dtype), self.stand_in("", full, out.dtype)
        self.views[id(wide)] = (under, lambda index: ["0" if d == 1 else i for i, d in zip(index, small)])
        self.views[id(out)] = (wide, _reshape(full, tuple(out.shape)))
        self.kinds[id(out)] = "product"
        self.strided.add(id(out))
        self.pending[self.names[id(out)]] = lambda: self.emit(
            f"{self.names[id(out)]} = {self.loop(out.shape, out.dtype, lambda nest: self.read(nest, out))}")

    def read(self, nest: LoopNest, var, expr: str | None = None, index=None) -> tuple[str, int]:
        """(a scalar holding `var`'s element at `index` (the nest's, broadcast), its depth):
        computed where `var` is inlined, else read from the array under any views
        (`expr`: `var`'s source, where it has no name)."""
        index = broadcast(nest.index if index is None else index, tuple(var.shape))
        inside: list[str] = []               # (a view of zeros outside a region: where it reads)
        while id(var) in self.views or id(var) in self.inlined:
            if id(var) in self.inlined:         # (under bijective views only: `_Fusion`)
                return self.element(nest, self.inlined[id(var)], index)
            var, index_map = self.views[id(var)]
            index = index_map(index)
            if isinstance(index, tuple):
                index, more = index
                inside += more
            expr = None
        name = self.names.get(id(var), expr)
        text = name if var.ndim == 0 else f"{name}[{', '.join(index)}]"
        if inside:
            text = f"({text} if {' and '.join(inside)} else {numba_dtype(var.dtype)}(0))"
        elif var.ndim:
            text = self._table(nest, text, index, var.dtype) or text
        return (name, 0) if text == name else nest.load(text)

    def _table(self, nest: LoopNest, text: str, index: list, dtype) -> str | None:
        """Where the nest reads `text` (an element at `index`) the same for every step of
        its outer loops, and not along the array's last axis in its inner loop (a column of
        weights, a gathered one), the element of a small C-ordered table of those values,
        filled once before the nest: the inner loop then reads contiguous memory, which
        LLVM vectorizes (the per-example Jacobian's (256, 10, 128) rows of an MLP's last
        layer: 183 -> 23 us). None where the read is not such a one."""
        used = {int(k) for k in _LOOP_INDEX.findall(", ".join(index))}
        loops = [k for k, d in enumerate(nest.shape) if d != 1]
        if nest.tables is None or not used or len(loops) < 2 or index[-1] == f"i_{loops[-1]}" \
                or loops[-1] not in used:
            return None
        first = min(used)
        repeats, size = (int(np.prod(part, dtype=np.int64)) for part in (nest.shape[:first], nest.shape[first:]))
        if repeats < _TABLE_REPEATS or size > _TABLE_MAX or repeats * size < _TABLE_MIN_NEST:
            return None
        if text not in nest.tables:
            fill = LoopNest((1,) * first + tuple(nest.shape[first:]), self.fresh)
            nest.tables[text] = self.fresh()
            nest.before += fill.render(nest.tables[text], dtype, fill.load(text)[0])
        return f"{nest.tables[text]}[{', '.join(['0'] * first + nest.index[first:])}]"

    def element(self, nest: LoopNest, eqn, index) -> tuple[str, int]:
        """(a scalar holding elementwise `eqn`'s result at `index`, the loop depth it needs),
        computed once per nest and index however many times it is read."""
        key = (id(eqn), tuple(index))
        if key not in nest.elements:
            operands = [self.read(nest, v, index=index) for v in eqn.inputs]
            expr = integer_element(eqn, [o[0] for o in operands], lambda args: rule_for(eqn.prim)(
                ScalarContext(), scalar_equation(eqn), args))
            nest.elements[key] = nest.value(expr, max((o[1] for o in operands), default=0))
        return nest.elements[key]

    def store(self, target: str, shape: tuple, key, var, expr: str, dtype, op: str = "=") -> None:
        """`target[key] = expr` (the value of `var`, converted to `dtype`) for a basic key,
        by a loop nest (numba's assignment to a strided part of an array walks it slowly)."""
        found = basic_index(key, tuple(shape))
        if found is None:
            self.emit(f"{target}[{_index_source(key)}] {op} {expr}")
            return
        index_map, region = found
        self.store_at(target, region, index_map, var, expr, dtype, op)

    def store_at(self, target: str, region: tuple, index_map, var, expr: str, dtype, op: str = "=",
                 plus_zero: bool = False) -> None:
        """`target[index_map(i)] op value of var at i` for every index i of `region`
        (`plus_zero`: the value + 0 in `dtype`)."""
        nest = self.nest(region)
        value, _ = self.read(nest, var, expr)
        if np.dtype(var.dtype) != np.dtype(dtype):
            value = f"{numba_dtype(dtype)}({value})"
        if plus_zero:
            value = f"({value} + {numba_dtype(dtype)}(0))"
        for line in nest.render_store(f"{target}[{', '.join(index_map(nest.index))}]", value, op):
            self.emit(line)

    def loop(self, shape, dtype, element: Callable) -> str:
        """A new array of `shape` whose every element is `element(nest)`'s; its name."""
        nest, name = self.nest(shape), self.fresh()
        self.made[name] = tuple(shape)
        result, _ = element(nest)
        for line in nest.render(name, dtype, result, self.reused(nest, dtype)):
            self.emit(line)
        return name

    def reused(self, nest: LoopNest, dtype) -> str | None:
        """An array the nest may write its result into instead of a new one (None: none):
        one of `reusable` (its one reader is what this nest computes; nothing reads it
        after), of the result's dtype and elements, that the nest reads at the position it
        writes (each element read, then overwritten, by the same iteration)."""
        moving = [i for i in nest.index if i != "0"]
        for name, (shape, dtype_) in self.reusable.items():
            if np.dtype(dtype_) != np.dtype(dtype) or [d for d in shape if d != 1] != \
                    [d for d in nest.shape if d != 1] or not moving:
                continue
            at = iter(moving)
            element = f"{name}[{', '.join('0' if d == 1 else next(at) for d in shape)}]"
            if element in nest.loads:
                del self.reusable[name]
                nest.target = element       # (stored as read: LLVM then sees one address)
                return name if tuple(shape) == nest.shape else reshaped(name, nest.shape)
        return None

    def reduce(self, x, expr: str, axes: tuple, out, start: str, combine: Callable,
               convert: bool = True, finish: Callable = str, pairwise: bool = False) -> str:
        """A reduction of `x` (source `expr`) over `axes` by a loop nest: the kept axes
        outside, the reduced ones inside, one accumulator per result element (`start`;
        `combine(acc, value)` is the statement adding a value, converted to the result's
        dtype if `convert`; `finish(acc)` the result element). `pairwise`: a float32,
        float64 or complex128 sum over trailing axes, which numpy sums pairwise from 8
        values on (complex: 4; numba_sums.py): the values are written into a row the
        kernel sums; under that the loop's order is numpy's. Its result's name."""
        kept = [a for a in range(x.ndim) if a not in axes]
        order = kept + list(axes)
        nest, name, acc = self.nest(tuple(x.shape[a] for a in order)), self.fresh(), "s_" + self.fresh()
        nest.tables = None                  # (an accumulating inner loop: scalar, reading any order)
        if out.ndim:
            self.made[name] = tuple(out.shape)
        index = [None] * x.ndim
        for position, a in enumerate(order):
            index[a] = nest.index[position]
        value, _ = self.read(nest, x, expr, index)
        if convert and np.dtype(x.dtype) != np.dtype(out.dtype):
            value = f"{numba_dtype(out.dtype)}({value})"
        size = int(np.prod([x.shape[a] for a in axes]))
        kind = np.dtype(out.dtype).kind
        row = self.fresh() if pairwise and size >= _PAIRWISE_MIN[kind] else None
        if row is None:
            nest.levels[len(kept)].append(f"{acc} = {start}")
            nest.levels[len(order)].append(combine(acc, value))
        else:
            zero = f"{numba_dtype(out.dtype)}(0)"
            nest.levels[len(kept)].append(f"{acc} = 0")
            nest.levels[len(order)] += [f"{row}[{acc}] = {value}", f"{acc} = {acc} + 1"]
            acc = f"{zero} + K.{'complex_' if kind == 'c' else ''}pairwise_sum({row}, 0, {size}, {zero})"
        kept_index = iter(nest.index[:len(kept)])
        target = [next(kept_index) if a not in axes else "0" for a in range(x.ndim)] \
            if out.ndim == x.ndim else list(nest.index[:len(kept)])
        nest.after[len(kept)].append(f"{name}[{', '.join(target)}] = {finish(acc)}" if out.ndim
                                     else f"{name} = {finish(acc)}")
        lines = nest.render_store(None, None)
        if out.ndim:
            lines.insert(0, f"{name} = {new_array(out.shape, out.dtype)}")
        if row is not None:
            lines.insert(0, f"{row} = np.empty({size}, {numba_dtype(out.dtype)})")
        for line in lines:
            self.emit(line)
        return name
