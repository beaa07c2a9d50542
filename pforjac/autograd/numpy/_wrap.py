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


def _outside(args, kwargs) -> bool:
    """No derivative is being taken and no Tensor is among the arguments (nor in a list or
    tuple among them): numpy's own function gives the same values, as autograd's
    primitives call numpy's on values that are not boxed."""
    state = core.current_state()
    if state.tapes or state.traces or state.lifting is not None:
        return False
    for group in (args, kwargs.values()):
        for a in group:
            if isinstance(a, Tensor):
                return False
            if isinstance(a, (list, tuple)) and any(
                    isinstance(v, Tensor) or isinstance(v, (list, tuple)) for v in a):
                return False          # (a deeper nest: the general path looks through it)
    return True


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
    @functools.wraps(value)
    def function(*args, **kwargs):
        if raw is not None and _outside(args, kwargs):
            return raw(*args, **kwargs)
        out = value(*args, **kwargs)
        if _numpy_out(args, kwargs):
            return tree_map(_plain, out)
        return out
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
