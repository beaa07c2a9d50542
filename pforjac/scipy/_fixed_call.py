"""The leanest call of a compiled function whose arguments keep one signature.

A scipy solver calls a derivative hundreds or thousands of times with float64 arrays of one
shape, so the work `pforjac.function` does on every call (the signature key, flattening the
arguments and the result, making the result read-only) is paid for nothing after the first
call. `fixed_call(function, args)` returns, for the signature of `args`, a function that
checks that each call's arguments still have it (shape, dtype, C order: a few attribute
reads) and then runs the compiled code directly: the native function itself on the numba
backend, the generated numpy code on the numpy backend. A call with other arguments goes
through `function` as before, so results are the same whichever path runs. A 0-d float64
argument may also be given as a float (an ODE solver's time).

Only plain code qualifies: a trace with structure guards (its dense twin may be needed),
Variables (read at every call) or deferred warnings (shown at every call) keeps the full
call, as does anything that is not positional numpy arrays.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..boundary import numpy_result
from ..tree import tree_unflatten

__all__ = ["fixed_call", "is_native"]


def fixed_call(function, args: tuple) -> Callable | None:
    """`function(*args)` for arguments of the signature of `args`, run directly (see the
    module's docstring), or None when the compiled code needs the full call."""
    if not args or any(type(a) is not np.ndarray for a in args):
        return None
    compiled, arrays, variables = function._compiled(args, {})[:3]
    if compiled.n_guards or variables or compiled._variables or compiled.warnings:
        return None
    avals = [(a.shape, a.dtype) for a in arrays]
    scalars = [not shape and dtype == np.float64 for shape, dtype in avals]
    if is_native(compiled) and not _shares_memory(compiled, arrays):
        run = _native_runner(compiled, avals)
    else:
        run = _numpy_runner(compiled, scalars)
    return _checked(run, compiled.program.out_tree, avals, scalars, function)


def is_native(compiled) -> bool:
    """Whether a trace runs as numba's native code."""
    return getattr(compiled.code, "dispatcher", None) is not None


def _numpy_runner(compiled, scalars: list) -> Callable:
    """The generated numpy code on the arguments and constants; results read-only, as
    pforjac.function hands them out (generated code may return a constant or an input)."""
    code, consts = compiled.code, compiled._consts

    def run(*args):
        arrays = [np.asarray(a, np.float64) if s else a for a, s in zip(args, scalars)]
        return tuple(numpy_result(np.asarray(o)) for o in code(*arrays, consts))
    return run


def _native_runner(compiled, avals: list) -> Callable:
    """The numba function's compiled entry point itself (the arguments are checked by the
    caller, so numba's own type dispatch is not needed: a microsecond less a call): 0-d
    inputs as numbers (its signature), then the constants not compiled into it; 0-d results
    come back as Python numbers."""
    dispatcher = compiled.code.dispatcher
    overload = dispatcher.overloads.get(dispatcher.signatures[0]) if dispatcher.signatures \
        else None
    native = getattr(overload, "entry_point", None) or dispatcher    # (the dispatcher: slower)
    passed = tuple(compiled._consts[k] for k in compiled.code.passed)
    if [not shape for shape, _ in avals] == [False, True] and avals[1][1] == np.float64:
        if passed:
            return lambda y, t: native(y, float(t), *passed)
        return lambda y, t: native(y, float(t))
    if any(not shape for shape, _ in avals):
        number = [np.dtype(dtype).type if not shape else None for shape, dtype in avals]

        def run(*args):
            return native(*[a if t is None else t(a) for a, t in zip(args, number)], *passed)
        return run
    return (lambda *arrays: native(*arrays, *passed)) if passed else native


def _shares_memory(compiled, arrays) -> bool:
    """Whether a result of the code is (a view of) an input or a constant: then it is
    handed out read-only by the numpy path's wrapper instead (a solver writing into its
    Jacobian would change what the next call returns)."""
    outs = compiled.code(*arrays, compiled._consts)
    held = [a for a in arrays if a.ndim] + [c for c in compiled._consts
                                            if isinstance(c, np.ndarray) and c.ndim]
    return any(isinstance(o, np.ndarray) and np.may_share_memory(o, h)
               for o in outs for h in held)


def _shape_of_result(out_tree) -> str:
    """"leaf" for one array, "tuple" for a flat tuple of arrays, else "tree"."""
    n = out_tree.num_leaves
    probe = tree_unflatten(out_tree, list(range(n)))
    if n == 1 and type(probe) is int:
        return "leaf"
    return "tuple" if probe == tuple(range(n)) else "tree"


def _checked(run: Callable, out_tree, avals: list, scalars: list, function) -> Callable:
    """`run` for calls whose arguments have `avals` (checked: type, shape, dtype, C order;
    a float for a 0-d float64), `function` itself for any other; results structured as
    `function` structures them. The two calls scipy makes most, `f(x)` and an ODE's
    `f(y, t)`, are checked inline (each Python call layer costs a few tenths of a us)."""
    result = _shape_of_result(out_tree)
    if result != "tree" and len(avals) == 1 and not scalars[0]:
        return _checked_one(run, avals[0], result == "leaf", function)
    if result == "leaf" and scalars == [False, True]:
        return _checked_ode(run, avals[0], scalars, function)
    accepts = [_accepts(shape, dtype, s) for (shape, dtype), s in zip(avals, scalars)]

    def call(*args):
        if len(args) != len(accepts) or not all(k(a) for k, a in zip(accepts, args)):
            return _full(function, args, scalars)
        outs = run(*args)
        if result == "leaf":
            return outs[0]
        return outs if result == "tuple" else tree_unflatten(out_tree, list(outs))
    return call


def _checked_one(run, aval, leaf: bool, function) -> Callable:
    """The call `f(x)` of minimize and least_squares: one array, one result or a tuple."""
    shape, dtype = aval

    def call(x, *rest):
        if not rest and type(x) is np.ndarray and x.shape == shape and x.dtype == dtype \
                and x.flags.c_contiguous:
            return run(x)[0] if leaf else run(x)
        return function(x, *rest)
    return call


def _checked_ode(run, aval, scalars, function) -> Callable:
    """The call `f(y, t)` of solve_ivp's helper: an array and a time, one result."""
    shape, dtype = aval

    def call(y, t, *rest):
        if not rest and type(y) is np.ndarray and y.shape == shape and y.dtype == dtype \
                and y.flags.c_contiguous and (isinstance(t, float) or (
                    type(t) is np.ndarray and t.shape == () and t.dtype == np.float64)):
            return run(y, t)[0]
        return _full(function, (y, t, *rest), scalars)
    return call


def _accepts(shape, dtype, scalar: bool) -> Callable:
    """Whether an argument has this signature slot's shape and dtype, in C order."""
    if scalar:
        return lambda a: isinstance(a, float) or (
            type(a) is np.ndarray and a.shape == () and a.dtype == dtype)
    return lambda a: (type(a) is np.ndarray and a.shape == shape and a.dtype == dtype
                      and a.flags.c_contiguous)


def _full(function, args: tuple, scalars: list):
    """The full call, a float given for a 0-d input passed as the 0-d array it stands for
    (a Python number would be a value of the trace's signature: a new trace per value)."""
    if len(args) != len(scalars):
        return function(*args)
    return function(*[np.asarray(a, np.float64) if s and isinstance(a, float) else a
                      for a, s in zip(args, scalars)])
