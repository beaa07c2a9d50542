"""Where the compiled layer plugs into the eager core.

The eager core (pfor, jacobians) runs on its own; `pforjac.compiled`, imported by
`pforjac/__init__`, installs the functions below so that a loop body or a Jacobian
seen before runs as generated numpy code (the loop cache: see
`pforjac.compiled.loopcache`, switched off with `loopcache.caching(False)`). The
core reads these names and never imports the compiled layer.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["NeedsValues", "run_loop", "run_backward", "building"]


class NeedsValues(Exception):
    """Raised while the loop cache traces a body: a check (batch_jacobian's row check on
    computed indices) needs values that cached code would not see, so the cache declines."""


# `run_loop(program, n) -> stacked outputs, or None` (None: take the ordinary path)
run_loop: Callable | None = None
# `run_backward(what, entries, target, sources, core_fn) -> list, or None`
run_backward: Callable | None = None


def building() -> bool:
    """Whether this thread is tracing a body for the loop cache (its tensors are symbols)."""
    return _building() if _building is not None else False


_building: Callable[[], bool] | None = None
