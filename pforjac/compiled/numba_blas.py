"""Matrix products of the numba backend through the BLAS library numba's np.dot uses,
called directly.

numba's np.dot calls BLAS through scipy: a C helper that looks its functions up in
`scipy.linalg.cython_blas` on its first call, which imports all of scipy.linalg (0.2-0.7 s
on the development VMs). Compiling pays that inside numba's typing anyway, but a second
process that loads a cached program with a product paid it at its first call, four to
ten times the load itself. scipy's wheels carry that BLAS as a library of their own
(OpenBLAS, its C interface named `scipy_cblas_?gemm`, 32-bit integers). `found()` has
LLVM load it by its path (no Python import; numba's JIT then resolves those names, which
no other library has), and the kernels call its `cblas_sgemm` and `cblas_dgemm` for
products of two float32 or float64 matrices (`product`): the library numba's np.dot
would call, without starting scipy.linalg. (numpy's wheels carry an OpenBLAS too, a
newer build whose float32 products took 1.4x as long on the development VM's Zen 3:
not that one.) Where scipy carries no such library (a build on another BLAS), `found()`
is None and the kernels keep numba's np.dot.
"""
from __future__ import annotations

import functools
import glob
import importlib.util
import os

import numpy as np

__all__ = ["found", "identity", "setup", "product"]

_SYMBOLS = {"s": "scipy_cblas_sgemm", "d": "scipy_cblas_dgemm"}
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112      # (the C interface's enumerations)
_INT_MAX = 2 ** 31 - 1                              # (its sizes are C ints)
_gemm = None                                        # (the intrinsic, once `setup` made it)


@functools.lru_cache(maxsize=1)
def found() -> str | None:
    """The file name of scipy's BLAS library, loaded for numba's JIT, or None."""
    spec = importlib.util.find_spec("scipy")          # (finds it without importing it)
    if spec is None or not spec.submodule_search_locations:
        return None
    import llvmlite.binding as ll
    root = list(spec.submodule_search_locations)[0]
    for folder in (os.path.join(root, os.pardir, "scipy.libs"), os.path.join(root, ".dylibs")):
        for path in sorted(glob.glob(os.path.join(folder, "libscipy_openblas-*"))):
            try:
                ll.load_library_permanently(path)  # (the one scipy.linalg loads: the same copy)
            except RuntimeError:
                continue
            if all(ll.address_of_symbol(name) for name in _SYMBOLS.values()):
                return os.path.basename(path)
    return None


def identity() -> str:
    """What the kernels' products call, for the keys of cached code: its machine code
    names these functions, which a process must have to load it."""
    library = found()
    return "numba np.dot" if library is None else f"scipy's BLAS {library}"


def product(a, b, out):
    """np.dot(a, b[, out]) in numba's code (`_product_rule` picks the implementation)."""
    raise NotImplementedError("pforjac: a kernel of numba's generated code")


def setup(numba) -> bool:
    """Makes `product` typable in numba's code; whether it calls the library directly."""
    global _gemm, _times
    import numba.extending
    if found() is not None and _gemm is None:
        _gemm = _gemm_intrinsic()
        _times = numba.njit(cache=True)(_times)
    numba.extending.overload(product)(_product_rule)
    return _gemm is not None


def _blas_types(a, b, out) -> bool:
    """Two float32 or float64 matrices of one dtype, and no `out` or a C-contiguous one."""
    from numba import types
    return _gemm is not None and all(isinstance(t, types.Array) and t.ndim == 2 for t in (a, b)) \
        and a.dtype == b.dtype and a.dtype in (types.float32, types.float64) \
        and (out is None or isinstance(out, (types.NoneType, types.Omitted))
             or (isinstance(out, types.Array) and out.ndim == 2 and out.dtype == a.dtype
                 and out.layout == "C" and out.mutable))


def _product_rule(a, b, out):
    """numba's np.dot, or for `_blas_types` the library, called directly."""
    if not _blas_types(a, b, out):
        def numba_dot(a, b, out):
            if out is None:
                return np.dot(a, b)
            return np.dot(a, b, out)
        return numba_dot

    def through_blas(a, b, out):
        m, k = a.shape
        n = b.shape[1]
        if b.shape[0] != k:
            raise ValueError("pforjac (numba backend): a matrix product of shapes not aligned")
        if out is None:
            c = np.empty((m, n), a.dtype)
        else:
            if out.shape[0] != m or out.shape[1] != n:
                raise ValueError("pforjac (numba backend): a matrix product's output has the wrong shape")
            c = out
        if m == 0 or n == 0 or k == 0:
            c[:] = 0
        elif max(m, n, k) > _INT_MAX:
            np.dot(a, b, c)
        elif a.flags.c_contiguous:
            _times(_NO_TRANS, max(k, 1), a, b, c, m, n, k)
        elif a.flags.f_contiguous:
            _times(_TRANS, max(m, 1), a, b, c, m, n, k)
        else:
            _times(_NO_TRANS, max(k, 1), np.ascontiguousarray(a), b, c, m, n, k)
        return c
    return through_blas


def _times(transa, lda, a, b, c, m, n, k):
    """c = op(a) @ b by the library, b read in place where it is contiguous either way."""
    if b.flags.c_contiguous:
        _gemm(transa, _NO_TRANS, m, n, k, a, lda, b, max(n, 1), c, max(n, 1))
    elif b.flags.f_contiguous:
        _gemm(transa, _TRANS, m, n, k, a, lda, b, max(k, 1), c, max(n, 1))
    else:
        _gemm(transa, _NO_TRANS, m, n, k, a, lda, np.ascontiguousarray(b), max(n, 1), c, max(n, 1))


def _gemm_intrinsic():
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

        def codegen(context, builder, sig, args):
            value, i32 = context.get_value_type(dtype), ir.IntType(32)
            pointer = value.as_pointer()
            fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i32, i32, i32, value, pointer, i32,
                                                   pointer, i32, value, pointer, i32])
            function = cgutils.get_or_insert_function(builder.module, fnty,
                                                      _SYMBOLS["s" if dtype == types.float32 else "d"])

            def integer(j):
                return builder.trunc(context.cast(builder, args[j], sig.args[j], types.int64), i32)

            def data(j):
                return cgutils.create_struct_proxy(sig.args[j])(context, builder, value=args[j]).data
            builder.call(function, [ir.Constant(i32, _ROW_MAJOR), integer(0), integer(1), integer(2),
                                    integer(3), integer(4), ir.Constant(value, 1.0), data(5), integer(6),
                                    data(7), integer(8), ir.Constant(value, 0.0), data(9), integer(10)])
            return context.get_dummy_value()
        return types.void(transa, transb, m, n, k, a, lda, b, ldb, c, ldc), codegen
    return gemm
