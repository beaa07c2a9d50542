"""Jacobians as dask arrays: one task per chunk, every task reading one compiled plan.

The graph has one key holding the `JacobianPlan` (the chunk programs, traced and compiled
once on the client) and one task per chunk, `(run, plan key, chunk length, start)`: the
plan is sent to the scheduler once, and each worker fetches it once, however many chunks
it runs. Any scheduler runs the graph: a `distributed.Client`, the threaded default, or
whatever `dask.config` names.
"""
from __future__ import annotations

import math
import uuid

import numpy as np
import dask.array as da
from dask.highlevelgraph import HighLevelGraph

from ..config import checked_backend
from ..tensor import Tensor
from .memory import active_client, check_chunk_fits
from .programs import JacobianPlan, batch_program, chunk_lengths, forward_plan, reverse_plan

__all__ = ["jacobian", "batch_jacobian"]

_MODES = {"reverse": reverse_plan, "forward": forward_plan}
_DEFAULT_BATCH_CHUNK = 4096


def jacobian(f, x, chunk_size: int = 256, mode: str = "reverse",
             backend: str | None = None) -> da.Array:
    """The Jacobian of `f` at `x` as a dask array of shape `f(x).shape + x.shape`.

    One task per chunk of `chunk_size` output rows (reverse mode: pfor over that many basis
    cotangents) or input columns (forward mode: basis tangents). The result has the bits
    of the in-process `pforjac.jacobian(f, x, vectorize=True, parallel_iterations=chunk_size)`
    (same chunks, same numpy calls): chunk sizes change how BLAS blocks a product, so
    compare with the same `parallel_iterations`. `backend`: what the chunk programs are
    compiled for (default `pforjac.config.backend`); on "numba" the client's process runs
    native code (results to a few ulps), a process the programs are pickled to the numpy
    code (artifact.py).

    Example:
        >>> import numpy as np, pforjac as pj, pforjac.dask as pjd
        >>> J = pjd.jacobian(lambda x: pj.sin(x) * x.sum(), np.arange(3.0), chunk_size=2)
        >>> J.chunks, J.compute().shape
        (((2, 1), (3,)), (3, 3))
    """
    if mode not in _MODES:
        raise ValueError(f"pforjac.dask.jacobian: mode must be 'reverse' or 'forward', got {mode!r}")
    _check_chunk_size(chunk_size, "pforjac.dask.jacobian")
    if isinstance(x, da.Array):
        raise TypeError("pforjac.dask.jacobian: x is a dask array; pass its value (x.compute()): "
                        "the chunks split the Jacobian's rows or columns, not x")
    plan = _MODES[mode](f, x, chunk_size, backend=checked(backend, "pforjac.dask.jacobian"))
    lengths = chunk_lengths(plan.iterations, chunk_size)
    full = plan.out_shape + plan.in_shape
    if not lengths or 0 in full:
        return da.zeros(full, plan.dtype)
    unit = "output rows" if mode == "reverse" else "input columns"
    check_chunk_fits("pforjac.dask.jacobian", unit, lengths[0], plan.programs[lengths[0]].peak,
                     plan.nbytes, "chunk_size", active_client())
    flat = _chunked(plan, lengths)
    return flat if flat.shape == full else flat.reshape(full)


def _chunked(plan: JacobianPlan, lengths: list[int]) -> da.Array:
    """The flattened Jacobian [f(x).size, x.size]: the plan's key, and one task per chunk
    of rows (reverse) or columns (forward) reading it."""
    name = f"pforjac-jacobian-{uuid.uuid4().hex}"
    plan_key = name + "-plan"
    starts = np.cumsum([0] + lengths[:-1])
    run, where = (_rows, lambda j: (name, j, 0)) if plan.mode == "reverse" else \
        (_columns, lambda j: (name, 0, j))
    tasks = {where(j): (run, plan_key, m, int(s)) for j, (m, s) in enumerate(zip(lengths, starts))}
    rows, columns = (math.prod(plan.out_shape),), (math.prod(plan.in_shape),)
    chunks = (tuple(lengths), columns) if plan.mode == "reverse" else (rows, tuple(lengths))
    graph = HighLevelGraph({plan_key: {plan_key: plan}, name: tasks},
                           {plan_key: set(), name: {plan_key}})
    return da.Array(graph, name, chunks, dtype=plan.dtype)


def checked(backend, what: str):
    """`backend` (None: the configured one, read as the programs are compiled), checked."""
    return None if backend is None else checked_backend(backend, f"{what}: backend")


def _check_chunk_size(chunk_size, what: str) -> None:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) \
            or chunk_size < 1:
        raise ValueError(f"{what}: chunk_size must be a positive int, got {chunk_size!r}")


def _rows(plan: JacobianPlan, length: int, start: int) -> np.ndarray:
    """Rows start..start+length-1 of the flattened Jacobian, [length, x.size]."""
    (rows,) = plan.programs[length](np.arange(start, start + length, dtype=np.int32))
    return rows


def _columns(plan: JacobianPlan, length: int, start: int) -> np.ndarray:
    """Columns start..start+length-1 of the flattened Jacobian, [f(x).size, length]."""
    (columns,) = plan.programs[length](np.arange(start, start + length, dtype=np.int32))
    return np.ascontiguousarray(columns.astype(plan.dtype, copy=False))


def batch_jacobian(f, x, chunk_size: int = _DEFAULT_BATCH_CHUNK,
                   backend: str | None = None) -> da.Array:
    """Per-example Jacobians `[b, y..., x...]` of `f` (row i of `f(x)` depends on row i of
    `x` only) as a dask array, block by block along the batch axis.

    `x`: a dask array, chunked along its first axis (its other axes are made one chunk), or
    a numpy array / Tensor, split into blocks of `chunk_size` rows. The result is chunked
    as `x` is along the batch axis. Each distinct block shape is traced and compiled once,
    on the client; each block has the bits of the in-process `GradientTape.batch_jacobian`
    of that block (BLAS may round a product of other row counts differently: compare with
    the in-process call on the same blocks). `backend` as in `jacobian`.

    Example:
        >>> import numpy as np, pforjac as pj, pforjac.dask as pjd
        >>> J = pjd.batch_jacobian(lambda x: x * x, np.ones((5, 2)), chunk_size=2)
        >>> J.chunks[0], J.compute()[4].tolist()
        ((2, 2, 1), [[2.0, 0.0], [0.0, 2.0]])
    """
    _check_chunk_size(chunk_size, "pforjac.dask.batch_jacobian")
    backend = checked(backend, "pforjac.dask.batch_jacobian")
    xd = _batched(x, chunk_size)
    rest = tuple(xd.shape[1:])
    programs, shapes = {}, {}
    for b in sorted(set(xd.chunks[0])):
        programs[b], shapes[b], dtype = batch_program(f, (b,) + rest, xd.dtype, backend)
    widest = max(programs)
    check_chunk_fits("pforjac.dask.batch_jacobian", "examples", widest, programs[widest].peak,
                     sum(p.nbytes for p in programs.values()), "chunk_size", active_client())
    result_rest = shapes[widest][1:]
    name = f"pforjac-batch-jacobian-{uuid.uuid4().hex}"
    plan_key = name + "-plan"
    zeros = (0,) * (xd.ndim - 1)
    tasks = {(name, i) + (0,) * len(result_rest): (_per_example, plan_key, (xd.name, i) + zeros)
             for i in range(len(xd.chunks[0]))}
    graph = HighLevelGraph({plan_key: {plan_key: programs}, name: tasks, **xd.dask.layers},
                           {plan_key: set(), name: {plan_key, *xd.dask.layers},
                            **xd.dask.dependencies})
    chunks = (xd.chunks[0],) + tuple((d,) for d in result_rest)
    return da.Array(graph, name, chunks, dtype=dtype)


def _batched(x, chunk_size: int) -> da.Array:
    if isinstance(x, Tensor):
        x = x.numpy()
    xd = x if isinstance(x, da.Array) else da.from_array(
        np.asarray(x), chunks=(chunk_size,) + tuple(np.shape(x)[1:]))
    if xd.ndim < 2:
        raise ValueError(f"pforjac.dask.batch_jacobian needs x of rank >= 2 ([batch, ...]); "
                         f"got shape {xd.shape}")
    if any(math.isnan(c) for c in xd.chunks[0]):
        raise ValueError("pforjac.dask.batch_jacobian: x's block sizes along the batch axis are "
                         "unknown (nan); call x.compute_chunk_sizes() first: each block shape "
                         "is traced on the client")
    if xd.dtype.kind not in "fc":
        raise TypeError(f"pforjac.dask.batch_jacobian: x has dtype {xd.dtype}, but derivatives "
                        f"are taken with respect to floating-point inputs only; cast it first")
    return xd.rechunk({i: -1 for i in range(1, xd.ndim)}) if \
        any(len(c) > 1 for c in xd.chunks[1:]) else xd


def _per_example(programs: dict, block: np.ndarray) -> np.ndarray:
    (jac,) = programs[block.shape[0]](np.ascontiguousarray(block))
    return jac
