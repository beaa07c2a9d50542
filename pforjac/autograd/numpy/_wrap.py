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


def _numpy_out(args, kwargs) -> bool:
    state = core.current_state()
    if state.tapes or state.traces or state.lifting is not None:
        return False
    leaves, _ = tree_flatten((args, kwargs))
    return not any(isinstance(v, Tensor) for v in leaves)


def wrapped(value):
    """`value` itself, or for a function, one that returns numpy values for numpy inputs."""
    if not isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return value
    key = _key(value)
    if key not in _cache:
        @functools.wraps(value)
        def function(*args, **kwargs):
            out = value(*args, **kwargs)
            if _numpy_out(args, kwargs):
                return tree_map(_plain, out)
            return out
        _cache[key] = (value, function)
    return _cache[key][1]





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
