"""Pickling pforjac's compiled objects: what is stored is the user's function and the
options, never generated code or locks; the receiving process traces again on first use.

The standard `pickle` (the one `multiprocessing`, `concurrent.futures` and the `spawn`
start method use) stores a function by its qualified name, so only a function defined at
module level (or a method of a module-level class) can be sent; a lambda or a function
defined inside another function needs `cloudpickle` (which joblib's default backend uses),
and standard pickle is refused with an error that names the function and says so.

What a transform returns (`pj.grad(f)`, `pj.jacrev(f)`, `pj.vmap(f)`, ...) is a
`Transformed`: it pickles as the call that makes it again, `pj.grad(f, argnums, ...)`, so
it crosses to another process exactly when `f` does. What `pj.vjp_fn` and `pj.linearize`
return besides the output (the linear maps) is a `Remade`: it pickles as the call that
made it and its primals, so the receiving process runs the forward pass again.
"""
from __future__ import annotations

import functools
import importlib
import pickle
import sys
import types
from typing import Callable

import numpy as np

__all__ = ["picklable_function", "Transformed", "Remade"]

_BY_VALUE_PICKLERS = ("cloudpickle", "dill", "joblib.externals.cloudpickle")


def picklable_function(fn, owner: str):
    """`fn` for a pickler's `__reduce__` (its owner, e.g. "pforjac.function 'f'", named in
    the error): unchanged when standard pickle can find it by name or when a pickler that
    stores functions by value (cloudpickle, dill) is running; otherwise a PicklingError
    that names the function and the two ways out."""
    if _found_by_name(fn) or _by_value_pickler_running():
        return fn
    name = repr(getattr(fn, "__qualname__", None) or type(fn).__name__)
    if getattr(fn, "__wrapped__", None) is not None:     # a decorator's closure
        name = f"a function made around {name} (by a decorator)"
    raise pickle.PicklingError(
        f"{owner} can't be pickled with the standard pickle: it wraps {name}, and pickle "
        f"stores a function by its module and qualified name, which a lambda or a function "
        f"defined inside another function does not have in another process. Define the "
        f"function at module level (pforjac's transforms of it, pj.grad(f), then pickle too), "
        f"or pickle with cloudpickle (multiprocessing and concurrent.futures use the standard "
        f"pickle; joblib uses cloudpickle)")


def _found_by_name(fn) -> bool:
    """Whether `module.qualname` leads back to `fn` (True for anything but a Python
    function, a callable instance, a bound method or a functools.partial: its own pickling
    decides)."""
    if not isinstance(fn, types.FunctionType):
        return True
    qualname, module = getattr(fn, "__qualname__", None), getattr(fn, "__module__", None)
    if qualname is None or module is None:
        return True
    if "<locals>" in qualname or "<lambda>" in qualname:
        return False
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return False
    return obj is fn


def _by_value_pickler_running() -> bool:
    """Whether a pickler that stores functions by value is on the call stack (its dump()
    is Python code of its own module); standard pickle's is C, with no frame."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith(_BY_VALUE_PICKLERS):
            return True
        frame = frame.f_back
    return False


class Transformed:
    """A transform's result: `call` under the name and signature of the function `fun` it
    was made from, pickled as the recipe `transform(fun, *options, **keywords)` (a closure
    would not pickle at all), so the receiving process makes it again."""

    def __init__(self, call: Callable, transform: Callable, fun, *options, **keywords):
        functools.update_wrapper(self, fun)      # (first: it copies fun's __dict__)
        self._call = call
        self._recipe = (transform, fun, options, keywords)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __reduce__(self):
        transform, fun, options, keywords = self._recipe
        name = getattr(fun, "__name__", None) or type(fun).__name__
        fun = picklable_function(fun, f"pforjac.{_public_name(transform)}({name})")
        make = functools.partial(transform, **keywords) if keywords else transform
        return make, (fun, *options)

    def __repr__(self) -> str:
        transform, fun = self._recipe[:2]
        return f"<pforjac.{_public_name(transform)} of {fun!r}>"


def _public_name(transform) -> str:
    """`grad` for pforjac.grad; `hessian` for the module-private function behind the JAX
    form of pforjac.hessian (`_jax_hessian`)."""
    return transform.__name__.lstrip("_").replace("jax_", "")


class Remade:
    """`call`, a function returned as item `index` of `maker(fun, *args, **keywords)`,
    pickled as that call (`fun` and the arguments pickled with it): a closure over a tape
    or a traced Program would not pickle at all, and the receiving process makes it again.
    The arguments must be concrete values (arrays, Tensors, numbers, pytrees of them):
    one made inside a trace does not pickle. They are kept as they are now (`call` was
    made at them): an array the caller changes in place later (an optimizer's step), or
    a Tensor assigned into, would otherwise remake another point's map."""

    def __init__(self, call: Callable, index: int, maker: Callable, fun, *args, **keywords):
        functools.update_wrapper(self, call)
        self._call = call
        self._recipe = (maker, fun, _now(args), keywords, index)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __reduce__(self):
        maker, fun, args, keywords, index = self._recipe
        name = getattr(fun, "__name__", None) or type(fun).__name__
        fun = picklable_function(fun, f"pforjac.{_public_name(maker)}({name})")
        return _remake, (maker, fun, args, keywords, index)

    def __repr__(self) -> str:
        maker, fun = self._recipe[:2]
        return f"<{self.__name__} of pforjac.{_public_name(maker)}({fun!r}, ...)>"


def _remake(maker: Callable, fun, args: tuple, keywords: dict, index: int):
    return maker(fun, *args, **keywords)[index]


def _now(args: tuple) -> tuple:
    """`args` with each numpy array copied and each Tensor's current value taken (a
    Tensor's value is never changed in place: an assignment rebinds the object)."""
    from .tensor import Tensor
    from .tree_util import tree_map

    def leaf(x):
        if type(x) is np.ndarray:
            return x.copy()
        if type(x) is Tensor and x._trace is None:
            return Tensor._from_array(x._value)
        return x
    return tree_map(leaf, args)
