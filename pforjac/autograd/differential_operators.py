"""autograd's differential operators (`autograd.differential_operators`) on pforjac's
tapes: each takes `fun` and `argnum` and returns a function of `fun`'s arguments."""
from __future__ import annotations

import functools
import inspect

import numpy as np

from .. import core
from ..tape import GradientTape
from ..tensor import Tensor
from ..ops.shape import reshape_p
from ..tree import tree_flatten, tree_map

__all__ = ["grad", "elementwise_grad", "value_and_grad", "grad_and_aux", "jacobian", "hessian",
           "hessian_vector_product", "hessian_tensor_product", "make_hvp", "make_vjp",
           "make_jvp", "holomorphic_grad", "grad_named", "tensor_jacobian_product",
           "vector_jacobian_product", "deriv"]


def _input(leaf, who: str) -> Tensor:
    """A fresh differentiable view of one input leaf (closures over it don't count): a
    new Tensor for a numpy value, an identity op of a Tensor (an outer derivative's)."""
    x = leaf if isinstance(leaf, Tensor) else Tensor._from_array(np.array(leaf))
    if x.dtype.kind not in "fc":
        raise TypeError(f"{who}: can't differentiate with respect to an input of dtype "
                        f"{x.dtype.name} (autograd refuses integers too); cast it to float")
    return reshape_p.bind(x, shape=tuple(x.shape)) if x is leaf else x


def _top_level() -> bool:
    state = core.current_state()
    return not state.tapes and not state.traces and state.lifting is None


def _out(value, arrays: bool = False):
    """numpy values at top level (autograd's results), Tensors inside another operator. As
    autograd's, a lone 0-d result is a numpy scalar; 0-d ones in a tuple, list or dict (a
    gradient for argnum=(0, 1)), and with `arrays` (a Jacobian), 0-d arrays."""
    if not _top_level():
        return value
    from .numpy._wrap import _plain
    if isinstance(value, Tensor) and not arrays:
        return _plain(value)
    return tree_map(lambda v: np.asarray(_plain(v)) if isinstance(v, (Tensor, np.generic))
                    else v, value)


def _nary(unary):
    """autograd's `unary_to_nary`: `op(fun, argnum)(*args)` differentiates `fun` with
    respect to the argument(s) at `argnum` (a tuple: a tuple of them, as one argument)."""
    @functools.wraps(unary)
    def nary_operator(fun, argnum=0, *op_args, **op_kwargs):
        @functools.wraps(fun)
        def nary_f(*args, **kwargs):
            def unary_f(x):
                if isinstance(argnum, int):
                    sub = list(args)
                    sub[argnum] = x
                else:
                    sub = list(args)
                    for k, v in zip(argnum, x):
                        sub[k] = v
                return fun(*sub, **kwargs)
            x = args[argnum] if isinstance(argnum, int) else tuple(args[k] for k in argnum)
            return unary(unary_f, x, *op_args, **op_kwargs)
        return nary_f
    return nary_operator


def _vjp_at(fun, x):
    """(vjp, ans): `vjp(g)` is g's cotangent with respect to `x` (a pytree), any number
    of times (a persistent tape)."""
    from .vspace import custom_vjp_at, is_custom
    if any(is_custom(v) for v in tree_flatten(x)[0]):
        return custom_vjp_at(fun, x, lambda v: _input(v, "autograd"))
    xs = tree_map(lambda v: _input(v, "autograd"), x)
    tape = GradientTape(persistent=True)
    with tape:
        tape.watch(xs)
        ans = fun(xs)
    tape._mark_recorded([ans] if isinstance(ans, Tensor) else [])

    def vjp(g):
        return tape.gradient(ans, xs, output_gradients=g, unconnected_gradients="zero")
    return vjp, ans


def _ones_like(ans):
    return np.ones(np.shape(ans), dtype=np.result_type(getattr(ans, "dtype", float), float))


@_nary
def make_vjp(fun, x):
    vjp, ans = _vjp_at(fun, x)
    return (lambda g: _out(vjp(g))), _out(ans)


@_nary
def grad(fun, x):
    """The gradient of a scalar-valued `fun` with respect to argument `argnum`."""
    vjp, ans = _vjp_at(fun, x)
    if np.size(ans) != 1:
        raise TypeError(f"grad only applies to real scalar-output functions; the output has "
                        f"shape {np.shape(ans)}: try jacobian, elementwise_grad or "
                        f"holomorphic_grad")
    return _out(vjp(_ones_like(ans)))


@_nary
def elementwise_grad(fun, x):
    """The sum over outputs of each one's gradient (the gradient of an elementwise `fun`)."""
    vjp, ans = _vjp_at(fun, x)
    return _out(vjp(_ones_like(ans)))


deriv = elementwise_grad


@_nary
def holomorphic_grad(fun, x):
    """The complex derivative of a holomorphic `fun` (f'(z), no conjugate)."""
    vjp, ans = _vjp_at(fun, x)
    return _out(vjp(np.ones(np.shape(ans), dtype=np.result_type(ans.dtype, complex))))


@_nary
def value_and_grad(fun, x):
    vjp, ans = _vjp_at(fun, x)
    return _out(ans), _out(vjp(_ones_like(ans)))


@_nary
def grad_and_aux(fun, x):
    """`fun` returns (value, aux): the gradient of the value, and aux."""
    aux = {}

    def value(x):
        out, aux["aux"] = fun(x)
        return out
    vjp, ans = _vjp_at(value, x)
    return _out(vjp(_ones_like(ans))), aux["aux"]


@_nary
def jacobian(fun, x):
    """d fun / d x, of shape fun(x).shape + x.shape."""
    from ..transforms import jacrev
    return _out(jacrev(fun)(x), arrays=True)


def hessian(fun, argnum=0):
    return jacobian(jacobian(fun, argnum), argnum)


@_nary
def make_jvp(fun, x):
    """`jvp(v) -> (fun(x), the derivative along v)`."""
    from ..functional import jvp as _jvp

    def jvp(v):
        ans, t = _jvp(fun, _input(x, "make_jvp"), _input(v, "make_jvp"),
                      create_graph=not _top_level())
        return _out(ans), _out(t)
    return jvp


def _dot(a, b, n: int):
    import pforjac.numpy as pnp
    return pnp.tensordot(a, b, n)


def hessian_tensor_product(fun, argnum=0):
    """`hvp(*args, vector)`: the Hessian of `fun` contracted with `vector`."""
    fun_grad = grad(fun, argnum)

    def vector_dot_grad(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return _dot(fun_grad(*args, **kwargs), vector, np.ndim(vector))
    return grad(vector_dot_grad, argnum)


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(fun, argnum=0):
    """`vjp(*args, vector)`: `vector` contracted with the Jacobian of `fun`."""
    def vector_dot_fun(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return _dot(vector, fun(*args, **kwargs), np.ndim(vector))
    return grad(vector_dot_fun, argnum)


vector_jacobian_product = tensor_jacobian_product


@_nary
def make_hvp(fun, x):
    """`(hvp, grad)`: `hvp(v)` is the Hessian-vector product at x."""
    g = grad(fun)
    vjp, ans = _vjp_at(lambda y: g(y), x)
    return (lambda v: _out(vjp(v))), _out(ans)


def grad_named(fun, argname):
    """The gradient with respect to the argument named `argname`."""
    argnum = list(inspect.signature(fun).parameters).index(argname)
    return grad(fun, argnum)
