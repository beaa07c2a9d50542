"""Fail fast, before allocating, when a dense Jacobian cannot fit in memory."""
from __future__ import annotations

import math
import mmap
import os

import numpy as np

from .switch import Switch

__all__ = ["available_memory", "check_results_fit", "JacobianMemoryError", "sparse_zeros",
           "sparse_results"]


class JacobianMemoryError(MemoryError):
    """The dense result of a Jacobian is larger than the memory available."""


def available_memory() -> int:
    """Bytes of memory available now (MemAvailable on Linux, physical pages elsewhere)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


def check_results_fit(results) -> None:
    """Raises before anything is computed when the dense results, together, can't fit."""
    sizes = [(tuple(shape), np.dtype(dtype), math.prod(int(d) for d in shape))
             for shape, dtype in results]
    nbytes = sum(size * dtype.itemsize for _, dtype, size in sizes)
    if nbytes <= 64 << 20:
        return
    avail = available_memory()
    if nbytes > avail:
        shape, dtype, size = max(sizes, key=lambda r: r[2] * r[1].itemsize)
        many = f" (the largest of {len(sizes)} results)" if len(sizes) > 1 else ""
        raise JacobianMemoryError(
            f"the Jacobian's dense result of shape {shape}{many} ({size:,} {dtype.name} entries) "
            f"needs {_format_bytes(nbytes)} in all, but only {_format_bytes(avail)} of memory is "
            f"available, so nothing was computed. If row i of the target depends only on row i of "
            f"the source, use batch_jacobian (it never forms the cross-example zeros); otherwise "
            f"compute it for fewer targets or sources at a time (parallel_iterations bounds only "
            f"the working memory, not the result)")


# numpy asks the kernel for transparent huge pages on arrays of 4 MiB and more; the first
# write into each 2 MiB page then zeroes all of it. For a result that is mostly zeros and
# written in scattered places (a full Jacobian whose only non-zeros are the per-example
# blocks) that zeroes the whole array: 750 MB for the seed network's (500, 1, 500, 784)
# Jacobian, 55 ms here, about 8 times as long as computing its non-zero blocks. A plain
# anonymous mapping is zeroed a 4 KiB page at a time, on first touch, so making the result
# costs only the pages written (3.5 ms) -- but every later first read of an untouched page
# is a fault too, so reading the whole result once then takes 600 ms instead of 33 ms.
# Which is cheaper depends on what the caller does with the result, so the mapping is
# opt-in: `with pforjac.memory.sparse_results(True): ...` for code that reads only the
# non-zero blocks (or little of the result). Even then it is used only for arrays of 4 MiB
# and more of which fewer than one page in eight is written.
_HUGE_PAGE_ARRAY = 4 << 20
_PAGE = 4096


_mapping = Switch(False)


def sparse_results(enabled: bool = True):
    """Context manager: inside `with sparse_results():` a mostly-zero Jacobian result is
    placed in a plain memory mapping whose untouched zero pages cost nothing to make (the
    seed network's full Jacobian: 3.5 ms instead of 55 ms for its 750 MB of zeros) but
    cost a page fault each when first read (reading all of it: 600 ms instead of 33 ms).
    Use it when the caller reads only the non-zero blocks. Off by default; thread-local."""
    return _mapping.setting(enabled)


def sparse_zeros(shape, dtype, blocks: int, block_bytes: int) -> np.ndarray:
    """A zero array of `shape` and `dtype` into which the caller will write `blocks`
    separate runs of `block_bytes` bytes each: `np.zeros`, or under `sparse_results()` a
    lazily zeroed mapping when that array is large and mostly left untouched."""
    dtype = np.dtype(dtype)
    size = math.prod(shape)
    nbytes = size * dtype.itemsize
    if nbytes < _HUGE_PAGE_ARRAY or not _mapping.enabled:
        return np.zeros(shape, dtype)
    pages_written = blocks * (block_bytes // _PAGE + (2 if block_bytes % _PAGE else 1))
    if pages_written * _PAGE * 8 >= nbytes:
        return np.zeros(shape, dtype)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype, count=size).reshape(shape)
