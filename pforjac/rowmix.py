"""Can batch_jacobian prove its own assumption? A batch-axis analysis of the loop body.

`batch_jacobian(y, x)` assumes row b of the target depends only on row b of
the source. Its loop body starts from a seed whose axis 0 is the batch axis;
this pass follows that axis through every equation of the body (the backward
pass) and reports one of:

- `Proof()`: every value's batch entry b comes from seed entry b only, so the
  per-example Jacobians are exact;
- `Mixing(eqn)`: an equation combines different batch entries (a reduction or
  a matmul over the batch axis, a gather along it, an elementwise op on values
  whose batch axes disagree): the result would be wrong, so batch_jacobian
  warns (or raises under strict=True) naming it;
- `Unknown(eqn)`: an equation this pass has no rule for; nothing is claimed, and
  batch_jacobian(strict=True) raises naming it (strict asks for a guarantee).

Only equations the outputs depend on count: a vjp rule may compute a cotangent for
an input that is not a source (a weight's, summed over the batch) and drop it.

What it can't see: mixing hidden inside a single op that has no rule here, or
after rows are picked one by one (slicing single rows, as in
`stack([f(x[b]) for b ...])`, reversing or rolling the batch): it reports Unknown,
which only strict=True turns into an error; and mixing through values computed
outside the tape.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .program import Equation, Program
from .simplify import eliminate_dead_code
from .structure import _block_after_reshape

__all__ = ["analyze", "Proof", "Mixing", "Unknown"]

UNIFORM = "uniform"      # the same for every batch entry (no batch axis yet)
MIXED = "mixed"


@dataclass
class Proof:
    pass


@dataclass
class Mixing:
    eqn: Equation


@dataclass
class Unknown:
    eqn: Equation


_ELEMENTWISE = {"neg", "add", "subtract", "multiply", "multiply_no_nan", "divide", "power",
                "maximum", "minimum",
                "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sigmoid", "relu",
                "softplus", "sqrt", "square", "abs", "sign", "reciprocal", "where", "cast",
                "stop_gradient", "equal", "not_equal", "less", "less_equal", "greater",
                "greater_equal", "logical_and", "logical_or", "logical_not", "zeros_like",
                "ones_like"}


def analyze(program: Program, seed) -> Proof | Mixing | Unknown:
    """Follows the batch axis (axis 0 of `seed`) to the program's outputs."""
    state: dict[int, object] = {id(seed): 0}
    consts = {id(v): value for v, value in zip(program.consts, program.const_values)}
    unknown = None
    # only equations the outputs need: a rule's cotangent for an input that is not a
    # source (a weight's) may be computed and never used, and its mixing is harmless
    for eqn in eliminate_dead_code(program).equations:
        ins = [state.get(id(v)) for v in eqn.inputs]     # None: not derived from the seed
        if all(s is None for s in ins):
            continue
        if any(s == MIXED for s in ins):
            out = MIXED
        else:
            out = _rule(eqn, ins, consts)
        if out is None:
            unknown = unknown or eqn
            out = "unknown"
        if out == MIXED:
            return Mixing(eqn)
        for v in eqn.outputs:
            state[id(v)] = out
    finals = [state.get(id(v)) for v in program.outputs]
    if unknown is not None or any(f == "unknown" for f in finals):
        return Unknown(unknown)
    if any(f not in (None, 0, UNIFORM) for f in finals):
        return Mixing(program.equations[-1])
    return Proof()


def _rule(eqn: Equation, ins, consts: dict):
    """The batch axis of the output, UNIFORM, MIXED, or None when there is no rule
    (`consts`: the program's constant values by variable id)."""
    name, p = eqn.prim.name, eqn.params
    if "unknown" in ins:
        return "unknown"
    if name in _ELEMENTWISE:
        return _elementwise(eqn, ins)
    a = ins[0]
    if name in ("sum", "max", "min", "prod"):
        if a == UNIFORM or a is None:
            return UNIFORM
        if a in p["axes"]:
            return MIXED
        return a if p["keepdims"] else a - sum(1 for x in p["axes"] if x < a)
    if name == "reshape":
        if a == UNIFORM:
            return UNIFORM
        shape_in = tuple(eqn.inputs[0].shape)
        block = _block_after_reshape(shape_in, a, a + 1, tuple(p["shape"]))
        if block is None or block[1] - block[0] != 1:
            return None if shape_in[a] != 1 else UNIFORM
        return block[0]
    if name == "transpose":
        return UNIFORM if a == UNIFORM else p["perm"].index(a)
    if name == "broadcast_to":
        return UNIFORM if a == UNIFORM else a + len(p["shape"]) - eqn.inputs[0].ndim
    if name == "matmul":
        return _matmul(eqn, ins)
    if name == "einsum":
        return _einsum(eqn, ins)
    if name == "getitem":
        return _getitem(eqn, a)
    if name == "setitem_zeros":
        return _setitem_zeros(eqn, a)
    if name in ("concat", "pad") and all(s in (None, UNIFORM, a) for s in ins):
        along = p["axis"] if name == "concat" else None
        if a == UNIFORM or a is None:
            return UNIFORM
        if along == a or (name == "pad" and p["pad_width"][a] != (0, 0)):
            return None
        return a
    if name == "split":                  # rows picked apart when split along the batch axis
        return UNIFORM if a == UNIFORM else (None if p["axis"] == a else a)
    if name == "tile":
        return UNIFORM if a == UNIFORM else (None if p["reps"][a] != 1 else a)
    if name in ("gather", "scatter_add"):
        if ins[1] is not None or a == UNIFORM:
            return None if ins[1] is not None else UNIFORM
        axis, k = p["axis"], eqn.inputs[1].ndim
        # gather takes entries along `axis`; scatter_add spreads its k index axes there
        along = 1 if name == "gather" else k
        if axis <= a < axis + along:     # rows moved, unless the indices leave each in place
            return a if _identity_indices(eqn, consts) else MIXED
        shift = k - 1 if name == "gather" else 1 - k
        return a if a < axis else a + shift
    return None


def _identity_indices(eqn: Equation, consts: dict) -> bool:
    """gather/scatter_add with constant indices 0, 1, ..., size-1 (pfor's `x[i]` and its
    gradient): every row stays where it was."""
    value = consts.get(id(eqn.inputs[1]))
    size = eqn.params["size"] if eqn.prim.name == "scatter_add" \
        else eqn.inputs[0].shape[eqn.params["axis"]]
    if value is None or value.ndim != 1 or value.shape[0] != size:
        return False
    return bool(np.array_equal(value.numpy(), np.arange(size)))


def _elementwise(eqn: Equation, ins):
    rank = eqn.outputs[0].ndim
    axes = set()
    for v, s in zip(eqn.inputs, ins):
        if s is None or s == UNIFORM:
            continue
        axes.add(s + rank - v.ndim)
    if len(axes) > 1:
        return MIXED
    return axes.pop() if axes else UNIFORM


def _matmul(eqn: Equation, ins):
    (x, y), (sx, sy) = eqn.inputs, ins
    if x.ndim < 2 or y.ndim < 2:
        return None
    rank = eqn.outputs[0].ndim
    out = set()
    if sx not in (None, UNIFORM):
        if sx == x.ndim - 1:
            return MIXED                 # the batch axis is contracted
        out.add(sx + rank - x.ndim)
    if sy not in (None, UNIFORM):
        if sy == y.ndim - 2:
            return MIXED
        out.add(sy + rank - y.ndim)
    if len(out) > 1:
        return MIXED
    return out.pop() if out else UNIFORM


def _einsum(eqn: Equation, ins):
    """The batch axis's letter must survive into the output, and be one letter for all."""
    from .ops.linalg import parse_einsum
    letters, out = parse_einsum(eqn.params["subscripts"], [v.ndim for v in eqn.inputs])
    found = set()
    for subs, s in zip(letters, ins):
        if s is None or s == UNIFORM:
            continue
        letter = subs[s]
        if subs.count(letter) > 1:
            return None                  # a diagonal along the batch axis: no rule
        if letter not in out:
            return MIXED                 # the batch axis is summed over
        found.add(out.index(letter))
    if len(found) > 1:
        return MIXED                     # batch entries of two operands meet
    return found.pop() if found else UNIFORM


def _getitem(eqn: Equation, a):
    if a == UNIFORM:
        return UNIFORM
    key = eqn.params["key"]
    axis, out_axis = 0, 0
    for k in key:
        if k is None:
            out_axis += 1
            continue
        if axis == a:   # picking some rows: mixing only if they meet other rows later
            return out_axis if _whole_axis(k, eqn.inputs[0].shape[axis]) else None
        out_axis += 0 if isinstance(k, int) else 1
        axis += 1
    return out_axis + (a - axis)


def _whole_axis(k, size: int) -> bool:
    """`k` keeps every entry of an axis of `size`, in order (`:`, `0:`, `0:size`, `::1`)."""
    return isinstance(k, slice) and k.indices(size) == (0, size, 1)


def _setitem_zeros(eqn: Equation, a):
    """setitem_zeros writes its input into `out[key]`: map the input's axis back through key."""
    if a == UNIFORM:
        return UNIFORM
    in_axis, out_axis = 0, 0
    for k in eqn.params["key"]:
        if isinstance(k, int):
            out_axis += 1
            continue
        if in_axis == a:
            return out_axis if _whole_axis(k, eqn.outputs[0].shape[out_axis]) else None
        in_axis += 1
        out_axis += 0 if k is None else 1
    return out_axis + (a - in_axis)
