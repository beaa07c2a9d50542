"""Progress bars for loops that run in pieces: a Jacobian computed in chunks (asked for with
`chunk_size=`/`parallel_iterations=`, or chosen to fit in memory) and the while-loop.

The bar is tqdm's (the `pforjac[progress]` extra), shown only after DELAY seconds (tqdm's
`delay=`), so a loop that finishes sooner prints nothing; without tqdm there is no bar
and no error. Entry points turn it off with `progress=False` (`enabled(False)` here).
"""
from __future__ import annotations

import contextlib
import numbers
import threading

from . import core

__all__ = ["enabled", "tracked", "chunk_option", "DELAY"]

DELAY = 2.0          # seconds before a bar appears

_state = threading.local()    # .on: this thread shows bars (default True)


@contextlib.contextmanager
def enabled(on: bool = True):
    """Shows (or, with False, hides) this thread's progress bars inside the block."""
    if not isinstance(on, bool):
        raise TypeError(f"progress must be True or False, got {on!r}")
    saved = getattr(_state, "on", True)
    _state.on = on
    try:
        yield
    finally:
        _state.on = saved


def _tqdm():
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def tracked(pieces, n: int, chunks: int, what: str):
    """Yields `pieces` (`(start, stop, values)` for iterations start..stop-1 of n) while a
    bar counts the iterations done, when there is more than one chunk, bars are on, no
    trace is open (compiled code would not show it) and tqdm is installed."""
    tqdm = _tqdm() if chunks > 1 and getattr(_state, "on", True) else None
    if tqdm is None or core.current_state().traces:
        yield from pieces
        return
    bar = tqdm(total=n, desc=what, unit="row", delay=DELAY, leave=False)
    try:
        for start, stop, values in pieces:
            yield start, stop, values
            del values          # (not alive while the next piece is made)
            bar.update(stop - start)
    finally:
        bar.close()


def chunk_option(parallel_iterations, chunk_size, fn_name: str):
    """The chunk an entry point was given, by either name (one of them, or both equal)."""
    if chunk_size is None:
        return parallel_iterations
    if parallel_iterations is not None and parallel_iterations != chunk_size:
        raise ValueError(f"{fn_name}: chunk_size={chunk_size!r} and parallel_iterations="
                         f"{parallel_iterations!r} name the same thing; pass one of them")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral) \
            or chunk_size < 1:
        raise ValueError(f"{fn_name}: chunk_size must be a positive int (rows or columns "
                         f"computed at a time) or None, got {chunk_size!r}")
    return int(chunk_size)
