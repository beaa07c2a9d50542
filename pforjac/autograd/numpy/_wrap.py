"""autograd.numpy's convention: a function given no Tensor, outside every derivative,
returns numpy values (as numpy itself would); given a Tensor, or inside a derivative, it
returns Tensors, which the derivative follows."""
from __future__ import annotations

import functools
import types

from ... import core
from ...tensor import Tensor
from ...tree import tree_flatten, tree_map

__all__ = ["wrapped"]

_cache: dict = {}


def _tensors_in(args, kwargs):
    """True: a Tensor is among the arguments (or in a list or tuple among them); False:
    none is; None: a deeper nest, not looked through here."""
    for group in (args, kwargs.values()):
        for a in group:
            if isinstance(a, Tensor):
                return True
            if isinstance(a, (list, tuple)):
                for v in a:
                    if isinstance(v, Tensor):
                        return True
                    if isinstance(v, (list, tuple, dict)):
                        return None
            elif isinstance(a, dict):
                return None
    return False


def _deep_tensors_in(args, kwargs) -> bool:
    leaves, _ = tree_flatten((args, kwargs))
    return any(isinstance(v, Tensor) for v in leaves)


def wrapped(value, raw=None):
    """`value` itself, or for a function, one that returns numpy values for numpy inputs:
    `raw(*args)` (numpy's function of the same name, when given) outside derivatives."""
    if not isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return value
    key = _key(value)
    if key not in _cache:
        _cache[key] = (value, _function(value, raw))
    return _cache[key][1]


def _function(value, raw):
    """Outside derivatives with no Tensor among the arguments, numpy's own function `raw`
    gives the same values (autograd's primitives call numpy's on values that are not
    boxed), or pforjac's, its result as numpy values; otherwise pforjac's, on Tensors."""
    @functools.wraps(value)
    def function(*args, **kwargs):
        state = core.current_state()
        if state.tapes or state.traces or state.lifting is not None:
            return value(*args, **kwargs)
        found = _tensors_in(args, kwargs)
        if found is None:
            found = _deep_tensors_in(args, kwargs)
        if found:
            return value(*args, **kwargs)
        if raw is not None:
            return raw(*args, **kwargs)
        return tree_map(_plain, value(*args, **kwargs))
    return function


def _key(value):
    """One cache entry per function; a bound method, made anew at each attribute access
    (`norm.logpdf`), keyed by its object and function so that the cache does not grow."""
    if isinstance(value, types.MethodType):
        return id(value.__self__), id(value.__func__)
    return id(value)


def _plain(value):
    """A Tensor's numpy value; 0-d as a numpy scalar, as numpy's functions return it."""
    if not isinstance(value, Tensor):
        return value
    array = value.numpy()
    if array.ndim == 0:
        return array[()]
    return array if array.flags.writeable else array.copy()   # the caller's to write into
