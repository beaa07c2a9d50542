"""Complex arithmetic of the numba backend where numba's own gives other values than numpy's.

Products: numpy's SIMD loop computes each part of a * b (and of np.square) as one fused
multiply-add, fma(ar, br, -(ai bi)); numba rounds the two products apart: an ulp off for
44% of random values, and NaN where a product overflows (numpy's -inf+infj for
(1e300+1j) * (1e300+infj), numba's nan+infj). Absolute value: numba's is hypot, an ulp
off numpy's SIMD loop (the larger part times sqrt(fma(r, r, 1))) for a third of values.
Division and reciprocal: numba divides as CPython does (a division by a zero gives +-inf
by the signs of the numerator's and the zero's parts: 1j / -0j is nan-infj, numpy's
nan+infj; 1 / (1+0j) is 1+0j, numpy's 1-0j). The kernels here (`K.complex_multiply`, ...)
are numpy's loops step for step (Smith's method for the division), in the parts' own
precision (complex64: float32), fused with llvm.fmuladd where the machine has FMA (as
numpy's loops, dispatched for the machine, are), so that values, signed zeros,
infinities and NaN come out as numpy's; numba ufuncs, they broadcast and fuse as the
others do. The ufuncs numba computes otherwise and that have no such kernel are listed
in COMPLEX_OTHER with what differs: their complex equations run on numpy.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["complex_multiply", "complex_square", "complex_divide", "complex_reciprocal", "complex_abs"]

# Complex ufuncs numba computes otherwise than numpy, with what differs (a grid of every
# pair of parts from 0, -0, 1e-310, 1e300, inf, -inf, NaN, ...): these run on numpy
# (numba_lowering._lower_ufunc declines them).
_OVERFLOW = "numba's overflows to NaN where numpy's gives inf or 1: exp(1e10+0j), tanh(400+1j)"
_INVERSE = "numba's gives NaN+NaNj where numpy's keeps a part (arcsinh(nan+0j) is nan+0j), " \
           "and loses digits near denormals"
COMPLEX_OTHER = {
    **dict.fromkeys(("exp", "exp2", "expm1", "sin", "cos", "sinh", "cosh", "tanh"), _OVERFLOW),
    **dict.fromkeys(("arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "tan"), _INVERSE),
    "sign": "numba's is NaN at an infinite part: sign(inf+1j) is 1 in numpy",
    "power": "numpy's has exact integer powers and 0**z = 0; numba's is exp(b log a): NaN there",
    "sqrt": "numba's loses 100 ulps where a part is denormal: sqrt(1e-310j)",
}


def _one(x):
    """1 in the type of the float `x` (numba: an overload choosing by type)."""
    return 1.0


def _in_type(x, v):
    """The float `v` in the type of the float `x` (numba: an overload choosing by type)."""
    return v


def _fmuladd(a, b, c):
    """a * b + c, fused where the machine has FMA (numba: llvm.fmuladd), as numpy's SIMD
    loops, dispatched for the machine, compute it."""
    return a * b + c


def _joined(re, im, z):
    """re + im j in the complex type of `z` (numba: an overload choosing by type)."""
    return complex(re, im)


def _complex_multiply(a, b):
    """numpy's complex a * b (its SIMD loop: each part one fused multiply-add)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    return _joined(_fmuladd(ar, br, -(ai * bi)), _fmuladd(ar, bi, ai * br), a)


def _complex_square(z):
    """numpy's complex z * z (np.square's SIMD loop, as its multiply's)."""
    zr, zi = z.real, z.imag
    return _joined(_fmuladd(zr, zr, -(zi * zi)), _fmuladd(zr, zi, zi * zr), z)


def _complex_divide(a, b):
    """numpy's complex a / b (loops.c.src): by b's larger part; a zero b divides each of
    a's parts by the absolute value of b's parts (inf or NaN by the numerator's sign)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    br_abs, bi_abs = abs(br), abs(bi)
    if br_abs >= bi_abs:
        if br_abs == 0 and bi_abs == 0:
            return _joined(ar / br_abs, ai / bi_abs, a)
        rat = bi / br
        scl = _one(br) / (br + bi * rat)
        return _joined((ar + ai * rat) * scl, (ai - ar * rat) * scl, a)
    rat = br / bi
    scl = _one(br) / (bi + br * rat)
    return _joined((ar * rat + ai) * scl, (ai * rat - ar) * scl, a)


def _complex_reciprocal(z):
    """numpy's complex 1 / z (np.reciprocal's loop): by z's larger part."""
    zr, zi = z.real, z.imag
    one = _one(zr)
    if abs(zi) <= abs(zr):
        r = zi / zr
        d = zr + zi * r
        return _joined(one / d, -r / d, z)
    r = zr / zi
    d = zr * r + zi
    return _joined(r / d, -one / d, z)


def _complex_abs(z):
    """numpy's |z| (its SIMD loop, which takes arrays of any layout and 0-d ones): the
    larger part times sqrt(1 + (smaller / larger)^2), fused as numpy's; inf where a part is
    inf, else NaN where one is NaN. (hypot, numba's, differs by an ulp for a third of
    values; ill-conditioned code after it, a remainder by it, made that 79 ulps.)"""
    re, im = abs(z.real), abs(z.imag)
    if re == _in_type(re, math.inf) or im == _in_type(re, math.inf):
        return _in_type(re, math.inf)
    if re != re or im != im:
        return _in_type(re, math.nan)
    larger, smaller = max(re, im), min(re, im)
    if larger == 0:
        return larger
    ratio = smaller / larger
    return np.sqrt(_fmuladd(ratio, ratio, _one(re))) * larger


def _compile() -> None:
    """`_one` and `_joined` as overloads, the kernels as numba ufuncs cached on disk."""
    import numba
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic, overload

    @overload(_one)
    def _one_numba(x):
        if x == types.float32:
            return lambda x: numba.float32(1)
        return lambda x: 1.0

    @overload(_in_type)
    def _in_type_numba(x, v):
        if x == types.float32:
            return lambda x, v: numba.float32(v)
        return lambda x, v: numba.float64(v)

    @intrinsic
    def fmuladd(typingctx, a, b, c):
        def codegen(context, builder, signature, args):
            t = args[0].type
            fn = builder.module.declare_intrinsic("llvm.fmuladd", [t], ir.FunctionType(t, [t] * 3))
            return builder.call(fn, args)
        return a(a, b, c), codegen

    @overload(_fmuladd)
    def _fmuladd_numba(a, b, c):
        return lambda a, b, c: fmuladd(a, b, c)

    @overload(_joined)
    def _joined_numba(re, im, z):
        if z == types.complex64:
            return lambda re, im, z: numba.complex64(complex(re, im))
        return lambda re, im, z: complex(re, im)

    names = globals()
    for name in __all__:
        names[name] = numba.vectorize(cache=True)(names[f"_{name}"])


def __getattr__(name: str):
    """The kernels, compiled at their first use (the lowering table reads COMPLEX_OTHER
    alone: making a program's source imports no numba)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _compile()
    return globals()[name]
