"""Matrix products of the numba backend through the BLAS library numba's np.dot uses,
called directly.

numba's np.dot calls BLAS through scipy: a C helper that looks its functions up in
`scipy.linalg.cython_blas` on its first call, which imports all of scipy.linalg (0.2-0.7 s
on the development VMs). Compiling pays that inside numba's typing anyway, but a second
process that loads a cached program with a product paid it at its first call, four to
ten times the load itself. scipy's wheels carry that BLAS as a library of their own
(OpenBLAS, its C interface named `scipy_cblas_?gemm`, 32-bit integers); the kernels here
load it by its path, with no Python import, and call its `cblas_sgemm` and `cblas_dgemm`
for products of two float32 or float64 matrices: the library numba's np.dot would call,
without starting scipy.linalg. (numpy's wheels carry an OpenBLAS too, a newer build whose
float32 products took 1.4x as long on the development VM's Zen 3: not that one.) The
functions' addresses are given to LLVM under names of pforjac's (`pforjac_sgemm`,
`pforjac_dgemm`) before any code calling them is compiled or loaded; where scipy carries
no such library (a build on another BLAS), `found()` is None and the kernels keep
numba's np.dot.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import importlib.util
import os

__all__ = ["found", "register", "identity", "gemm_intrinsic"]

_SYMBOLS = {"s": "scipy_cblas_sgemm", "d": "scipy_cblas_dgemm"}
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112      # (the C interface's enumerations)


@functools.lru_cache(maxsize=1)
def found() -> tuple[str, dict] | None:
    """(the library's path, {"s": address of its sgemm, "d": of its dgemm}), or None."""
    spec = importlib.util.find_spec("scipy")          # (finds it without importing it)
    if spec is None or not spec.submodule_search_locations:
        return None
    root = list(spec.submodule_search_locations)[0]
    for folder in (os.path.join(root, os.pardir, "scipy.libs"), os.path.join(root, ".dylibs")):
        for path in sorted(glob.glob(os.path.join(folder, "libscipy_openblas-*"))):
            try:
                library = ctypes.CDLL(path)      # (the one scipy.linalg loads: the same handle)
                return os.path.basename(path), {
                    kind: ctypes.cast(getattr(library, name), ctypes.c_void_p).value
                    for kind, name in _SYMBOLS.items()}
            except (OSError, AttributeError):
                continue
    return None


def identity() -> str:
    """What the kernels' products call, for the keys of cached code: its machine code
    names these functions, which a process must have to load it."""
    library = found()
    return "numba np.dot" if library is None else f"scipy's BLAS {library[0]}"


_registered = False


def register() -> bool:
    """Gives LLVM the functions' addresses (once a process), where numpy has them."""
    global _registered
    library = found()
    if library is not None and not _registered:
        import llvmlite.binding as ll
        for kind, address in library[1].items():
            ll.add_symbol(f"pforjac_{kind}gemm", address)
        _registered = True
    return library is not None


def gemm_intrinsic(numba):
    """`gemm(transa, transb, m, n, k, a, lda, b, ldb, c, ldc)`: c = op(a) @ op(b) for
    row-major float32 or float64 matrices (alpha 1, beta 0: c is not read), every size
    below 2**31 (C ints)."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def gemm(typingctx, transa, transb, m, n, k, a, lda, b, ldb, c, ldc):
        dtype = c.dtype
        if dtype not in (types.float32, types.float64) or a.dtype != dtype or b.dtype != dtype:
            return None
        signature = types.void(transa, transb, m, n, k, a, lda, b, ldb, c, ldc)

        def codegen(context, builder, sig, args):
            value = context.get_value_type(dtype)
            i32 = ir.IntType(32)          # (the enumerations and the sizes: C ints)
            pointer = value.as_pointer()
            fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i32, i32, i32, value, pointer, i32,
                                                   pointer, i32, value, pointer, i32])
            name = "pforjac_sgemm" if dtype == types.float32 else "pforjac_dgemm"
            function = cgutils.get_or_insert_function(builder.module, fnty, name)

            def integer(k):
                return builder.trunc(context.cast(builder, args[k], sig.args[k], types.int64), i32)

            def data(k):
                return cgutils.create_struct_proxy(sig.args[k])(context, builder, value=args[k]).data
            builder.call(function, [ir.Constant(i32, ROW_MAJOR), integer(0), integer(1), integer(2),
                                    integer(3), integer(4), ir.Constant(value, 1.0), data(5), integer(6),
                                    data(7), integer(8), ir.Constant(value, 0.0), data(9), integer(10)])
            return context.get_dummy_value()
        return signature, codegen
    return gemm
