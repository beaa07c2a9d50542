"""The pfor pass: run a traced loop body for all iterations at once.

A loop body is a Program whose first input is the loop index. `vectorize`
walks its equations in order; every value is either *stacked* (it has a
leading dimension of size `n`, one slice per iteration) or *unstacked* (the
same for every iteration). An equation with no stacked input is bound as it
is; otherwise the converter registered for its primitive computes the
stacked result with ordinary pforjac ops (an elementwise primitive without one
gets the family's broadcasting converter). The loop index becomes `arange`.

Writing a converter (the whole contract)::

    @register_converter(softsign_p)
    def _convert_softsign(n, args, stacked, **params):
        # n: the number of iterations; args: the inputs, stacked ones with a
        # leading axis of size n; stacked: one bool per input (at least one True).
        (x,) = args
        return softsign(x), True          # (output, is the output stacked?)

A converter that can't handle a case raises ValueError naming the reason; the
whole loop then runs sequentially (the while-loop) with a warning, unless the
caller passed `fallback_to_while_loop=False`. An op with no converter at all
runs once per iteration and its results are stacked, with one warning (with
`fallback_to_while_loop=False` it raises, as TensorFlow's pfor does).
"""
from __future__ import annotations

import re
import threading
from typing import Callable, NamedTuple

import numpy as np

from . import core
from .program import Program, make_program, run_program
from .tensor import SymbolicTensor, Tensor, as_tensor, constant
from .tree import tree_unflatten
from . import hooks
from .warn import (_warned, deferred_warnings, warn_at_user_line, warn_once,  # noqa: F401
                   warn_wrong_result)                                 # (re-exported)
from . import ops, structure
from .diagnostics import record_fallback
from .index_conversion import trace_converting
from .memory import (check_results_fit, chunk_for_memory, format_bytes, pooled_empty,
                     working_memory_advice)
from . import progress as _progress

__all__ = ["pfor", "vectorized_map", "register_converter", "converters", "converter_for",
           "ConversionError", "run_loop", "vectorize", "while_loop", "c_ordered"]

converters: dict[core.Primitive, Callable] = {}
_registry_lock = threading.Lock()


class ConversionError(ValueError):
    """A converter could not vectorize an equation; names the op and the reason."""

    def __init__(self, op: str, detail: str, reason: str):
        self.op, self.detail, self.reason = op, detail, reason
        super().__init__(f"pfor could not vectorize op '{op}' ({detail}): {reason}")


def register_converter(op, override: bool = False):
    """Registers `fn(n, args, stacked, **params) -> (out, out_stacked)` for the primitive
    `op` (a Primitive, the op `extend.defop` returned, or a declared op's name)."""
    prim = core.primitive_of(op)

    def register(fn: Callable) -> Callable:
        with _registry_lock:
            if prim in converters and not override:
                raise ValueError(f"a pfor converter for op '{prim.name}' is already registered; "
                                 f"pass override=True to replace it")
            converters[prim] = fn
        core.rules_changed(prim.name)
        return fn
    return register


# `family(prim) -> converter or None`: the converter of a whole family (the elementwise
# ops' broadcasting one) for a primitive that has none of its own
family_converters: list[Callable] = []


def converter_for(prim: core.Primitive) -> Callable | None:
    """The converter registered for `prim`, else its family's, else None."""
    conv = converters.get(prim)
    for family in family_converters if conv is None else ():
        conv = family(prim)
        if conv is not None:
            break
    return conv


@core.on_rules_changed
def _drop_replaced_converter(name: str, replaced: bool) -> None:
    """A primitive declared again (override=True) is a new op: the old one's converter goes."""
    if replaced:
        with _registry_lock:
            for prim in [p for p in converters if p.name == name and
                         core.primitives.get(name) is not p]:
                del converters[prim]


def _cause(reason: str) -> str:
    """A reason with its numbers (shapes, axes, sizes) left out: one warning per cause."""
    return re.sub(r"\d+", "#", reason)


# -- the driver -------------------------------------------------------------------------
def _describe(eqn, vals) -> str:
    parts = [f"{'stacked' if s else 'unstacked'} {tuple(v.shape)}" for v, s in vals]
    return "inputs " + ", ".join(parts)


class LoopContext:
    """What structure-aware converters know about the loop: its index values."""

    def __init__(self, indices: Tensor, index_range: tuple[int, int]):
        self.indices, self.index_range = indices, index_range
        self.n = int(indices.shape[0])


def vectorize(program: Program, indices: Tensor, index_range: tuple[int, int] | None = None,
              structured: bool | None = None, const_values=None,
              per_iteration: bool = True) -> list[tuple[Tensor, bool]]:
    """Runs `program` for every loop index in `indices` at once; returns (value, stacked).

    With structure tracking on (the default), values that stay one-hot along a
    block of axes are carried compactly (see structure.py); outputs are dense.
    `const_values` replaces the program's captured constants (loopcache.py
    passes symbolic ones to compile the vectorized body). Without `per_iteration`,
    an op with no converter raises ConversionError instead of running per iteration.
    """
    n = int(indices.shape[0])
    ctx = LoopContext(indices, index_range or (0, n))
    if structured is None:
        structured = structure.tracking_enabled()
    env: dict[int, tuple[Tensor, bool]] = {id(program.inputs[0]): (indices, True)}
    for var, value in zip(program.consts, program.const_values if const_values is None
                          else const_values):
        env[id(var)] = (value, False)
    for eqn, dead in zip(program.equations, _dead_after(program)):
        vals = [env[id(v)] for v in eqn.inputs]
        if not any(s for _, s in vals):
            outs = core.bind(eqn.prim, *[v for v, _ in vals], **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
            flags = False
        else:
            outs, flags = _convert_structured(eqn, vals, ctx) if structured else (None, None)
            if outs is None:
                vals = [(structure.densify(v), s) for v, s in vals]
                outs, flags = _convert(eqn, vals, n, per_iteration)
        for var, out in zip(eqn.outputs, outs):
            env[id(var)] = (out, flags)
        for key in dead:  # stacked values are n times bigger: free each after its last use
            del env[key]
    return [(structure.densify(v), s) for v, s in (env[id(v)] for v in program.outputs)]


def _dead_after(program: Program) -> list[list[int]]:
    """For each equation, the ids of the values used (or made) there for the last time;
    the program's outputs live on."""
    last: dict[int, int] = {}
    for k, eqn in enumerate(program.equations):
        for v in list(eqn.inputs) + list(eqn.outputs):
            last[id(v)] = k
    for v in program.outputs:
        last.pop(id(v), None)
    dead: list[list[int]] = [[] for _ in program.equations]
    for key, k in last.items():
        dead[k].append(key)
    return dead


def _convert_structured(eqn, vals, ctx: LoopContext):
    """Tries the structure-aware converter; (None, None) means "use the dense path"."""
    conv = structure.structured_converter_for(eqn.prim)
    if conv is None or eqn.prim.multiple_results:
        return None, None
    args = [v for v, _ in vals]
    if eqn.prim.name != "one_hot" and not any(isinstance(a, structure.OneHot) for a in args):
        return None, None
    try:
        result = conv(eqn.prim, ctx, args, [s for _, s in vals], **eqn.params)
    except ValueError as e:                   # as for a dense converter: the while-loop runs
        raise ConversionError(eqn.prim.name, "structured inputs", str(e)) from e
    if result is None:
        return None, None
    out, flag = result
    var = eqn.outputs[0]
    if tuple(out.shape) != ((ctx.n,) if flag else ()) + tuple(var.shape) or out.dtype != var.dtype:
        raise ConversionError(eqn.prim.name, "structured inputs",
                              f"the structured converter returned {out.dtype.name}{tuple(out.shape)}")
    if isinstance(out, structure.OneHot):
        _annotate(out)
    return [out], flag


def _annotate(oh) -> None:
    """When pfor itself is being traced, mark the equation that made a compact value."""
    trace = oh.compact._trace
    if trace is None:
        return
    for eqn in reversed(trace.equations):
        if any(v is oh.compact for v in eqn.outputs):
            eqn.note = oh.describe()
            return


def _convert(eqn, vals, n: int, per_iteration: bool = True):
    name = eqn.prim.name
    conv = converter_for(eqn.prim)
    args, stacked = [v for v, _ in vals], [s for _, s in vals]
    if conv is None and not per_iteration:
        raise ConversionError(name, _describe(eqn, vals), "no converter is registered (and "
                              "fallback_to_while_loop=False runs nothing per iteration)")
    if conv is None:
        record_fallback("per-iteration", name, _describe(eqn, vals), "no converter registered", n)
        warn_once(("per-iteration", name),
                  f"pfor: op '{name}' has no converter, so it runs once per iteration "
                  f"({_describe(eqn, vals)}) and its results are stacked; this is slow. Add one "
                  f"with @pforjac.extend.register_converter('{name}') (see CONTRIBUTING.md); "
                  f"pforjac.fallback_report() lists every op that fell back")
        conv = _per_iteration(eqn.prim)
    try:
        outs, flag = conv(n, args, stacked, **eqn.params)
    except ValueError as e:
        raise ConversionError(name, _describe(eqn, vals), str(e)) from e
    outs = list(outs) if eqn.prim.multiple_results else [outs]
    if len(outs) != len(eqn.outputs):
        raise ConversionError(name, _describe(eqn, vals),
                              f"the converter returned {len(outs)} outputs, expected "
                              f"{len(eqn.outputs)}")
    for var, out in zip(eqn.outputs, outs):
        want = ((n,) if flag else ()) + tuple(var.shape)
        if tuple(out.shape) != want or out.dtype != var.dtype:
            raise ConversionError(name, _describe(eqn, vals),
                                  f"the converter returned {out.dtype.name}{tuple(out.shape)}, "
                                  f"expected {var.dtype.name}{want}")
    return outs, flag


def _per_iteration(prim: core.Primitive):
    """The fallback converter: bind the op for each iteration and stack the results."""
    def convert(n, args, stacked, **params):
        per_iter = []
        for k in range(n):
            outs = core.bind(prim, *[a[k] if s else a for a, s in zip(args, stacked)], **params)
            per_iter.append(outs if prim.multiple_results else [outs])
        if n == 0:
            avals = [core.Aval(a.shape[1:] if s else a.shape, a.dtype) for a, s in zip(args, stacked)]
            outs = [ops.zeros((0,) + shape, dtype)
                    for shape, dtype in core.abstract_eval(prim, avals, params)]
        else:
            outs = [ops.stack([it[j] for it in per_iter]) for j in range(len(per_iter[0]))]
        return (outs if prim.multiple_results else outs[0]), True
    return convert


def _stack_output(value: Tensor, stacked: bool, n: int) -> Tensor:
    if stacked:
        return value
    return ops.broadcast_to(ops.expand_dims(value, 0), (n,) + tuple(value.shape))


def c_ordered(value):
    """`value` (a Tensor, or None) with its entries in C order: what pfor and the Jacobians
    hand back has that one layout whichever path made it (vectorized, in chunks, compiled
    by the loop cache, the while-loop, forward mode's transposed columns, an unstacked
    output broadcast over the iterations). A strided array is copied once: as `_collect`
    copies, into a result buffer when no tape records and no trace is open, else by ops the
    tapes see (a flattening reshape copies an array of two or more axes in C order; a
    strided row, a step or a broadcast, which no reshape copies, is gathered whole).
    Symbolic values are left to the compiled code."""
    if not isinstance(value, Tensor) or isinstance(value, SymbolicTensor) \
            or value._value.flags.c_contiguous:
        return value
    state = core.current_state()
    if not (state.tapes or state.traces):
        out = pooled_empty(tuple(value.shape), value.dtype)
        np.copyto(out, value._value)
        return Tensor._from_array(out)
    flat = ops.reshape(value, (-1,))
    if not flat._value.flags.c_contiguous:
        flat = ops.gather(flat, np.arange(flat.shape[0]), axis=0)
    return ops.reshape(flat, value.shape)


def while_loop(program: Program, n: int, loop_axis: int = 0) -> list[Tensor]:
    """The sequential loop: the same traced body, bound once per index, results stacked."""
    if n == 0:
        return [ops.zeros((0,) + tuple(v.shape), v.dtype) for v in program.outputs]
    per_iter = ((k, k + 1, run_program(program, [constant(np.int32(k))])) for k in range(n))
    return _collect(_progress.tracked(per_iter, n, n, "jacobian (while-loop)"), n, ops.stack,
                    stacked=False, loop_axis=loop_axis)


def _collect(pieces, n: int, join: Callable, stacked: bool, loop_axis: int = 0) -> list[Tensor]:
    """Joins loop outputs made piece by piece, `(start, stop, values)` for iterations
    start..stop-1 (`values` have a leading axis of stop - start if `stacked`).

    When no tape records and no trace is open (the usual jacobian call), each piece
    is copied into a preallocated result as soon as it is made and then dropped,
    so peak memory is the result plus one piece, not twice the result. Otherwise
    the pieces are joined with `join` (stack or concat), which outer tapes and
    traces see.
    """
    state = core.current_state()
    if state.tapes or state.traces:
        parts = [values for _, _, values in pieces]
        return [join(list(column)) for column in zip(*parts)]
    out = None
    for start, stop, values in pieces:
        if out is None:
            out = [_laid_out((n,) + tuple(v.shape[1:] if stacked else v.shape), v.dtype,
                             loop_axis) for v in values]
        _copy_into(out, start, stop, values)
        del values  # not alive while the next piece is made
    return [Tensor._from_array(buf) for buf in out]


def _laid_out(shape: tuple, dtype, loop_axis: int) -> np.ndarray:
    """`pooled_empty(shape, dtype)` (loop axis first) with the loop axis at `loop_axis` in
    memory: the caller that moves it there (batch_jacobian, after the batch axis) gets a
    C-ordered result without copying it (a copy would double the peak memory)."""
    if loop_axis == 0 or len(shape) <= loop_axis:
        return pooled_empty(shape, dtype)
    laid = shape[1:loop_axis + 1] + shape[:1] + shape[loop_axis + 1:]
    return np.moveaxis(pooled_empty(laid, dtype), loop_axis, 0)


def _copy_into(out: list[np.ndarray], start: int, stop: int, values) -> None:
    for buf, v in zip(out, values):
        buf[start:stop] = v.numpy()


def check_parallel_iterations(parallel_iterations) -> None:
    if parallel_iterations is not None and (
            isinstance(parallel_iterations, bool)
            or not isinstance(parallel_iterations, (int, np.integer)) or parallel_iterations < 1):
        raise ValueError(f"parallel_iterations must be a positive int or None, got {parallel_iterations!r}")


def _chunks(n: int, parallel_iterations: int | None) -> list[tuple[int, int]]:
    check_parallel_iterations(parallel_iterations)
    if parallel_iterations is None:
        return [(0, n)]
    k = int(parallel_iterations)
    return [(s, min(n, s + k)) for s in range(0, n, k)] or [(0, 0)]


def run_loop(program: Program, n: int, parallel_iterations: int | None = None,
             use_pfor: bool = True, fallback_to_while_loop: bool = True,
             loop_axis: int = 0) -> list[Tensor]:
    """Runs the loop body `program` for indices 0..n-1; stacked outputs. Those assembled
    piece by piece (chunks, the while-loop) are laid out in memory with the loop axis at
    `loop_axis`, where the caller will move it (`_laid_out`). Without `parallel_iterations`,
    a pass whose working memory would not fit runs in chunks that do (`_fitting_chunk`)."""
    if not use_pfor:
        return while_loop(program, n, loop_axis)
    if parallel_iterations is None:
        parallel_iterations = _fitting_chunk(program, n)
    chunks = _chunks(n, parallel_iterations)
    try:
        if len(chunks) == 1:
            cached = None if hooks.run_loop is None else hooks.run_loop(program, n)
            if cached is not None:
                return cached
            return next(_vectorized_chunks(program, chunks, fallback_to_while_loop))[2]
        pieces = _vectorized_chunks(program, chunks, fallback_to_while_loop)
        return _collect(_progress.tracked(pieces, n, len(chunks), "jacobian"), n,
                        lambda parts: ops.concat(parts, axis=0), True, loop_axis)
    except ConversionError as e:
        if not fallback_to_while_loop:
            raise
        record_fallback("while-loop", e.op, e.detail, e.reason, n)
        warn_once(("while-loop", e.op, _cause(e.reason)),
                  f"pfor: {e}. Running the loop body sequentially (a while-loop) instead; "
                  f"pass fallback_to_while_loop=False to raise, or fix the converter for '{e.op}' "
                  f"(pforjac.testing.check_converter finds the failing stacked mix)")
        return while_loop(program, n, loop_axis)


def _fitting_chunk(program: Program, n: int) -> int | None:
    """None (all n iterations at once) when the estimated working memory fits in the memory
    available, else the largest chunk that does, said once. Eager only: the loop cache
    declines to compile such a pass (it would run whole), a compiled function runs it whole."""
    state = core.current_state()
    if state.traces and not hooks.building():
        return None
    results = sum(n * v.size * v.dtype.itemsize for v in program.outputs)
    chunk, need, avail = chunk_for_memory(program, n, results)
    if chunk is None:
        return None
    if hooks.building():
        raise hooks.NeedsValues("a vectorized pass larger than the memory available")
    k = -(-n // chunk)
    warn_once(("chunks", n, chunk),
              f"pforjac: the vectorized pass over {n} rows needs about {format_bytes(need)} of "
              f"working memory, more than the {format_bytes(avail)} available, so it runs in "
              f"{k} chunks of {chunk} rows. Pass chunk_size= (parallel_iterations= to "
              f"GradientTape.jacobian and pfor) to choose the chunk; the environment variable "
              f"PFORJAC_MEMORY_LIMIT or pforjac.memory.set_memory_limit sets the budget")
    return chunk


def _vectorized_chunks(program: Program, chunks, per_iteration: bool = True):
    for start, stop in chunks:
        indices = constant(np.arange(start, stop, dtype=np.int32))
        yield start, stop, vectorize_stacked(program, indices, (start, stop), per_iteration)


class Vectorized(NamedTuple):
    """A loop body vectorized with structure in a compiled function's trace, and the
    stacked values that gave: its dense twin (dense_twin.py) vectorizes it again."""
    program: Program
    indices: Tensor
    index_range: tuple
    per_iteration: bool
    const_values: list | None
    outputs: list


def vectorize_stacked(program: Program, indices: Tensor, index_range: tuple,
                      per_iteration: bool = True, const_values=None) -> list[Tensor]:
    """`vectorize`'s outputs, each stacked. In a compiled function's trace (`lifting`),
    structure is used only where its ops stay in the compiled Program as made, for the
    dense twin to find: in that trace itself (not a loop body, nor a function forward
    mode transforms), no tape recording them; those vectorizations are recorded."""
    state, lifting = core.current_state(), core.current_state().lifting
    structured = structure.tracking_enabled() and (lifting is None or (
        not state.tapes and state.traces[-1] is lifting))
    n = int(indices.shape[0])
    outs = [_stack_output(v, s, n) for v, s in vectorize(
        program, indices, index_range, structured, const_values, per_iteration)]
    if structured and lifting is not None:
        lifting.regions.append(Vectorized(program, indices, index_range, per_iteration,
                                          const_values, outs))
    return outs


def pfor(loop_fn: Callable, iters: int, fallback_to_while_loop: bool = True,
         parallel_iterations: int | None = None):
    """Equivalent to stacking `loop_fn(i)` for `i in range(iters)`, vectorized.

    `loop_fn` is traced once with a symbolic int32 index (numpy arrays may be indexed with
    it: `pforjac.index_conversion`) and may return a nested structure of tensors.

    Example:
        >>> import pforjac as pj
        >>> x = pj.constant([[1., 2.], [3., 4.]])
        >>> pj.pfor(lambda i: pj.exp(x[i]).sum(), 2).shape
        (2,)
    """
    if isinstance(iters, (Tensor, np.ndarray)) and iters.ndim == 0 \
            and np.issubdtype(iters.dtype, np.integer) and getattr(iters, "_trace", None) is None:
        iters = int(np.asarray(iters))    # a concrete scalar, as tf.shape(x)[0] is for TF's pfor
    if isinstance(iters, bool) or not isinstance(iters, (int, np.integer)) or iters < 0:
        raise ValueError(f"pfor: iters must be a non-negative int (or a concrete integer "
                         f"scalar), got {iters!r}")
    if not callable(loop_fn):
        raise TypeError(f"pfor: loop_fn must be callable, got {type(loop_fn).__name__}")
    program = trace_converting(loop_fn, lambda f: make_program(f, [((), np.int32)]))
    return run_body(program, iters, fallback_to_while_loop, parallel_iterations)


def run_body(program, iters: int, fallback_to_while_loop: bool, parallel_iterations):
    """The stacked results of a traced loop body over `iters` iterations."""
    check_parallel_iterations(parallel_iterations)
    check_results_fit([((int(iters),) + tuple(v.shape), v.dtype) for v in program.outputs],
                      what="pfor")
    with working_memory_advice("pfor", parallel_iterations):
        outs = run_loop(program, int(iters), parallel_iterations, True, fallback_to_while_loop)
    return tree_unflatten(program.out_tree, [c_ordered(v) for v in outs])
