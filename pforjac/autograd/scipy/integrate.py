"""autograd's `scipy.integrate.odeint`: scipy's `odeint` with a reverse-mode derivative
with respect to `y0`, `t` and the arrays in `args`, by the adjoint method.

The forward solve is scipy's `odeint` on numpy values. Its vjp integrates, backwards
from each output time to the one before it, the state together with its adjoint
`a` (`da/dt = -a^T df/dy`) and the accumulating cotangents of `t` and of the arguments
(`-a^T df/dt`, `-a^T df/dargs`), the vector-Jacobian products of `func` being taken by
pforjac's reverse mode. The cotangents are those of the exact solution, so they agree
with central differences of the numerical one to the solver's tolerance.

First derivatives only: the backward solve runs on numpy values, so a second derivative
through `odeint` is refused with an error rather than given as zero.

Example:
    >>> import numpy as np
    >>> import pforjac.autograd.numpy as anp
    >>> from pforjac.autograd import grad
    >>> from pforjac.autograd.scipy.integrate import odeint
    >>> decay = lambda y, t, k: -k * y
    >>> t = np.array([0.0, 1.0])
    >>> dk = grad(lambda k: odeint(decay, np.array([1.0]), t, (k,), rtol=1e-10, atol=1e-10)[-1, 0])
    >>> round(float(dk(0.5)), 6)        # d/dk exp(-k) at k = 0.5
    -0.606531
"""
from __future__ import annotations

import numpy as np
import scipy.integrate

from ... import core
from ...custom_derivatives import custom_vjp
from ...tensor import SymbolicTensor, Tensor
from ...tree import tree_flatten, tree_unflatten

__all__ = ["odeint"]


def odeint(func, y0, t, args=(), **kwargs):
    """`scipy.integrate.odeint(func, y0, t, args, **kwargs)`, differentiable with respect
    to `y0`, `t` and the (nests of) arrays in `args` (keyword arguments are the solver's
    options, as scipy's)."""
    if kwargs.get("full_output"):
        raise ValueError("odeint: full_output=True is not supported by pforjac.autograd's "
                         "odeint (its extra output has no derivative); call "
                         "scipy.integrate.odeint on numpy values for it")
    if kwargs.get("tfirst"):
        raise ValueError("odeint: tfirst=True is not supported; write func(y, t, *args)")
    options = tuple(sorted(kwargs.items()))
    return _odeint(func, options, y0, t, tuple(args))


def _numpy(value, what: str) -> np.ndarray:
    if isinstance(value, SymbolicTensor):
        raise TypeError(f"odeint: {what} is a traced value; scipy's odeint runs on numbers, "
                        f"so it cannot be compiled or vectorized (call it eagerly)")
    return value.numpy() if isinstance(value, Tensor) else np.asarray(value)


def _plain_args(args):
    leaves, tree = tree_flatten(args)
    return tree_unflatten(tree, [_numpy(v, "an argument") for v in leaves])


def _solve(func, options, y0, t, args) -> np.ndarray:
    def rhs(y, time, *a):
        return _numpy(func(y, time, *a), "func's value")
    return scipy.integrate.odeint(rhs, _numpy(y0, "y0"), _numpy(t, "t"), args=tuple(args),
                                  **dict(options))


def _primal(func, options, y0, t, args):
    return _solve(func, options, y0, t, _plain_args(args))


_odeint = custom_vjp(_primal, nondiff_argnums=(0, 1))


def _fwd(func, options, y0, t, args):
    args = _plain_args(args)
    yt = _solve(func, options, y0, t, args)
    return yt, (yt, _numpy(t, "t"), args)


def _bwd(func, options, residuals, g):
    _refuse_second_order(tree_flatten((residuals, g))[0])
    yt, t, args = residuals
    yt, t = _numpy(yt, "the solution"), _numpy(t, "t")
    flat, tree = tree_flatten(args)
    flat = [_numpy(v, "an argument") for v in flat]
    shapes = [np.shape(v) for v in flat]
    sizes = [int(np.prod(s)) for s in shapes]
    p = np.concatenate([np.ravel(v) for v in flat]) if flat else np.zeros(0)

    def unflatten(vector):
        parts = np.split(vector, np.cumsum(sizes)[:-1]) if sizes else []
        return tree_unflatten(tree, [v.reshape(s) for v, s in zip(parts, shapes)])
    adjoint = _Adjoint(func, options, unflatten, yt.shape[1], (repr(tree), tuple(shapes)))
    g_y0, g_t, g_p = adjoint.backward(yt, t, p, _numpy(g, "the cotangent"))
    return g_y0, g_t, unflatten(g_p)


def _refuse_second_order(values) -> None:
    """The vjp's inputs are followed by a tape (a derivative of the derivative): refused,
    as the backward solve would drop them from it."""
    tapes = core.current_state().tapes
    if any(isinstance(v, Tensor) and core._tracks(tape, v) for v in values for tape in tapes):
        raise NotImplementedError("odeint: second derivatives are not supported (its vjp "
                                  "solves the adjoint ODE on numpy values)")


_odeint.defvjp(_fwd, _bwd)


def _eager_vjp(func, unflatten, y, time, p, a):
    from ...functional import vjp
    value, (gy, gt, gp) = vjp(lambda y, s, q: func(y, s, *unflatten(q)), (y, time, p), a)
    return value, gy, gt, gp


def _compiled_vjp(func, unflatten):
    from ...compiled.function import function
    return function(lambda y, time, p, a: _eager_vjp(func, unflatten, y, time, p, a))


_compiled: dict = {}     # (func, argument layout) -> its compiled vjp, None: not compilable


class _Adjoint:
    """The backward (adjoint) solves of one vjp."""

    def __init__(self, func, options, unflatten, n: int, layout):
        self.func, self.options, self.unflatten, self.n = func, dict(options), unflatten, n
        self._layout = (func, layout)

    def _vjp(self, y, time, p, a):
        """func's value at (y, time, p), and a^T times its derivatives in y, time, p: by
        the vjp compiled once for func and these argument shapes (pforjac.function), or
        eagerly where func cannot be compiled (it branches on values, ...)."""
        args = (y, np.array(time, dtype=float), p, a)
        compiled = _compiled.get(self._layout)
        if compiled is None and self._layout not in _compiled:
            compiled = _compiled[self._layout] = _compiled_vjp(self.func, self.unflatten)
            while len(_compiled) > 16:                   # (funcs made anew at each call)
                del _compiled[next(iter(_compiled))]
        if compiled is not None:
            try:
                return tuple(map(np.asarray, compiled(*args)))
            except Exception:
                _compiled[self._layout] = None
        return tuple(map(np.asarray, _eager_vjp(self.func, self.unflatten, *args)))

    def dynamics(self, state, time, p):
        n = self.n
        value, gy, gt, gp = self._vjp(state[:n], time, p, -state[n:2 * n])
        return np.concatenate([value, gy, np.reshape(gt, 1), gp])

    def backward(self, yt, t, p, g):
        n = self.n
        a, g_t0, g_p = g[-1].copy(), 0.0, np.zeros_like(p)
        g_times = np.zeros(len(t))
        for i in range(len(t) - 1, 0, -1):
            # moving an output time moves that output along the flow
            g_times[i] = _numpy(self.func(yt[i], t[i], *self.unflatten(p)), "func's value") @ g[i]
            g_t0 -= g_times[i]
            state = np.concatenate([yt[i], a, [g_t0], g_p])
            out = scipy.integrate.odeint(self.dynamics, state, np.array([t[i], t[i - 1]]),
                                         args=(p,), **self.options)[1]
            a, g_t0, g_p = out[n:2 * n] + g[i - 1], out[2 * n], out[2 * n + 1:]
        g_times[0] = g_t0
        return a, g_times, g_p
