"""Common-subexpression elimination: one equation per (op, inputs, parameters).

Dead-code elimination is the Program's own (`pforjac.program.eliminate_dead_code`).
"""
from __future__ import annotations

import numpy as np

from ...program import Equation, Program
from ...tensor import SymbolicTensor, Variable
from ._rewrite import rename, resolve

__all__ = ["eliminate_common_subexpressions", "param_key"]


def param_key(params: dict) -> tuple:
    """A key equal for equal parameters only: arrays by dtype, shape and bytes (numpy's
    repr elides long arrays and rounds to 8 digits), Python floats by their exact repr
    (-0.0 is not 0.0). Computed for every op of every cached Jacobian call: ints, strings
    and tuples of them (shapes, axes) are their own keys."""
    return tuple((k, _frozen(v)) for k, v in sorted(params.items()))


def _frozen(value):
    kind = type(value)
    if kind is int or kind is str or value is None:
        return value
    if kind is tuple:
        if all(type(v) is int for v in value):
            return value
        return ("tuple",) + tuple(_frozen(v) for v in value)
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, list):
        return ("list",) + tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple((repr(k), _frozen(v)) for k, v in value.items())
    return (kind.__name__, repr(value))     # floats, bools, dtypes, slices, ...


def eliminate_common_subexpressions(program: Program) -> Program:
    apart = _operands_kept_apart(program)
    alias = _equal_consts(program, apart)
    seen: dict[tuple, Equation] = {}
    kept = []
    for eqn in program.equations:
        ins = tuple(id(resolve(v, alias)) for v in eqn.inputs)
        key = (eqn.prim, ins, param_key(eqn.params))
        first = seen.get(key)
        if first is None or any(frozenset((id(v), id(w))) in apart
                                for v, w in zip(eqn.outputs, first.outputs)):
            seen.setdefault(key, eqn)
            kept.append(eqn)
        else:
            for v, w in zip(eqn.outputs, first.outputs):
                alias[id(v)] = w
    return rename(program, kept, alias)


_CONST_MAX = 1 << 16     # elements: larger constants (weights) are not compared byte for byte


def _equal_consts(program: Program, apart: set[frozenset]) -> dict[int, SymbolicTensor]:
    """Constants of equal dtype, shape and bits as one value ({id(const): the first}): two
    ops' own `inf`s, or the zeros their stable shifts fall back to, kept two equal chains
    apart (logsumexp's and log_softmax's). Variables are read at run time, values one
    product reads stay apart, and -0.0 is not 0.0 (the bits differ)."""
    alias: dict[int, SymbolicTensor] = {}
    seen: dict[tuple, SymbolicTensor] = {}
    for c, value in zip(program.consts, program.const_values):
        if isinstance(value, Variable) or int(np.prod(c.shape)) > _CONST_MAX:
            continue
        array = value.numpy()
        first = seen.setdefault((array.dtype.str, array.shape, array.tobytes()), c)
        if first is not c and frozenset((id(c), id(first))) not in apart:
            alias[id(c)] = first
    return alias


def _operands_kept_apart(program: Program) -> set[frozenset]:
    """Pairs of values that one product reads (directly or through reshapes, transposes and
    broadcasts): merged into one buffer, `a @ b.T` becomes `a @ a.T`, which numpy computes
    with another BLAS routine (syrk) that rounds differently from eager code's gemm."""
    root: dict[int, int] = {}
    pairs: set[frozenset] = set()
    for eqn in program.equations:
        if eqn.prim.name in ("reshape", "transpose", "broadcast_to"):
            v = id(eqn.inputs[0])
            root[id(eqn.outputs[0])] = root.get(v, v)
        elif eqn.prim.name in ("matmul", "einsum"):
            roots = {root.get(id(v), id(v)) for v in eqn.inputs}
            pairs.update(frozenset((a, b)) for a in roots for b in roots if a != b)
    return pairs
