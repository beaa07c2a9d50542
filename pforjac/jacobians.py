"""GradientTape.jacobian and batch_jacobian, built on the pfor pass.

The loop body is "seed = one-hot(i) shaped like the target; run the tape's vjp
rules backwards from it to the sources". It is traced once into a Program and
either vectorized over all `i` (pfor) or run once per `i` (the while-loop).
"""
from __future__ import annotations

import math

import numpy as np

from . import ops
from .memory import check_results_fit
from .pfor import run_loop
from .program import make_program
from .tape import GradientTape, UnconnectedGradients, _finish, _unconnected, backward
from .tensor import Tensor, as_tensor, is_float
from .tree import tree_flatten, tree_unflatten

__all__ = ["jacobian", "batch_jacobian"]


def _body_gradients(tape: GradientTape, target: Tensor, seed: Tensor, sources) -> list:
    with tape._paused():
        grads = backward(tape._entries, [target], [seed], sources)
    return [None if g is None else _finish(g, s, UnconnectedGradients.NONE)
            for g, s in zip(grads, sources)]


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
    self._check_sources(flat_sources)
    _check_loop_mode(self, experimental_use_pfor, "jacobian")
    target = as_tensor(target)
    self._check_usable()
    n = target.size
    check_results_fit([(tuple(target.shape) + tuple(s.shape), s.dtype) for s in flat_sources])

    def body(i):
        seed = ops.reshape(ops.one_hot(i, n, target.dtype), target.shape)
        return _body_gradients(self, target, seed, flat_sources)

    program = make_program(body, [((), np.int32)])
    stacked = tree_unflatten(program.out_tree,
                             run_loop(program, n, parallel_iterations, experimental_use_pfor))
    out = []
    for g, s in zip(stacked, flat_sources):
        shape = tuple(target.shape) + tuple(s.shape)
        out.append(_unconnected_value(shape, s, unconnected) if g is None else ops.reshape(g, shape))
    return tree_unflatten(tree, out)


def _unconnected_value(shape: tuple, source: Tensor, unconnected: UnconnectedGradients):
    if unconnected is UnconnectedGradients.NONE:
        return None
    return ops.zeros(shape, source.dtype if is_float(source.dtype) else np.float32)


def batch_jacobian(self: GradientTape, target, source,
                   unconnected_gradients=UnconnectedGradients.NONE, parallel_iterations=None,
                   experimental_use_pfor=True, strict=False):
    """Per-example Jacobians: `target` [b, y1..yn], `source` [b, x1..xm] -> [b, y1..yn, x1..xm].

    Assumes `target[i]` depends only on `source[i]`, as TensorFlow's does; unlike
    TensorFlow's, it checks the assumption on the traced backward pass and warns
    (raises a ValueError with `strict=True`) naming the op that mixes rows of the
    batch, instead of returning a silently wrong result. See `pforjac.rowmix`.

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
    target = as_tensor(target)
    if not isinstance(source, Tensor):
        raise TypeError(f"batch_jacobian: source must be a Tensor, got {type(source).__name__}")
    if target.ndim < 2 or source.ndim < 2:
        raise ValueError(f"batch_jacobian needs target and source of rank >= 2 ([batch, ...]); got "
                         f"target {target.shape} and source {source.shape}")
    if target.shape[0] != source.shape[0]:
        raise ValueError(f"batch_jacobian: the first (batch) dimensions differ: target "
                         f"{target.shape} vs source {source.shape}")
    self._check_sources([source])
    _check_loop_mode(self, experimental_use_pfor, "batch_jacobian")
    self._check_usable()
    b, row_shape = target.shape[0], tuple(target.shape[1:])
    m = math.prod(row_shape)
    result_shape = (b,) + row_shape + tuple(source.shape[1:])
    check_results_fit([(result_shape, source.dtype)])

    seeds = []

    def body(i):
        row_seed = ops.reshape(ops.one_hot(i, m, target.dtype), (1,) + row_shape)
        seeds.append(ops.broadcast_to(row_seed, target.shape))
        return _body_gradients(self, target, seeds[0], [source])

    program = make_program(body, [((), np.int32)])
    _check_rows_independent(program, seeds[0], target, source, strict)
    (g,) = tree_unflatten(program.out_tree,
                          run_loop(program, m, parallel_iterations, experimental_use_pfor))
    if g is None:
        return _unconnected_value(result_shape, source, unconnected)
    # g is [m, b, x...]: move the batch axis first, then split m into the row shape.
    g = ops.moveaxis(g, 1, 0)
    return ops.reshape(g, result_shape)


def _check_rows_independent(program, seed, target, source, strict: bool) -> None:
    from .pfor import warn_once
    from .rowmix import Mixing, analyze
    verdict = analyze(program, seed)
    if not isinstance(verdict, Mixing):
        return
    eqn = verdict.eqn
    forward = f"the gradient of forward op '{eqn.origin.prim.name}'" if eqn.origin is not None \
        else "an op of the backward pass"
    message = (f"batch_jacobian assumes row b of the target depends only on row b of the source, "
               f"but {forward} mixes rows of the batch (backward op '{eqn.prim.name}' on "
               f"{[tuple(v.shape) for v in eqn.inputs]} combines different batch entries), so the "
               f"per-example result (target {tuple(target.shape)}, source {tuple(source.shape)}) "
               f"would not be the Jacobian. Use jacobian() for the full result, or keep batch "
               f"rows independent (e.g. no batch statistics)")
    if strict:
        raise ValueError(message)
    warn_once(("batch_jacobian row mixing", eqn.prim.name,
               eqn.origin.prim.name if eqn.origin is not None else None), message)


GradientTape.jacobian = jacobian
GradientTape.batch_jacobian = batch_jacobian
