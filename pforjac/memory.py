"""Fail fast, before allocating, when a dense Jacobian cannot fit in memory."""
from __future__ import annotations

import os

import numpy as np

__all__ = ["available_memory", "check_result_fits", "JacobianMemoryError"]


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


def check_result_fits(shape: tuple, dtype) -> None:
    size = 1
    for d in shape:
        size *= int(d)
    nbytes = size * np.dtype(dtype).itemsize
    if nbytes <= 64 << 20:
        return
    avail = available_memory()
    if nbytes > avail:
        raise JacobianMemoryError(
            f"the Jacobian's dense result of shape {tuple(shape)} ({size:,} {np.dtype(dtype).name} "
            f"entries) needs {_format_bytes(nbytes)}, but only {_format_bytes(avail)} of memory is "
            f"available, so nothing was computed. If row i of the target depends only on row i of "
            f"the source, use batch_jacobian (it never forms the cross-example zeros); otherwise "
            f"compute it for fewer targets or sources at a time (parallel_iterations bounds only "
            f"the working memory, not the result)")
