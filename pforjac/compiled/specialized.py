"""`Function.specialize(*example_args)`: a compiled function's leanest call, for a caller
that keeps one signature (a scipy solver calls a derivative hundreds of times with float64
arrays of one shape).

The callable it returns holds the lean entry of the examples' signature (lean_call.py):
a call checks its arguments against that signature (a few attribute reads per array) and
runs the compiled code directly, with none of the Function's own call path (its state
checks, its table of entries). A call with other arguments, inside a GradientTape or a
trace, or after rules were registered, goes through the Function itself, so results are
the same whichever way runs.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .lean_call import lean_entry, lean_key

__all__ = ["specialize"]


def specialize(function, args: tuple, writable: bool = False) -> Callable:
    """The specialized callable of `function` for the signature of `args` (see
    `Function.specialize`)."""
    floats_at = tuple(k for k, a in enumerate(args) if type(a) is np.ndarray
                      and a.shape == () and a.dtype == np.float64)
    traced = entry = None
    full = _full_call(function, floats_at)
    if lean_key(args) is not None:
        traced, _, _, lean = function._compiled(args, {})
        if lean:
            entry = lean_entry(traced, args, function._dense_twin, floats_at, writable, full)
    call = full if entry is None else entry
    call.backend = None if traced is None else traced.backend
    return call


def _full_call(function, floats_at: tuple) -> Callable:
    """`function` itself, a Python float (or numpy float64) given for a 0-d float64
    argument passed as the 0-d array it stands for (a float is a value of the trace's
    signature: a new trace per value)."""
    if not floats_at:
        return lambda *args: function(*args)

    def call(*args):
        return function(*[np.asarray(a, np.float64) if k in floats_at and isinstance(a, float)
                          else a for k, a in enumerate(args)])
    return call
