"""Eager pfor at compiled speed: vectorized loop bodies cached by their structure.

Every `jacobian` call traces a new loop body, but repeated calls on inputs of
the same shapes trace the same Program up to its captured constants (the
forward activations). The second time a body with a given structure is seen
(and nothing records it: no tape or trace is active, so the result needs no
gradient), pfor's vectorization of it is traced once with symbolic constants,
simplified and compiled (function.py); from then on such bodies run as generated
numpy code on the new constants. Results are those of the uncached path (the
same numpy calls; structure guards fall back to a dense twin, as compiled
functions do). Bodies whose vectorization fell back are never cached.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from . import core
from .switch import Switch
from .tensor import Tensor

__all__ = ["run_cached", "clear_cache", "cache_info", "caching"]

_MAX_ENTRIES = 128
_UNCACHEABLE = object()
_SEEN_ONCE = object()
_cache: "OrderedDict[tuple, object]" = OrderedDict()
_lock = threading.Lock()


_caching = Switch(True)


def caching(enabled: bool):
    """Context manager: `with caching(False): ...` always takes the uncached path."""
    return _caching.setting(enabled)


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def cache_info() -> dict:
    with _lock:
        values = list(_cache.values())
    return {"entries": len(values),
            "compiled": sum(1 for v in values if v not in (_UNCACHEABLE, _SEEN_ONCE))}


def _param_key(params: dict) -> str:
    return repr(sorted(params.items()))


def program_key(program, n: int) -> tuple:
    """Everything the vectorized code depends on except the constants' values."""
    ids: dict[int, int] = {}

    def name(v) -> int:
        return ids.setdefault(id(v), len(ids))
    parts: list = [n, repr(program.out_tree)]
    parts += [(name(v), v.shape, v.dtype.str) for v in program.inputs]
    parts += [(name(v), v.shape, v.dtype.str) for v in program.consts]
    parts += [(e.prim, tuple(name(v) for v in e.inputs), _param_key(e.params),
               tuple(name(v) for v in e.outputs)) for e in program.equations]
    parts.append(tuple(name(v) for v in program.outputs))
    return tuple(parts)


def _eligible() -> bool:
    state = core.current_state()
    return _caching.enabled and not state.tapes and not state.traces and state.lifting is None


def run_cached(program, n: int) -> list[Tensor] | None:
    """The stacked outputs from compiled code, or None to take the ordinary path."""
    if not _eligible() or n == 0:
        return None
    key = program_key(program, n)
    with _lock:
        entry = _cache.get(key)
        if entry is None:
            _cache[key] = _SEEN_ONCE
            _trim()
            return None
        _cache.move_to_end(key)
    if entry is _SEEN_ONCE:
        entry = _build(program, n)
        with _lock:
            _cache[key] = entry
    if entry is _UNCACHEABLE:
        return None
    arrays = [v.numpy() for v in program.const_values]
    outs = entry.run(arrays)
    if outs is None:                    # a structure guard failed (NaN, Inf, zero divisor)
        outs = entry.dense.run(arrays)
    return [Tensor._from_array(np.asarray(o)) for o in outs]


def _trim() -> None:
    while len(_cache) > _MAX_ENTRIES:
        _cache.popitem(last=False)


def _build(program, n: int):
    from .diagnostics import private_report
    from .function import trace_compiled
    from .pfor import ConversionError, _stack_output, vectorize
    from .tensor import constant
    avals = [(tuple(v.shape), v.dtype) for v in program.consts]

    def body(*consts):
        indices = constant(np.arange(n, dtype=np.int32))
        return [_stack_output(v, s, n)
                for v, s in vectorize(program, indices, (0, n), const_values=consts)]

    try:
        with private_report() as report:
            compiled = trace_compiled(body, avals, True, "vectorized_body")
            compiled.dense = trace_compiled(body, avals, False, "vectorized_body_dense")
    except ConversionError:
        return _UNCACHEABLE
    return _UNCACHEABLE if len(report) else compiled
