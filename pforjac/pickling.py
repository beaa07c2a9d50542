"""Pickling pforjac's compiled objects: what is stored is the user's function and the
options, never generated code or locks; the receiving process traces again on first use.

The standard `pickle` (the one `multiprocessing`, `concurrent.futures` and the `spawn`
start method use) stores a function by its qualified name, so only a function defined at
module level (or a method of a module-level class) can be sent; a lambda or a function
defined inside another function needs `cloudpickle` (which joblib's default backend uses),
and standard pickle is refused with an error that names the function and says so.
"""
from __future__ import annotations

import importlib
import pickle
import sys

__all__ = ["picklable_function"]

_BY_VALUE_PICKLERS = ("cloudpickle", "dill", "joblib.externals.cloudpickle")


def picklable_function(fn, owner: str):
    """`fn` for a pickler's `__reduce__` (its owner, e.g. "pforjac.function 'f'", named in
    the error): unchanged when standard pickle can find it by name or when a pickler that
    stores functions by value (cloudpickle, dill) is running; otherwise a PicklingError
    that names the function and the two ways out."""
    if _found_by_name(fn) or _by_value_pickler_running():
        return fn
    name = repr(getattr(fn, "__qualname__", None) or type(fn).__name__)
    if getattr(fn, "__wrapped__", None) is not None:     # pj.grad(f) and other transforms
        name = f"a function made around {name} (by pj.grad or another transform)"
    raise pickle.PicklingError(
        f"{owner} can't be pickled with the standard pickle: it wraps {name}, and pickle "
        f"stores a function by its module and qualified name, which a lambda, a function "
        f"defined inside another function or a transform's result does not have in another "
        f"process. Define the function at module level (def grad_f(x): return pj.grad(f)(x)), "
        f"or pickle with cloudpickle (multiprocessing and concurrent.futures use the standard "
        f"pickle; joblib uses cloudpickle)")


def _found_by_name(fn) -> bool:
    """Whether `module.qualname` leads back to `fn` (True for an object without those names,
    a callable instance or a functools.partial: its own pickling decides)."""
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
