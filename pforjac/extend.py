"""The public way to add an op to pforjac: declare it, give it rules, vectorize it.

An op is a primitive with up to five rules (see CONTRIBUTING.md):

    impl       the numpy forward, `forward(*arrays, **params) -> array`
    shape      `shape_rule(*avals, **params) -> (shape, dtype)`, without computing
    vjp        one rule per input, `rule(g, ans, *args, **params) -> that input's cotangent`
    jvp        one linear rule per input, `rule(t, ans, *args, **params) -> output tangent`
    converter  `conv(n, args, stacked, **params) -> (out, out_is_stacked)` for pfor

vjp, jvp and converter rules are written with pforjac's own ops, never numpy,
so gradients stay differentiable and vectorized programs stay vectorizable.

Example:
    >>> import numpy as np
    >>> import pforjac as pj
    >>> from pforjac import extend
    >>> cube = extend.defop("doc_cube", lambda x: x ** 3, extend.same_shape,
    ...                     vjp=lambda g, ans, x: g * 3.0 * x * x,
    ...                     jvp=lambda t, ans, x: t * 3.0 * x * x)
    >>> _ = extend.register_converter(cube)(extend.elementwise_converter(cube))
    >>> cube(pj.constant([1., 2.])).numpy()
    array([1., 8.], dtype=float32)

An op declared here checks, on every eager call, that its forward returns what
its shape rule promised, and that its vjp and jvp rules return tangents of the
right shape; the pfor driver checks every converter's output the same way.

A repeated eager Jacobian is compiled on its second sighting (pforjac.compiled.loopcache): its
backward pass, traced once, then runs as generated code, so a rule that reads Python
state (a module-level setting, a counter) would keep the value it read then. An op
declared here is therefore never cached unless `defop(..., pure_rules=True)` declares
that its rules read nothing but their arguments and parameters; declare it to get
compiled speed for repeated Jacobians through it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import core, ops
from .converters._helpers import align, iter_ndim, shift_axes, to_stacked
from .converters.elementwise import convert_elementwise
from .core import Primitive
from .ops._family import broadcast_shapes, elementwise_dtype
from .pfor import register_converter as _register_converter

__all__ = ["Op", "defop", "defvjp", "defjvp", "defvjp_all", "defjvp_all", "register_converter",
           "same_shape", "elementwise_shape", "elementwise_converter", "to_stacked", "align",
           "iter_ndim", "shift_axes", "move_loop_axis", "merge_loop_axis", "split_loop_axis",
           "declared_ops", "primitive_of", "declare_missing"]

declared_ops: dict[str, Primitive] = {}   # ops declared through this module, by name


class Op:
    """The callable returned by `defop`: `op(*inputs, **params)` binds its primitive."""

    def __init__(self, prim: Primitive):
        self.prim = prim
        self.name = prim.name
        self.__name__ = prim.name

    def __call__(self, *args, **params):
        return core.bind(self.prim, *args, **params)

    def __repr__(self) -> str:
        return f"<pforjac op {self.name}>"


primitive_of = core.primitive_of


def defop(name: str, forward: Callable, shape_rule: Callable, vjp=None, jvp=None, *,
          differentiable: bool = True, multiple_results: bool = False,
          override: bool = False, may_alias: bool = True, pure_rules: bool = False,
          **facts) -> Op:
    """Declares a primitive op and returns it as a callable.

    Args:
        name: the op's name, unique among primitives (it keys the converter registry).
        forward: the numpy computation, `forward(*arrays, **params) -> array`
            (a list of arrays if `multiple_results`). It gets tensors' arrays, which
            are read-only: it must not write into them, and code that wants a
            writable buffer (Cython memoryviews: `scipy.signal.sosfilt`'s
            coefficients) needs a copy, `np.array(x)`. It returns a fresh array or a
            view of its inputs; the tensor made from it is a read-only view.
        shape_rule: `shape_rule(*avals, **params) -> (shape, dtype)` (a list of them
            if `multiple_results`); avals have `.shape`, `.dtype` and `.ndim`.
            `same_shape` and `elementwise_shape(forward)` cover the common cases.
        vjp: one reverse rule per input, `rule(g, ans, *args, **params)`, written in
            pforjac ops (`None` for an input with no gradient); a bare callable is
            the rule of a one-input op. Use `defvjp_all` for variadic ops.
        jvp: one linear forward rule per input, `rule(t, ans, *args, **params)`;
            a bare callable is the rule of a one-input op.
        differentiable: False for ops whose outputs carry no gradient (comparisons,
            index computations); they need neither vjp nor jvp.
        multiple_results: the forward returns a list of arrays.
        override: replace an existing primitive of the same name.
        may_alias: the forward may return an input or a view of one (the default;
            False lets compiled code skip a copy of such results).
        pure_rules: the vjp, jvp and converter rules read nothing but their arguments
            and parameters (no Python state that may change), so the loop cache may
            compile repeated Jacobians through this op once and reuse the code; left
            False, such Jacobians run uncached on every call.
        facts: the op's other facts, read by pforjac's analyses and generated checks
            (see `pforjac.core.Primitive`): `elementwise=True` (output entry k depends
            on input entries k only: batch_jacobian's row check follows it, and it
            gets the broadcasting converter unless one is registered),
            `zero_preserving`, `layout`, `domain` (per input: "real", "positive",
            "unit", ...) and `examples` (`examples(rng) -> [core.Example]`).

    Returns:
        An `Op`; calling it binds the primitive (eagerly, on tapes, or in traces).

    Example:
        >>> import pforjac as pj
        >>> from pforjac import extend
        >>> twice = extend.defop("doc_twice", lambda x: 2 * x, extend.same_shape,
        ...                      vjp=lambda g, ans, x: 2.0 * g)
        >>> twice(pj.constant([1., 2.])).numpy()
        array([2., 4.], dtype=float32)
    """
    prim = core.new_primitive(name, None, shape_rule, multiple_results, differentiable, override,
                              may_alias=may_alias, pure_rules=pure_rules, **facts)
    core.impl_rules[prim] = _checked_forward(prim, forward)
    declared_ops[name] = prim
    prim.origin = "extend"
    if vjp is not None:
        defvjp(prim, *_per_input(vjp), override=override)
    if jvp is not None:
        defjvp(prim, *_per_input(jvp), override=override)
    return Op(prim)


def _per_input(rules) -> tuple:
    return (rules,) if callable(rules) else tuple(rules)


def _checked_forward(prim: Primitive, forward: Callable) -> Callable:
    """The forward, followed by a check of its result against the shape rule."""
    def impl(*arrays, **params):
        result = forward(*arrays, **params)
        outs = list(result) if prim.multiple_results else [result]
        want = core.abstract_eval(prim, arrays, params)
        got = [(tuple(np.shape(o)), np.asarray(o).dtype) for o in outs]
        if got != want:
            raise ValueError(f"the forward of op '{prim.name}' returned {_avals_str(got)} but its "
                             f"shape rule says {_avals_str(want)}; fix the forward or the shape rule")
        # a view of each array: the tensor made from it is read-only, an array the forward
        # hands back (a param, a table it keeps) must stay as writable as it was
        outs = [o.view() if isinstance(o, np.ndarray) else o for o in outs]
        return tuple(outs) if prim.multiple_results else outs[0]
    impl.__name__ = f"_impl_{prim.name}"
    return impl


def _avals_str(avals) -> str:
    return ", ".join(f"{np.dtype(d).name}{tuple(s)}" for s, d in avals)


# -- rules, checked -------------------------------------------------------------------

def defvjp(op, *per_input: Callable | None, override: bool = False) -> None:
    """Registers one reverse rule per input of `op`: `rule(g, ans, *args, **params)`.

    Each rule returns the cotangent of its input, with that input's shape (a wrong
    shape raises an error naming the op and the input). `None` marks an input with
    no gradient.
    """
    prim = primitive_of(op)
    checked = [None if r is None else _checked_vjp(prim, k, r) for k, r in enumerate(per_input)]
    core.defvjp(prim, *checked, override=override)


def _checked_vjp(prim: Primitive, k: int, rule: Callable) -> Callable:
    def checked(g, ans, *args, **params):
        ct = rule(g, ans, *args, **params)
        if ct is not None and tuple(ct.shape) != tuple(args[k].shape):
            raise ValueError(f"the vjp rule of op '{prim.name}' for input {k} returned a cotangent "
                             f"of shape {tuple(ct.shape)}, but input {k} has shape "
                             f"{tuple(args[k].shape)}; reduce or reshape it to the input's shape")
        return ct
    return checked


def defjvp(op, *per_input: Callable | None, override: bool = False) -> None:
    """Registers one linear forward rule per input of `op`: `rule(t, ans, *args, **params)`.

    Each rule maps its input's tangent `t` to a contribution to the output tangent,
    of the output's shape; contributions of several inputs add up. A rule is never
    called with a zero (None) tangent.
    """
    prim = primitive_of(op)
    checked = [None if r is None else _checked_jvp(prim, k, r) for k, r in enumerate(per_input)]
    core.defjvp(prim, *checked, override=override)


def defvjp_all(op, rule: Callable, override: bool = False) -> None:
    """One reverse rule for all inputs of `op` (variadic ops):
    `rule(g, ans, *args, **params)` returns a list with each input's cotangent (None for
    no gradient)."""
    core.defvjp_all(primitive_of(op), rule, override=override)


def defjvp_all(op, rule: Callable, override: bool = False) -> None:
    """One forward rule for all inputs of `op` (variadic ops):
    `rule(tangents, ans, *args, **params)`, a tangent None where it is zero."""
    core.defjvp_all(primitive_of(op), rule, override=override)


def _checked_jvp(prim: Primitive, k: int, rule: Callable) -> Callable:
    def checked(t, ans, *args, **params):
        out = rule(t, ans, *args, **params)
        if out is not None and not prim.multiple_results and tuple(out.shape) != tuple(ans.shape):
            raise ValueError(f"the jvp rule of op '{prim.name}' for input {k} returned a tangent of "
                             f"shape {tuple(out.shape)}, but the output has shape "
                             f"{tuple(ans.shape)}; broadcast or reshape it to the output's shape")
        return out
    return checked


def register_converter(op, override: bool = False):
    """Decorator registering the pfor converter of `op` (an Op, Primitive or name).

    The contract: `conv(n, args, stacked, **params) -> (out, out_is_stacked)`.

    - `n`: the number of loop iterations being vectorized.
    - `args`: the op's inputs as tensors. A *stacked* input has a leading axis of
      size `n` (slice k is iteration k's value); an *unstacked* one is the same for
      every iteration and has exactly the per-iteration shape.
    - `stacked`: one bool per input; at least one is True (the driver binds the op
      as it is when none is).
    - `params`: the op's static parameters, as passed at bind time.
    - returns the output (a list for multiple results) and whether it is stacked:
      a stacked output has shape `(n,) + per-iteration shape`.

    Write the body with pforjac ops. Raise ValueError naming the reason for a case
    it can't handle: the loop then runs sequentially, with a warning. Registering
    a second converter for the same op is an error unless `override=True`.

    Example:
        >>> from pforjac import extend
        >>> op = extend.defop("doc_shift", lambda x: x + 1, extend.same_shape)
        >>> @extend.register_converter(op)
        ... def _convert_doc_shift(n, args, stacked):
        ...     (x,) = args
        ...     return op(x), True      # elementwise: the loop axis goes along
    """
    return _register_converter(op, override)


def declare_missing(op, rule: str, reason: str) -> None:
    """Declares that `op` lacks `rule` ("vjp", "jvp", "converter", ...) on purpose;
    `python -m pforjac.coverage` shows the reason instead of flagging it."""
    from .coverage import declare_missing as declare    # (python -m pforjac.coverage runs it)
    declare(op, rule, reason)


# -- shape rules for the common cases -------------------------------------------------

def same_shape(x, *args, **params) -> tuple:
    """Shape rule of an op whose output has its first input's shape and dtype."""
    return tuple(x.shape), x.dtype


def elementwise_shape(forward: Callable) -> Callable:
    """Shape rule of a broadcasting elementwise `forward`: broadcast shape, numpy's dtype."""
    def shape_rule(*args, **params):
        return broadcast_shapes(*(a.shape for a in args)), elementwise_dtype(forward, args, params)
    return shape_rule


# -- converter helpers ---------------------------------------------------------------

def elementwise_converter(op) -> Callable:
    """The converter of any broadcasting elementwise op: the loop axis goes along.

    Stacked inputs get size-1 axes after the loop axis so they broadcast against
    each other; unstacked ones broadcast as they are.
    """
    return convert_elementwise(primitive_of(op))


def move_loop_axis(x, axis: int):
    """Moves the loop axis of a stacked `x` from the front to position `axis`."""
    return ops.moveaxis(x, 0, axis)


def merge_loop_axis(x):
    """(n, d0, d1, ...) -> (n * d0, d1, ...): the loop axis becomes part of a batch axis."""
    return ops.reshape(x, (x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))


def split_loop_axis(x, n: int):
    """(n * d0, d1, ...) -> (n, d0, d1, ...): undoes `merge_loop_axis`."""
    return ops.reshape(x, (n, x.shape[0] // n if n else 0) + tuple(x.shape[1:]))
