"""Forward mode: push tangents through a Program with the primitives' jvp rules.

`jvp_program(program, primals, tangents)` walks the equations once, binding
each op on its primal inputs (in the current context, like `run_program`) and
applying the op's jvp rule to its input tangents. A tangent is `None` where it
is known to be zero, so ops that don't touch a perturbed input cost nothing.

Run inside a traced loop body whose tangent depends on the loop index, the
primal ops have no input in that trace, so they are bound outside it: pfor
computes the primal pass once and vectorizes only the tangent pass. That is
how the forward-mode Jacobian is built (see `functional.py`).

Example:
    >>> import numpy as np, pforjac as pj
    >>> prog = pj.make_program(lambda x: pj.sin(x) * x, [((2,), "float64")])
    >>> x = pj.constant([0.0, 1.0], "float64")
    >>> (y,), (y_dot,) = jvp_program(prog, [x], [pj.ones((2,), "float64")])
    >>> np.round(y_dot.numpy(), 4).tolist()
    [0.0, 1.3818]
"""
from __future__ import annotations

from typing import Sequence

from . import core
from .program import Program, eliminate_dead_code
from .tensor import Tensor, as_tensor, is_float

__all__ = ["jvp_program", "apply_jvp"]


def apply_jvp(prim: core.Primitive, primals: Sequence[Tensor], tangents: Sequence,
              outs: Sequence[Tensor], params: dict) -> list:
    """Output tangents of one op (None where zero), from its inputs, tangents and outputs."""
    if not prim.differentiable or all(t is None for t in tangents):
        return [None] * len(outs)
    rule = core.jvp_rules.get(prim)
    if rule is None:
        raise NotImplementedError(
            f"primitive '{prim.name}' has no jvp rule, so forward-mode derivatives can't flow "
            f"through it; register one with pforjac.extend.defjvp (or defjvp_all) next to its "
            f"vjp rule")
    ans = tuple(outs) if prim.multiple_results else outs[0]
    result = rule(list(tangents), ans, *primals, **params)
    if not prim.multiple_results or result is None:
        result = [result] * len(outs) if result is None else [result]
    return [_checked(prim, t, o) for t, o in zip(result, outs)]


def _checked(prim: core.Primitive, t, out: Tensor):
    if t is None or not is_float(out.dtype):
        return None
    t = as_tensor(t)
    if tuple(t.shape) != tuple(out.shape):
        raise ValueError(f"the jvp rule of primitive '{prim.name}' returned a tangent of shape "
                         f"{tuple(t.shape)} for an output of shape {tuple(out.shape)}")
    if t.dtype != out.dtype:
        from .ops import cast
        t = cast(t, out.dtype)
    return t


def jvp_program(program: Program, primals: Sequence, tangents: Sequence) -> tuple[list, list]:
    """Runs `program` on `primals` and pushes `tangents` (None = zero) forward through it.

    Returns `(outputs, output_tangents)` as flat lists; an output tangent is
    None when the output does not depend on any perturbed input.
    """
    if len(primals) != len(program.inputs) or len(tangents) != len(program.inputs):
        raise TypeError(f"the program takes {len(program.inputs)} inputs, got {len(primals)} "
                        f"primals and {len(tangents)} tangents")
    env: dict[int, tuple] = {}
    for var, x, t in zip(program.inputs, primals, tangents):
        env[id(var)] = (as_tensor(x), _input_tangent(var, t))
    for var, value in zip(program.consts, program.const_values):
        env[id(var)] = (value, None)
    for eqn in _live_equations(program):
        xs = [env[id(v)][0] for v in eqn.inputs]
        ts = [env[id(v)][1] for v in eqn.inputs]
        outs = core.bind(eqn.prim, *xs, **eqn.params)
        outs = list(outs) if eqn.prim.multiple_results else [outs]
        for var, out, t in zip(eqn.outputs, outs, apply_jvp(eqn.prim, xs, ts, outs, eqn.params)):
            env[id(var)] = (out, t)
    results = [env[id(v)] for v in program.outputs]
    return [x for x, _ in results], [t for _, t in results]


def inputs_reaching_outputs(program: Program) -> list[bool]:
    """For each input, whether a tangent can flow from it to some output: through
    differentiable ops, not through stop_gradient (an input used only as an integer, a
    comparison's operand or a stop_gradient's has none)."""
    reach: dict[int, frozenset] = {id(v): frozenset([k]) for k, v in enumerate(program.inputs)
                                   if is_float(v.dtype)}
    for eqn in _live_equations(program):
        if not eqn.prim.differentiable or eqn.prim.name == "stop_gradient":
            continue
        found = frozenset().union(*(reach.get(id(v), frozenset()) for v in eqn.inputs))
        if found:
            for out in eqn.outputs:
                reach[id(out)] = found
    hit = frozenset().union(*(reach.get(id(v), frozenset()) for v in program.outputs))
    return [k in hit for k in range(len(program.inputs))]


def _live_equations(program: Program) -> list:
    """The equations that some output depends on, in order (dead code is skipped)."""
    return eliminate_dead_code(program).equations


def _input_tangent(var, t):
    if t is None or not is_float(var.dtype):
        return None
    t = as_tensor(t)
    if tuple(t.shape) != tuple(var.shape):
        raise ValueError(f"a tangent of shape {tuple(t.shape)} was given for a program input of "
                         f"shape {tuple(var.shape)}")
    return t
