"""JAX's `vjp` and `linearize` idioms: the forward pass once, the linear map many times.

`vjp_fn(f, *primals)` is `jax.vjp`: `(out, vjp_fun)`, where `vjp_fun(ct)` returns one
cotangent per primal (a tuple, each in its primal's structure). The forward pass runs
once under a persistent tape, and each call of `vjp_fun` runs the tape's rules backwards
from a new cotangent.

`linearize(f, *primals)` is `jax.linearize`: `(out, jvp_fun)`, where `jvp_fun(*tangents)`
is the Jacobian-vector product at the primals. `f` is traced once, its jvp is traced once
into a Program of the tangents alone (the primal values it needs are computed then, at
linearization), and each call of `jvp_fun` runs that Program.

Numpy in, numpy out at top level (pforjac.boundary), for the functions returned too. They
pickle as the call that made them (`pforjac.pickling.Remade`): another process runs the
forward pass (or the trace) again, so `fun` must pickle (a module-level function, or
cloudpickle for a lambda).
They sit next to PyTorch's `pj.vjp(f, x, v)` / `pj.jvp(f, x, v)`, which take the vector
up front and return `(out, product)`.

Example:
    >>> import numpy as np, pforjac as pj
    >>> out, vjp_fun = pj.vjp_fn(lambda x: np.sin(x) * 2.0, np.zeros(2))
    >>> vjp_fun(np.array([1.0, 3.0]))[0].tolist()
    [2.0, 6.0]
    >>> out, jvp_fun = pj.linearize(lambda x: x ** 3, np.array([1.0, 2.0]))
    >>> jvp_fun(np.array([1.0, 1.0])).tolist()
    [3.0, 12.0]
"""
from __future__ import annotations

from typing import Callable

from .boundary import numpy_boundary
from .forward import jvp_program
from .pickling import Remade
from .program import make_program, run_program
from .tape import GradientTape
from .tensor import as_tensor
from .transforms import _called, _Options, _prepared, _regrouped, _split_aux
from .tree_util import flatten_up_to, tree_flatten, tree_unflatten

__all__ = ["vjp_fn", "linearize"]


@numpy_boundary
def vjp_fn(fun: Callable, *primals, has_aux: bool = False):
    """`(out, vjp_fun)` (or `(out, vjp_fun, aux)` with `has_aux`), as `jax.vjp`; see the
    module's docstring. `vjp_fun(ct)` takes a cotangent with the structure and shapes of
    `out` and can be called any number of times; an integer primal gets float0 zeros."""
    if not callable(fun):
        raise TypeError(f"vjp_fn: fun must be callable, got {type(fun).__name__}")
    nums = tuple(range(len(primals)))
    args, flat, trees = _prepared(primals, nums, _Options("vjp_fn", allow_int=True))
    with GradientTape(persistent=True) as tape:
        tape.watch(flat)
        out, aux = _split_aux(fun(*args), has_aux, "vjp_fn")
    out_leaves, out_def = tree_flatten(out)
    out_leaves = [as_tensor(v) for v in out_leaves]
    tape._mark_recorded(out_leaves)

    @numpy_boundary
    def vjp_fun(ct):
        try:
            cts = flatten_up_to(out_def, ct)
        except ValueError as e:
            raise ValueError(f"vjp_fun: the cotangent must have the structure of the "
                             f"output {out_def}: {e}") from None
        for k, (c, o) in enumerate(zip(cts, out_leaves)):
            if tuple(getattr(c, "shape", ())) != tuple(o.shape):
                raise ValueError(f"vjp_fun: cotangent leaf {k} has shape "
                                 f"{tuple(getattr(c, 'shape', ()))}, but the output leaf it "
                                 f"pairs with has shape {tuple(o.shape)}")
        grads = tape.gradient(out_leaves, flat, output_gradients=list(cts),
                              unconnected_gradients="zero") if flat else []
        return _regrouped(grads, trees, True)
    out = tree_unflatten(out_def, out_leaves)
    vjp_fun = Remade(vjp_fun, 1, vjp_fn, fun, *primals, has_aux=has_aux)
    return (out, vjp_fun, aux) if has_aux else (out, vjp_fun)


@numpy_boundary
def linearize(fun: Callable, *primals):
    """`(out, jvp_fun)`, as `jax.linearize`; see the module's docstring. `jvp_fun` takes
    one tangent per primal (each in its primal's structure) and returns the output's
    tangent, in the output's structure."""
    if not callable(fun):
        raise TypeError(f"linearize: fun must be callable, got {type(fun).__name__}")
    nums = tuple(range(len(primals)))
    args, flat, trees = _prepared(primals, nums, _Options("linearize"))
    program = make_program(lambda *xs: fun(*_called(args, nums, trees, xs)),
                           [(tuple(x.shape), x.dtype) for x in flat])
    seen = {}

    def tangent_map(*tangents):
        seen["out"], out_tangents = jvp_program(program, flat, list(tangents))
        return [t if t is not None else _zeros_like(o) for t, o in zip(out_tangents, seen["out"])]
    linear = make_program(tangent_map, [(tuple(x.shape), x.dtype) for x in flat])

    @numpy_boundary
    def jvp_fun(*tangents):
        if len(tangents) != len(primals):
            raise TypeError(f"jvp_fun takes one tangent per primal ({len(primals)}), got "
                            f"{len(tangents)}")
        leaves = []
        for k, (t, (tree, _, _)) in enumerate(zip(tangents, trees)):
            leaves.extend(_tangent_leaves(tree, t, k))
        return tree_unflatten(program.out_tree, run_program(linear, _checked(leaves, flat)))
    return tree_unflatten(program.out_tree, seen["out"]), Remade(jvp_fun, 1, linearize, fun,
                                                                 *primals)


def _tangent_leaves(tree, t, k: int) -> list:
    try:
        return flatten_up_to(tree, t)
    except ValueError as e:
        raise ValueError(f"jvp_fun: tangent {k} must have the structure of primal {k}: "
                         f"{e}") from None


def _checked(leaves: list, flat: list) -> list:
    out = []
    for k, (t, x) in enumerate(zip(leaves, flat)):
        t = as_tensor(t)
        if tuple(t.shape) != tuple(x.shape):
            raise ValueError(f"jvp_fun: tangent leaf {k} has shape {tuple(t.shape)}, but its "
                             f"primal has shape {tuple(x.shape)}")
        out.append(t)
    return out


def _zeros_like(value):
    from . import ops
    return ops.zeros_like(value)
