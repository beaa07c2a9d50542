"""The lean call path of `pforjac.function`: numpy arrays in, numpy arrays out, in about a
microsecond on top of the generated code.

A call whose positional arguments are all plain `numpy.ndarray`s and Python floats, made at
top level (no tape recording, no trace open), is keyed by `lean_key`: each array's exact
shape, strides and dtype, each float's value. The first such call goes the general way
(binding the signature, flattening, the trace cache); it leaves a `lean_entry` under that
key, which later calls with the same key run directly: the arrays straight into the
compiled code, its outputs straight out as read-only arrays. Nothing else is looked at,
so an entry is made only where nothing else could change the result:

- a different dtype, shape or memory layout (strides), a Tensor, an ndarray subclass, a
  keyword argument or any other argument type gives another key, or none (the general
  path);
- rules registered since, or a changed `pforjac.config.backend`, make the Function drop
  its entries (it checks both on every call, before looking one up);
- a call that filled in a default argument (read at every call) makes no entry;
- code that has structure guards or reads Variables, or whose trace deferred warnings,
  runs through its `_Compiled.run`, as the general path does.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..tree_util import _LEAF, tree_unflatten

__all__ = ["lean_key", "lean_entry"]


def lean_key(args: tuple):
    """The lean key of positional arguments, or None when one is not a plain ndarray or a
    Python float. Floats are keys by value, as they are part of the trace signature; 0.0,
    -0.0 and NaN by their repr (0.0 == -0.0, and NaN equals nothing)."""
    key = ()
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            key += (a.shape, a.strides, a.dtype)
        elif kind is float:
            key += (a if a == a and a != 0.0 else repr(a),)
        else:
            return None
    return key


def lean_entry(compiled, args: tuple, dense: Callable) -> Callable:
    """`call(args) -> result` for calls whose `lean_key` is that of `args`, running
    `compiled` (a `_Compiled`); `dense(compiled)` is its dense twin, for structure guards
    that refuse a call's values."""
    slots = [k for k, a in enumerate(args) if type(a) is np.ndarray]
    copy = [not args[k].flags.c_contiguous for k in slots]
    take = _taker(slots, copy, len(args))
    finish = _finisher(compiled.program)
    if compiled.n_guards or compiled._variables or compiled.warnings:
        return _checked_entry(compiled, take, finish, dense)
    code, tail = _code(compiled)
    if take is not None:
        return lambda args: finish(code(*take(args), *tail))
    if finish is not _one_array:
        return lambda args: finish(code(*args, *tail))

    def call(args):         # the common case, written out: a frame less is 5% of a call
        o = code(*args, *tail)[0]
        if not o.flags.c_contiguous:
            o = np.ascontiguousarray(o)
        return np.asarray(memoryview(o).toreadonly())
    return call


def _code(compiled) -> tuple[Callable, tuple]:
    """(code, the arguments after the inputs): a backend's runner that can skip its own
    preparation (numba's dispatcher itself) gives a direct function of the inputs;
    generated numpy code takes the constants last."""
    direct = getattr(compiled.code, "direct", None)
    if direct is not None:
        return direct(compiled._consts), ()
    return compiled.code, (compiled._consts,)


def _checked_entry(compiled, take, finish, dense) -> Callable:
    def call(args):
        arrays = args if take is None else take(args)
        outs = compiled.run(arrays)
        if outs is None:                # a structure guard failed: NaN/Inf/zero present
            twin = dense(compiled)
            outs = twin.run(arrays)
            twin.warn()
        else:
            compiled.warn()
        return finish(outs)
    return call


def _taker(slots: list, copy: list, n_args: int) -> Callable | None:
    """`take(args) -> input arrays` (C-ordered, as `pforjac.constant` makes them), or None
    when the arguments are those arrays already."""
    if len(slots) == n_args and not any(copy):
        return None
    if not any(copy):
        return lambda args: [args[k] for k in slots]
    pairs = list(zip(slots, copy))
    return lambda args: [np.ascontiguousarray(args[k]) if c else args[k] for k, c in pairs]


def _finisher(program) -> Callable:
    """`finish(outputs) -> result`: the program's output tree of read-only C-ordered arrays,
    0-d outputs numpy scalars of their dtype (as `pforjac.boundary.numpy_result`)."""
    wraps = [_out_wrapper(v) for v in program.outputs]
    tree = program.out_tree
    if tree == _LEAF:
        wrap = wraps[0]
        return _one_array if wrap is _read_only else lambda outs: wrap(outs[0])
    return lambda outs: tree_unflatten(tree, [w(o) for w, o in zip(wraps, outs)])


def _out_wrapper(var) -> Callable:
    dtype = np.dtype(var.dtype)
    if len(var.shape) == 0:
        scalar = dtype.type
        return lambda o: scalar(o)
    if dtype.kind in "OMm":       # (no buffer protocol for these: the array itself)
        return lambda o: o if o.flags.c_contiguous else np.ascontiguousarray(o)
    return _read_only


def _read_only(o: np.ndarray) -> np.ndarray:
    if not o.flags.c_contiguous:      # generated code may end in a transposed view
        o = np.ascontiguousarray(o)
    return np.asarray(memoryview(o).toreadonly())


def _one_array(outs) -> np.ndarray:
    return _read_only(outs[0])
