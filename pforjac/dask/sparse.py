"""Sparse Jacobians on a cluster: the colour groups of a prepared Jacobian as tasks.

A colouring with c colours compresses the Jacobian into c derivative passes (pforjac.sparse):
forward mode pushes seed k (1 at the columns of colour k) through f's jvp rules, reverse
mode pulls seed k (1 at the rows of colour k) back through its vjp rules. Here the c seeds
are the iterations of the dense path's chunk programs (programs.py): a task computes
`chunk_size` colours of the compressed matrix B as one vectorized pass, and the client
gathers B (c x the other dimension: small) and places its entries in one scipy.sparse
matrix with the pattern's structure.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops
from .arrays import _check_chunk_size, _chunked, checked
from .memory import active_client, check_chunk_fits
from .programs import chunk_lengths, colour_seeds, forward_plan, reverse_plan

__all__ = ["sparse_jacobian"]


def sparse_jacobian(prepared, x, f, chunk_size: int | None = None, backend: str | None = None):
    """The sparse Jacobian of `f` at `x` (a scipy.sparse array with `prepared.pattern`'s
    structure), its colour groups computed as dask tasks by the active scheduler.

    Args:
        prepared: `pforjac.sparse.prepare_jacobian(f, x_sample)`'s result: its pattern,
            colouring and direction (`.pattern`, `.colors`, `.mode`) are used.
        x: the point, of the prepared input's shape.
        f: the function prepared.
        chunk_size: colours a task computes (one vectorized pass over that many seeds);
            by default an eighth of them (8 tasks).
        backend: what the chunk programs are compiled for, as in `pforjac.dask.jacobian`
            (default `pforjac.config.backend`).

    On the numpy backend the result equals `prepared(x)` (the tests compare bit for bit):
    each task runs the compressed pass of its colours with the numpy calls of the
    in-process pass.
    """
    mode = getattr(prepared, "mode", None)
    if mode not in ("forward", "reverse"):
        raise ValueError(f"pforjac.dask.sparse_jacobian: the prepared object's mode is {mode!r}; "
                         f"only Jacobians prepared in 'forward' or 'reverse' mode are distributed")
    if chunk_size is None:
        chunk_size = max(1, -(-int(getattr(prepared, "ncolors", 8)) // 8))
    _check_chunk_size(chunk_size, "pforjac.dask.sparse_jacobian")
    backend = checked(backend, "pforjac.dask.sparse_jacobian")
    x = np.asarray(x)
    shape = x.shape

    def flat(v):
        return ops.reshape(f(ops.reshape(v, shape)), (-1,))
    make = forward_plan if mode == "forward" else reverse_plan
    plan = make(flat, x.reshape(-1), chunk_size, colour_seeds(prepared.colors), backend)
    if tuple(prepared.pattern.shape) != (math.prod(plan.out_shape), math.prod(plan.in_shape)):
        raise ValueError(f"pforjac.dask.sparse_jacobian: the prepared pattern is "
                         f"{prepared.pattern.shape}, but f maps {x.size} entries to "
                         f"{math.prod(plan.out_shape)}; prepare f at a point of this shape")
    _check_pattern_holds(prepared, flat, x)
    lengths = chunk_lengths(plan.iterations, chunk_size)
    compressed = np.zeros((0,), plan.dtype)
    if lengths:
        check_chunk_fits("pforjac.dask.sparse_jacobian", "colours", lengths[0],
                         plan.programs[lengths[0]].peak, plan.nbytes, "chunk_size",
                         active_client())
        compressed = _chunked(plan, lengths).compute()
    return _assembled(prepared, compressed, mode)


def _check_pattern_holds(prepared, flat, x: np.ndarray) -> None:
    """Refuses an `f` whose Jacobian can have non-zeros outside the prepared pattern (another
    function than the prepared one): its colouring would add them into other entries, a
    wrong matrix. f's own pattern is detected from its traced program (one trace)."""
    from ..sparse.pattern import jacobian_sparsity
    found = jacobian_sparsity(flat, x.reshape(-1)).tocsr()
    outside = found - found.multiply(prepared.pattern.astype(bool))
    if outside.nnz:
        i, j = (int(v[0]) for v in outside.nonzero())
        raise ValueError(f"pforjac.dask.sparse_jacobian: f's Jacobian can be non-zero at "
                         f"{outside.nnz} entries outside the prepared pattern (the first: row "
                         f"{i}, column {j}): f is not the function `prepared` was made for; "
                         f"prepare this f (pforjac.sparse.prepare_jacobian(f, x)) and pass it")


def _assembled(prepared, compressed: np.ndarray, mode: str):
    """The scipy.sparse matrix whose entry (i, j) of the pattern is read from the compressed
    result: forward B [m, c] holds it at [i, colors[j]], reverse B [c, n] at [colors[i], j]."""
    import scipy.sparse as sp
    pattern = prepared.pattern.tocsr()
    m, n = pattern.shape
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(pattern.indptr))
    cols = pattern.indices.astype(np.int64)
    colors = np.asarray(prepared.colors, np.int64)
    if mode == "forward":
        take = rows * compressed.shape[1] + colors[cols] if compressed.size else rows
    else:
        take = colors[rows] * n + cols
    data = compressed.reshape(-1).take(take) if compressed.size else np.zeros(0, compressed.dtype)
    result = sp.csr_array((data, pattern.indices.copy(), pattern.indptr.copy()), shape=(m, n))
    return result.asformat(getattr(prepared, "format", "csr"))
