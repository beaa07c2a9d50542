"""autograd's `fixed_point(f, a, x0, distance, tol)`: the fixed point x* = f(a)(x*) found by
iterating from x0 until `distance(x, x_prev) <= tol`, differentiated implicitly (the
adjoint u = g + (df/dx)^T u is itself a fixed point), so no iteration is taped."""
from __future__ import annotations

from ...custom_derivatives import custom_vjp
from ...ops.elementwise import zeros_like
from ...ops.shape import reshape_p
from ...tape import GradientTape
from ...tree import tree_flatten, tree_unflatten

__all__ = ["fixed_point"]


def fixed_point(f, a, x0, distance, tol):
    return _fixed_point(f, distance, tol, a, x0)


def _iterate(f, distance, tol, a, x0):
    step = f(a)
    x, x_prev = step(x0), x0
    while distance(x, x_prev) > tol:
        x, x_prev = step(x), x
    return x


_fixed_point = custom_vjp(_iterate, nondiff_argnums=(0, 1, 2))


def _fwd(f, distance, tol, a, x0):
    x_star = _fixed_point(f, distance, tol, a, x0)
    return x_star, (a, x_star, x0)


def _bwd(f, distance, tol, res, g):
    a, x_star, x0 = res
    u = _fixed_point(_adjoint_step(f), distance, tol, (a, x_star, g), zeros_like(x_star))
    return _vjp(lambda a: f(a)(x_star), a, u), zeros_like(x0)


_fixed_point.defvjp(_fwd, _bwd)
_adjoint_steps: dict = {}


def _adjoint_step(f):
    """`packed -> (u -> g + (df(a)/dx at x*)^T u)`, one function per f (it keys the rules)."""
    if f not in _adjoint_steps:
        def step(packed):
            a, x_star, g = packed
            return lambda u: g + _vjp(f(a), x_star, u)
        _adjoint_steps[f] = step
    return _adjoint_steps[f]


def _vjp(fun, x, ct):
    """The cotangent of `x` (a nest of values) pulled back through `fun` from `ct`."""
    leaves, tree = tree_flatten(x)
    xs = [reshape_p.bind(v, shape=tuple(v.shape)) for v in leaves]
    with GradientTape() as tape:
        tape.watch(xs)
        out = fun(tree_unflatten(tree, xs))
        grads = tape.gradient(out, xs, output_gradients=ct, unconnected_gradients="zero")
    return tree_unflatten(tree, grads)
