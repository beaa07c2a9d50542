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
# Jacobian, about 8 times as long as computing its non-zero blocks. A plain anonymous mapping is zeroed a
# 4 KiB page at a time, on first touch, so only the pages written cost anything. Each such
# small-page fault costs about as much as zeroing 8 pages' worth in bulk, so the plain
# mapping is used only when fewer than one page in eight is written.
_HUGE_PAGE_ARRAY = 4 << 20
_PAGE = 4096


_mapping = Switch(True)


def sparse_results(enabled: bool):
    """Context manager: `with sparse_results(False)` makes `sparse_zeros` plain `np.zeros`,
    for results that are read in full at once (a chunk copied into a larger result would
    fault in every untouched page of a mapping, one 4 KiB page at a time)."""
    return _mapping.setting(enabled)


def sparse_zeros(shape, dtype, blocks: int, block_bytes: int) -> np.ndarray:
    """A zero array of `shape` and `dtype` into which the caller will write `blocks`
    separate runs of `block_bytes` bytes each; zero pages never written cost nothing."""
    dtype = np.dtype(dtype)
    size = math.prod(shape)
    nbytes = size * dtype.itemsize
    if nbytes < _HUGE_PAGE_ARRAY or not _mapping.enabled:
        return np.zeros(shape, dtype)
    pages_written = blocks * (block_bytes // _PAGE + (2 if block_bytes % _PAGE else 1))
    if pages_written * _PAGE * 8 >= nbytes:
        return np.zeros(shape, dtype)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype, count=size).reshape(shape)
