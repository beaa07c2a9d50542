"""The port's little language: lazily drawn inputs (`R(3, 2)`, `U(0.1, 4, 2)`, `R(4) ** 2 + 1.1`)
and `combo`, which expands one of autograd's `combo_check` calls into one case per combination
of arguments and keywords, as autograd's does."""
from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


class Gen:
    """An input drawn from a case's own random stream; arithmetic composes lazily."""

    def __init__(self, draw: Callable):
        self.draw = draw

    def _lift(self, other, op):
        if isinstance(other, Gen):
            return Gen(lambda rng: op(self.draw(rng), other.draw(rng)))
        return Gen(lambda rng: op(self.draw(rng), other))

    def __add__(self, o): return self._lift(o, np.add)
    def __radd__(self, o): return self._lift(o, lambda a, b: b + a)
    def __sub__(self, o): return self._lift(o, np.subtract)
    def __mul__(self, o): return self._lift(o, np.multiply)
    def __rmul__(self, o): return self._lift(o, lambda a, b: b * a)
    def __truediv__(self, o): return self._lift(o, np.divide)
    def __pow__(self, o): return self._lift(o, np.power)
    def __neg__(self): return Gen(lambda rng: -self.draw(rng))
    def __gt__(self, o): return self._lift(o, np.greater)
    def map(self, fn): return Gen(lambda rng: fn(self.draw(rng)))


def R(*shape) -> Gen:
    """Standard normal of `shape` (a 0-d array for no shape, as autograd's `npr.randn()`)."""
    return Gen(lambda rng: np.asarray(rng.standard_normal(shape), dtype=np.float64))


def U(low: float, high: float, *shape) -> Gen:
    return Gen(lambda rng: np.asarray(rng.uniform(low, high, shape), dtype=np.float64))


def C(value) -> Gen:
    """A fixed float64 input that is differentiated (autograd's `check([x, ...])` with x = 3.5)."""
    return Gen(lambda rng: np.asarray(value, dtype=np.float64))


def SPD(n: int, *batch) -> Gen:
    """A well-conditioned symmetric positive definite matrix (stack)."""
    def draw(rng):
        a = rng.standard_normal((*batch, n, n))
        return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    return Gen(draw)


def unary_inputs(low=-2.0, high=2.0):
    """autograd's unary_ufunc_check inputs: a scalar, a vector, two matrices in [low, high]."""
    t = lambda *shape: U(low, high, *shape)
    return [C(low + 0.4 * (high - low)), t(2), t(3, 2), t(1, 2)]


def binary_inputs(low=-2.0, high=2.0):
    t = lambda *shape: U(low, high, *shape)
    return [C(low + 0.6 * (high - low)), t(2), t(3, 2), t(1, 2)]


@dataclass
class Case:
    name: str
    fn: Callable            # fn(*args, **kwargs), calling the namespace it was built with
    args: list
    kwargs: dict = field(default_factory=dict)
    wrt: tuple = (0,)        # the arguments differentiated (a list argument: each element)
    hessian: bool = True     # a second-order check too

    def draw(self):
        """The arguments with every Gen drawn (float64 arrays), from the case's own seed."""
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))

        def resolve(v):
            if isinstance(v, Gen):
                return v.draw(rng)
            if isinstance(v, (list, tuple)) and any(isinstance(e, Gen) for e in v):
                return type(v)(resolve(e) for e in v)
            return v
        return [resolve(a) for a in self.args], {k: resolve(v) for k, v in self.kwargs.items()}


class Cases:
    """Collects the cases of one namespace triple; names must be unique."""

    def __init__(self):
        self.cases: dict[str, Case] = {}

    def add(self, name, fn, *args, wrt=(0,), hessian=True, **kwargs):
        if name in self.cases:
            raise ValueError(f"duplicate case {name}")
        self.cases[name] = Case(name, fn, list(args), kwargs, tuple(wrt), hessian)

    def combo(self, name, fn, wrt, *arg_lists, hessian=True, **kw_lists):
        """One case per combination, as autograd's combo_check(fun, wrt)(*arg_lists, **kw_lists)."""
        keys = list(kw_lists)
        combos = itertools.product(itertools.product(*arg_lists),
                                   itertools.product(*(kw_lists[k] for k in keys)))
        for i, (args, kws) in enumerate(combos):
            self.add(f"{name}-{i}", fn, *args, wrt=wrt, hessian=hessian, **dict(zip(keys, kws)))


class Deferred:
    """A namespace whose attributes are looked up when called, so that building the cases
    does not need every name to exist: a missing one fails its own cases, by name."""

    def __init__(self, root, path=()):
        self._root, self._path = root, path

    def __getattr__(self, name):
        return Deferred(self._root, self._path + (name,))

    def __call__(self, *args, **kwargs):
        target = self._root
        for name in self._path:
            target = getattr(target, name)
        return target(*args, **kwargs)
