"""The sparsity patterns of Jacobians and Hessians, read off the traced Program.

`jacobian_sparsity(f, x)` traces `f` once and runs an abstract interpretation over its
equations: every element of every value holds the set of input elements it can depend
on (a row of a boolean CSR matrix), and each primitive's sparsity rule (`pattern_rules`)
says how its outputs' sets follow from its inputs'. `hessian_sparsity` carries, besides,
each element's set of input pairs that can have a non-zero second derivative, which the
primitives' curvature (linear, bilinear, nonlinear, ...) says how to extend: a nonlinear
op adds every pair of what its element reads, a product the pairs across its factors.

The patterns are global and structural: an entry is in them when it can be non-zero for
some x (both branches of a `where`, both sides of a `maximum`), whatever the values at
the point given, which only fixes the shapes. Cancellations are not seen: `x - x` keeps
its diagonal. Constant index arrays (gather, scatter) are read; other constants are not
(a dense constant matrix makes its product dense, whatever zeros it holds).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from ..program import Program, constant_values, eliminate_dead_code, make_program
from ..tensor import Tensor
from ..warn import warn_once
from . import _sets
from ._sets import ALL, sp
from . import array_rules  # noqa: F401  (the rules of numpy's array functions)
from .pattern_rules import curvature_of, product_terms, sparsity_rule_for

__all__ = ["jacobian_sparsity", "hessian_sparsity", "program_jacobian_sparsity",
           "program_hessian_sparsity"]


def jacobian_sparsity(f: Callable, x) -> "sp.csr_array":
    """The structural sparsity pattern of the Jacobian of `f` at inputs shaped like `x`.

    Args:
        f: a function of one tensor, made of pforjac ops (or numpy functions on tensors),
            returning one tensor.
        x: an array whose shape (and float dtype) the pattern is for; its values are not
            read.

    Returns:
        A boolean `scipy.sparse.csr_array` of shape (f(x).size, x.size), both flattened in
        C order: entry (i, j) is True when output i can depend on input j for some x.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> from pforjac.sparse.pattern import jacobian_sparsity
        >>> p = jacobian_sparsity(lambda u: u[1:] * u[:-1], np.zeros(4))
        >>> p.toarray().astype(int).tolist()
        [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    """
    return program_jacobian_sparsity(_trace(f, x), "jacobian_sparsity")


def program_jacobian_sparsity(program: Program, who: str = "program_jacobian_sparsity"):
    """`jacobian_sparsity` of a traced Program of one input and one output (`make_program`'s:
    code that traces `f` once can reuse its Program)."""
    program, n = _checked(program, who)
    out = _propagate(program, n, hessian=False)[0]
    m = int(np.prod(program.outputs[0].shape))
    if out is None:
        return _sets.empty(m, n)
    out.grad.sum_duplicates()              # (canonical already: checked, not redone)
    return out.grad


def hessian_sparsity(f: Callable, x) -> "sp.csr_array":
    """The structural sparsity pattern of the Hessian of a scalar `f` at inputs shaped like
    `x`: a symmetric boolean `scipy.sparse.csr_array` (x.size, x.size), True at (i, j)
    when d2f / dx_i dx_j can be non-zero for some x.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> from pforjac.sparse.pattern import hessian_sparsity
        >>> h = hessian_sparsity(lambda u: pj.sum(u[1:] * u[:-1]) + pj.sum(pj.exp(u[:1])),
        ...                      np.zeros(3))
        >>> h.toarray().astype(int).tolist()
        [[1, 1, 0], [1, 0, 1], [0, 1, 0]]
    """
    return program_hessian_sparsity(_trace(f, x), "hessian_sparsity")


def program_hessian_sparsity(program: Program, who: str = "program_hessian_sparsity"):
    """`hessian_sparsity` of a traced Program of one input and one scalar output."""
    program, n = _checked(program, who)
    shape = tuple(program.outputs[0].shape)
    if int(np.prod(shape)) != 1:
        raise ValueError(f"{who}: f must return a scalar (one element), got shape "
                         f"{shape}; take the Jacobian pattern of its gradient instead, or "
                         f"sum the outputs")
    out = _propagate(program, n, hessian=True)[0]
    if out is None or out.hess.nnz == 0:
        return _sets.empty(n, n)
    keys = out.hess.indices.astype(np.int64)
    i, j = keys // n, keys % n
    return _sets.from_rows(np.concatenate([i, j]), np.concatenate([j, i]), (n, n))


def _trace(f: Callable, x) -> Program:
    """`f`'s Program on one input shaped like `x` (float; an integer or boolean `x` is
    traced as float64)."""
    x = x.numpy() if isinstance(x, Tensor) else np.asarray(x)
    dtype = x.dtype if x.dtype.kind in "fc" else np.dtype(np.float64)
    return make_program(f, [(x.shape, dtype)])


def _checked(program: Program, who: str) -> tuple:
    """The Program without dead code, and its input's size; one input and one output."""
    if len(program.inputs) != 1:
        raise TypeError(f"{who}: the program must have one input, got "
                        f"{len(program.inputs)}; trace a function of one array")
    if len(program.outputs) != 1:
        raise TypeError(f"{who}: f must return one tensor, got {len(program.outputs)} "
                        f"values; concatenate them (pforjac.concat of their flattened "
                        f"values) to get one pattern")
    return eliminate_dead_code(program), int(np.prod(program.inputs[0].shape))


class _Pattern(NamedTuple):
    grad: "sp.csr_array"              # (elements, n): the inputs each element depends on
    hess: "sp.csr_array | None"       # (elements, n*n): pairs i <= j as column i * n + j


class _Context:
    """What a sparsity rule may read: which inputs carry dependencies, constant values."""

    def __init__(self, eqn, live: tuple, fixed: dict):
        self.eqn, self.live, self._fixed = eqn, live, fixed

    def value(self, k: int):
        t = self._fixed.get(id(self.eqn.inputs[k]))
        return None if t is None else np.asarray(t._value)


def _propagate(program, n: int, hessian: bool) -> list:
    """Each output's _Pattern (None: depends on nothing)."""
    env = {id(program.inputs[0]): _Pattern(_sets.identity(n),
                                           _sets.empty(n, n * n) if hessian else None)}
    fixed = constant_values(program)
    for eqn in program.equations:
        ins = [env.get(id(v)) for v in eqn.inputs]
        if all(p is None for p in ins) or curvature_of(eqn.prim, eqn) == "constant":
            continue
        for var, pattern in zip(eqn.outputs, _equation(eqn, ins, n, hessian, fixed)):
            if pattern is not None:
                env[id(var)] = pattern
    return [env.get(id(v)) for v in program.outputs]


def _relations(eqn, ins: list, fixed: dict) -> list:
    """Per output, per input, the relation its rule gives (ALL where it has none)."""
    live = tuple(p is not None for p in ins)
    rule = sparsity_rule_for(eqn.prim)
    if rule is None:
        warn_once(("sparsity", eqn.prim.name),
                  f"pforjac.sparse: op '{eqn.prim.name}' has no sparsity rule; its outputs "
                  f"are taken to depend on all of its inputs (a denser pattern than may be "
                  f"true); register one with pforjac.sparse.pattern_rules.defsparsity")
        rels = [ALL if k else None for k in live]
        return [rels] * len(eqn.outputs)
    rels = rule(eqn, _Context(eqn, live, fixed))
    return rels if eqn.prim.multiple_results else [rels]


def _equation(eqn, ins: list, n: int, hessian: bool, fixed: dict) -> list:
    """The _Pattern of each output of `eqn` (None for an integer or boolean one)."""
    patterns = []
    for var, rels in zip(eqn.outputs, _relations(eqn, ins, fixed)):
        size = int(np.prod(var.shape))
        if np.dtype(var.dtype).kind not in "fc":
            patterns.append(None)
            continue
        aligned = [(k, _sets.compose(r, p.grad, size),
                    _sets.compose(r, p.hess, size) if hessian else None)
                   for k, (r, p) in enumerate(zip(rels, ins)) if p is not None and r is not None]
        grad = _sets.union([g for _, g, _ in aligned], size, n)
        hess = _second_order(eqn, ins, aligned, grad, n) if hessian else None
        empty = grad.nnz == 0 and (hess is None or hess.nnz == 0)
        patterns.append(None if empty else _Pattern(grad, hess))
    return patterns


def _second_order(eqn, ins: list, aligned: list, grad, n: int):
    """The output elements' pairs: those their inputs carry, and the ones the op adds."""
    size, op = grad.shape[0], eqn.prim.name
    terms = [h for _, _, h in aligned]
    curvature = curvature_of(eqn.prim, eqn)
    if curvature == "nonlinear":
        terms.append(_sets.pairs(grad, grad, n, op))
    elif curvature == "bilinear" and eqn.prim in product_terms and len(aligned) == 2 \
            and len(eqn.inputs) == 2:       # (einsum of a constant and two: the pairs below)
        terms.append(_product_pairs(eqn, ins, n))
    elif curvature == "bilinear":
        terms += [_sets.pairs(a, b, n, op) for i, (_, a, _) in enumerate(aligned)
                  for (_, b, _) in aligned[i + 1:]]
    elif curvature == "quotient":
        by_input = {k: g for k, g, _ in aligned}
        if 1 in by_input:
            terms.append(_sets.pairs(by_input[1], by_input[1], n, op))
            if 0 in by_input:
                terms.append(_sets.pairs(by_input[0], by_input[1], n, op))
    return _sets.union(terms, size, n * n)


def _product_pairs(eqn, ins: list, n: int):
    """A contraction's cross pairs: each product's two factors' pairs, summed into the
    output element the product adds to."""
    out, factors = product_terms[eqn.prim](eqn)
    a, b = (_sets.compose(_sets.Select(f), p.grad, len(f)) for f, p in zip(factors, ins))
    per_product = _sets.pairs(a, b, n, eqn.prim.name)
    size = int(np.prod(eqn.outputs[0].shape))
    return _sets.compose(_sets.scatter_relation(out, size), per_product, size)
