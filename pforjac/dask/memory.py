"""Will a chunk fit its worker? Estimated before anything is submitted.

A chunk's need is the peak of its program's live values (walking its equations, each
value freed after its last use; consts apart), and what the worker holds once for the
whole Jacobian (the programs' constants). The budget is the scheduler's view of each
worker: the memory limit, up to where Dask pauses a worker (`distributed.worker.memory.pause`),
less what the process uses now, shared by the worker's threads (each may run a chunk). Under
the threaded scheduler (no `distributed.Client`), the machine's available memory and
its cores.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..memory import JacobianMemoryError, _format_bytes, available_memory

__all__ = ["peak_bytes", "check_chunk_fits", "active_client"]


def _size(v) -> int:
    return math.prod(int(d) for d in v.shape) * np.dtype(v.dtype).itemsize


def peak_bytes(program) -> int:
    """The largest total of live values while `program` runs (inputs and outputs included,
    constants not): an upper bound, as it ignores results written in place."""
    last = {}
    for k, eqn in enumerate(program.equations):
        for v in eqn.inputs:
            last[id(v)] = k
    keep = {id(v) for v in program.outputs}
    consts = {id(v) for v in program.consts}
    live = sum(_size(v) for v in program.inputs)
    peak = live
    for k, eqn in enumerate(program.equations):
        live += sum(_size(v) for v in eqn.outputs)
        peak = max(peak, live)
        live -= sum(_size(v) for v in {id(v): v for v in eqn.inputs}.values()
                    if last.get(id(v)) == k and id(v) not in keep and id(v) not in consts)
    return peak


def active_client():
    """The `distributed.Client` the active scheduler is, or None (threaded, sync, ...)."""
    import dask
    if dask.config.get("scheduler", None) not in (None, "dask.distributed", "distributed"):
        return None
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def _budgets(client) -> list[tuple[str, int, int]]:
    """(worker, bytes it can still take before Dask pauses it, threads) per worker."""
    if client is None:
        return [("this process", available_memory(), os.cpu_count() or 1)]
    import dask
    pause = dask.config.get("distributed.worker.memory.pause", 0.8) or \
        dask.config.get("distributed.worker.memory.terminate", 0.95) or 1.0
    try:                      # (newer versions list 5 workers unless asked for all)
        workers = client.scheduler_info(n_workers=-1)["workers"]
    except TypeError:
        workers = client.scheduler_info()["workers"]
    out = []
    for address, w in workers.items():
        limit = int(w.get("memory_limit") or 0)
        budget = int(limit * pause) - int(w.get("metrics", {}).get("memory", 0)) if limit \
            else available_memory()
        out.append((address, budget, int(w.get("nthreads", 1))))
    return out


def check_chunk_fits(what: str, unit: str, k: int, chunk_bytes: int, shared_bytes: int,
                     argument: str, client=None) -> None:
    """Raises JacobianMemoryError, naming the `argument` value that fits, when a chunk of
    `k` {unit} needing `chunk_bytes` (plus `shared_bytes` held once per worker) does not
    fit the smallest worker's budget."""
    budgets = _budgets(client)
    if not budgets:
        return
    worker, budget, threads = min(budgets, key=lambda b: b[1] / b[2])
    if shared_bytes + threads * chunk_bytes <= budget:
        return
    per_unit = max(chunk_bytes / max(k, 1), 1)       # (a 10% margin: not every byte of a
    fits = int(0.9 * (budget - shared_bytes) / threads / per_unit)   # chunk grows with k)
    advice = (f"pass {argument}={fits} (or fewer) so that each chunk fits" if fits >= 1 else
              "even one per chunk does not fit: use workers with more memory")
    raise JacobianMemoryError(
        f"{what}: a chunk of {k} {unit} needs about {_format_bytes(chunk_bytes)} (its result "
        f"block and working memory), and the worker holds {_format_bytes(shared_bytes)} of "
        f"the compiled program's constants, but worker {worker} has {_format_bytes(budget)} "
        f"left under its memory limit for its {threads} thread(s); {advice}. Nothing was "
        f"submitted")
