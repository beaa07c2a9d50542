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

import numpy as np

from ..program import Program
from .codegen import _readers, borrowed_outputs
from . import numba_lowering_arrays, numba_lowering_linalg  # noqa: F401  (register their rules)
from .numba_lowering import NotLowered, rule_for

__all__ = ["numba_source", "unlowered_ops", "declined_equations", "variable_names", "bakeable",
           "parallel_helpers", "HEADER"]

HEADER = ("import numpy as np\nimport numba\nfrom pforjac.compiled.numba_backend import kernels\n\n"
          "K = kernels()\n\n\n")


def _name(var) -> str:
    return "v_" + var.name


def variable_names(program: Program) -> dict[int, str]:
    """The generated code's name of every variable of the program, by id."""
    names = {id(v): _name(v) for v in list(program.inputs) + list(program.consts)}
    for eqn in program.equations:
        names.update((id(v), _name(v)) for v in eqn.outputs)
    return names


def unlowered_ops(program: Program) -> list[str]:
    """The ops of `program` without a numba rule (by name, each once, in order)."""
    missing = [e.prim.name for e in program.equations if rule_for(e.prim) is None]
    return list(dict.fromkeys(missing))


def declined_equations(program: Program) -> dict[int, str]:
    """{index: op and cause} of the equations numba cannot lower: no rule, or a rule that
    declines the case (each rule tried on placeholder operands: whether it lowers depends
    on the equation, not on the code around it)."""
    declined, ctx = {}, _Context()
    for k, eqn in enumerate(program.equations):
        rule = rule_for(eqn.prim)
        if rule is None:
            declined[k] = eqn.prim.name
            continue
        try:
            rule(ctx, eqn, [f"a_{j}" for j in range(len(eqn.inputs))])
        except NotLowered as e:
            declined[k] = f"{eqn.prim.name} ({e})"
    return declined


class _Context:
    """What rules see while one program is lowered: statements so far, fresh names, which
    variables may not be C-contiguous (views: transposes, slices, broadcasts)."""

    def __init__(self):
        self.lines: list[str] = []
        self.strided: set[int] = set()
        self._count = 0

    def emit(self, line: str) -> None:
        self.lines.append(line)

    def fresh(self) -> str:
        self._count += 1
        return f"t_{self._count}"

    def follow(self, out, x) -> None:
        """`out` is `x` itself (an identity): laid out as it is."""
        if id(x) in self.strided:
            self.strided.add(id(out))

    def contiguous(self, var, expr: str) -> str:
        """`expr` as a C-contiguous array (reshape and BLAS need one)."""
        return f"np.ascontiguousarray({expr})" if id(var) in self.strided else expr


def _fusible(eqn, readers, results) -> bool:
    """Whether the result of elementwise `eqn` is inlined into its one elementwise reader."""
    out = eqn.outputs[0]
    users = readers.get(id(out), [])
    return (eqn.prim.elementwise and len(eqn.outputs) == 1 and id(out) not in results
            and len(users) == 1 and users[0].prim.elementwise
            and sum(id(v) == id(out) for v in users[0].inputs) == 1
            and out.shape == users[0].outputs[0].shape)


def numba_source(program: Program, name: str = "program", baked: dict | None = None,
                 parallel_min_size: int | None = None) -> str:
    """`def name(inputs..., consts...): ...` in numba's nopython subset, returning the
    outputs as a tuple (0-d values as scalars); raises NotLowered naming every op it
    cannot lower. `baked`: {id(const): its array} of constants written into the source
    (numba compiles them in), which are then no parameters. `parallel_min_size`: an
    elementwise expression with at least this many elements runs in a helper compiled
    with `parallel=True` (its loop split across threads; None: none does)."""
    missing = unlowered_ops(program)
    if missing:
        raise NotLowered(", ".join(missing))
    ctx, names = _Context(), variable_names(program)
    baked = baked or {}
    globals_ = []
    for k, (key, value) in enumerate(baked.items()):
        names[key], definition = _baked(k, value)
        globals_.extend(definition)
    exprs: dict[int, str] = {}                  # inlined results: id -> their expression
    leaves: dict[int, list] = {}                # inlined results: id -> the values they read
    readers, results = _readers(program), {id(v) for v in program.outputs}
    failed: list[str] = []
    for eqn in program.equations:
        args = [exprs.get(id(v), names.get(id(v))) for v in eqn.inputs]
        try:
            expr = rule_for(eqn.prim)(ctx, eqn, args)
        except NotLowered as e:
            failed.append(f"{eqn.prim.name} ({e})")
            continue
        read = [u for v in eqn.inputs for u in leaves.get(id(v), [v])]
        if _fusible(eqn, readers, results):
            exprs[id(eqn.outputs[0])], leaves[id(eqn.outputs[0])] = f"({expr})", read
        elif len(eqn.outputs) == 1:
            if parallel_min_size is not None and _parallel_pays(eqn, expr, read, parallel_min_size):
                expr = _parallel_call(ctx, expr, read, names, baked, globals_)
            ctx.emit(f"{names[id(eqn.outputs[0])]} = {expr}")
        else:
            ctx.emit(f"{', '.join(names[id(v)] for v in eqn.outputs)} = {expr}")
    if failed:
        raise NotLowered(", ".join(dict.fromkeys(failed)))
    return "".join(g + "\n" for g in globals_) + _function_source(program, name, ctx.lines, names, baked)


def _parallel_pays(eqn, expr: str, read: list, min_size: int) -> bool:
    """Whether an elementwise expression runs split across threads: it has `min_size`
    elements or more, computes something (not a copy of a name), and reads nothing numba's
    parallel loops would broadcast along a length-1 axis (they refuse that at run time):
    every value it reads has the result's shape or a tail of it, or is 0-d."""
    out = eqn.outputs[0]
    if not eqn.prim.elementwise or out.ndim == 0 or "(" not in expr \
            or re.search(r"\bt_\d", expr):
        return False
    if int(np.prod(out.shape, dtype=np.int64)) < min_size:
        return False
    return all(v.ndim == 0 or tuple(v.shape) == tuple(out.shape[out.ndim - v.ndim:]) for v in read)


def _parallel_call(ctx, expr: str, read: list, names: dict, baked: dict, globals_: list) -> str:
    """`expr` as a call of a new helper compiled with `parallel=True`: numba splits its
    elementwise loop across threads, each element computed as the serial loop computes
    it (the helper holds no reduction, so no sum is reordered)."""
    params = list(dict.fromkeys(names[id(v)] for v in read if id(v) not in baked))
    helper = f"parallel_{ctx.fresh()}"
    globals_.append(f"@numba.njit(parallel=True, cache=True)\ndef {helper}({', '.join(params)}):\n"
                    f"    return {expr}\n")
    return f"{helper}({', '.join(params)})"


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


def _function_source(program: Program, name: str, lines: list[str], names: dict, baked: dict) -> str:
    borrowed = borrowed_outputs(program)
    outs = [f"np.copy({names[id(v)]})" if k in borrowed and v.ndim else names[id(v)]
            for k, v in enumerate(program.outputs)]
    params = [names[id(v)] for v in list(program.inputs) + list(program.consts)
              if id(v) not in baked]
    body = lines + [f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})"]
    return (f"@numba.njit(cache=True)\ndef {name}({', '.join(params)}):\n"
            + "".join(f"    {line}\n" for line in body))


def numba_type(shape, dtype):
    """The numba type an input of this shape and dtype is passed as: a read-only C array
    (tensors' arrays are read-only), or a scalar for shape ()."""
    from numba import from_dtype, types
    scalar = from_dtype(np.dtype(dtype))
    return scalar if len(shape) == 0 else types.Array(scalar, len(shape), "C", readonly=True)
