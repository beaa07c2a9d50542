"""autograd's `primitive`, `defvjp` and `defjvp` on pforjac's custom derivatives.

`@primitive` marks a function whose body pforjac does not differentiate (numpy on plain
arrays, or anything else); `defvjp(fun, *makers)` gives, per positional argument, a
`maker(ans, *args, **kwargs) -> (lambda g: that argument's cotangent)`, written with
`pforjac.autograd.numpy` so that it is differentiable again; `defjvp(fun, *rules)` a
`rule(g, ans, *args, **kwargs) -> output tangent` per argument. The function becomes a
`pforjac.custom_vjp` (or `custom_jvp` when it has forward rules alone) per pattern of
non-array arguments and keyword arguments, which are static.
"""
from __future__ import annotations

import functools
import itertools
import types

import numpy as np

from .. import core
from ..custom_derivatives import custom_jvp, custom_vjp
from ..tensor import SymbolicTensor, Tensor
from .vspace import Box, VSpace, active_trace, getval, vspace

__all__ = ["primitive", "defvjp", "defjvp", "defvjp_argnum", "defvjp_argnums", "Box", "VSpace",
           "vspace", "notrace_primitive"]


def _raw(value):
    """A concrete Tensor's array (what autograd hands a primitive), else the value."""
    if isinstance(value, Tensor) and not isinstance(value, SymbolicTensor):
        return value.numpy()
    return value


def _static(value) -> bool:
    return value is None or isinstance(value, (bool, int, str, np.integer)) \
        or (callable(value) and not isinstance(value, (Tensor, np.ndarray)))


class primitive:
    """autograd's `@primitive`: the function's own body is never differentiated."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vjpmakers: dict[int, object] = {}
        self.jvprules: dict[int, object] = {}
        self._customs: dict = {}

    def __get__(self, obj, objtype=None):          # as a method: bound like a function
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        trace = active_trace(args)
        if trace is not None:
            return trace.apply(self, args, kwargs)
        state = core.current_state()
        if not (state.tapes or state.traces) or not (self.vjpmakers or self.jvprules):
            return self.fun(*map(_raw, args), **kwargs)
        static = tuple(k for k, a in enumerate(args) if _static(a))
        key = (static, tuple(sorted(kwargs.items())))
        try:
            custom = self._customs.get(key)
        except TypeError:
            raise TypeError(f"autograd primitive '{self.__name__}': keyword arguments must be "
                            f"hashable (numbers, strings, tuples), got {kwargs}") from None
        if custom is None:
            custom = self._customs[key] = self._custom(static, kwargs)
        self._check_differentiable(args, static, state)
        return custom(*args)

    def _check_differentiable(self, args, static: tuple, state) -> None:
        """As autograd, refuses to differentiate with respect to an argument that has no
        vjp maker (checked where a tape watches it: elsewhere its cotangent is not asked)."""
        if not self.vjpmakers:
            return
        for k, a in enumerate(args):
            if k not in static and k not in self.vjpmakers and isinstance(a, Tensor) \
                    and any(core._tracks(tape, a) for tape in state.tapes):
                raise NotImplementedError(f"VJP of {self.__name__} wrt argnum {k} not defined")

    def _custom(self, static: tuple, kwargs: dict):
        def primal(*args):
            return self.fun(*map(_raw, args), **kwargs)
        primal.__name__ = self.__name__
        if self.vjpmakers:
            custom = custom_vjp(primal, nondiff_argnums=static)
            custom.defvjp(self._fwd(custom, static), self._bwd(static, kwargs))
        else:
            custom = custom_jvp(primal, nondiff_argnums=static)
            custom.defjvp(self._jvp(static, kwargs))
        return custom

    def _full(self, static: tuple, nondiff, diff) -> list:
        args, it = [], iter(diff)
        fixed = dict(zip(static, nondiff))
        for k in range(len(static) + len(diff)):
            args.append(fixed[k] if k in fixed else next(it))
        return args

    @staticmethod
    def _fwd(custom, static: tuple):
        def fwd(*args):      # (ans through the custom function: its own derivative, 2nd order)
            ans = custom(*args)
            return ans, (tuple(a for k, a in enumerate(args) if k not in static), ans)
        return fwd

    def _bwd(self, static: tuple, kwargs: dict):
        def bwd(*rest):
            nondiff, (diff, ans), g = rest[:-2], rest[-2], rest[-1]
            args = self._full(static, nondiff, diff)
            positions = [k for k in range(len(args)) if k not in static]
            return tuple(self._cotangent(k, ans, args, kwargs, g) for k in positions)
        return bwd

    def _cotangent(self, k: int, ans, args, kwargs, g):
        maker = self.vjpmakers.get(k)      # (none: no tape watched it, see __call__)
        return None if maker is None else maker(ans, *args, **kwargs)(g)

    def _jvp(self, static: tuple, kwargs: dict):
        def jvp(*rest):
            nondiff, primals, tangents = rest[:-2], rest[-2], rest[-1]
            args = self._full(static, nondiff, primals)
            ans = self.fun(*map(_raw, args), **kwargs)
            positions = [k for k in range(len(args)) if k not in static]
            terms = [self.jvprules[k](t, ans, *args, **kwargs)
                     for k, t in zip(positions, tangents) if self.jvprules.get(k) is not None]
            return ans, functools.reduce(lambda a, b: a + b, terms)
        return jvp


def defvjp(fun: primitive, *vjpmakers, argnums=None) -> None:
    """autograd's `defvjp(fun, maker0, maker1, ...)`: `maker(ans, *args, **kwargs)` returns
    `lambda g: cotangent of that argument`; None for an argument with a zero gradient."""
    _check(fun, "defvjp")
    if isinstance(fun.vjpmakers, _EveryArgument):
        fun.vjpmakers = {}
    for k, maker in zip(itertools.count() if argnums is None else argnums, vjpmakers):
        fun.vjpmakers[k] = maker
    fun._customs.clear()


def defvjp_argnum(fun: primitive, vjpmaker) -> None:
    """autograd's `defvjp_argnum`: `vjpmaker(argnum, ans, args, kwargs)` returns `lambda g:
    that argument's cotangent`, for every argument."""
    _check(fun, "defvjp_argnum")
    fun.vjpmakers = _EveryArgument(lambda k: lambda ans, *args, **kwargs:
                                   vjpmaker(k, ans, args, kwargs))
    fun._customs.clear()


def defvjp_argnums(fun: primitive, vjpmaker) -> None:
    """autograd's `defvjp_argnums`: `vjpmaker(argnums, ans, args, kwargs)` returns `lambda g:
    the cotangents of the arguments at argnums`, a sequence."""
    def maker(k):
        return lambda ans, *args, **kwargs: (
            lambda g: vjpmaker((k,), ans, args, kwargs)(g)[0])
    defvjp_argnum(fun, lambda k, ans, args, kwargs: maker(k)(ans, *args, **kwargs))


class _EveryArgument(dict):
    """A maker for every argument number, made on demand."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def get(self, k, default=None):
        return self._make(k)

    def __contains__(self, k) -> bool:
        return True

    def __bool__(self) -> bool:
        return True


def notrace_primitive(fun):
    """autograd's `notrace_primitive`: `fun` runs on the values of its arguments and its
    result is a constant to every derivative (a sampler, a comparison)."""
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        return fun(*map(getval, args), **kwargs)
    return wrapped


def defjvp(fun: primitive, *jvprules, argnums=None) -> None:
    """autograd's `defjvp(fun, rule0, rule1, ...)`: `rule(g, ans, *args, **kwargs)` is the
    output tangent from argument k's tangent g."""
    _check(fun, "defjvp")
    for k, rule in zip(itertools.count() if argnums is None else argnums, jvprules):
        fun.jvprules[k] = rule
    fun._customs.clear()


def _check(fun, what: str) -> None:
    if not isinstance(fun, primitive):
        raise TypeError(f"{what}: the function must be declared with "
                        f"@pforjac.autograd.primitive first, got {type(fun).__name__}")
