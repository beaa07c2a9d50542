"""Float32 exp, tanh, sigmoid and log for the numba backend's loops, written so that LLVM
vectorizes them (numba compiles `np.exp` of a float32 to one libm call per value: a loop of
them is scalar, several times slower than numpy's SIMD loops).

Each computes in float64 and rounds to float32 once, without branches (the edges are
selects) and without a libm call: exp(v) = 2^k exp(r), k = rint(v log2(e)) (by adding and
subtracting 1.5 * 2^52, exact in round-to-nearest), r = v - k ln2 (ln2 in two parts, so
k ln2_hi is exact), exp(r) a polynomial of degree 8 on [-ln2/2, ln2/2], and 2^k the float64
whose bits are (k + 1023) << 52 (an LLVM bitcast). The polynomial's coefficients are a
least-squares fit of its relative error on Chebyshev nodes of that interval (relative error
below 1.3e-12, 2^-39: the float32 result is the correctly rounded one except where the
true value lies within 2^-15 ulp of a midpoint). Arguments are clamped to [-110, 100]
first: beyond, exp rounds to 0 or inf in float32 all the same, and 2^k stays a normal
float64. NaN passes through; overflow to inf, underflow to subnormals and to 0 are the
float64-to-float32 conversion's (round to nearest), as numpy's float32 results are.
log reads the exponent and mantissa from the float64's bits (a float32's subnormals are
normal float64s) and takes log of the mantissa by a series of atanh.

Each becomes a `numba.vectorize` function (`K.exp_f32`, ...: scalars in the loop nests,
arrays in whole-array expressions); their helpers are inlined into them by numba, and LLVM
inlines the kernels into the loops that call them and vectorizes those. Float64
stays on the C library.
"""
from __future__ import annotations

import numpy as np

from .numba_special import HAVE_NUMBA, compile_kernels

__all__ = ["exp_f32", "tanh_f32", "sigmoid_f32", "log_f32"]

_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471526622772          # ln2 with its low 28 bits zero: k * _LN2_HI is exact
_LN2_LO = 2.7897668087737545e-08      # ln2 - _LN2_HI
_SHIFT = 6755399441055744.0           # 1.5 * 2^52: v + _SHIFT - _SHIFT is rint(v)
_EXP_POLY = (0.5000000000347952, 0.16666666784682557, 0.041666664747708165,
             0.008333281729465661, 0.0013889152160434552, 0.00019908993893256676,
             2.472668244169361e-05)   # exp(r) ~ 1 + r + sum _EXP_POLY[j] r^(j + 2)
# tanh(x) = x + sum _TANH_SERIES[j] x^(2j + 3) + O(x^11): its Taylor series, for |x| < 1/16
_TANH_SERIES = (-1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0)
_TANH_SMALL = 0.0625
_LN2 = 0.6931471805599453
_SQRT2 = 1.4142135623730951
# log(m) = 2 atanh(s) = 2 s sum s^(2j) / (2j + 1), s = (m - 1) / (m + 1), |s| < 0.1716
_ATANH_SERIES = (1.0 / 3.0, 1.0 / 5.0, 1.0 / 7.0, 1.0 / 9.0, 1.0 / 11.0, 1.0 / 13.0)


def _f64_from_bits(i):
    """The float64 whose bits are the int64 i (numba: an LLVM bitcast)."""
    return np.array([i], np.int64).view(np.float64)[0]


def _bits_from_f64(v):
    """The int64 whose bits are the float64 v (numba: an LLVM bitcast)."""
    return np.array([v], np.float64).view(np.int64)[0]


def _exp_core(v):
    """exp(v) in float64 for v in [-110, 100] (not NaN), to 1.3e-12 relative."""
    k = (v * _LOG2E + _SHIFT) - _SHIFT
    r = (v - k * _LN2_HI) - k * _LN2_LO
    c = _EXP_POLY
    p = c[5] + r * c[6]
    p = c[4] + r * p
    p = c[3] + r * p
    p = c[2] + r * p
    p = c[1] + r * p
    p = c[0] + r * p
    p = 1.0 + r * (1.0 + r * p)
    return p * _f64_from_bits((np.int64(k) + 1023) << 52)


def _clamp(v, low, high):
    """v limited to [low, high] by selects (NaN gives `low`: the callers select NaN apart)."""
    c = v if v > low else low
    return c if c < high else high


def exp_f32(x):
    """np.exp of a float32, within an ulp (nearly always the correctly rounded value)."""
    v = np.float64(x)
    e = np.float32(_exp_core(_clamp(v, -110.0, 100.0)))
    return x if v != v else e


def tanh_f32(x):
    """np.tanh of a float32: 1 - 2 / (exp(2|x|) + 1) with x's sign, and below 1/16 its odd
    Taylor series (where the subtraction would lose the relative accuracy; it keeps -0.0);
    |x| is clamped to 20, where the result is 1 in float32."""
    v = np.float64(x)
    a = v if v >= 0.0 else -v
    big = 1.0 - 2.0 / (_exp_core(2.0 * _clamp(a, 0.0, 20.0)) + 1.0)
    big = big if v >= 0.0 else -big
    v2 = v * v
    c = _TANH_SERIES
    small = v * (1.0 + v2 * (c[0] + v2 * (c[1] + v2 * (c[2] + v2 * c[3]))))   # (-0.0 kept)
    t = np.float32(small if a < _TANH_SMALL else big)
    return x if v != v else t


def sigmoid_f32(x):
    """1 / (1 + exp(-x)) of a float32 computed in float64, as the kernel `sigmoid` does for
    float32 (its subnormal results kept), -x clamped to [-110, 110] (1 and 0 beyond)."""
    v = np.float64(x)
    s = np.float32(1.0 / (1.0 + _exp_core(_clamp(-v, -110.0, 110.0))))
    return x if v != v else s


def _log_core(v):
    """log(v) in float64 for a positive finite normal v, to 2e-12 relative: v = 2^e m with
    m in [sqrt(1/2), sqrt(2)) read from its bits, log(m) by the atanh series."""
    bits = _bits_from_f64(v)
    e = ((bits >> 52) & 0x7FF) - 1023
    m = _f64_from_bits((bits & 0xFFFFFFFFFFFFF) | 0x3FF0000000000000)
    high = m > _SQRT2
    m = 0.5 * m if high else m
    e = e + 1 if high else e
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    c = _ATANH_SERIES
    p = c[0] + z * (c[1] + z * (c[2] + z * (c[3] + z * (c[4] + z * c[5]))))
    return np.float64(e) * _LN2 + 2.0 * s * (1.0 + z * p)


def log_f32(x):
    """np.log of a float32 (its subnormals are normal float64s): -inf at +-0, NaN below 0,
    inf and NaN kept."""
    v = np.float64(x)
    inside = v > 0.0 and v < np.inf
    r = np.float32(_log_core(v if inside else 1.0))
    r = r if inside else (x if v == v and v > 0.0 else np.float32(np.nan))
    return np.float32(-np.inf) if v == 0.0 else r


def _compile():
    """The bitcast as an intrinsic, the helpers inlined (numba IR) into the kernels, the
    kernels as numba ufuncs cached on disk."""
    import numba
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def bitcast_f64(typingctx, i):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.DoubleType())
        return types.float64(types.int64), codegen

    names = globals()
    @intrinsic
    def bitcast_i64(typingctx, v):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(64))
        return types.int64(types.float64), codegen

    names["_f64_from_bits"], names["_bits_from_f64"] = bitcast_f64, bitcast_i64
    for name in ("_exp_core", "_clamp", "_log_core"):
        names[name] = numba.njit(inline="always")(names[name])
    compile_kernels(names, [], __all__)


if HAVE_NUMBA:               # numba is optional: only generated code uses these kernels
    _compile()
