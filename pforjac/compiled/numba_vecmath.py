"""Float32 exp, tanh, sigmoid, softplus and log for the numba backend's loops, computed in
float32 lanes and written so that LLVM vectorizes the loops calling them (numba compiles
`np.exp` of a float32 to one libm call per value: a scalar loop, several times slower than
numpy's SIMD loops). `FLOAT32_KERNELS` is the one list: the lowering table gives each of
these primitives of a float32 operand to its kernel here.

The rule they share: float32 arithmetic only (a vector holds twice as many float32 as
float64), no branch (the edges are selects), no libm call, and every step inlined into the
caller's loop (`forceinline`: LLVM's inliner alone leaves a kernel of this size a call, and
a loop with a call is not vectorized). Products and sums of the polynomials are
`llvm.fmuladd`: one rounding where the machine has FMA, two otherwise (both within the
errors below). Each kernel is within 2 ulps of the correctly rounded value over all 2^32
float32 arguments (exp, tanh, log 1; sigmoid, softplus 2: `benchmarks/vecmath_accuracy.py`
checks every one) and keeps numpy's NaN, infinities, signed zeros, overflow to inf and
subnormal results.

- exp(v) = 2^k exp(r): k = rint(v log2 e) (adding and subtracting 1.5 * 2^23, exact in
  round-to-nearest), r = v - k ln2 (ln2 in two parts, k ln2_hi exact), exp(r) a polynomial
  of degree 7 on [-ln2/2, ln2/2] (its coefficients a minimax fit of the relative error),
  and 2^k applied as 2^(k//2) 2^(k - k//2) from the exponent bits: both factors are normal
  for every k of [-150, 128], the first product is exact, the second rounds once (to a
  subnormal or to inf where the result is one). Arguments are clamped to [-104, 89], past
  which float32 exp is 0 or inf.
- tanh: below 2^-13 x itself (so -0.0 and NaN pass), below 0.625 x + x^3 P(x^2) (a minimax
  fit), above 1 - 2 / (exp(2|x|) + 1) with x's sign, |x| clamped to 9.1 (tanh is 1 there).
- sigmoid: e = exp(-|x|), then 1 / (1 + e) for x >= 0 and e / (1 + e) below (so its
  subnormal results are kept, as the float64 kernel keeps them).
- log: v = 2^e m, m in [sqrt(1/2), sqrt(2)) from its bits (subnormals scaled by 2^23
  first), log m = 2 atanh(s), s = (m - 1) / (m + 1), written f - s (f - R(s^2)).
- softplus: max(x, 0) + log1p(exp(-|x|)), log1p(e) as log(u) + (e - (u - 1)) / u, u = 1 + e.

`K.<name>_f32` is the scalar kernel (loop nests), `K.<name>_f32_ufunc` the same as a numba
ufunc (whole-array expressions), both compiled at their first use. Float64 stays on the C
library.
"""
from __future__ import annotations

import numpy as np

FLOAT32_KERNELS = ("exp", "tanh", "sigmoid", "softplus", "log")
__all__ = [f"{name}_f32{form}" for name in FLOAT32_KERNELS for form in ("", "_ufunc")]

_f = np.float32
_ZERO, _ONE, _TWO, _HALF = _f(0.0), _f(1.0), _f(2.0), _f(0.5)
_LN2 = np.log(2.0)
_LOG2E = _f(1.0 / _LN2)
_SHIFT = _f(1.5 * 2**23)              # v + _SHIFT - _SHIFT is rint(v) for |v| < 2^22
_LN2_HI = _f(np.round(_LN2 * 2**12) / 2**12)   # 12 bits: k * _LN2_HI is exact for |k| < 2^12
_LN2_LO = _f(_LN2 - float(_LN2_HI))
_EXP_LOW, _EXP_HIGH = _f(-104.0), _f(89.0)
# exp(r) ~ 1 + r (1 + r P(r)), P(r) = sum _EXP_POLY[j] r^j: relative error 2.7e-9 on [-ln2/2, ln2/2]
_EXP_POLY = tuple(_f(c) for c in (0.5, 0.1666666716337204, 0.04166646674275398,
                                  0.008333360776305199, 0.0013933597365394235,
                                  0.0001985778217203915))
# tanh(x) ~ x + x^3 Q(x^2), Q(z) = sum _TANH_POLY[j] z^j: relative error 5e-9 on [0, 0.625]
_TANH_POLY = tuple(_f(c) for c in (-0.3333333432674408, 0.13333304226398468,
                                   -0.05395929142832756, 0.021769100800156593,
                                   -0.008344421163201332, 0.0022931944113224745))
_TANH_SMALL, _TANH_TINY, _TANH_BIG = _f(0.625), _f(2.0**-13), _f(9.1)
_LOG_LN2_HI = _f(np.round(_LN2 * 2**16) / 2**16)   # e * _LOG_LN2_HI exact for |e| < 2^8
_LOG_LN2_LO = _f(_LN2 - float(_LOG_LN2_HI))
_SQRT2, _TWO23, _TWENTY3 = _f(np.sqrt(2.0)), _f(2.0**23), _f(23.0)
_SMALLEST_NORMAL = _f(np.finfo(np.float32).tiny)
# 2 atanh(s) = 2 s + s R(s^2), R(z) = z sum _ATANH_SERIES[j] z^j + O(z^5) (|s| < 0.1716: < 2^-27)
_ATANH_SERIES = tuple(_f(2.0 / (2 * j + 3)) for j in range(4))
_INF, _NAN = _f(np.inf), _f(np.nan)


def _fma(a, b, c):
    """a * b + c (numba: llvm.fmuladd, fused where the machine has FMA)."""
    return a * b + c


def _mul_pow2(p, t):
    """p * 2^k, k the integer in t's low bits (t = k + 1.5 * 2^23; numba: integer
    arithmetic on the bits, in two steps)."""
    k = int(t - _SHIFT)
    return _f(p * _f(2.0 ** (k >> 1)) * _f(2.0 ** (k - (k >> 1))))


def _exponent_of(v):
    """The unbiased exponent of a normal float32, as a float32 (numba: from its bits)."""
    return _f(np.frexp(v)[1] - 1)


def _mantissa_of(v):
    """A normal float32's significand, in [1, 2) (numba: from its bits)."""
    return _f(2.0 * np.frexp(v)[0])


def _clamp(v, low, high):
    """v limited to [low, high] by selects (NaN gives `high`: the callers select NaN apart)."""
    c = v if v > low else low
    return c if c < high else high


def _horner(x, c):
    """c[0] + c[1] x + ... + c[5] x^5 by Horner's rule, one fmuladd a step."""
    p = _fma(x, c[5], c[4])
    p = _fma(x, p, c[3])
    p = _fma(x, p, c[2])
    p = _fma(x, p, c[1])
    return _fma(x, p, c[0])


def _exp_core(v):
    """exp(v) for v in [-104, 89] (not NaN), within an ulp."""
    t = _fma(v, _LOG2E, _SHIFT)
    k = t - _SHIFT
    r = _fma(k, -_LN2_LO, _fma(k, -_LN2_HI, v))
    p = _horner(r, _EXP_POLY)
    return _mul_pow2(_fma(r, _fma(r, p, _ONE), _ONE), t)


def _log_core(v):
    """log(v) for a positive finite v, within an ulp."""
    sub = v < _SMALLEST_NORMAL
    w = v * _TWO23 if sub else v
    e = _exponent_of(w) - (_TWENTY3 if sub else _ZERO)
    m = _mantissa_of(w)
    high = m > _SQRT2
    m = _HALF * m if high else m
    e = e + _ONE if high else e
    f = m - _ONE
    s = f / (_TWO + f)
    z = s * s
    c = _ATANH_SERIES
    r = z * _fma(z, _fma(z, _fma(z, c[3], c[2]), c[1]), c[0])
    return _fma(e, _LOG_LN2_HI, _fma(e, _LOG_LN2_LO, f - s * (f - r)))


def _exp_f32(x):
    e = _exp_core(_clamp(x, _EXP_LOW, _EXP_HIGH))
    return x if x != x else e


def _tanh_f32(x):
    a = x if x >= _ZERO else -x
    big = _ONE - _TWO / (_exp_core(_TWO * _clamp(a, _ZERO, _TANH_BIG)) + _ONE)
    big = big if x >= _ZERO else -big
    z = x * x
    q = _horner(z, _TANH_POLY)
    t = _fma(x, z * q, x) if a < _TANH_SMALL else big
    return t if a >= _TANH_TINY else x


def _sigmoid_f32(x):
    a = x if x >= _ZERO else -x
    e = _exp_core(_clamp(-a, _EXP_LOW, _ZERO))
    s = (_ONE if x >= _ZERO else e) / (_ONE + e)
    return x if x != x else s


def _softplus_f32(x):
    a = x if x >= _ZERO else -x
    e = _exp_core(_clamp(-a, _EXP_LOW, _ZERO))
    u = _ONE + e
    log1p = _log_core(u) + (e - (u - _ONE)) / u
    return x if x != x else (x if x > _ZERO else _ZERO) + log1p


def _log_f32(x):
    inside = x > _ZERO and x < _INF
    r = _log_core(x if inside else _ONE)
    r = r if inside else (x if x == x and x > _ZERO else _NAN)
    return -_INF if x == _ZERO else r


def _llvm_fma(ir, builder, a, b, c):
    f32 = ir.FloatType()
    fn = builder.module.declare_intrinsic("llvm.fmuladd", [f32], ir.FunctionType(f32, [f32] * 3))
    return builder.call(fn, [a, b, c])


def _llvm_pow2(ir, builder, n):
    """2^n (an i32 in [-126, 127]) as a float32, from its exponent bits."""
    i32 = ir.IntType(32)
    bits = builder.shl(builder.add(n, ir.Constant(i32, 127)), ir.Constant(i32, 23))
    return builder.bitcast(bits, ir.FloatType())


def _llvm_mul_pow2(ir, builder, p, t):
    i32 = ir.IntType(32)
    shift = builder.bitcast(ir.Constant(ir.FloatType(), float(_SHIFT)), i32)
    k = builder.sub(builder.bitcast(t, i32), shift)          # (t's bits: shift's + k)
    half = builder.ashr(k, ir.Constant(i32, 1))
    scaled = builder.fmul(p, _llvm_pow2(ir, builder, half))
    return builder.fmul(scaled, _llvm_pow2(ir, builder, builder.sub(k, half)))


def _llvm_exponent_of(ir, builder, v):
    i32 = ir.IntType(32)
    e = builder.lshr(builder.bitcast(v, i32), ir.Constant(i32, 23))
    e = builder.and_(e, ir.Constant(i32, 0xFF))
    return builder.sitofp(builder.sub(e, ir.Constant(i32, 127)), ir.FloatType())


def _llvm_mantissa_of(ir, builder, v):
    i32 = ir.IntType(32)
    bits = builder.and_(builder.bitcast(v, i32), ir.Constant(i32, 0x7FFFFF))
    return builder.bitcast(builder.or_(bits, ir.Constant(i32, 0x3F800000)), ir.FloatType())


def _intrinsics() -> dict:
    """The bit manipulations and fmuladd as LLVM instructions (numba intrinsics over
    float32 operands) in place of their Python stand-ins."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    def typed(arity, body):
        return (types.float32(*[types.float32] * arity),
                lambda context, builder, signature, values: body(ir, builder, *values))

    @intrinsic
    def fma(typingctx, a, b, c):
        return typed(3, _llvm_fma)

    @intrinsic
    def mul_pow2(typingctx, p, t):
        return typed(2, _llvm_mul_pow2)

    @intrinsic
    def exponent_of(typingctx, v):
        return typed(1, _llvm_exponent_of)

    @intrinsic
    def mantissa_of(typingctx, v):
        return typed(1, _llvm_mantissa_of)
    return dict(_fma=fma, _mul_pow2=mul_pow2, _exponent_of=exponent_of, _mantissa_of=mantissa_of)


def _compile() -> None:
    """The intrinsics in place of their Python stand-ins; helpers and kernels as njit
    functions LLVM always inlines; each kernel also as a numba ufunc; all cached on disk.
    Without numba, the kernels are the Python functions (only generated code uses them)."""
    names = globals()
    try:
        import numba
    except ImportError:
        names.update({f"{n}_f32{form}": names[f"_{n}_f32"]
                      for n in FLOAT32_KERNELS for form in ("", "_ufunc")})
        return
    names.update(_intrinsics())
    inlined = dict(forceinline=True, error_model="numpy", cache=True)
    for name in ("_clamp", "_horner", "_exp_core", "_log_core"):
        names[name] = numba.njit(**inlined)(names[name])
    for name in FLOAT32_KERNELS:
        scalar = names[f"_{name}_f32"]
        names[f"{name}_f32"] = numba.njit(**inlined)(scalar)
        names[f"{name}_f32_ufunc"] = numba.vectorize(cache=True)(scalar)


def __getattr__(name: str):
    """The kernels, compiled at their first use (the lowering table reads FLOAT32_KERNELS
    alone: making a program's source imports no numba)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _compile()
    return globals()[name]
