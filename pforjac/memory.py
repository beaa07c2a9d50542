"""Memory of Jacobian results: fail fast, before allocating, when a dense Jacobian cannot
fit, and say how to compute less at a time when its working memory does not.

Results themselves are plain numpy arrays (`np.zeros`, `np.empty`): pforjac leaves the
process's allocator as it found it."""
from __future__ import annotations

import contextlib
import math
import os

import numpy as np

__all__ = ["available_memory", "check_results_fit", "JacobianMemoryError"]


class JacobianMemoryError(MemoryError):
    """The dense result of a Jacobian (or its working memory) is larger than the memory
    available."""


@contextlib.contextmanager
def working_memory_advice(what: str, parallel_iterations: int | None = None):
    """Turns numpy's MemoryError while `what` computes its rows (all at once, or
    `parallel_iterations` at a time) into a JacobianMemoryError that says how to compute
    fewer at a time."""
    try:
        yield
    except JacobianMemoryError:
        raise
    except MemoryError as e:
        rows = "all rows at once" if parallel_iterations is None else \
            f"{parallel_iterations} rows at a time (parallel_iterations={parallel_iterations})"
        fewer = "parallel_iterations=k" if parallel_iterations is None else \
            "a smaller parallel_iterations"
        raise JacobianMemoryError(
            f"{what}: the working memory for {rows} does not fit ({e}). Pass {fewer} to "
            f"compute fewer rows at a time: the working memory falls roughly in proportion "
            f"(the result itself still has to fit)") from e


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


def check_results_fit(results, per_example: bool = False, what: str | None = None) -> None:
    """Raises before anything is computed when the dense results, together, can't fit
    (`per_example`: batch_jacobian's, which has no cross-example zeros to leave out; `what`:
    the results of a loop of that name, not a Jacobian's)."""
    sizes = [(tuple(shape), np.dtype(dtype), math.prod(int(d) for d in shape))
             for shape, dtype in results]
    nbytes = sum(size * dtype.itemsize for _, dtype, size in sizes)
    if nbytes <= 64 << 20:
        return
    avail = available_memory()
    if nbytes > avail:
        shape, dtype, size = max(sizes, key=lambda r: r[2] * r[1].itemsize)
        many = f" (the largest of {len(sizes)} results)" if len(sizes) > 1 else ""
        if what is not None:
            raise JacobianMemoryError(
                f"{what}: the stacked result of shape {shape}{many} ({size:,} {dtype.name} "
                f"entries) needs {_format_bytes(nbytes)} in all, but only "
                f"{_format_bytes(avail)} of memory is available, so nothing was computed. Run "
                f"fewer iterations per call (parallel_iterations bounds only the working "
                f"memory, not the result)")
        raise JacobianMemoryError(
            f"the Jacobian's dense result of shape {shape}{many} ({size:,} {dtype.name} entries) "
            f"needs {_format_bytes(nbytes)} in all, but only {_format_bytes(avail)} of memory is "
            f"available, so nothing was computed. " + ("Compute" if per_example else
            "If row i of the target depends only on row i of the source, use batch_jacobian (it "
            "never forms the cross-example zeros); otherwise compute") +
            " it for fewer targets or sources at a time (parallel_iterations bounds only "
            "the working memory, not the result)")
