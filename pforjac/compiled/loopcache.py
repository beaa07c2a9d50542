"""Eager pfor at compiled speed: vectorized loop bodies cached by their structure.

Every `jacobian` call traces a new loop body, but repeated calls on inputs of
the same shapes trace the same Program up to its captured constants (the
forward activations). The second time a body with a given structure is seen
(and nothing records it: no tape or trace is active, so the result needs no
gradient), pfor's vectorization of it is traced once with symbolic constants,
simplified and compiled (compiled_trace.py); from then on such bodies run as generated
numpy code on the new constants. Results are those of the uncached path (the
same numpy calls; structure guards fall back to a dense twin, as compiled
functions do). Bodies whose vectorization fell back are never cached.

`cached_backward` goes one step further for `jacobian`/`batch_jacobian`: keyed by
the structure of the tape entries between sources and target, it compiles the
backward pass together with its vectorization, so a repeated call on a new
tape skips tracing too and runs on that tape's recorded values.

The code is compiled for `pforjac.config.backend` as it is when a structure is compiled
(the backend is part of the key): on "numba" a body runs as one native function (a
program numba can't take keeps its numpy code, with one warning naming the op), and its
results agree with the uncached path's to a few ulps instead of bit for bit (summation
order); `cache_info()["numba"]` counts the entries running native code (wholly, or in
segments joined by numpy code).
"""
from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict

import numpy as np

from .. import core, hooks
from ..hooks import NeedsValues
from .passes import pass_list, param_key
from ..switch import Switch
from ..tensor import Tensor
from ..tree import tree_flatten, tree_unflatten
from ..config import config

__all__ = ["run_cached", "cached_call", "cached_backward", "clear_cache", "cache_info", "caching",
           "verifying", "verify_info", "same_bits", "close_in_ulps"]

_MAX_ENTRIES = 128                   # compiled (or uncacheable) structures
_MAX_SEEN = 512                      # structures seen once (keys only)
_MAX_CONST_BYTES = 256 << 20         # arrays the compiled entries hold, all together
_MAX_ENTRY_CONST_BYTES = 64 << 20    # ... and one alone (a dense seed made while tracing)


# every pass but batch_major_products, which may round a product's rows otherwise: an eager
# call gives the bits of the first, uncached one (pforjac.compiled.passes)
_PASSES = pass_list(batch_major=False)


class _Uncacheable:
    """A structure whose code can't be compiled: the uncached path runs (why, for
    `verify_info`)."""
    const_bytes = 0

    def __init__(self, reason: str):
        self.reason = reason


_cache: "OrderedDict[tuple, object]" = OrderedDict()
_seen: "OrderedDict[tuple, None]" = OrderedDict()
_lock = threading.Lock()
_building = threading.local()          # .active: this thread is tracing code for the cache


def building() -> bool:
    """Whether this thread is tracing a loop body for the cache: the tape's tensors are
    symbols then, so checks that need their values (batch_jacobian's row check on gather
    indices) must decline the cache instead of passing."""
    return getattr(_building, "active", False)


_caching = Switch(True)


def caching(enabled: bool):
    """Context manager: `with caching(False): ...` always takes the uncached path."""
    return _caching.setting(enabled)


class _Verify:
    """Process-wide (threads the tests start are checked too): see `verifying`."""
    enabled = False
    compared = 0            # calls whose compiled and uncached results were compared
    not_compiled: dict = {}  # why code could not be compiled -> calls


@contextlib.contextmanager
def verifying(enabled: bool = True):
    """Testing aid: `with verifying(): ...` runs every eligible jacobian, batch_jacobian and
    pfor call both ways, uncached and as compiled code (built at the first call, not the
    second), and raises AssertionError unless the two results are identical bit for bit
    (dtype, shape, NaN positions, zeros' signs). The caller gets the uncached result (its own path
    when the code can't be compiled, so nothing else changes). The test suite
    runs under it (tests/conftest.py); `verify_info()` counts what it compared."""
    saved, _Verify.enabled = _Verify.enabled, bool(enabled)
    try:
        yield
    finally:
        _Verify.enabled = saved


def verify_info() -> dict:
    """{"compared": calls checked, "not_compiled": {reason: calls}} under `verifying`."""
    with _lock:
        return {"compared": _Verify.compared, "not_compiled": dict(_Verify.not_compiled)}


def clear_cache() -> None:
    with _lock:
        _cache.clear()
        _seen.clear()


@core.on_rules_changed
def _rules_changed(name: str, replaced: bool) -> None:
    """Code compiled from the old rules or converters must not run after they change
    (CONTRIBUTING's check, fix the rule, check again)."""
    clear_cache()


def cache_info() -> dict:
    with _lock:
        values, seen = list(_cache.values()), len(_seen)
    compiled = [v for v in values if not isinstance(v, _Uncacheable)]
    return {"entries": len(values), "compiled": len(compiled), "seen_once": seen,
            "const_bytes": sum(v.const_bytes for v in compiled),
            "numba": sum(v.backend.startswith("numba") for v in compiled)}


def program_key(program, n: int) -> tuple:
    """Everything the vectorized code depends on except the constants' values."""
    ids: dict[int, int] = {}

    def name(v) -> int:
        return ids.setdefault(id(v), len(ids))
    parts: list = [n, repr(program.out_tree)]
    parts += [(name(v), v.shape, v.dtype.str) for v in program.inputs]
    parts += [(name(v), v.shape, v.dtype.str) for v in program.consts]
    parts += [(e.prim, tuple(name(v) for v in e.inputs), param_key(e.params),
               tuple(name(v) for v in e.outputs)) for e in program.equations]
    parts.append(tuple(name(v) for v in program.outputs))
    return tuple(parts)


def _eligible() -> bool:
    from ..structure import tracking_enabled
    state = core.current_state()
    return (_caching.enabled and tracking_enabled() and not state.tapes and not state.traces
            and state.lifting is None)   # compiled bodies always track structure


def _pure(prims) -> bool:
    """Whether code compiled from these primitives' rules stays right: each declares that
    its rules read nothing but their arguments (`Primitive.pure_rules`; pforjac's own do,
    an op `extend.defop` declares does only with `pure_rules=True`). Counted under
    `verifying` when not."""
    impure = sorted({p.name for p in prims if not p.pure_rules})
    if impure and _Verify.enabled:
        reason = f"rules not declared pure: {', '.join(impure)}"
        with _lock:
            _Verify.not_compiled[reason] = _Verify.not_compiled.get(reason, 0) + 1
    return not impure


def run_cached(program, n: int) -> list[Tensor] | None:
    """The stacked outputs from compiled code, or None to take the ordinary path."""
    if n == 0 or not _eligible():
        return None
    if not _pure(e.prim for e in program.equations):
        return None
    from ..pfor import vectorize_stacked
    from ..tensor import constant

    def body(*consts):
        indices = constant(np.arange(n, dtype=np.int32))
        return vectorize_stacked(program, indices, (0, n), const_values=list(consts))
    return cached_call(program_key(program, n), list(program.const_values), body,
                       "vectorized_body")


def cached_call(key, inputs: list, fn, name: str):
    """`fn(*inputs)` (a nested structure of tensors) from compiled code cached under `key`:
    None the first time a key is seen (the caller computes it as usual), compiled the
    second time, then reused. `fn` must depend only on the values of `inputs`. The code
    is compiled for `pforjac.config.backend` (part of the key)."""
    avals = [(tuple(t.shape), t.dtype) for t in inputs]
    key = (config.backend, key)
    if _Verify.enabled:
        return _verified_call(key, inputs, avals, fn, name)
    with _lock:
        entry = _cache.get(key)
        if entry is None and key not in _seen:
            _seen[key] = None
            while len(_seen) > _MAX_SEEN:
                _seen.popitem(last=False)
            return None
        if entry is not None:
            _cache.move_to_end(key)
    if entry is None:
        entry = _build_and_keep(key, fn, avals, name)
    if isinstance(entry, _Uncacheable):
        return None
    entry.warn()
    return _run(entry, inputs)


def _build_and_keep(key, fn, avals, name: str):
    """`_build`'s entry, kept in the cache under `key` (no longer a structure seen once),
    running on the backend the key names where that backend can take its program."""
    from .compiled_trace import trace_compiled
    from .numba_backend import use_backend
    entry = _build(lambda: trace_compiled(fn, avals, True, name, passes=_PASSES))
    if not isinstance(entry, _Uncacheable):       # (outside _build: its warning is shown once)
        use_backend(entry, key[0], name, what="pforjac's cached code of")
    with _lock:
        _seen.pop(key, None)
        _cache[key] = entry
        _trim()
    return entry


def _run(entry, inputs: list):
    """The entry's results on the inputs' values, or None if its dense twin can't be built."""
    arrays = [t.numpy() for t in inputs]
    outs = entry.run(arrays)
    if outs is None:                    # a structure guard failed (NaN, Inf, zero divisor):
        if entry.dense is None:         # the dense twin, made the first time it is needed
            entry.dense = _build(entry.dense_twin)
        if isinstance(entry.dense, _Uncacheable):
            return None
        outs = entry.dense.run(arrays)
    return tree_unflatten(entry.program.out_tree, [Tensor._from_array(np.asarray(o)) for o in outs])


def _verified_call(key, inputs: list, avals, fn, name: str):
    """`verifying()`'s path: the uncached result, checked against the compiled code's (None,
    the caller's own path, when the code can't be compiled)."""
    with _lock:
        entry = _cache.get(key)
    if entry is None:
        entry = _build_and_keep(key, fn, avals, name)
    got = None if isinstance(entry, _Uncacheable) else _run(entry, inputs)
    with _lock:
        if got is None:
            reason = getattr(entry, "reason", None) or getattr(entry.dense, "reason", "?")
            _Verify.not_compiled[reason] = _Verify.not_compiled.get(reason, 0) + 1
        else:
            _Verify.compared += 1
    if got is None:
        return None
    with caching(False):
        want = fn(*inputs)
    _assert_identical(name, want, got, exact=entry.backend == "numpy")   # (native: to ulps)
    return want


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and values, zeros' signs included; NaN equals NaN (any payload)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "c":
        return same_bits(a.real, b.real) and same_bits(a.imag, b.imag)
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    numbers = ~np.isnan(a)
    return bool(np.array_equal(a, b, equal_nan=True)
                and np.array_equal(np.signbit(a[numbers]), np.signbit(b[numbers])))


def close_in_ulps(a: np.ndarray, b: np.ndarray, ulps: int = 16) -> bool:
    """Same dtype, shape and NaN positions; values within `ulps` units of the dtype's eps,
    relative to each value or to the largest magnitude of `b` (a sum taken in another order
    differs by that much, as native code's may)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind not in "fc":
        return bool(np.array_equal(a, b))
    eps = np.finfo(a.dtype).eps
    finite = np.isfinite(b)
    scale = float(np.max(np.abs(b[finite]))) if finite.any() else 0.0
    return bool(np.allclose(a, b, rtol=ulps * eps, atol=ulps * eps * scale, equal_nan=True)
                and np.array_equal(np.isnan(a), np.isnan(b)))


def _assert_identical(name: str, want, got, exact: bool = True) -> None:
    """Bit for bit (`exact`; the numpy backend's code makes the uncached path's numpy
    calls), else to a few ulps (`close_in_ulps`: native code)."""
    want_leaves, want_tree = tree_flatten(want)
    got_leaves, got_tree = tree_flatten(got)
    if repr(want_tree) != repr(got_tree):
        raise AssertionError(f"{name}: compiled code returned {got_tree}, uncached {want_tree}")
    for k, (w, g) in enumerate(zip(want_leaves, got_leaves)):
        w, g = np.asarray(w.numpy()), np.asarray(g.numpy())
        if not (same_bits(w, g) if exact else close_in_ulps(g, w)):
            detail = (f"dtype/shape {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
                      if w.dtype != g.dtype or w.shape != g.shape else _difference(w, g))
            raise AssertionError(f"{name}: compiled result {k} differs from the uncached one: "
                                 f"{detail}")


def _trim() -> None:
    """At most _MAX_ENTRIES entries holding at most _MAX_CONST_BYTES of arrays (oldest
    dropped first)."""
    held = sum(e.const_bytes for e in _cache.values())
    while len(_cache) > _MAX_ENTRIES or (held > _MAX_CONST_BYTES and len(_cache) > 1):
        _, old = _cache.popitem(last=False)
        held -= old.const_bytes


def _build(make):
    """The compiled code `make()` traces (`compiled_trace.trace_compiled`, or an entry's dense
    twin), or an _Uncacheable: it fell back, could not be traced, or holds arrays (made
    while tracing, e.g. a dense one-hot seed) too large to keep."""
    from ..diagnostics import private_report
    from .codegen import CodegenError
    from ..pfor import ConversionError, deferred_warnings
    was, _building.active = building(), True
    try:
        with private_report() as report, deferred_warnings() as messages:
            compiled = make()
    except CodegenError as e:       # pforjac's bug, not the body's: the suite must see it
        if _Verify.enabled:
            raise
        return _Uncacheable(f"codegen failed: {type(e.__cause__).__name__}")
    except ConversionError as e:
        return _Uncacheable(f"a converter failed: {e.op}")    # the uncached path falls back
    except NeedsValues as e:
        return _Uncacheable(f"needs values: {e}")             # the uncached path checks them
    except Exception as e:  # e.g. a user's rule that reads a concrete value: it can't be traced,
        return _Uncacheable(f"untraceable: {type(e).__name__}")  # the uncached path raises
    finally:
        _building.active = was
    if len(report):
        return _Uncacheable("fell back: " + ", ".join(sorted({r.kind for r in report.records})))
    if not _pure(compiled.prims):         # (ops its rules bound, whose converters ran)
        return _Uncacheable("rules not declared pure")
    if compiled.const_bytes > _MAX_ENTRY_CONST_BYTES:
        return _Uncacheable("holds too large arrays")
    compiled.warnings = messages          # shown again by every call that runs the code
    return compiled


# -- jacobians: the backward pass and its vectorization, compiled per tape structure -----------
def tape_key(entries, target, sources) -> tuple[tuple, list, list]:
    """The entries on a path from a source to the target, a key for their structure and
    the tensors they read (target and sources first)."""
    from ..tape import _depends_on_sources
    reach = _depends_on_sources(entries, sources)
    needed, kept = {id(target)}, []
    for e in reversed(entries):
        if any(id(o) in needed for o in e.outputs) and any(id(a) in reach for a in e.inputs):
            kept.append(e)
            needed.update(id(a) for a in e.inputs)
    kept.reverse()
    ids: dict[int, int] = {}
    tensors: list = []

    def name(t) -> int:
        k = ids.get(id(t))
        if k is None:
            k = ids[id(t)] = len(tensors)
            tensors.append(t)
        return k
    parts = [name(target), tuple(name(s) for s in sources)]
    parts += [(e.prim, param_key(e.params), tuple(name(a) for a in e.inputs),
               tuple(name(o) for o in e.outputs)) for e in kept]
    parts.append(tuple((tuple(t.shape), t.dtype.str) for t in tensors))
    return tuple(parts), kept, tensors


def cached_backward(what: tuple, entries, target, sources, core_fn):
    """`core_fn(entries, target, sources)` compiled per tape structure (see `cached_call`)."""
    if not _eligible():
        return None
    from ..tape import _Entry
    key, kept, tensors = tape_key(entries, target, sources)
    if not _pure(e.prim for e in kept):
        return None

    def fn(*symbols):
        sub = {id(t): s for t, s in zip(tensors, symbols)}
        fake = [_Entry(e.prim, e.params, tuple(sub[id(a)] for a in e.inputs),
                       [sub[id(o)] for o in e.outputs]) for e in kept]
        return core_fn(fake, sub[id(target)], [sub[id(s)] for s in sources])
    return cached_call((what, key), tensors, fn, what[0])


def _difference(w: np.ndarray, g: np.ndarray) -> str:
    differ = w != g
    if w.dtype.kind == "f":
        differ |= np.signbit(w) != np.signbit(g)
        differ &= ~(np.isnan(w) & np.isnan(g))
    largest = np.abs(w.astype(np.complex128) - g.astype(np.complex128))[differ]
    return (f"{int(differ.sum())} of {w.size} elements differ (signs of zero included), "
            f"largest by {np.nanmax(largest) if largest.size else 0:.3g}")


hooks.run_loop, hooks.run_backward, hooks._building = run_cached, cached_backward, building
