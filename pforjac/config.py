"""Process-wide settings: `pforjac.config`.

`pforjac.config.backend` is the backend `pforjac.function` compiles with when it is not
given one: "numpy" (generated numpy code, the default) or "numba" (one native function
per program, `pforjac[numba]`). Its first value comes from the environment variable
`PFORJAC_BACKEND`, so a program can be switched without editing it.

`pforjac.config.num_threads` is how many threads the numba backend's parallel loops use
(None: numba's default, `NUMBA_NUM_THREADS`, the cores; first value from
`PFORJAC_NUM_THREADS`), and `pforjac.config.parallel_min_size` the number of elements
from which an elementwise loop runs in parallel (smaller ones run on one thread).
"""
from __future__ import annotations

import operator
import os

__all__ = ["config", "BACKENDS"]

BACKENDS = ("numpy", "numba")


def checked_backend(name, where: str) -> str:
    """`name` if it is a backend, else a ValueError naming `where` it came from."""
    if name not in BACKENDS:
        raise ValueError(f"{where}: unknown backend {name!r}; choose one of {BACKENDS}")
    return name


class _Config:
    """pforjac's settings (attributes are checked when set)."""

    def __init__(self):
        self._backend = checked_backend(os.environ.get("PFORJAC_BACKEND", "numpy").strip() or "numpy",
                                        "the environment variable PFORJAC_BACKEND")
        threads = os.environ.get("PFORJAC_NUM_THREADS", "").strip()
        self._num_threads = _count_or_none(threads or None,
                                           "the environment variable PFORJAC_NUM_THREADS")
        self._parallel_min_size = 1 << 18     # (elements: below it, the threads cost more)

    @property
    def backend(self) -> str:
        """The default backend of `pforjac.function`: "numpy" or "numba"."""
        return self._backend

    @backend.setter
    def backend(self, name: str) -> None:
        self._backend = checked_backend(name, "pforjac.config.backend")

    @property
    def num_threads(self) -> int | None:
        """Threads of the numba backend's parallel loops (None: numba's default). Read
        when a compiled function runs; 1 also compiles no parallel loops."""
        return self._num_threads

    @num_threads.setter
    def num_threads(self, n) -> None:
        self._num_threads = _count_or_none(n, "pforjac.config.num_threads")

    @property
    def parallel_min_size(self) -> int:
        """Elements from which the numba backend splits an elementwise loop across threads
        (read when a function traces: its shapes decide)."""
        return self._parallel_min_size

    @parallel_min_size.setter
    def parallel_min_size(self, n) -> None:
        self._parallel_min_size = _count_or_none(n, "pforjac.config.parallel_min_size", False)

    def __repr__(self) -> str:
        return (f"pforjac.config(backend={self._backend!r}, num_threads={self._num_threads!r}, "
                f"parallel_min_size={self._parallel_min_size!r})")


def _count_or_none(n, where: str, none_ok: bool = True):
    """`n` (an integer, or its digits from the environment) as a positive int, or None
    where allowed; else a ValueError naming `where`."""
    if n is None and none_ok:
        return None
    if isinstance(n, str) and n.strip().isdigit():
        n = int(n)
    try:
        count = None if isinstance(n, bool) else operator.index(n)
    except TypeError:
        count = None
    if count is None or count < 1:
        raise ValueError(f"{where}: expected a positive integer{' or None' if none_ok else ''}, "
                         f"got {n!r}")
    return count


config = _Config()
