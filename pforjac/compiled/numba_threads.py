"""numba's threads for the generated code's parallel loops: the count pforjac's config
sets, and calls from several Python threads where numba's threading layer cannot take
them at once."""
from __future__ import annotations

import threading

from ..config import config

__all__ = ["launch"]


def launch(dispatcher, args: list):
    """Code with parallel loops, called with numba's thread count set. numba's workqueue
    threading layer (where neither TBB nor OpenMP is installed) ends the process when two
    threads launch parallel loops at once: calls take turns until numba has chosen a
    layer, and go on taking turns if it chose that one."""
    global _shared_layer
    _use_threads()
    if _shared_layer:
        return dispatcher(*args)
    with _layer_lock:
        outs = dispatcher(*args)
        if _shared_layer is None:
            import numba
            try:
                _shared_layer = numba.threading_layer() != "workqueue"
            except ValueError:          # (no layer chosen yet)
                pass
    return outs


_layer_lock = threading.Lock()
_shared_layer: bool | None = None      # whether threads may launch parallel loops at once


def _use_threads() -> None:
    """numba's thread count for this thread's parallel loops: `config.num_threads`."""
    import numba
    wanted = config.num_threads or numba.config.NUMBA_NUM_THREADS
    if numba.get_num_threads() != wanted:
        try:
            numba.set_num_threads(wanted)
        except ValueError:
            raise ValueError(f"pforjac.config.num_threads is {wanted}, more than the "
                             f"{numba.config.NUMBA_NUM_THREADS} threads numba started with "
                             f"(NUMBA_NUM_THREADS); set it at most that") from None
