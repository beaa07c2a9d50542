"""How `pforjac.numpy` (and `pforjac.numpy.linalg`) finds a name: numpy's callable of that
name, looked up in the dispatch tables (`numpy_dispatch.UFUNCS`, `FUNCTIONS`) when the
attribute is read, so a function registered with `numpy_dispatch.implements` at any time is
there at once. A numpy name with no pforjac implementation raises AttributeError saying so:
never numpy's own function, which would turn the tensors into arrays.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import numpy_dispatch
from ..tensor import Tensor

__all__ = ["lookup", "names", "not_implemented"]

_wrapped: dict = {}      # pforjac implementation -> its namespace function


def implementation(fn):
    """The pforjac implementation registered for the numpy callable `fn`, or None."""
    try:
        table = numpy_dispatch.UFUNCS if isinstance(fn, np.ufunc) else numpy_dispatch.FUNCTIONS
        return table.get(fn)
    except TypeError:                    # an unhashable attribute: not a function
        return None


def lookup(module, prefix: str, name: str):
    """`prefix.name` (`pforjac.numpy.linalg.solve`): the namespace function for numpy's
    `module.name`, or AttributeError (not implemented yet, or no such numpy name)."""
    impl = implementation(getattr(module, name, None)) if not name.startswith("__") else None
    if impl is None:
        raise not_implemented(module, prefix, name)
    wrapper = _wrapped.get(impl)
    if wrapper is None:
        wrapper = _wrapped[impl] = _numpy_typed(impl, f"{prefix}.{name}",
                                                isinstance(getattr(module, name), np.ufunc))
    return wrapper


def not_implemented(module, prefix: str, name: str) -> AttributeError:
    numpy_name = module.__name__
    if name.startswith("__") or not hasattr(module, name):
        return AttributeError(f"module '{prefix}' has no attribute '{name}' (nor has "
                              f"{numpy_name})")
    return AttributeError(f"{prefix}.{name}: {numpy_name}.{name} is not implemented in pforjac "
                          f"yet (no pforjac function is registered for it: see "
                          f"pforjac.numpy_dispatch.implements); compose it from pforjac.numpy's "
                          f"functions, or call {numpy_name}.{name} on "
                          f"pforjac.stop_gradient(t).numpy() for a value without derivative")


def names(module) -> list[str]:
    """The public names of `module` (numpy or numpy.linalg) pforjac implements now."""
    found = []
    for name in dir(module):
        if not name.startswith("_") and implementation(getattr(module, name)) is not None:
            found.append(name)
    return found


def _numpy_typed(impl, name: str, ufunc: bool):
    """`impl` as the namespace serves it: with no Tensor among the arguments, the array
    arguments given as Python numbers or lists of them are read as numpy reads them
    (`pnp.sin(0.5)` is float64, as `np.sin(0.5)` is, where `pj.sin(0.5)` follows TensorFlow's
    float32); next to a Tensor they stay weakly typed (`pnp.multiply(t32, 2.0)` is float32).
    Array arguments: a ufunc's all; a function's first, and any holding a float (ints after
    the first are left alone: they may be axes or shapes)."""
    def call(*args, **kwargs):
        if not _any_tensor(args) and not _any_tensor(kwargs.values()):
            args = tuple(_numpy_read(a) if ufunc or k == 0 or _has_float(a) else a
                         for k, a in enumerate(args))
        else:                            # lists next to Tensors: arrays, as numpy reads them
            args = tuple(numpy_dispatch.as_numpy_reads(a, ufunc) for a in args)
            kwargs = {k: numpy_dispatch.as_numpy_reads(v) for k, v in kwargs.items()}
        return impl(*args, **kwargs)
    call.__name__ = call.__qualname__ = name.rsplit(".", 1)[-1]
    call.__doc__ = f"{name}: numpy's function on pforjac Tensors (pforjac's {impl.__name__})."
    call.__wrapped__ = impl
    return call


def _any_tensor(values) -> bool:
    for v in values:
        if isinstance(v, Tensor) or (isinstance(v, (list, tuple)) and _any_tensor(v)):
            return True
    return False


def _numpy_read(value):
    """A Python number, or a rectangular nest of them, as the Tensor numpy would make of it;
    anything else unchanged."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Number, list, tuple)):
        return value
    if isinstance(value, (list, tuple)) and not _numbers_only(value):
        return value
    try:
        array = np.asarray(value)
    except ValueError:                   # ragged: the implementation decides
        return value
    return Tensor._from_array(array) if array.dtype.kind in "iufc" else value


def _has_float(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_has_float(v) for v in value)
    return isinstance(value, (float, complex))


def _numbers_only(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_numbers_only(v) for v in value)
    return isinstance(value, numbers.Number)
