"""GradientTape.jacobian and batch_jacobian, built on the pfor pass.

The loop body is "seed = one-hot(i) shaped like the target; run the tape's vjp
rules backwards from it to the sources". It is traced once into a Program and
either vectorized over all `i` (pfor) or run once per `i` (the while-loop).
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

from . import ops
from .memory import check_results_fit, working_memory_advice
from . import hooks
from .pfor import c_ordered, check_parallel_iterations, run_loop, warn_wrong_result
from .program import make_program
from .rowmix import Mixing, Unknown, analyze
from .tape import GradientTape, UnconnectedGradients, _finish, _unconnected, backward
from .tensor import SymbolicTensor, Tensor, as_tensor, is_float
from .tree import tree_flatten, tree_unflatten

__all__ = ["jacobian", "batch_jacobian"]


def _gradients(entries, target: Tensor, seed: Tensor, sources, tape=None) -> list:
    """The loop body's work: vjp rules from `seed` at `target` back to `sources`."""
    with (tape._computing() if tape is not None else contextlib.nullcontext()):
        grads = backward(entries, [target], [seed], sources)
    return [None if g is None else _finish(g, s, UnconnectedGradients.NONE)
            for g, s in zip(grads, sources)]


def _jacobian_core(entries, target, sources, parallel_iterations=None, use_pfor=True, tape=None):
    """Per source: the dense Jacobian `target.shape + source.shape`, or None if unconnected."""
    n = target.size

    def body(i):
        seed = ops.reshape(ops.one_hot(i, n, target.dtype), target.shape)
        return _gradients(entries, target, seed, sources, tape)

    program = make_program(body, [((), np.int32)])
    stacked = tree_unflatten(program.out_tree, run_loop(program, n, parallel_iterations, use_pfor))
    return [None if g is None else ops.reshape(g, tuple(target.shape) + tuple(s.shape))
            for g, s in zip(stacked, sources)]


def _batch_jacobian_core(entries, target, source, strict=False, parallel_iterations=None,
                         use_pfor=True, tape=None):
    """The per-example Jacobians [b, y..., x...], or None if unconnected."""
    b, row_shape = target.shape[0], tuple(target.shape[1:])
    m = math.prod(row_shape)
    seeds = []

    def body(i):
        row_seed = ops.reshape(ops.one_hot(i, m, target.dtype), (1,) + row_shape)
        seeds.append(ops.broadcast_to(row_seed, target.shape))
        return _gradients(entries, target, seeds[0], [source], tape)

    program = make_program(body, [((), np.int32)])
    _check_rows_independent(program, seeds[0], target, source, strict)
    (g,) = tree_unflatten(program.out_tree, run_loop(program, m, parallel_iterations, use_pfor,
                                                     loop_axis=1))
    if g is None:
        return None
    # g is [m, b, x...] (laid out batch first where it is assembled piece by piece): move the
    # batch axis first, then split m into the row shape.
    return ops.reshape(ops.moveaxis(g, 1, 0), (b,) + row_shape + tuple(source.shape[1:]))


def _cached_backward(what: tuple, entries, target, sources, core_fn):
    """The compiled layer's result for a backward pass seen before, or None."""
    return None if hooks.run_backward is None else \
        hooks.run_backward(what, entries, target, sources, core_fn)


def _one_chunk(parallel_iterations, n: int) -> bool:
    return parallel_iterations is None or (isinstance(parallel_iterations, int)
                                           and not isinstance(parallel_iterations, bool)
                                           and parallel_iterations >= n)


def _check_loop_mode(tape: GradientTape, experimental_use_pfor: bool, what: str) -> None:
    if not experimental_use_pfor and not tape._persistent:
        raise RuntimeError(f"GradientTape.{what} with experimental_use_pfor=False runs a loop of "
                           f"gradient calls, which needs GradientTape(persistent=True)")


def jacobian(self: GradientTape, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
             parallel_iterations=None, experimental_use_pfor=True):
    """Jacobian of `target` w.r.t. each tensor in `sources`: shape `target.shape + source.shape`.

    Example:
        >>> import pforjac as pj
        >>> x = pj.constant([[4., 2.], [1., 3.]])
        >>> with pj.GradientTape() as g:
        ...     g.watch(x)
        ...     y = x * x * x
        >>> g.jacobian(y, x).shape
        (2, 2, 2, 2)
    """
    unconnected = _unconnected(unconnected_gradients)
    flat_sources, tree = tree_flatten(sources)
    self._check_sources(flat_sources, "GradientTape.jacobian")
    _check_loop_mode(self, experimental_use_pfor, "jacobian")
    self._check_recorded([target], "GradientTape.jacobian")
    target = _one_target(target, "jacobian")
    check_parallel_iterations(parallel_iterations)
    n = target.size
    check_results_fit([(tuple(target.shape) + tuple(s.shape), _result_dtype(s))
                       for s in flat_sources])
    self._check_usable()        # only now: a call with wrong arguments leaves the tape usable

    with self._computing(), working_memory_advice("GradientTape.jacobian", parallel_iterations):
        jac = None if is_float(target.dtype) else [None] * len(flat_sources)  # int/bool: None
        if jac is None and experimental_use_pfor and _one_chunk(parallel_iterations, n):
            jac = _cached_backward(("jacobian",), self._entries, target, flat_sources,
                                  lambda e, t, s: _jacobian_core(e, t, s))
        if jac is None:
            jac = _jacobian_core(self._entries, target, flat_sources, parallel_iterations,
                                 experimental_use_pfor, self)
        out = [_unconnected_value(tuple(target.shape) + tuple(s.shape), s, unconnected)
               if j is None else c_ordered(j) for j, s in zip(jac, flat_sources)]
    return tree_unflatten(tree, out)


class StrictCheckError(ValueError):
    """batch_jacobian(strict=True) refused the target: the tape stays usable (for jacobian())."""


@contextlib.contextmanager
def _refusal_leaves_usable(tape: GradientTape, was_used: bool):
    try:
        yield
    except StrictCheckError:
        tape._used = was_used
        raise


def _result_dtype(source: Tensor) -> np.dtype:
    """An integer source's result (zeros, under unconnected_gradients="zero") is float32."""
    return source.dtype if is_float(source.dtype) else np.dtype(np.float32)


def _unconnected_value(shape: tuple, source: Tensor, unconnected: UnconnectedGradients):
    if unconnected is UnconnectedGradients.NONE:
        return None
    return ops.zeros(shape, _result_dtype(source))


def batch_jacobian(self: GradientTape, target, source,
                   unconnected_gradients=UnconnectedGradients.NONE, parallel_iterations=None,
                   experimental_use_pfor=True, strict=False):
    """Per-example Jacobians: `target` [b, y1..yn], `source` [b, x1..xm] -> [b, y1..yn, x1..xm].

    Assumes `target[i]` depends only on `source[i]`, as TensorFlow's does; unlike
    TensorFlow's, it checks the assumption on the traced backward pass and warns
    (raises a ValueError with `strict=True`) naming the op that mixes rows of the
    batch, instead of returning a silently wrong result. With `strict=True` it also
    raises where the check meets an op it has no rule for. See `pforjac.rowmix`.

    Example:
        >>> import pforjac as pj
        >>> x = pj.constant([[1., 2.], [3., 4.]])
        >>> with pj.GradientTape() as g:
        ...     g.watch(x)
        ...     y = x * x
        >>> g.batch_jacobian(y, x).numpy().tolist()
        [[[2.0, 0.0], [0.0, 4.0]], [[6.0, 0.0], [0.0, 8.0]]]
    """
    unconnected = _unconnected(unconnected_gradients)
    self._check_recorded([target], "GradientTape.batch_jacobian")
    target = _one_target(target, "batch_jacobian")
    if not isinstance(source, Tensor):
        raise TypeError(f"batch_jacobian: source must be a Tensor, got {type(source).__name__}")
    if target.ndim < 2 or source.ndim < 2:
        raise ValueError(f"batch_jacobian needs target and source of rank >= 2 ([batch, ...]); got "
                         f"target {target.shape} and source {source.shape}")
    if target.shape[0] != source.shape[0]:
        raise ValueError(f"batch_jacobian: the first (batch) dimensions differ: target "
                         f"{target.shape} vs source {source.shape}")
    self._check_sources([source], "GradientTape.batch_jacobian")
    _check_loop_mode(self, experimental_use_pfor, "batch_jacobian")
    check_parallel_iterations(parallel_iterations)
    row_shape = tuple(target.shape[1:])
    result_shape = (target.shape[0],) + row_shape + tuple(source.shape[1:])
    check_results_fit([(result_shape, _result_dtype(source))], per_example=True)
    was_used = self._used
    self._check_usable()        # only now: a call with wrong arguments leaves the tape usable
    with self._computing(), _refusal_leaves_usable(self, was_used), \
            working_memory_advice("GradientTape.batch_jacobian", parallel_iterations):
        if not is_float(target.dtype):          # an int or bool target: no gradient flows
            return _unconnected_value(result_shape, source, unconnected)
        cached = None
        if experimental_use_pfor and _one_chunk(parallel_iterations, math.prod(row_shape)):
            cached = _cached_backward(
                ("batch_jacobian", bool(strict)), self._entries, target, [source],
                lambda e, t, s: [_batch_jacobian_core(e, t, s[0], strict)])
        jac = cached[0] if cached is not None else _batch_jacobian_core(
            self._entries, target, source, strict, parallel_iterations, experimental_use_pfor, self)
        return _unconnected_value(result_shape, source, unconnected) if jac is None \
            else c_ordered(jac)


def _check_rows_independent(program, seed, target, source, strict: bool) -> None:
    verdict = analyze(program, seed)
    if isinstance(verdict, Unknown) and verdict.eqn is not None and hooks.building() \
            and _reads_outer_values(program, verdict.eqn):
        # the loop cache traces the tape's tensors as symbols: indices that move rows are
        # unknown here, and cached code would pass them silently on every later call
        raise hooks.NeedsValues(f"the row check of '{verdict.eqn.prim.name}'")
    if isinstance(verdict, Unknown) and verdict.eqn is not None:
        _unchecked(verdict.eqn, strict)
    if not isinstance(verdict, Mixing):
        return
    eqn = verdict.eqn
    forward = _forward_of(eqn)
    # no shapes in the warning: Python shows it once per line and text, so a loop over
    # batch sizes warns once (strict=True raises with them)
    how = "puts batch entries in other rows" if verdict.moves else "combines different batch entries"
    message = (f"batch_jacobian assumes row b of the target depends only on row b of the source, "
               f"but {forward} mixes rows of the batch (backward op '{eqn.prim.name}' {how}), "
               f"so the per-example result would not be the Jacobian. "
               f"Use jacobian() for the full result, or keep batch rows independent (e.g. no "
               f"batch statistics)")
    if strict:
        raise StrictCheckError(f"{message}. The op's inputs: {[tuple(v.shape) for v in eqn.inputs]}; "
                               f"target {tuple(target.shape)}, source {tuple(source.shape)}")
    warn_wrong_result(message)


def _unchecked(eqn, strict: bool) -> None:
    """The row check cannot follow the batch axis through `eqn`: rows may mix there, so
    the user hears of it (once per cause), or strict=True raises."""
    message = (f"batch_jacobian could not check that rows of the batch stay independent: "
               f"{_forward_of(eqn)} gives backward op '{eqn.prim.name}', which the row check "
               f"(pforjac.rowmix) cannot follow, so the per-example result is not guaranteed "
               f"(if rows of the batch mix there, it is wrong). Use jacobian() for the full "
               f"result")
    if strict:
        raise StrictCheckError(f"{message}; the op's inputs: "
                               f"{[tuple(v.shape) for v in eqn.inputs]}")
    warn_wrong_result(message)


def _reads_outer_values(program, eqn) -> bool:
    """`eqn` reads a value of an enclosing trace (a constant of the body whose value is
    symbolic): what the row check would need to know is not known while tracing."""
    outer = {id(c) for c, v in zip(program.consts, program.const_values)
             if isinstance(v, SymbolicTensor)}
    return any(id(v) in outer for v in eqn.inputs)


def _one_target(target, what: str) -> Tensor:
    """A list of tensors would become an untracked constant (a silent None): refuse it."""
    if isinstance(target, (list, tuple, dict)):
        raise TypeError(f"GradientTape.{what}: target must be one Tensor, got a "
                        f"{type(target).__name__} of {len(target)}; stack them (pforjac.stack) "
                        f"or call {what} once per target")
    return as_tensor(target, f"GradientTape.{what}: target")


def _forward_of(eqn) -> str:
    return f"the gradient of forward op '{eqn.origin.prim.name}'" if eqn.origin is not None \
        else "an op of the backward pass"


GradientTape.jacobian = jacobian
GradientTape.batch_jacobian = batch_jacobian
