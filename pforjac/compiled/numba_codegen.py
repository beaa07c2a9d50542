"""A Program as the source of one numba function, through the lowering table.

`numba_source(program, name)` walks the equations once: each becomes the expression its
rule (numba_lowering.py) gives, assigned to a name, except an elementwise result read
once, by another elementwise equation of its own shape, and not a result of the program:
that is inlined into its reader, so an elementwise chain is one whole-array expression
(one fused loop in numba, no temporaries). A result its reader broadcasts is not inlined:
the fused loop would compute it again for every copy (a layer's tanh once per batch row). Every op without a rule, or whose rule declines, is collected and
named in one `NotLowered` error.
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from ..program import Program
from .codegen import _readers, borrowed_outputs
from . import numba_lowering_arrays, numba_lowering_linalg, numba_lowering_values  # noqa: F401  (their rules)
from .numba_context import LoweringContext, cheaper_calls, integer_element
from .numba_copies import copy_calls
from .numba_lowering import REDUCTIONS, NotLowered, blas_work, rule_for
from .numba_loops import LoopNest, view_maps
from .numba_outline import outline
from .numba_reuse import note

__all__ = ["numba_source", "unlowered_ops", "declined_equations", "variable_names", "bakeable",
           "parallel_helpers", "HEADER"]

HEADER = ("import numpy as np\nimport numba\nfrom pforjac.compiled.numba_backend import kernels\n\n"
          "K = kernels()\n\n\n")


def _name(var) -> str:
    return "v_" + var.name


def variable_names(program: Program) -> dict[int, str]:
    """The generated code's name of every variable of the program, by id: one name each
    (two variables a pass named alike get names of their own)."""
    names: dict[int, str] = {}
    taken: set[str] = set()
    for v in [*program.inputs, *program.consts, *(v for e in program.equations for v in e.outputs)]:
        if id(v) in names:
            continue
        name, k = _name(v), 1
        while name in taken:
            name, k = f"{_name(v)}_{k}", k + 1
        names[id(v)] = name
        taken.add(name)
    return names


def unlowered_ops(program: Program) -> list[str]:
    """The ops of `program` without a numba rule (by name, each once, in order)."""
    missing = [e.prim.name for e in program.equations if rule_for(e.prim) is None]
    return list(dict.fromkeys(missing))


# dtypes numba types no arithmetic for (long double: only where it is wider than float64)
_NO_ARITHMETIC = frozenset({np.dtype(np.float16)} | ({np.dtype(np.longdouble), np.dtype(np.clongdouble)}
                                                     - {np.dtype(np.float64), np.dtype(np.complex128)}))


def declined_equations(program: Program) -> dict[int, str]:
    """{index: op and cause} of the equations numba cannot lower: no rule, or a rule that
    declines the case (each rule tried on placeholder operands: whether it lowers depends
    on the equation, not on the code around it)."""
    declined, ctx = {}, LoweringContext()
    for k, eqn in enumerate(program.equations):
        rule = rule_for(eqn.prim)
        if rule is None:
            declined[k] = eqn.prim.name
            continue
        unusual = [np.dtype(v.dtype).name for v in (*eqn.inputs, *eqn.outputs)
                   if np.dtype(v.dtype) in _NO_ARITHMETIC]
        if unusual:         # (numba computed sin of a bool in float64 where numpy's is float16)
            declined[k] = f"{eqn.prim.name} (a {unusual[0]} value: numba has no arithmetic in it)"
            continue
        try:
            rule(ctx, eqn, [f"a_{j}" for j in range(len(eqn.inputs))])
        except NotLowered as e:
            declined[k] = f"{eqn.prim.name} ({e})"
    return declined


class _Fusion:
    """Which elementwise results are inlined into their readers, whose loops then compute
    them: a result one reader reads each element of once (`_reads_in_loops`), or one all of
    whose readers end in one loop nest (`one_nest`: a sigmoid's `s * (1 - s)`), which
    computes each element once."""

    def __init__(self, program, readers, results):
        self.readers, self.results, self.memo = readers, results, {}
        self.axes, self.cut = _varying_axes(program), _cuts(program)

    def fusible(self, eqn) -> bool:
        if id(eqn) not in self.memo:
            out = eqn.outputs[0]
            users = self.readers.get(id(out), [])
            self.memo[id(eqn)] = bool(eqn.prim.elementwise and len(eqn.outputs) == 1 and users
                                      and id(out) not in self.results and id(eqn) not in self.cut) and (
                _reads_in_loops(users[0], out, self.readers, self.results) if len(users) == 1
                else self.one_nest(eqn, users))
        return self.memo[id(eqn)]

    def one_nest(self, eqn, users) -> bool:
        """Whether every reader of `eqn`'s result is an elementwise equation of as many
        elements, all of them computed by one loop nest (each inlined, maybe through others,
        into the same equation), and the result varies along every axis (one computed
        without some, and read broadcast, stays an array: inlined, the nest would compute
        it at every element)."""
        out = eqn.outputs[0]
        size, nests = int(np.prod(out.shape)), set()
        if len(self.axes[id(out)]) < sum(d > 1 for d in out.shape):
            return False
        for user in users:
            if not user.prim.elementwise or int(np.prod(user.outputs[0].shape)) != size:
                return False
            while self.fusible(user):
                user = self.readers[id(user.outputs[0])][0]
            nests.add(id(user))
        return len(nests) == 1


_INLINED_RUN = 64      # elementwise equations inlined one into the next, at most


def _cuts(program) -> set[int]:
    """ids of the elementwise equations whose results are arrays however they are read:
    each one ending a run of `_INLINED_RUN` elementwise equations, each reading the one
    before (through any other ops). Loops compute an inlined value, and the fusion finds
    its nest, by recursion through the values inlined into it: an unbroken chain of a few
    hundred steps went past Python's recursion limit."""
    run: dict[int, int] = {}
    cut: set[int] = set()
    for eqn in program.equations:
        depth = max((run.get(id(v), 0) for v in eqn.inputs), default=0) + eqn.prim.elementwise
        if eqn.prim.elementwise and depth >= _INLINED_RUN:
            cut.add(id(eqn))
            depth = 0
        run.update((id(v), depth) for v in eqn.outputs)
    return cut


def _varying_axes(program) -> dict[int, set]:
    """id(value) -> the axes (counted from the last, -1) along which it varies, as far as
    the program shows: every axis of length 2 or more of an input, or of a result other
    than an elementwise one or a broadcast, which vary only along their operands' axes."""
    axes: dict[int, set] = {}

    def of(var) -> set:
        return axes.get(id(var), {k - var.ndim for k, d in enumerate(var.shape) if d > 1})
    for eqn in program.equations:
        operands = eqn.inputs if eqn.prim.elementwise else eqn.inputs[:1] \
            if eqn.prim.name == "broadcast_to" else None
        for out in eqn.outputs:
            axes[id(out)] = of(out) & set().union(*map(of, operands)) if operands else of(out)
    return axes


def _reads_in_loops(user, value, readers, results) -> bool:
    """Whether `user`, the one reader of `value`, reads each element of it once in a loop
    nest: an elementwise equation of its shape, a reduction, or a transpose or reshape
    (no element read twice) read once by such a reader or a product (copied by a loop)."""
    while True:
        if user.prim.name in REDUCTIONS:
            return True
        if user.prim.elementwise:               # (a broadcast adding axes of length 1 repeats nothing)
            return int(np.prod(value.shape)) == int(np.prod(user.outputs[0].shape))
        view = user.outputs[0]
        if user.prim.name not in ("transpose", "reshape") or id(view) in results:
            return False
        users = readers.get(id(view), [])
        if len(users) != 1 or sum(id(v) == id(view) for v in users[0].inputs) != 1:
            return False
        if users[0].prim.name == "matmul":
            return True
        user, value = users[0], view


def numba_source(program: Program, name: str = "program", baked: dict | None = None,
                 parallel_min_size: int | None = None, calls: list | None = None) -> str:
    """`def name(inputs..., consts...): ...` in numba's nopython subset, returning the
    outputs as a tuple (0-d values as scalars); raises NotLowered naming every op it
    cannot lower. `baked`: {id(const): its array} of constants written into the source
    (numba compiles them in), which are then no parameters. `parallel_min_size`: an
    elementwise expression with at least this many elements runs in a helper compiled
    with `parallel=True` (its loop split across threads; None: none does). `calls`: see
    `numba_outline.outline` (which names of the body each helper call stands for).

    A program that calls BLAS or LAPACK with a call large enough for the library's threads
    (`_threaded_blas`) gets no parallel helpers: the library's own threads wait for its
    next call spinning on the cores, and the helpers' threads then wait for them (the
    zoo's attention programs ran 1.2-1.3x slower with their parallel loops on two threads
    than without; programs without products ran 1.3-3x faster). Such a program is
    generated serial first (one generation, not two: 30-80 ms of a first compile); where
    its source then calls no BLAS after all (an einsum without a sum is a loop), again
    with its parallel helpers."""
    if parallel_min_size is not None and _threaded_blas(program):
        source = _source(program, name, baked, None, calls)
        if _BLAS_CALL.search(source):
            return source
        if calls is not None:
            calls.clear()
    return _source(program, name, baked, parallel_min_size, calls)


_BLAS_CALL = re.compile(r"\bK\.(?:dot|batched_dot|(?!triangular_solve)\w+_stack)\(")   # (the kernels'
# calls of BLAS and LAPACK: products, and the stacks' factorizations and solves)
BLAS_THREADED = 2304 * 4    # (multiply-adds of one call from which OpenBLAS may use its threads:
# its matrix-vector products' bound; a matrix product's is 65536 * 4)


def _threaded_blas(program: Program) -> bool:
    """Whether a BLAS or LAPACK call of the program may be large enough for the library to
    run it on its threads (below `BLAS_THREADED` multiply-adds it runs on the caller's: a
    4x4 product beside a parallel loop of 10^6 elements costs nothing, and generated
    serial that loop took 2x as long on two threads). Each equation's count is its rule's
    bound (`lowers(..., blas=)`: its whole work, every matrix of a stack; the rules that
    call BLAS or LAPACK all give one)."""
    return any(blas_work[e.prim](e) >= BLAS_THREADED for e in program.equations if e.prim in blas_work)


def _source(program: Program, name: str, baked: dict | None, parallel_min_size: int | None,
            calls: list | None) -> str:
    missing = unlowered_ops(program)
    if missing:
        raise NotLowered(", ".join(missing))
    names, baked, globals_ = variable_names(program), baked or {}, []
    for k, (key, value) in enumerate(baked.items()):
        names[key], definition = _baked(k, value)
        globals_.extend(definition)
    walk = _Walk(program, LoweringContext(names), parallel_min_size, globals_)
    for var in program.consts:
        if id(var) in baked:
            _read_uniform_once(walk.ctx, var, np.asarray(baked[id(var)]))
    failed: list[str] = []
    for eqn in program.equations:
        try:
            walk.lower(eqn)
        except NotLowered as e:
            failed.append(f"{eqn.prim.name} ({e})")
    if failed:
        raise NotLowered(", ".join(dict.fromkeys(failed)))
    for v in program.outputs:                   # (views the program returns: made)
        make = walk.ctx.pending.pop(names[id(v)], None)
        if make is not None:
            make()
    return "".join(g + "\n" for g in globals_) + _function_source(program, name, walk.ctx.lines, names, baked,
                                                                     calls)


def _read_uniform_once(ctx, var, value: np.ndarray) -> None:
    """A constant whose values are the same along some axes (a seed of ones per example)
    is read at index 0 there: loops see it as a broadcast, and what they compute from it
    is computed once for all its copies. Equal means the same bits (-0.0 is not 0.0)."""
    def bits(a):
        return np.ascontiguousarray(a).tobytes()
    uniform = [k for k in range(value.ndim) if value.shape[k] > 1
               and bits(value) == bits(np.take(value, [0] * value.shape[k], axis=k))]
    if not uniform:
        return
    ctx.views[id(var)] = (ctx.stand_in(ctx.names[id(var)], tuple(value.shape), var.dtype),
                          lambda index: ["0" if k in uniform else i for k, i in enumerate(index)])


class _Walk:
    """The equations lowered in order: views deferred, elementwise results inlined into
    their reader or computed by a loop nest, every other equation by its rule."""

    def __init__(self, program, ctx, parallel_min_size, globals_):
        self.ctx, self.names, self.min_size, self.globals_ = ctx, ctx.names, parallel_min_size, globals_
        self.readers, self.results = _readers(program), {id(v) for v in program.outputs}
        self.exprs: dict[int, str] = {}         # inlined results: id -> their expression
        self.fusion = _Fusion(program, self.readers, self.results)
        self.done: set[int] = set()
        self.fresh: set[int] = set()            # results that are new arrays (numba_reuse.py)
        ctx.reads.update((key, len(users)) for key, users in self.readers.items())
        ctx.values.update((ctx.names[id(v)], v) for v in [*program.inputs, *program.consts,
                                                          *(v for e in program.equations for v in e.outputs)])

    def lower(self, eqn) -> None:
        ctx, out = self.ctx, eqn.outputs[0]
        if id(out) in self.done:                # (a result its operand's loops wrote)
            return
        args = [self.exprs.get(id(v), self.names.get(id(v))) for v in eqn.inputs]
        index_maps = None if eqn.prim.elementwise or self.results & {id(v) for v in eqn.outputs} \
            else view_maps(eqn, ctx, args)
        if index_maps is not None:
            rule, made = rule_for(eqn.prim), ", ".join(self.names[id(v)] for v in eqn.outputs)
            ctx.defer(eqn, index_maps, lambda: ctx.emit(f"{made} = {rule(ctx, eqn, args)}"))
            return
        rule = rule_for(eqn.prim)
        expr = integer_element(eqn, args, lambda a: rule(ctx, eqn, a)) \
            if eqn.prim.elementwise and out.ndim == 0 else rule(ctx, eqn, args)
        if expr is None:                        # (the rule made the result a view)
            return
        if self.fusion.fusible(eqn):
            self.exprs[id(out)], ctx.inlined[id(out)] = self._inlined(out, f"({expr})"), eqn
        elif len(eqn.outputs) > 1:
            ctx.emit(f"{', '.join(self.names[id(v)] for v in eqn.outputs)} = {expr}")
        elif _TRANSPOSED.match(expr) and id(out) not in self.results:
            self._transpose_of(out, *_TRANSPOSED.match(expr).groups())
        elif not (eqn.prim.elementwise and out.ndim and not self._same_array(eqn) and self._loop(eqn)):
            ctx.emit(f"{self.names[id(out)]} = {expr}")
            note(self, eqn, made=eqn.prim.name == "matmul")

    def _same_array(self, eqn) -> bool:
        """Whether `eqn` (`copy`, `stop_gradient`) names its operand's array for its result
        instead of a loop copying it: within the program a copy is never written to (only
        arrays it made itself are, and this one is not), so it need not be new; a result the
        program returns is copied, so that it never is an array the caller passed in."""
        return eqn.prim.name in ("copy", "stop_gradient") and id(eqn.outputs[0]) not in self.results

    def _inlined(self, out, expr: str) -> str:
        """The text standing for an inlined result in its readers' whole-array expressions:
        its own expression where one read takes it; where several do, its name, made (as
        that expression) only where a statement names it (loops compute it where they read
        it): copied into each reader, a chain's texts would double at every step."""
        if len(self.readers.get(id(out), [])) < 2:
            return expr
        name = self.names[id(out)]
        self.ctx.pending[name] = lambda: self.ctx.emit(f"{name} = {expr}")
        return name

    def _loop(self, eqn) -> bool:
        """Whether the elementwise `eqn` (with what is inlined into it) is now computed by
        a loop nest (False: a rule declined to write one element; a whole-array expression).
        A result that reads nothing varying along some axes (its operands broadcast there)
        is computed without them and read through a broadcast."""
        out = eqn.outputs[0]
        try:
            if self._transposed_result(eqn):
                return True
            nest, result = self._nest(eqn, tuple(out.shape))
        except NotLowered:
            return False
        used = {int(k) for text in nest.loads for k in re.findall(r"\bi_(\d+)\b", text)}
        small = tuple(d if k in used else 1 for k, d in enumerate(out.shape))
        name = self.names[id(out)]
        if small != tuple(out.shape) and id(out) not in self.results:
            nest, result = self._nest(eqn, small)
            name = self._broadcast_of(out, small, self.ctx.fresh())
            self.ctx.made[name] = small
        parallel = self.min_size is not None and int(np.prod(nest.shape, dtype=np.int64)) >= self.min_size \
            and any(d != 1 for d in nest.shape)
        lines = nest.render(name, out.dtype, result, self.ctx.reused(nest, out.dtype))
        if name == self.names[id(out)]:
            note(self, eqn, made=True)
        if parallel and not any(_RAISES in line for line in lines):   # (numba's parallel loops
            lines = self._parallel(name, lines)     # turn an exception into a SystemError)
        for line in lines:
            self.ctx.emit(line)
        return True

    def _transposed_result(self, eqn) -> bool:
        """Whether `eqn`'s result, which the program returns transposed (and nothing else
        reads), was computed by loops writing the transposed result in its own order (a
        caller needing row-major values then copies nothing)."""
        out, users = eqn.outputs[0], self.readers.get(id(eqn.outputs[0]), [])
        if len(users) != 1 or users[0].prim.name != "transpose" or id(out) in self.results \
                or id(users[0].outputs[0]) not in self.results:
            return False
        result, perm = users[0].outputs[0], tuple(users[0].params["perm"])
        nest = self.ctx.nest(tuple(result.shape))
        value, _ = self.ctx.element(nest, eqn, [nest.index[perm.index(j)] for j in range(out.ndim)])
        for line in nest.render(self.names[id(result)], result.dtype, value):
            self.ctx.emit(line)
        self.done.add(id(result))
        return True

    def _transpose_of(self, out, name: str, perm: str) -> None:
        """`out`, which a rule computed as a transpose of the array `name`, becomes a view
        of it (loops read through; a copy, if one is asked, is a loop nest)."""
        perm = tuple(int(p) for p in perm.strip("()").split(",") if p.strip())
        under = self.ctx.stand_in(name, tuple(out.shape[perm.index(k)] for k in range(out.ndim)), out.dtype)
        self.ctx.views[id(out)] = (under, lambda index: [index[perm.index(k)] for k in range(len(perm))])
        self.ctx.pending[self.names[id(out)]] = lambda: self.ctx.emit(
            f"{self.names[id(out)]} = np.transpose({name}, {perm})")

    def _nest(self, eqn, shape: tuple) -> tuple[LoopNest, str]:
        nest = self.ctx.nest(shape)
        return nest, self.ctx.element(nest, eqn, nest.index)[0]

    def _broadcast_of(self, out, small: tuple, name: str) -> str:
        """`out` becomes a broadcast view of the array `name` of shape `small`."""
        under = self.ctx.stand_in(name, small, out.dtype)
        self.ctx.views[id(out)] = (under, lambda index: ["0" if d == 1 else i for i, d in zip(index, small)])
        self.ctx.kinds[id(out)] = "broadcast"
        self.ctx.strided.add(id(out))
        self.ctx.pending[self.names[id(out)]] = lambda: self.ctx.emit(
            f"{self.names[id(out)]} = np.broadcast_to({name}, {tuple(out.shape)})")
        return name

    def _parallel(self, name: str, lines: list[str]) -> list[str]:
        """A loop nest's lines as a call of a new helper compiled with `parallel=True`, its
        outer loop a `prange` (numba splits it across threads; each element is computed as
        the serial loop computes it: no reduction is reordered)."""
        made = {m.group(1) for m in map(_MADE.match, lines) if m}   # (the result, its views, tables)
        params = sorted({t for line in lines for t in _ARRAY_NAME.findall(line)} - made - {name})
        outer = max(k for k, line in enumerate(lines) if line.startswith("for "))     # (after tables')
        lines = [cheaper_calls(line) for line in
                 [*lines[:outer], lines[outer].replace(" in range(", " in numba.prange(", 1), *lines[outer + 1:]]]
        helper = f"parallel_{self.ctx.fresh()}"
        self.globals_.append(f"@numba.njit(parallel=True, {_HELPER})\ndef {helper}({', '.join(params)}):\n"
                             + "".join(f"    {line}\n" for line in lines) + f"    return {name}\n")
        return [f"{name} = {helper}({', '.join(params)})"]


_RAISES = "K.int_power("      # (the one elementwise kernel that raises: numpy's ValueError)
_HELPER = "cache=True, no_cpython_wrapper=True, error_model='numpy'"   # (called from the generated code only)
_TRANSPOSED = re.compile(r"^np\.transpose\((\w+), (\([\d, ]*\))\)$")
_ARRAY_NAME = re.compile(r"\b(?:v_\w+|t_\d+)\b")
_MADE = re.compile(r"^\s*(v_\w+|t_\d+) = ")


def parallel_helpers(source: str) -> int:
    """How many helpers compiled with `parallel=True` a generated source has."""
    return source.count("@numba.njit(parallel=True")


def _baked(k: int, value: np.ndarray) -> tuple[str, list[str]]:
    """(the name of a constant, the module-level line defining it): a scalar from its
    literal, an array from its exact bytes. numba freezes globals into the code as
    constants, which stay constants inside parallel loops too (a literal call such as
    `np.float32(2.0)` there is hoisted out of the loop, and the loop's arithmetic no
    longer sees the constant: `x ** 2.0` would round as `pow`, not as `x * x`)."""
    value = np.asarray(value)
    if value.ndim == 0:
        item = value.item()
        text = repr(item) if np.isfinite(item) else ("np.nan" if item != item
                                                      else ("np.inf" if item > 0 else "-np.inf"))
        return f"C_{k}", [f"C_{k} = {_dtype_call(value.dtype)}({text})"]
    data = np.ascontiguousarray(value).tobytes().hex()
    return f"C_{k}", [f"C_{k} = np.frombuffer(bytes.fromhex('{data}'), np.dtype('{value.dtype.str}'))"
                      f".reshape({tuple(value.shape)})"]


def _dtype_call(dtype) -> str:
    return "np.bool_" if dtype == np.bool_ else f"np.{dtype.name}"


def bakeable(value) -> bool:
    """Whether a constant is written into the generated source: a small real or integer
    array in native byte order (a larger one is passed, as a Variable's value is)."""
    return (isinstance(value, np.ndarray) and value.size <= _BAKED_MAX and value.dtype.isnative
            and value.dtype.kind in "biuf")


_BAKED_MAX = 1024           # elements: each call passing an array costs about 0.3 us


def _function_source(program: Program, name: str, lines: list[str], names: dict, baked: dict,
                     calls: list | None = None) -> str:
    borrowed = borrowed_outputs(program)
    outs = [f"np.copy({names[id(v)]})" if k in borrowed and v.ndim else names[id(v)]
            for k, v in enumerate(program.outputs)]
    params = [names[id(v)] for v in list(program.inputs) + list(program.consts)
              if id(v) not in baked]
    body = copy_calls(lines) + [f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})"]
    helpers, body = outline(body, params, calls)
    # (no C-callable wrapper: pforjac calls the dispatcher or its compiled entry point)
    return "".join(h + "\n" for h in helpers) + (
        f"@numba.njit(cache=True, no_cfunc_wrapper=True, error_model=\"numpy\")\ndef {name}({', '.join(params)}):\n"
        + "".join(f"    {line}\n" for line in body))


def numba_type(shape, dtype):
    """The numba type an input of this shape and dtype is passed as: a read-only C array
    (tensors' arrays are read-only), or a scalar for shape ()."""
    from numba import from_dtype, types
    scalar = from_dtype(np.dtype(dtype))
    return scalar if len(shape) == 0 else types.Array(scalar, len(shape), "C", readonly=True)
