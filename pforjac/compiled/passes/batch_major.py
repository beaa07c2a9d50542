"""Products whose result is read batch-first, computed batch-first.

`batch_jacobian` makes a per-example Jacobian rows-first and swaps it batch-first:

    out = transpose(reshape(matmul(reshape(e, (A*B, K)), W), (A, B, N)), (1, 0, 2))

`batch_major_products` computes it as `reshape(matmul(reshape(e', (B*A, K)), W), (B, A, N))`,
`e'` the swapped `e`: for an elementwise `e = f(u...)` that nothing else reads, `f` of the
swapped operands. An operand made the same way (a product's rows, then an elementwise op), or
by a ufunc read only there, is itself computed swapped, so the swap reaches back to where it
is free (a broadcast, a small weight), every product's rows come out batch-first, and the
result is C-ordered without a copy.

The match (`match_batch_major`) reads the program and returns a plan, a tree of `Rows`,
`Swapped` and `View` nodes; the rewrite (`rewrite_batch_major`) turns a plan into equations.

The elementwise work gives the same bits; the products may not in their last bit: OpenBLAS
rounds a row by its position in the product (its last rows and columns past a full kernel
block; any row with its Haswell sgemm kernel). This is the one pass that can change a
result's last bits: `pforjac.function(batch_major=False)` leaves it out, and the eager loop
cache never runs it (`pass_list`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ...ops.linalg import matmul_p
from ...ops.shape import reshape_p, transpose_p
from ...program import Equation, Program, constant_values, eliminate_dead_code
from ...tensor import SymbolicTensor
from ..codegen import _elementwise, plain_ufunc
from ._rewrite import fresh_vars, producers, use_counts
from .identities import broadcast_by_ones
from .reshapes import cancel_reshapes

__all__ = ["batch_major_products", "match_batch_major", "rewrite_batch_major"]

_SWAP_DEPTH = 32        # elementwise ops one swap reaches back through


def batch_major_products(program: Program) -> Program:
    """Every product whose result is read batch-first computed batch-first (see above)."""
    graph = _Graph(program)
    replaced: dict[int, list[Equation]] = {}       # id(transpose) -> its swapped equations
    for eqn in program.equations:
        plan = match_batch_major(eqn, graph)
        if plan is not None:
            replaced[id(eqn)] = rewrite_batch_major(plan, eqn.outputs[0])
    if not replaced:
        return program
    kept = [new for eqn in program.equations for new in replaced.get(id(eqn), [eqn])]
    return cancel_reshapes(eliminate_dead_code(replace(program, equations=kept)))


# -- the plan ------------------------------------------------------------------------------
@dataclass
class Swapped:
    """An elementwise equation computed on swapped operands, so its result is (B, A, K)."""
    eqn: Equation
    operands: list          # per input: Rows, Swapped or View


@dataclass
class Rows:
    """v = reshape(matmul(reshape(e, (A*B, K)), W), (A, B, N)): computed from e's swapped
    rows, it is (B, A, N)."""
    rows: Swapped
    product: Equation


@dataclass
class View:
    """An operand read through a swapped view (unit axes put first up to three axes)."""
    value: SymbolicTensor
    stretch: Equation | None = None     # `value = x * ones` as a broadcast of x (`_match_operand`)


class _Graph:
    """What the match reads of a program: each value's producer, readers and fixed value."""

    def __init__(self, program: Program):
        self.producer = producers(program)
        self.uses = use_counts(program)
        self.values = constant_values(program)

    def read_once(self, v) -> bool:
        return self.uses.get(id(v)) == 1

    def only(self, v, name: str) -> Equation | None:
        """v's producer if it is `name` and v is read once."""
        eqn = self.producer.get(id(v))
        return eqn if eqn is not None and eqn.prim.name == name and self.read_once(v) else None


# -- the match -----------------------------------------------------------------------------
def match_batch_major(eqn: Equation, graph: _Graph) -> Rows | None:
    """The plan computing `eqn` batch-first, if it is transpose(rows, (1, 0, 2)) of a
    product's rows read only there."""
    if eqn.prim.name != "transpose" or tuple(eqn.params["perm"]) != (1, 0, 2) \
            or not graph.read_once(eqn.inputs[0]):
        return None
    return _match_rows(eqn.inputs[0], graph)


def _match_rows(v, graph: _Graph) -> Rows | None:
    """v = reshape(matmul(reshape(e, (A*B, K)), W), (A, B, N)) with e = f(...) elementwise,
    each step read once, the rows merged and split as (A, B)."""
    split = graph.only(v, "reshape")
    product = split and graph.only(split.inputs[0], "matmul")
    merge = product and graph.only(product.inputs[0], "reshape")
    f = merge and graph.producer.get(id(merge.inputs[0]))
    if not (f and graph.read_once(merge.inputs[0]) and _elementwise(f) and v.ndim == 3
            and product.inputs[1].ndim == 2 and f.outputs[0].ndim == 3):
        return None
    a, b, k = f.outputs[0].shape
    if tuple(merge.outputs[0].shape) != (a * b, k) or tuple(v.shape[:2]) != (a, b):
        return None
    return Rows(_match_swapped(f, graph, 0), product)


def _match_swapped(f: Equation, graph: _Graph, depth: int) -> Swapped:
    return Swapped(f, [_match_operand(u, f, graph, depth) for u in f.inputs])


def _match_operand(u, f: Equation, graph: _Graph, depth: int):
    """How `f` reads `u` swapped: a product's rows or a ufunc read only here are computed
    swapped too (so f reads them in order, back to a broadcast); anything else is a view.
    `u = x * ones` that only stretches x is read as a broadcast of x where f writes its
    result C-ordered (a plain ufunc): no multiply, no array of that size."""
    rows = _match_rows(u, graph) if u.ndim == 3 else None
    if rows is not None:
        return rows
    times_ones = graph.only(u, "multiply")
    stretch = times_ones and broadcast_by_ones(times_ones, graph.values)
    g = graph.producer.get(id(u))
    if not stretch and g is not None and u.ndim == 3 and graph.read_once(u) and plain_ufunc(g) \
            and depth < _SWAP_DEPTH:
        return _match_swapped(g, graph, depth + 1)
    return View(u, stretch if stretch and plain_ufunc(f) else None)


# -- the rewrite ---------------------------------------------------------------------------
def rewrite_batch_major(plan: Rows, out: SymbolicTensor) -> list[Equation]:
    """The equations computing `plan` batch-first into `out` (new variables named after it)."""
    new: list[Equation] = []
    _emit_rows(plan, fresh_vars(out), new, out)
    return new


def _emit(plan, fresh, new: list) -> SymbolicTensor:
    """Appends to `new` the equations of `plan`; returns the swapped value they make."""
    emit = {View: _emit_view, Swapped: _emit_swapped, Rows: _emit_rows}[type(plan)]
    return emit(plan, fresh, new)


def _emit_rows(plan: Rows, fresh, new: list, out=None) -> SymbolicTensor:
    (a, b, k), n = plan.rows.eqn.outputs[0].shape, plan.product.outputs[0].shape[1]
    e = _emit(plan.rows, fresh, new)
    rows, prod = fresh((b * a, k), e.dtype), fresh((b * a, n), plan.product.outputs[0].dtype)
    out = fresh((b, a, n), prod.dtype) if out is None else out
    new += [Equation(reshape_p, [e], {"shape": (b * a, k)}, [rows]),
            Equation(matmul_p, [rows, plan.product.inputs[1]], dict(plan.product.params), [prod],
                     plan.product.origin),
            Equation(reshape_p, [prod], {"shape": (b, a, n)}, [out])]
    return out


def _emit_swapped(plan: Swapped, fresh, new: list) -> SymbolicTensor:
    f = plan.eqn
    operands = [_emit(p, fresh, new) for p in plan.operands]
    a, b, k = f.outputs[0].shape
    result = fresh((b, a, k), f.outputs[0].dtype)
    params = {**f.params, "order": "C"} if plain_ufunc(f) else dict(f.params)   # (rows for a product)
    new.append(Equation(f.prim, operands, params, [result], f.origin))
    return result


def _emit_view(plan: View, fresh, new: list) -> SymbolicTensor:
    u = plan.value
    if plan.stretch is not None:             # x broadcast in place of x * ones
        u = fresh(u.shape, u.dtype)
        new.append(replace(plan.stretch, outputs=[u]))
    if u.ndim < 3:
        padded = fresh((1,) * (3 - u.ndim) + tuple(u.shape), u.dtype)
        new.append(Equation(reshape_p, [u], {"shape": tuple(padded.shape)}, [padded]))
        u = padded
    view = fresh((u.shape[1], u.shape[0], u.shape[2]), u.dtype)
    new.append(Equation(transpose_p, [u], {"perm": (1, 0, 2)}, [view]))
    return view
