"""Kernels the numba backend's generated code calls (as `K.<name>`): elementwise ones for
the primitives whose numpy forward is not a single ufunc (made `numba.vectorize`
functions: they broadcast like a ufunc, take scalars, and fuse into the array expressions
around them; the scalar ones of scipy.special and pforjac's own are in numba_special.py),
loops along one axis of a (before, axis, after) array (scans, arg-reductions, sorts,
gathers), and numpy.linalg over stacks of matrices. Their values are the numpy forwards'
(NaN, inf, signed zeros, numpy's orders of summation where it has one).
"""
from __future__ import annotations

import sys

import numpy as np

from . import numba_blas
from .numba_lowering import NonFiniteMatrix
from .numba_special import _like      # (r in x's float type: floor_divide, remainder)
from .numba_special import *  # noqa: F401,F403  (scalar kernels: sigmoid, erf, digamma, ...)
from .numba_special_inverse import *  # noqa: F401,F403  (ndtri, erfinv, erfcinv)
from .numba_complex import *  # noqa: F401,F403  (numpy's complex division)
from .numba_vecmath import *  # noqa: F401,F403  (float32 exp, tanh, sigmoid that vectorize)
from .numba_views import merged_axes, reshaped  # noqa: F401  (views generated code makes)
from .numba_alloc import zeros  # noqa: F401  (np.zeros for generated code, from calloc)
from .numba_copy_kernels import *  # noqa: F401,F403  (copies permuting axes)
from .numba_sums import *  # noqa: F401,F403  (numpy's pairwise sums)

__all__ = ["multiply_no_nan", "select", "floor_divide", "remainder", "positions", "take_axis", "scatter_add_axis", "prod_axis", "max_axis",
           "min_axis", "batched_dot", "large"]


def multiply_no_nan(x, y):
    """x * y, and +0 where y == 0 even where x is inf or NaN (y * y: +0 of y's type)."""
    if y == 0:
        return y * y
    return x * y


def select(c, x, y):
    """np.where(c, x, y), elementwise."""
    return x if c else y


def floor_divide(a, b):
    """np.floor_divide of floats as numpy computes it, from fmod (numba's is floor(a / b):
    1.0 // 0.1 is 9 in numpy, 10 there, and an infinite `a` gives NaN, not inf)."""
    if b == 0:
        return np.divide(a, b)
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):       # (NaN != 0: C's `if (mod)`)
        div -= _like(1.0, a)
    if div == 0:
        return np.copysign(_like(0.0, a), np.divide(a, b))
    floordiv = np.floor(div)
    if div - floordiv > 0.5:
        floordiv += _like(1.0, a)
    return floordiv


def remainder(a, b):
    """np.remainder of floats as numpy computes it (a zero takes b's sign)."""
    mod = np.fmod(a, b)
    if b == 0:
        return mod
    if mod == 0:
        return np.copysign(_like(0.0, a), b)
    return mod + b if (b < 0) != (mod < 0) else mod


def _position(k, n):
    """Index k of an axis of length n (negative from the end), or np.take's IndexError."""
    if k < 0:
        k += n
    if k < 0 or k >= n:
        raise IndexError("pforjac (numba backend): an index is out of bounds for its axis")
    return k


def positions(indices, n):
    """The 1-D `indices` as positions on an axis of length n (negative ones from the end),
    or np.take's IndexError."""
    out = np.empty(indices.size, np.int64)
    for j in range(indices.size):
        out[j] = _position(indices[j], n)
    return out


def take_axis(x, indices):
    """np.take(x, indices, axis=1) of a C-contiguous (pre, n, post) x and 1-D indices."""
    positions_ = positions(indices, x.shape[1])
    out = np.empty((x.shape[0], indices.size, x.shape[2]), x.dtype)
    for i in range(x.shape[0]):
        for j in range(indices.size):
            p = positions_[j]
            for k in range(x.shape[2]):
                out[i, j, k] = x[i, p, k]
    return out


def scatter_add_axis(g, indices, size):
    """Zeros of shape (pre, size, post) with the (pre, m, post) g added at `indices` along
    axis 1, in order (as np.add.at adds; 0 + g where they are distinct)."""
    positions_ = positions(indices, size)
    out = np.zeros((g.shape[0], size, g.shape[2]), g.dtype)
    for i in range(g.shape[0]):
        for j in range(indices.size):
            p = positions_[j]
            for k in range(g.shape[2]):
                out[i, p, k] += g[i, j, k]
    return out


def prod_axis(x):
    """The product over axis 1 of a (pre, n, post) array, in order."""
    out = np.ones((x.shape[0], x.shape[2]), x.dtype)
    for j in range(x.shape[1]):
        out *= x[:, j, :]
    return out


def max_axis(x):
    """The maximum over axis 1 of a (pre, n >= 1, post) array: NaN if any is NaN, the first
    of equal values (np.maximum's reduction)."""
    out = x[:, 0, :].copy()
    for j in range(1, x.shape[1]):
        for i in range(x.shape[0]):
            for k in range(x.shape[2]):
                v = x[i, j, k]
                if v > out[i, k] or v != v:
                    out[i, k] = v
    return out


def min_axis(x):
    """The minimum over axis 1, as `max_axis`."""
    out = x[:, 0, :].copy()
    for j in range(1, x.shape[1]):
        for i in range(x.shape[0]):
            for k in range(x.shape[2]):
                v = x[i, j, k]
                if v < out[i, k] or v != v:
                    out[i, k] = v
    return out


def dot(a, b, out=None):
    """np.dot of 1-D and 2-D arrays. Generated code calls this, not np.dot: compiling
    numba's np.dot for a new combination of types takes about half a second, which this
    cached kernel pays once per machine instead of once per program. Where scipy's BLAS
    library is found by its path (numba_blas.py), `dot` is `blas_dot`."""
    if out is None:
        return np.dot(a, b)
    return np.dot(a, b, out)


def blas_dot(a, b, out=None):
    """`dot`, two float32 or float64 matrices multiplied by calling the BLAS library that
    numba's np.dot calls through scipy.linalg, directly. (A kernel of its own, not a
    branch of `dot`: the machine code cached for each names different functions, and a
    process loads only the one it has.)"""
    return numba_blas.product(a, b, out)


def empty(shape, dtype=np.float64):
    """np.empty, and `zeros` (numba_alloc.py) np.zeros, for generated code, cached as `dot`
    is (numba compiles its allocation for each rank and dtype, a tenth to a third of a
    second each)."""
    return np.empty(shape, dtype)


def batched_dot(a, b):
    """np.matmul of (count, m, k) and (count, k, n) C-contiguous stacks (either may hold
    one matrix, shape (1, ...), for all): one BLAS product per matrix."""
    count = b.shape[0] if a.shape[0] == 1 else a.shape[0]
    out = np.empty((count, a.shape[1], b.shape[2]), a.dtype)
    for i in range(count):                  # (written in place: no product copied)
        np.dot(a[i if a.shape[0] > 1 else 0], b[i if b.shape[0] > 1 else 0], out[i])
    return out


def batched_blas_dot(a, b):
    """`batched_dot` calling the library directly (as `blas_dot` is `dot`'s)."""
    count = b.shape[0] if a.shape[0] == 1 else a.shape[0]
    out = np.empty((count, a.shape[1], b.shape[2]), a.dtype)
    for i in range(count):
        numba_blas.product(a[i if a.shape[0] > 1 else 0], b[i if b.shape[0] > 1 else 0], out[i])
    return out


def all_finite(a, nonzero):
    """Whether every value of the array `a` (any layout) is finite (and, if `nonzero`,
    not zero): the degenerate-value checks of a program over an array it already has, a
    call of this kernel compiled once per machine and types instead of a loop nest
    compiled with every program. Every value is read, without a branch (LLVM vectorizes
    the loop: 0.09 ms for 10^6 float64, where an exit at the first failing value took
    1.1 ms); a C-contiguous `a` is read in place, another is copied first."""
    flat = a.ravel()
    ok = True
    if nonzero:
        for i in range(flat.size):
            ok &= np.isfinite(flat[i]) & (flat[i] != 0)
    else:
        for i in range(flat.size):
            ok &= np.isfinite(flat[i])
    return ok


def _finite(a):
    """Raises NonFiniteMatrix unless every value of `a` is finite."""
    for v in a.ravel():
        if not np.isfinite(v):
            raise NonFiniteMatrix("a matrix holds NaN or inf")


def solve_stack(a, b):
    """np.linalg.solve of (count, n, n) and (count, n, k) stacks, one LAPACK call a matrix."""
    _finite(a)
    _finite(b)
    out = np.empty(b.shape, b.dtype)
    for i in range(a.shape[0]):
        out[i] = np.linalg.solve(a[i], b[i])
    return out


def det_stack(a):
    _finite(a)
    out = np.empty(a.shape[0], a.dtype)
    for i in range(a.shape[0]):
        out[i] = np.linalg.det(a[i])
    return out


def slogdet_stack(a):
    _finite(a)
    sign, logdet = np.empty(a.shape[0], a.dtype), np.empty(a.shape[0], a.dtype)
    for i in range(a.shape[0]):
        sign[i], logdet[i] = np.linalg.slogdet(a[i])
    return sign, logdet


def cholesky_stack(a):
    """The lower factors; numpy's cholesky reads the lower triangle only."""
    _finite(a)
    out = np.empty(a.shape, a.dtype)
    for i in range(a.shape[0]):
        out[i] = np.linalg.cholesky(np.tril(a[i]) + np.tril(a[i], -1).T)
    return out


def eigh_stack(a):
    """Eigenvalues and eigenvectors from the lower triangles (LAPACK's syevd, as numpy)."""
    _finite(a)
    w, v = np.empty(a.shape[:2], a.dtype), np.empty(a.shape, a.dtype)
    for i in range(a.shape[0]):
        w[i], v[i] = np.linalg.eigh(a[i])
    return w, v


def eigvalsh_stack(a):
    """Eigenvalues from the lower triangles; NaN for a matrix holding NaN or inf (as
    pforjac's eigvalsh: a derivative's NaN flows on)."""
    out = np.empty(a.shape[:2], a.dtype)
    for i in range(a.shape[0]):
        if np.all(np.isfinite(a[i])):
            out[i] = np.linalg.eigvalsh(a[i])
        else:
            out[i] = np.nan
    return out


def svd_stack(a):
    """The reduced svd of every matrix (LAPACK's gesdd, as numpy)."""
    _finite(a)
    k = min(a.shape[1], a.shape[2])
    u, s = np.empty((a.shape[0], a.shape[1], k), a.dtype), np.empty((a.shape[0], k), a.dtype)
    vh = np.empty((a.shape[0], k, a.shape[2]), a.dtype)
    for i in range(a.shape[0]):
        u[i], s[i], vh[i] = np.linalg.svd(a[i], full_matrices=False)
    return u, s, vh


def qr_stack(a):
    """The reduced qr of every matrix."""
    _finite(a)
    k = min(a.shape[1], a.shape[2])
    q, r = np.empty((a.shape[0], a.shape[1], k), a.dtype), np.empty((a.shape[0], k, a.shape[2]), a.dtype)
    for i in range(a.shape[0]):
        q[i], r[i] = np.linalg.qr(a[i])
    return q, r


def pinv_stack(a, rcond):
    _finite(a)
    out = np.empty((a.shape[0], a.shape[2], a.shape[1]), a.dtype)
    for i in range(a.shape[0]):
        out[i] = np.linalg.pinv(a[i], rcond)
    return out


def triangular_solve_stack(t, b, lower, transpose, unit_diagonal):
    """x with T x = b (T^T x = b if `transpose`), T the lower or upper triangle of each
    (count, n, n) matrix, b (count, n, k): substitution a row at a time; a zero on the
    diagonal raises as pforjac's (numpy) forward does."""
    count, n, k = b.shape
    out = np.empty(b.shape, b.dtype)
    for c in range(count):
        for step in range(n):
            from_top = lower != transpose
            i = step if from_top else n - 1 - step
            d = t[c, i, i]
            if not unit_diagonal and d == 0:
                raise np.linalg.LinAlgError("singular matrix: a diagonal entry of the triangle is 0")
            for col in range(k):
                acc = b[c, i, col]
                for j in range(0, i) if from_top else range(i + 1, n):
                    acc -= (t[c, j, i] if transpose else t[c, i, j]) * out[c, j, col]
                out[c, i, col] = acc if unit_diagonal else acc / d
    return out


def scan_axis(x, product):
    """Running sums (running products if `product`) along axis 1 of a (pre, n, post) array,
    in order (as np.cumsum, np.cumprod)."""
    out = np.empty(x.shape, x.dtype)
    for i in range(x.shape[0]):
        for k in range(x.shape[2]):
            acc = x[i, 0, k]
            out[i, 0, k] = acc
            for j in range(1, x.shape[1]):
                acc = acc * x[i, j, k] if product else acc + x[i, j, k]
                out[i, j, k] = acc
    return out


def argmax_axis(x, smallest):
    """The first position of the largest (`smallest`: the smallest) value along axis 1 of a
    (pre, n, post) array; the first NaN's where there is one (as np.argmax)."""
    out = np.empty((x.shape[0], x.shape[2]), np.int64)
    for i in range(x.shape[0]):
        for k in range(x.shape[2]):
            best, at = x[i, 0, k], 0
            for j in range(1, x.shape[1]):
                if best != best:
                    break
                v = x[i, j, k]
                if v != v or (v < best if smallest else v > best):
                    best, at = v, j
            out[i, k] = at
    return out


def sort_axis(x):
    """np.sort along axis 1 of a (pre, n, post) array (NaN last, as numpy sorts)."""
    out = np.empty(x.shape, x.dtype)
    for i in range(x.shape[0]):
        for k in range(x.shape[2]):
            out[i, :, k] = np.sort(x[i, :, k].copy())
    return out


def stable_sort_axis(x):
    """np.sort(kind='stable') along axis 1 of a (pre, n, post) float array: the values by
    the stable permutation (equal -0.0 and 0.0 keep their order, as in numpy's)."""
    return take_along_axis3(x, argsort_axis(x))


def argsort_axis(x):
    """np.argsort(kind='stable') along axis 1 of a (pre, n, post) array."""
    out = np.empty(x.shape, np.int64)
    for i in range(x.shape[0]):
        for k in range(x.shape[2]):
            out[i, :, k] = np.argsort(x[i, :, k].copy(), kind="mergesort")
    return out


def take_along_axis3(x, indices):
    """np.take_along_axis along axis 1 of (pre, n, post) x and (pre, m, post) indices."""
    out = np.empty(indices.shape, x.dtype)
    for i in range(indices.shape[0]):
        for j in range(indices.shape[1]):
            for k in range(indices.shape[2]):
                out[i, j, k] = x[i, _position(indices[i, j, k], x.shape[1]), k]
    return out


def put_along_axis_add3(g, indices, size):
    """Zeros of (pre, size, post) with g added at `indices` along axis 1 (0 + g, in order)."""
    out = np.zeros((g.shape[0], size, g.shape[2]), g.dtype)
    for i in range(g.shape[0]):
        for j in range(g.shape[1]):
            for k in range(g.shape[2]):
                out[i, _position(indices[i, j, k], size), k] += g[i, j, k]
    return out


def check_index(indices, size):
    """`indices` if all lie in [-size, size), else np.take's IndexError."""
    for v in indices.ravel():
        _position(v, size)
    return indices


_PAGE = 1 << 12
_MADV_HUGEPAGE = 14         # (Linux)


def _advise_huge(address, length, advice):
    """madvise(2) (made an intrinsic calling libc's by name; elsewhere than on Linux, or
    without numba, nothing)."""
    return 0


def large(a):
    """`a`, a new array of 4 MiB or more, advised huge pages from its first page boundary
    to its end, as numpy advises its own arrays of that size: the first write into a
    fresh mapping faults once per 2 MiB instead of once per 4 KiB page (a 64 MiB array:
    37 -> 8 ms). (Advising only the whole 2 MiB pages inside the array, as this did
    before, was 0.04-1.1 ms slower on a 64 MiB diagonal Jacobian in six runs.)"""
    start = (a.ctypes.data + _PAGE - 1) // _PAGE * _PAGE
    end = a.ctypes.data + a.nbytes
    if end > start:
        _advise_huge(start, end - start, _MADV_HUGEPAGE)
    return a


def _madvise_intrinsic(numba):
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def advise(typingctx, address, length, advice):
        def codegen(context, builder, signature, args):
            void_p = ir.IntType(8).as_pointer()
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
                ir.IntType(32), [void_p, ir.IntType(64), ir.IntType(32)]), "madvise")
            return builder.call(fn, [builder.inttoptr(args[0], void_p), args[1],
                                     builder.trunc(args[2], ir.IntType(32))])
        return types.int32(types.intp, types.intp, types.intp), codegen
    return advise


try:
    import numba
except ImportError:          # numba is optional: only generated code uses these kernels
    numba = None
if numba is not None:
    _blas = numba_blas.setup(numba)
    blas_dot = numba.njit(cache=True)(blas_dot)
    batched_blas_dot = numba.njit(cache=True)(batched_blas_dot)
    multiply_no_nan = numba.vectorize(cache=True)(multiply_no_nan)
    floor_divide = numba.vectorize(cache=True)(floor_divide)
    remainder = numba.vectorize(cache=True)(remainder)
    select = numba.vectorize(cache=True)(select)
    _position = numba.njit(cache=True)(_position)
    positions = numba.njit(cache=True)(positions)
    take_axis = numba.njit(cache=True)(take_axis)
    scatter_add_axis = numba.njit(cache=True)(scatter_add_axis)
    prod_axis = numba.njit(cache=True)(prod_axis)
    max_axis = numba.njit(cache=True)(max_axis)
    min_axis = numba.njit(cache=True)(min_axis)
    batched_dot = numba.njit(cache=True)(batched_dot)
    dot = numba.njit(cache=True)(dot)
    if _blas:                      # (generated code calls K.dot and K.batched_dot)
        dot, batched_dot = blas_dot, batched_blas_dot
    empty = numba.njit(cache=True)(empty)
    _finite = numba.njit(cache=True)(_finite)
    all_finite = numba.njit(cache=True)(all_finite)
    if sys.platform.startswith("linux"):
        _advise_huge = _madvise_intrinsic(numba)
    else:
        _advise_huge = numba.njit(cache=True)(_advise_huge)
    large = numba.njit(cache=True)(large)
    for _name in ("scan_axis", "argmax_axis", "sort_axis", "stable_sort_axis", "argsort_axis",
                  "take_along_axis3",
                  "put_along_axis_add3", "check_index",
                  "solve_stack", "det_stack", "slogdet_stack", "cholesky_stack", "eigh_stack",
                  "eigvalsh_stack", "svd_stack", "qr_stack", "pinv_stack", "triangular_solve_stack"):
        globals()[_name] = numba.njit(cache=True)(globals()[_name])
    del _name     # (numba names a module by its `name` or `_name` before its `__name__`: the
                  # views' alias rule is keyed by the module's name, numba_views.py)
