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
