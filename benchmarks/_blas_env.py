"""numpy's OpenBLAS kernel for the scripts that compare pforjac with other frameworks.

OpenBLAS picks a kernel family for the CPU when numpy loads, unless OPENBLAS_CORETYPE names
one. A machine image may set it: this project's 2-core VM of 2026-12-01 (AMD Zen 5, AVX-512)
sets Haswell, an AVX2 kernel that runs numpy's float32 products at half the speed of the
SkylakeX kernel OpenBLAS picks there itself ((2560, 256) @ (256, 784): 3.97 against 1.92 ms).
JAX, TensorFlow and PyTorch pick their own kernels for the CPU, so `compare.py` and `zoo.py`
drop the variable before numpy loads, and their header says so; `--keep-blas-env` keeps it.
Call `use_openblas_own_kernel` before numpy is imported; after, it does nothing.
"""
from __future__ import annotations

import os
import sys

KEEP_FLAG = "--keep-blas-env"
dropped: str | None = None          # the OPENBLAS_CORETYPE this process dropped
threads: int | None = None          # `--threads N` given to the script (None: the default)


def use_openblas_own_kernel(argv=None) -> None:
    global dropped
    argv = sys.argv[1:] if argv is None else argv
    if "numpy" in sys.modules:      # too late (imported as a module): the header names the kernel
        return
    if KEEP_FLAG not in argv and "OPENBLAS_CORETYPE" in os.environ:
        dropped = os.environ.pop("OPENBLAS_CORETYPE")


def describe() -> str:
    """For the result header: where the kernel choice came from."""
    if dropped is not None:
        return (f"OPENBLAS_CORETYPE={dropped} from the environment dropped, OpenBLAS's own pick "
                f"({KEEP_FLAG} keeps it)")
    return f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}"


def use_threads(argv=None) -> None:
    """`--threads N` (before numpy, numba and JAX load): N threads for OpenBLAS, OpenMP,
    numba and XLA (with N = 1, XLA's Eigen pool off), and with fewer threads than cores
    the process pinned to N cores, so that every library runs on the same cores. A child
    process started by the script inherits the environment and the pinning."""
    global threads
    argv = sys.argv[1:] if argv is None else argv
    for k, arg in enumerate(argv):
        if arg.startswith("--threads"):
            value = arg.split("=", 1)[1] if "=" in arg else argv[k + 1]
            threads = int(value)
    if threads is None:
        return
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
                "PFORJAC_NUM_THREADS"):
        os.environ[var] = str(threads)
    if threads == 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false").strip()
    if threads < (os.cpu_count() or 1) and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:threads]))


def describe_threads() -> str:
    if threads is None:
        return "threads: each library's default (all cores)"
    return (f"threads: {threads} for OpenBLAS, OpenMP, numba and XLA"
            + (f", process pinned to {threads} of {os.cpu_count()} cores" if
               threads < (os.cpu_count() or 1) else ""))
