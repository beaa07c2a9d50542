"""Programs as Python source: an AST of numpy calls, compiled directly, rendered with astunparse.

Every equation becomes one assignment calling the primitive's numpy forward
(`np.exp(a)` where the forward is a numpy function, `reshape_impl(a, shape=(2, 3))`
otherwise). Parameters are emitted as literals or constructor calls
(`slice(None, None, -1)`, `np.dtype('float32')`), never as subscripts, so the
rendered text always parses back (astunparse 1.6.3 renders a tuple index
holding a slice as `y[(None, 1:3)]`, which is not valid Python).
"""
from __future__ import annotations

import ast
import builtins
import keyword
import math
from typing import Any, Callable

import numpy as np

from .. import core
from ..ops._kernels import BY_LAST_AXIS_UFUNCS, by_last_axis
from ..program import Program
from .cheap_calls import cheap_calls
from .outer_products import EINSUM, outer_products
from .lines import number_lines, place_function, equation_at_line  # noqa: F401  (re-exported)
from .plain_calls import plain_call_ast, plain_calls
from .scatter_sums import add_at, scatter_sums
from .impl_facts import _elementwise, _fresh_result, _ufunc, plain_ufunc  # noqa: F401 (re-exported)

__all__ = ["program_to_ast", "program_to_source", "compile_program", "namespace_of", "CodegenError"]


def _py_name(var) -> str:
    name = var.name
    return name + "_" if keyword.iskeyword(name) or name in ("np", "consts") or name.startswith("np_") \
        else name


def _impl_name(prim: core.Primitive) -> str:
    impl = core.impl_rules[prim]
    if isinstance(impl, np.ufunc) or getattr(impl, "__module__", "") in ("numpy", "numpy._core.fromnumeric",
                                                                         "numpy.core.fromnumeric"):
        name = getattr(impl, "__name__", None)
        if name and getattr(np, name, None) is impl:    # (a ufunc as a global: 40 ns sooner)
            return f"np_{name}" if isinstance(impl, np.ufunc) else f"np.{name}"
    return f"{prim.name}_impl"


def _literal(value: Any) -> ast.expr:
    if isinstance(value, slice):
        return _call("slice", [_literal(value.start), _literal(value.stop), _literal(value.step)])
    if value is Ellipsis:
        return ast.Constant(value=Ellipsis)
    if isinstance(value, tuple):
        return ast.Tuple(elts=[_literal(v) for v in value], ctx=ast.Load())
    if isinstance(value, list):
        return ast.List(elts=[_literal(v) for v in value], ctx=ast.Load())
    if isinstance(value, (np.dtype, type)) and not isinstance(value, bool):
        d = np.dtype(value)                         # 'float64'; '>f8' keeps a byte order
        return _call("np.dtype", [ast.Constant(value=d.name if d.isnative else d.str)])
    if isinstance(value, np.generic):
        return _literal(value.item())
    if isinstance(value, np.ndarray):
        return _call("np.asarray", [_literal(value.tolist()), _literal(value.dtype)])
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return ast.Constant(value=value)
    raise TypeError(f"codegen: can't render parameter {value!r} of type {type(value).__name__}")


def _call(func: str, args, keywords=None) -> ast.Call:
    return ast.Call(func=_dotted(func), args=list(args),
                    keywords=[ast.keyword(arg=k, value=v) for k, v in (keywords or {}).items()])


def _dotted(name: str) -> ast.expr:
    """The expression of a dotted name (`np.asarray`): ast.parse of each took 1/10 of codegen."""
    head, *attrs = name.split(".")
    node: ast.expr = _load(head)
    for attr in attrs:
        node = ast.Attribute(value=node, attr=attr, ctx=ast.Load())
    return node


def _load(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Load())


# -- short last axes ------------------------------------------------------------------------
_BY_LAST_AXIS_MIN = 8192         # elements: below this numpy's loops cost less than 2-4 calls


def _by_last_axis(eqn, layouts: "Layouts", broadcasts: set) -> bool:
    """Whether `by_last_axis` computes this equation (see there)."""
    out = eqn.outputs[0]
    return (plain_ufunc(eqn) and core.impl_rules[eqn.prim] in BY_LAST_AXIS_UFUNCS and out.ndim >= 2
            and 2 <= out.shape[-1] <= 4 and math.prod(out.shape) >= _BY_LAST_AXIS_MIN
            and (id(out) in layouts.c_ordered or id(out) in layouts.blind)
            and any(v.ndim and (v.shape[-1] == 1 or id(v) in broadcasts) for v in eqn.inputs))


def program_to_ast(program: Program, name: str = "program", exact: bool = True,
                   c_inputs: bool = False) -> ast.Module:
    """`def name(inputs..., consts): ...` returning the outputs as a tuple; `exact` False: an exact
    zero's sign may differ from eager code's (`outer_products`); `c_inputs`: see cheap_calls.py."""
    body: list[ast.stmt] = [
        ast.Assign(targets=[ast.Name(id=_py_name(var), ctx=ast.Store())],
                   value=ast.Subscript(value=_load("consts"), slice=ast.Constant(value=k), ctx=ast.Load()))
        for k, var in enumerate(program.consts)]
    plan = _Plan(program, exact, c_inputs)
    body += [ast.Pass() if k in plan.needless else ast.Assign(targets=[_targets(eqn)],
                                                              value=plan.call(k, eqn))
             for k, eqn in enumerate(program.equations)]
    borrowed = borrowed_outputs(program)
    body.append(ast.Return(value=ast.Tuple(
        elts=[_call("np.array", [_load(_py_name(v))]) if k in borrowed else _load(_py_name(v))
              for k, v in enumerate(program.outputs)], ctx=ast.Load())))
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=_py_name(v)) for v in program.inputs]
                         + [ast.arg(arg="consts")], kwonlyargs=[], kw_defaults=[], defaults=[])
    number_lines(body)
    fn = ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None,
                         type_params=[])
    place_function(fn)
    return ast.Module(body=[fn], type_ignores=[])


class _Plan:
    """What codegen decided for a program's equations: results written into dead buffers,
    asked for C order, computed by the last axis, or copied C-contiguous."""

    def __init__(self, program: Program, exact: bool = True, c_inputs: bool = False):
        self.exact = exact
        self.layouts = layouts = Layouts(program)
        self.scatters, scattered = scatter_sums(program)
        self.in_place = in_place_outputs(program, layouts)
        self.reshaped = _reshaped(program)
        self.contiguous = broadcast_transposes(program, layouts)
        self.broadcasts = {id(e.outputs[0]) for e in program.equations if e.prim.name == "broadcast_to"}
        self.plain = plain_calls(program, layouts.c_ordered, self.in_place)
        self.dots = cheap_calls(program, layouts, self.in_place, self.plain, c_inputs)
        by_last = {k for k, e in enumerate(program.equations) if _by_last_axis(e, layouts, self.broadcasts)}
        self.outer, self.needless = ({}, set()) if exact else \
            outer_products(program, layouts, set(self.in_place) | by_last)
        self.needless = self.needless | scattered

    def call(self, k: int, eqn) -> ast.expr:
        """The call computing equation `k`."""
        inputs = [_load(_py_name(v)) for v in eqn.inputs]
        keywords = self.keywords(k, eqn)
        outer = self.outer.get(k)
        if k in self.scatters:
            total, g, key, fix = self.scatters[k]
            call = _call("add_at", [_load(_py_name(total)), _load(_py_name(g)), _literal(key)]
                         + ([] if fix is None else [_literal(fix)]))
        elif _by_last_axis(eqn, self.layouts, self.broadcasts):
            call = _call("by_last_axis", [_dotted(_impl_name(eqn.prim))] + inputs,
                         keywords)
        elif outer is not None:
            call = _call("outer_product", [ast.Constant(value=outer[0])] + [
                _load(_py_name(v)) for v in outer[1]], {key: _literal(v) for key, v in outer[2].items()})
        elif k in self.plain:
            call = plain_call_ast(self.plain[k], inputs[0])
        else:                                   # (np.dot: cheap_calls)
            call = _call("np_dot" if k in self.dots else _impl_name(eqn.prim), inputs, keywords)
        return _call("np.ascontiguousarray", [call]) if k in self.contiguous else call

    def keywords(self, k: int, eqn) -> dict[str, ast.expr]:
        """Its parameters, by keyword, so one a parameter already gives (drop_identities'
        order='C') and one chosen here are one keyword, not a repeated one (a SyntaxError)."""
        keywords = {key: _literal(v) for key, v in eqn.params.items()}
        out = eqn.outputs[0]
        if k in self.in_place:
            keywords["out"] = _load(_py_name(eqn.inputs[self.in_place[k]]))
        elif id(out) in self.reshaped and id(out) in self.layouts.blind and out.ndim >= 2 \
                and plain_ufunc(eqn):
            # numpy lays a result out like its (maybe transposed, broadcast) inputs; a
            # reshape of that would copy it, so make it C-contiguous in the first place
            # (where no product reads it: eager code hands a product the other layout)
            keywords["order"] = ast.Constant(value="C")
        return keywords


def _targets(eqn) -> ast.expr:
    outs = [ast.Name(id=_py_name(v), ctx=ast.Store()) for v in eqn.outputs]
    return outs[0] if not eqn.prim.multiple_results else ast.Tuple(elts=outs, ctx=ast.Store())


def _reshaped(program: Program) -> set[int]:
    """The variables some reshape reads (a non-C-ordered one would be copied by it)."""
    return {id(e.inputs[0]) for e in program.equations if e.prim.name == "reshape"}


# -- results are fresh arrays ------------------------------------------------------------
def borrowed_outputs(program: Program) -> set[int]:
    """Positions of outputs that may be an input or a constant, or a view of one (the caller
    owns those; a Variable's value must not change when a result is written to), or a
    read-only broadcast view: the generated code returns a copy of those, so every result
    is a fresh array that shares no memory with the caller's arrays or a Variable (a
    tensor's array is made read-only: it must not freeze the caller's), as eager results
    are. (`x * ones_like(x)` simplifies to `x`; a Jacobian of `sum(x * c)` is `c` broadcast.)"""
    borrowed = {id(v) for v in program.inputs} | {id(v) for v in program.consts}
    for eqn in program.equations:       # (an op may alias: Primitive.may_alias)
        if eqn.prim.may_alias and (eqn.prim.name == "broadcast_to"
                                   or any(id(v) in borrowed for v in eqn.inputs)):
            borrowed.update(id(o) for o in eqn.outputs)
    return {k for k, v in enumerate(program.outputs) if id(v) in borrowed}


# -- layout of small broadcast operands -----------------------------------------------------
_BROADCAST_RATIO = 8             # operand at most 1/8 of the ufunc's result: copying it is cheap


def broadcast_transposes(program: Program, layouts: Layouts | None = None) -> set[int]:
    """Indices of transposes whose (small) result some ufunc broadcasts against a much
    larger operand, through reshapes and broadcast_to's only: those are emitted as a
    C-contiguous copy (`np.ascontiguousarray(transpose_impl(w, perm=(1, 0)))`).

    numpy's inner loop runs along the result's last axis; when the broadcast operand steps
    through memory with a stride there (a transposed weight matrix, as a jacobian's
    one-hot rows make of the last layer), the loop cannot use SIMD loads and runs 2x
    slower over the whole large result (the MLP's (10, 256, 128) product: 135 -> 67 us).
    The copy reads only the small operand; the values are the same."""
    source: dict[int, int] = {}   # variable -> index of the transpose it is a view of
    chosen: set[int] = set()
    for k, eqn in enumerate(program.equations):
        name = eqn.prim.name
        if name == "transpose":       # a transpose of such a view: still the first one's data
            source[id(eqn.outputs[0])] = source.get(id(eqn.inputs[0]), k)
        elif name in ("reshape", "broadcast_to") and id(eqn.inputs[0]) in source:
            source[id(eqn.outputs[0])] = source[id(eqn.inputs[0])]
        elif plain_ufunc(eqn):
            size = math.prod(eqn.outputs[0].shape)
            for v in eqn.inputs:
                t = source.get(id(v))
                if t is not None and \
                        math.prod(program.equations[t].outputs[0].shape) * _BROADCAST_RATIO <= size:
                    chosen.add(t)
    layouts = layouts or Layouts(program)
    return {t for t in chosen if layouts.stretchable(program.equations[t].outputs[0])}


# -- layouts ---------------------------------------------------------------------------------
# A product rounds by its operands' memory layout (the layout picks numpy's path and BLAS's
# kernel), so generated code must hand every product operands laid out as eager code's are.
# Primitive.layout says which ops' values don't depend on their inputs' layout: "free" ones
# make C-ordered results (sum and prod reduce C-ordered data; np.take, fresh zeros),
# "following" ones lay their results out like their inputs.


def _readers(program: Program) -> dict[int, list]:
    readers: dict[int, list] = {}
    for eqn in program.equations:
        for v in eqn.inputs:
            readers.setdefault(id(v), []).append(eqn)
    return readers


def layout_blind(program: Program, readers: dict) -> set[int]:
    """Variables whose memory layout no value depends on: everything that reads them is
    layout-free, a ufunc asked for a C-ordered result (its values and layout are the same
    whatever its operands' layouts), or keeps values (ufuncs, views, max/min, cast) and
    makes layout-blind results. A result of the program is blind (its values are what they
    are)."""
    blind: set[int] = set()
    reads_blindly: dict[int, bool] = {}     # id(eqn) -> its results' layouts don't matter to it
    for eqn in reversed(program.equations):  # (every reader comes later: already decided)
        for v in eqn.outputs:
            if all(reads_blindly[id(r)] for r in readers.get(id(v), ())):
                blind.add(id(v))
        reads_blindly[id(eqn)] = _reads_blindly(eqn, blind)
    return blind


def _reads_blindly(r, blind: set) -> bool:
    """Whether reader `r`'s values and layout are the same whatever its operands' layouts."""
    if r.prim.layout == "free" or plain_ufunc(r) and r.params.get("order") == "C":
        return True
    return (r.prim.layout == "following" or _ufunc(r)) and all(id(o) in blind for o in r.outputs)


def surely_c_ordered(program: Program) -> set[int]:
    """Variables C-ordered at run time in generated and in eager code alike: results of
    2-D products and layout-free ops, reshapes of such, elementwise ops that lay their result
    out as their input (a cast) of such, and ufunc results `_c_ordered_ufunc` says are."""
    c: set[int] = set()
    for eqn in program.equations:
        out = eqn.outputs[0]
        name = eqn.prim.name
        if eqn.prim.layout == "free" or name == "matmul" and out.ndim <= 2:
            c.add(id(out))      # (a batched product lays its batch axes out as its operands)
        elif name == "reshape" and id(eqn.inputs[0]) in c:
            c.add(id(out))
        elif eqn.prim.elementwise and eqn.prim.layout == "following" and len(eqn.inputs) == 1:
            if id(eqn.inputs[0]) in c:
                c.add(id(out))
        elif _ufunc(eqn) and _c_ordered_ufunc(eqn, c):
            c.add(id(out))
    return c


def _c_ordered_ufunc(eqn, c: set) -> bool:
    """numpy orders a ufunc's loop (and result) by its operands' strides, C order winning
    where they conflict: the result is C-ordered when one operand of its size is, or every
    operand is C-ordered or has at most one axis longer than 1 (its strides order no pair
    of the result's axes: a broadcast F-ordered (2, 2) does, a (2, 1, 1) does not)."""
    size = math.prod(eqn.outputs[0].shape)
    return eqn.params.get("order") == "C" or any(
        id(v) in c and math.prod(v.shape) == size for v in eqn.inputs) or all(
        id(v) in c or sum(d > 1 for d in v.shape) <= 1 for v in eqn.inputs)


class Layouts:
    """What the layout analyses say about one program (see `stretchable`)."""

    def __init__(self, program: Program):
        self.program = program
        self.readers = _readers(program)
        self.c_ordered = surely_c_ordered(program)
        self.blind = layout_blind(program, self.readers)
        self.results = {id(v) for v in program.outputs}

    def stretchable(self, v) -> bool:
        """Whether `v` may be laid out otherwise than eager code lays it out (a broadcast
        view, a contiguous copy of a transpose) without changing any value: only ufuncs
        read it (directly or through reshapes, transposes and broadcasts), and each of
        those has a C-ordered operand of its result's size (its shape, but for leading
        unit axes; it then decides the result's layout, whatever `v`'s) or a result whose
        layout no value depends on."""
        seen, todo = {id(v)}, [v]
        while todo:
            u = todo.pop()
            for eqn in self.readers.get(id(u), ()):
                out = eqn.outputs[0]
                if eqn.prim.name in ("reshape", "transpose", "broadcast_to"):
                    if id(out) not in seen:
                        seen.add(id(out))
                        todo.append(out)
                elif eqn.prim.name != "all_finite" and not (_ufunc(eqn) and (
                        id(out) in self.blind or any(
                            id(i) in self.c_ordered and id(i) not in seen
                            and math.prod(i.shape) == math.prod(out.shape) for i in eqn.inputs))):
                    return False
        return not seen & self.results


# -- buffer reuse ---------------------------------------------------------------------------
_IN_PLACE_MIN = 1024             # elements: below this a fresh array is as cheap as reuse
_VIEWS = ("reshape", "transpose")


def in_place_outputs(program: Program, layouts: Layouts | None = None) -> dict[int, int]:
    """{equation index: input position} for elementwise equations that can write
    their result into an input's buffer (`np.add(c, d, out=c)`), as XLA reuses dead buffers.

    A buffer qualifies when a ufunc (or an impl marked `elementwise_out`) of this
    program made it (never an input, a constant
    or anything an impl might share with them), nothing reads it or a view of it later,
    it is not a result, and it has the output's shape and dtype, as do all operands (so
    numpy computes in that dtype exactly as without `out=`). Each fresh allocation of a
    large temporary costs page faults; reusing one costs nothing.
    """
    if all(math.prod(e.outputs[0].shape) < _IN_PLACE_MIN for e in program.equations
           if e.outputs):
        return {}                       # (no result is large enough: no buffer analysis)
    buffers = _Buffers(program, layouts or Layouts(program))
    chosen: dict[int, int] = {}
    for k, eqn in enumerate(program.equations):
        buffers.add(eqn.outputs)
        pos = buffers.reusable_input(k, eqn)
        if pos is not None:
            chosen[k] = pos
            buffers.join(eqn.outputs[0], eqn.inputs[pos])
        buffers.made(eqn)
    return chosen


def _last_uses(program: Program) -> dict[int, int]:
    """{id(var): index of the last equation that reads it}; a result's is past the last."""
    last_use = {id(v): k for k, eqn in enumerate(program.equations) for v in eqn.inputs}
    last_use.update((id(v), len(program.equations)) for v in program.outputs)
    return last_use


class _Buffers:
    """The buffers of a program's values, walking its equations in order: groups of values
    that may share memory (a union-find, each group with the last use of any of its values)
    and the values whose buffer one of its ufuncs made (`owned`)."""

    def __init__(self, program: Program, layouts: Layouts):
        self.layouts = layouts
        self.last_use = _last_uses(program)
        self.parent: dict[int, int] = {}
        self.end: dict[int, int] = {}       # root -> last use of any variable in its group
        self.owned: set[int] = set()
        # a transposed view is not in C order: a result written into one, then reshaped, would
        # be copied by the reshape (without out= the ufunc is asked for C order instead)
        self.reshaped = _reshaped(program)
        self.transposed = {id(e.outputs[0]) for e in program.equations if e.prim.name == "transpose"}
        self.add(list(program.inputs) + list(program.consts))

    def add(self, values) -> None:
        for v in values:
            self.end[id(v)] = self.last_use.get(id(v), -1)

    def root(self, v) -> int:
        k = id(v)
        while self.parent.get(k, k) != k:
            k = self.parent[k]
        return k

    def join(self, a, b) -> None:
        ra, rb = self.root(a), self.root(b)
        if ra != rb:
            self.parent[ra] = rb
            self.end[rb] = max(self.end[rb], self.end.pop(ra))

    def reusable_input(self, k: int, eqn) -> int | None:
        """The position of an input of equation `k` whose buffer its result can be written
        into, if any. The buffer's layout becomes the result's: where a product reads that,
        it must be the C order eager code's fresh result has (all full-size operands C-ordered)."""
        out = eqn.outputs[0]
        if not (_elementwise(eqn) and out.ndim and math.prod(out.shape) >= _IN_PLACE_MIN
                and all(v.dtype == out.dtype for v in eqn.inputs)):
            return None
        c_ordered = self.layouts.c_ordered
        for pos, v in enumerate(eqn.inputs):
            if id(v) in self.transposed and id(out) in self.reshaped:
                continue
            if id(out) not in self.layouts.blind and not (id(out) in c_ordered and id(v) in c_ordered):
                continue
            if id(v) in self.owned and tuple(v.shape) == tuple(out.shape) \
                    and self.end[self.root(v)] <= k:
                return pos
        return None

    def made(self, eqn) -> None:
        """After `eqn`: a fresh result (or a dead buffer reused) is owned; anything else may
        share memory with its inputs, and a view of an owned buffer is owned too."""
        if _fresh_result(eqn):
            self.owned.update(id(o) for o in eqn.outputs if o.ndim)   # (0-d: numpy scalars)
            return
        for v in eqn.inputs:
            for o in eqn.outputs:
                self.join(o, v)
        out = eqn.outputs[0]
        if eqn.prim.name in _VIEWS and id(eqn.inputs[0]) in self.owned and out.ndim:
            self.owned.add(id(out))


def program_to_source(program: Program, name: str = "program", exact: bool = True,
                      c_inputs: bool = False) -> str:
    import astunparse
    name = _free_name(name, namespace_of(program))
    return astunparse.unparse(program_to_ast(program, name, exact, c_inputs)).strip() + "\n"


# Python's warning filters show a warning once per (message, line) of the module whose code
# raised it, counted in that module's `__warningregistry__`: one registry for all generated
# code, so numpy's "divide by zero" warns once, not once per compiled program or shape.
_WARNING_REGISTRY: dict = {}


def namespace_of(program: Program) -> dict:
    """The globals generated code reads: numpy, the primitives' forwards by name."""
    ns: dict[str, Any] = {"np": np, "__warningregistry__": _WARNING_REGISTRY, "by_last_axis": by_last_axis,
                          "outer_product": EINSUM, "c_einsum": EINSUM, "np_dot": np.dot,
                          "add_at": add_at}
    for eqn in program.equations:
        impl = ns[f"{eqn.prim.name}_impl"] = core.impl_rules[eqn.prim]
        if isinstance(impl, np.ufunc):
            ns[f"np_{impl.__name__}"] = impl
    return ns


def compile_program(program: Program, name: str = "program", exact: bool = True,
                    c_inputs: bool = False) -> Callable:
    """A plain function of numpy arrays: `fn(*input_arrays, consts) -> tuple of arrays`
    (`exact`, `c_inputs`: see `program_to_ast`)."""
    ns = namespace_of(program)
    name = _free_name(name, ns)
    try:
        code = compile(program_to_ast(program, name, exact, c_inputs), f"<pforjac {name}>", "exec")
    except (SyntaxError, ValueError, TypeError) as e:     # (what compile raises on a bad AST)
        raise CodegenError(f"pforjac generated code for '{name}' that does not compile ({e}); "
                           f"this is a bug in pforjac.codegen, please report it with the "
                           f"program:\n{program}") from e
    exec(code, ns)
    return ns[name]


class CodegenError(RuntimeError):
    """The code generated for a Program does not compile: a bug of pforjac's, never of the
    user's program (the loop cache raises it under `loopcache.verifying`)."""


def _free_name(name: str, namespace: dict) -> str:
    """`name`, unless the generated code reads a global of that name (`np`, `slice`, an
    impl in `namespace`, a builtin): its `def` would shadow it."""
    while name in namespace or hasattr(builtins, name) or keyword.iskeyword(name):
        name += "_compiled"
    return name
