"""Scalar kernels of the numba backend for the elementwise primitives whose numpy forward is
not a ufunc numba compiles: pforjac's own (sigmoid, softplus) and scipy.special's (erf,
gammaln, digamma, xlogy, log_ndtr, ...; the quantiles ndtri, erfinv and erfcinv are in
numba_special_inverse.py). Each becomes a `numba.vectorize` function (it
broadcasts, takes scalars and fuses into the array expressions around it), called from
generated code as `K.<name>` (numba_kernels imports them).

Each computes in float64 and returns its argument's float type, as scipy's float32 loops
do (they compute in double and round). Values follow scipy's at the edges: NaN in, NaN
out; poles, signed zeros and infinities as scipy gives them (the tests compare on grids
that include them).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["sigmoid", "softplus", "sinc", "heaviside", "erf", "erfc", "ndtr", "log_ndtr",
           "logit", "gamma", "gammaln", "gammasgn", "rgamma", "digamma", "xlogy", "xlog1py",
           "entr", "rel_entr", "kl_div", "polygamma",
           "int_power", "int_floor_divide", "int_remainder", "int_fmod"]

_INF, _NAN = math.inf, math.nan
_SQRT_HALF = math.sqrt(0.5)
_LOG_SQRT_TWO_PI = 0.5 * math.log(2.0 * math.pi)


def _f64(x):
    """x as a float64 (numba's float() keeps a float32 a float32)."""
    return np.float64(x)


def _like(r, x):
    """r (a float64) in x's float type (numba: an overload choosing by type)."""
    return r


def _is_integer(x) -> bool:
    return np.floor(x) == x               # (numba's math.floor returns an int64: it overflows)


def sigmoid(x):
    """1 / (1 + exp(-x)), pforjac's formula (0 where exp(-x) overflows)."""
    return _like(1.0 / (1.0 + math.exp(-_f64(x))), x)


def softplus(x):
    """max(x, 0) + log1p(exp(-|x|)), pforjac's formula."""
    v = _f64(x)
    return _like(max(v, 0.0) + math.log1p(math.exp(-abs(v))), x) if v == v else x


def sinc(x):
    """numpy's: sin(pi y) / (pi y), with y = 1e-20 where x == 0, in x's float type (numpy
    computes a float32's in float32: sinc(1) is -2.78e-8 there, and 2e38 gives NaN)."""
    y = _like(math.pi, x) * (_like(1.0e-20, x) if x == 0 else x)
    return np.sin(y) / y


def heaviside(x, h):
    """numpy's: 0 below 0, h at 0, 1 above, NaN for NaN."""
    v = _f64(x)
    r = _NAN if v != v else (0.0 if v < 0.0 else (_f64(h) if v == 0.0 else 1.0))
    return _like(r, x)


def erf(x):
    return _like(math.erf(_f64(x)), x)


def erfc(x):
    return _like(math.erfc(_f64(x)), x)


def _ndtr(v):
    """The standard normal cdf, by erf near 0 and erfc in the tails (cephes' split)."""
    z = v * _SQRT_HALF
    if abs(z) < _SQRT_HALF:
        return 0.5 + 0.5 * math.erf(z)
    y = 0.5 * math.erfc(abs(z))
    return 1.0 - y if z > 0.0 else y


def ndtr(x):
    return _like(_ndtr(_f64(x)), x)


def _log_ndtr(v):
    """log of the normal cdf: log1p(-Q) above -1, log of erfc's tail to -20, the asymptotic
    series of the Mills ratio below (where erfc underflows)."""
    if v > -1.0 or v != v:
        return math.log1p(-0.5 * math.erfc(v * _SQRT_HALF))
    if v > -20.0:
        return math.log(0.5 * math.erfc(-v * _SQRT_HALF))
    if v == -_INF:
        return -_INF
    w = 1.0 / (v * v)
    term, total = 1.0, 1.0
    for k in range(1, 14):            # 1 - 1/x^2 + 3/x^4 - 15/x^6 ...: < 1e-17 from x = -20
        term *= -(2 * k - 1) * w
        total += term
    return -0.5 * v * v - math.log(-v) - _LOG_SQRT_TWO_PI + math.log(total)


def log_ndtr(x):
    return _like(_log_ndtr(_f64(x)), x)


def logit(x):
    """log(p / (1 - p)); near 1/2 as log1p, without the cancellation."""
    v = _f64(x)
    if 0.3 < v < 0.65:
        return _like(math.log1p((2.0 * v - 1.0) / (1.0 - v)), x)
    return _like(math.log(v / (1.0 - v)) if 0.0 < v < 1.0 else _logit_edge(v), x)


def _logit_edge(v):
    if v == 0.0:
        return -_INF
    return _INF if v == 1.0 else _NAN


def gamma(x):
    """(numba's math.gamma is C's tgamma: inf at +-0 with its sign, NaN at the poles.)"""
    return _like(math.gamma(_f64(x)), x)


# lgamma(1 + d) = -euler_gamma d + sum (-1)^k zeta(k) / k d^k, k = 2..55 (|d| <= 1/2: < 1e-18)
_LGAMMA_SERIES = (
    -0.5772156649015329, 0.8224670334241132, -0.40068563438653143, 0.27058080842778454,
    -0.207385551028674, 0.16955717699740822, -0.14404989676884614, 0.12550966952474304,
    -0.11133426586956469, 0.10009945751278179, -0.09095401714582904, 0.083353840546109,
    -0.0769325164113522, 0.07143294629536134, -0.06666870588242046, 0.06250095514121304,
    -0.05882397865868458, 0.055555767627403614, -0.05263167937961666, 0.05000004769810169,
    -0.04761907033014223, 0.04545455629320467, -0.04347826605304026, 0.04166666915034121,
    -0.04000000119214014, 0.03846153903467519, -0.037037037312989324, 0.03571428584733336,
    -0.034482758684919304, 0.03333333336437758, -0.03225806453115041, 0.03125000000727597,
    -0.030303030306558048, 0.029411764707594344, -0.02857142857226011, 0.027777777778181998,
    -0.027027027027223673, 0.02631578947377995, -0.025641025641072283, 0.025000000000022737,
    -0.024390243902450117, 0.023809523809529224, -0.023255813953491015, 0.02272727272727402,
    -0.022222222222222855, 0.021739130434782917, -0.021276595744681003, 0.02083333333333341,
    -0.02040816326530616, 0.020000000000000018, -0.019607843137254912, 0.019230769230769235,
    -0.01886792452830189, 0.018518518518518517, -0.01818181818181818)


def _lgamma_at_one(d):
    """lgamma(1 + d) for |d| <= 1/2, by its Taylor series (relative accuracy near 0)."""
    total = 0.0
    for k in range(len(_LGAMMA_SERIES) - 1, -1, -1):
        total = (total + _LGAMMA_SERIES[k]) * d
    return total + 0.0                    # (+0 at d = 0, as lgamma(1))


def _lgamma_small(v):
    """lgamma for 0 < v < 13: the series at 1 (or at 2, lgamma(2 + d) = lgamma(1 + d) +
    log1p(d)) after the recurrence down to [1.5, 2.5): relative accuracy near the zeros at
    1 and 2, where C's and CPython's lgamma (numba's) lose tens of ulps."""
    if v < 0.5:
        return _lgamma_at_one(v) - math.log(v)
    if v < 1.5:
        return _lgamma_at_one(v - 1.0)
    product = 1.0
    while v >= 2.5:                       # (v - 1 is exact here)
        v -= 1.0
        product *= v
    d = v - 2.0
    return (_lgamma_at_one(d) + math.log1p(d)) + math.log(product)


def _gammaln(v):
    """scipy's: inf where 1 / v overflows (|v| < 5.6e-309: scipy's recurrence divides by v)."""
    if v == -_INF:
        return -_INF
    if v <= 0.0 and _is_integer(v) or v != 0.0 and 1.0 / v in (_INF, -_INF):
        return _INF
    if 0.0 < v < 13.0:
        return _lgamma_small(v)
    return math.lgamma(v)


def gammaln(x):
    return _like(_gammaln(_f64(x)), x)


def _gammasgn(v):
    if v > 0.0:
        return 1.0
    if v == 0.0:
        return math.copysign(1.0, v)
    if v != v or v == -_INF or _is_integer(v):
        return _NAN
    return 1.0 if np.floor(v) % 2.0 == 0.0 else -1.0


def gammasgn(x):
    return _like(_gammasgn(_f64(x)), x)


def _rgamma(v):
    """1 / gamma: 0 at the poles (-0 at -0), by reflection below -170 (gamma underflows)."""
    if v != v:
        return _NAN
    if v == _INF or v == -_INF:
        return 0.0
    if v <= 0.0 and _is_integer(v):
        return 0.0 * math.copysign(1.0, v) if v == 0.0 else 0.0
    if v > 171.7:
        return 0.0
    if 0.0 < v < 1e-300:                  # (1 / gamma(v) = v + 0.58 v^2: scipy's v, where
        return v                          # gamma(v) overflows)
    if v < -170.0:
        r = v - np.floor(v)
        s = math.sin(math.pi * r) * (1.0 if np.floor(v) % 2.0 == 0.0 else -1.0)
        return s * math.gamma(1.0 - v) / math.pi
    return 1.0 / math.gamma(v)


def rgamma(x):
    return _like(_rgamma(_f64(x)), x)


_ROOT = 1.4616321449683623           # digamma's positive root, and its value there
_AT_ROOT = -9.241265521729427e-17
# (-1)^(k+1) zeta(k+1, root), k = 1..45: the Taylor coefficients of digamma at its root
# (they shrink as 0.68^k: on [1, 2], |v - root| <= 0.54, 45 terms leave < 1e-19)
_ROOT_SERIES = (
    0.9676722454476214, -0.44276316898359214, 0.2584997609556512, -0.16394270544240658,
    0.10782405069126239, -0.07219956125645476, 0.048804288164143145, -0.033161126474847376,
    0.022597648232218125, -0.015424765904948968, 0.010538791616612182, -0.007204534386356875,
    0.004926781395729858, -0.0033698016554393317, 0.00230512632673493, -0.0015769367714301987,
    0.0010788252019162975, -0.000738070938996006, 0.0005049532658346026, -0.0003454680251063082,
    0.00023635601564027086, -0.00016170622091974825, 0.00011063372768747429, -7.569179582195077e-05,
    5.17857579522209e-05, -3.543007094765967e-05, 2.424006611860136e-05, -1.658424227185416e-05,
    1.1346384584663872e-05, -7.76281766846211e-06, 5.3110609208898746e-06, -3.633650789801054e-06,
    2.4860227331295433e-06, -1.7008538854332643e-06, 1.163667536354887e-06, -7.961425431241989e-07,
    5.446941930669458e-07, -3.726616128343833e-07, 2.549626552021561e-07, -1.7443695117727793e-07,
    1.1934394829830278e-07, -8.165115189488431e-08, 5.586299683532188e-08, -3.8219600619175055e-08,
    2.6148576951961945e-08)
# B_2k / (2k), k = 1..7: the asymptotic series log x - 1/(2x) - sum B_2k / (2k x^2k)
_ASYMPTOTIC = (1.0 / 12.0, -1.0 / 120.0, 1.0 / 252.0, -1.0 / 240.0, 1.0 / 132.0,
               -691.0 / 32760.0, 1.0 / 12.0)


def _digamma_positive(v):
    """digamma for v > 0: the Taylor series at the root on [1, 2] (relative accuracy near
    the root), the recurrence from there below 10, the asymptotic series above."""
    if v >= 10.0:
        w = 1.0 / (v * v)
        series = 0.0
        for k in range(len(_ASYMPTOTIC) - 1, -1, -1):
            series = (series + _ASYMPTOTIC[k]) * w
        return math.log(v) - 0.5 / v - series
    shift = 0.0
    if v < 1.0:                           # digamma(v) = digamma(v + 1) - 1 / v
        shift = -1.0 / v
        v += 1.0
    while v >= 2.0:                       # (v - 1 is exact here)
        v -= 1.0
        shift += 1.0 / v
    d = v - _ROOT
    total = 0.0
    for k in range(len(_ROOT_SERIES) - 1, -1, -1):
        total = (total + _ROOT_SERIES[k]) * d
    return (total + _AT_ROOT) + shift


def _digamma(v):
    if v != v or v == -_INF:
        return _NAN
    if v == _INF:
        return _INF
    if v == 0.0:
        return -math.copysign(_INF, v)
    if v > 0.0:
        return _digamma_positive(v)
    if _is_integer(v):
        return _NAN
    return _digamma_positive(1.0 - v) - math.pi * _cot_pi(v)     # (reflection)


def _cot_pi(v):
    """cot(pi v), from v's distance r to the nearest integer (exact): 1 / tan(pi r) near
    the integer, tan(pi (1/2 - |r|)) near the half-integer (0 there, not 1 / tan(pi/2))."""
    r = v - np.round(v)
    if abs(r) < 0.25:
        return 1.0 / math.tan(math.pi * r)
    return math.copysign(math.tan(math.pi * (0.5 - abs(r))), r)


def digamma(x):
    return _like(_digamma(_f64(x)), x)


def xlogy(x, y):
    """x log y, and 0 where x == 0 unless y is NaN (numba's math.log: NaN below 0)."""
    a, b = _f64(x), _f64(y)
    return _like(0.0 if a == 0.0 and b == b else a * math.log(b), x)


def xlog1py(x, y):
    a, b = _f64(x), _f64(y)
    return _like(0.0 if a == 0.0 and b == b else a * math.log1p(b), x)


def entr(x):
    v = _f64(x)
    r = -v * math.log(v) if v > 0.0 else (0.0 if v == 0.0 else (-_INF if v < 0.0 else _NAN))
    return _like(r if v != _INF else -_INF, x)


def _rel_entr(a, b):
    """scipy's: x log(x / y), by log1p near x == y, and by log x - log y where the ratio
    overflows or loses digits (1e200 / 1e-200 is inf: x log(x / y) was inf, not 9.2e202)."""
    if a != a or b != b:
        return _NAN
    if a > 0.0 and b > 0.0:
        ratio = a / b
        if 0.5 < ratio < 2.0:
            return a * math.log1p((a - b) / b)
        if _DOUBLE_MIN < ratio < _INF:
            return a * math.log(ratio)
        return a * (math.log(a) - math.log(b))
    return 0.0 if a == 0.0 and b >= 0.0 else _INF


_DOUBLE_MIN = 2.2250738585072014e-308       # (the smallest normal float64)


def rel_entr(x, y):
    return _like(_rel_entr(_f64(x), _f64(y)), x)


def _x_log_ratio(a, b):
    """x log(x / y) as scipy's kl_div computes it (inf where the ratio overflows)."""
    if a != a or b != b:
        return _NAN
    return a * math.log(a / b) if a / b == a / b else _NAN


def kl_div(x, y):
    a, b = _f64(x), _f64(y)
    if a > 0.0 and b > 0.0 or a != a or b != b:
        r = _x_log_ratio(a, b) - a + b
    else:
        r = b if a == 0.0 and b >= 0.0 else _INF
    return _like(r, x)


# B_2j / (2j)!, j = 1..12: the Euler-Maclaurin tail of the Hurwitz zeta function
_EULER_MACLAURIN = (1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0, -1.0 / 1209600.0,
                    1.0 / 47900160.0, -691.0 / 1307674368000.0, 1.0 / 74724249600.0,
                    -3617.0 / 10670622842880000.0, 43867.0 / 5109094217170944000.0,
                    -174611.0 / 802857662698291200000.0,
                    77683.0 / 14101100039391805440000.0,
                    -236364091.0 / 1693824136731743669452800000.0)


def _hurwitz_zeta(s, q):
    """zeta(s, q) = sum over k >= 0 of (q + k)^-s, for an integer s >= 2 and q not a pole:
    the first terms summed until q + k >= 9, then the Euler-Maclaurin tail."""
    total, a, k = 0.0, q, 0
    while k < 9 or a <= 9.0:
        total += a ** -s
        a += 1.0
        k += 1
    w = a ** -s
    total += a * w / (s - 1.0) + 0.5 * w
    factor = s * w / a
    for j in range(len(_EULER_MACLAURIN)):
        term = _EULER_MACLAURIN[j] * factor
        total += term
        if abs(term) < 1e-17 * abs(total):
            break
        factor *= (s + 2.0 * j + 1.0) * (s + 2.0 * j + 2.0) / (a * a)
    return total


def _polygamma(n, v):
    """(-1)^(n+1) n! zeta(n + 1, v) for n >= 1 (digamma for n = 0): signed infinities at
    the poles (the non-positive integers and -inf), signed zeros at +inf, as scipy."""
    if n == 0.0:
        return _digamma(v)
    sign = 1.0 if n % 2.0 == 1.0 else -1.0
    if v != v:
        return _NAN
    if v == _INF:
        return sign * 0.0
    if v <= 0.0 and _is_integer(v):
        return sign * _INF
    return sign * math.gamma(n + 1.0) * _hurwitz_zeta(n + 1.0, v)


def polygamma(x, n):
    """polygamma(n, x) (the order second: it is the primitive's parameter)."""
    return _like(_polygamma(_f64(n), _f64(x)), x)

# -- integers: numpy's values where numba's differ -----------------------------------------
# numba computes an integer power through float64 (inexact past 2**53, wrong where it
# overflows, a number where numpy raises for a negative exponent), an integer fmod of a
# negative operand unsigned, and traps (SIGFPE: the process dies) on int64 min % -1.
# These are njit functions of scalars (numba.vectorize kernels cannot raise), called
# from loop nests with int64 (signed) or uint64 operands; the rules convert the result.
def int_power(a, b):
    """a ** b wrapped to 64 bits, as numpy's integer power; ValueError for b < 0."""
    if b < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    result, base, e = np.uint64(1), np.uint64(a), b
    while e > 0:
        if e & 1:
            result = result * base
        base = base * base
        e = e >> 1
    return result


def int_floor_divide(a, b):
    """a // b of int64 values, as numpy's (0 for b == 0; min // -1 wraps to min)."""
    if b == -1:
        return np.int64(np.uint64(0) - np.uint64(a))
    if b == 0:
        return np.int64(0)
    return a // b


def int_remainder(a, b):
    """a % b of int64 values, as numpy's (the divisor's sign; 0 for b == 0 or -1)."""
    if b == 0 or b == -1:
        return np.int64(0)
    return a % b


def int_fmod(a, b):
    """C's fmod of int64 values, as numpy's (the dividend's sign; 0 for b == 0 or -1)."""
    if b == 0 or b == -1:
        return np.int64(0)
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


INTEGER_KERNELS = ["int_power", "int_floor_divide", "int_remainder", "int_fmod"]
_SCALAR_HELPERS = [*INTEGER_KERNELS, "_f64", "_is_integer", "_ndtr",
                   "_log_ndtr", "_logit_edge", "_lgamma_at_one", "_lgamma_small", "_gammaln",
                   "_gammasgn", "_rgamma", "_digamma_positive", "_cot_pi", "_digamma",
                   "_rel_entr", "_x_log_ratio", "_hurwitz_zeta", "_polygamma"]


def _compile():
    """The helpers as njit functions, `_like` as an overload, the kernels as vectorize."""
    import numba
    from numba import types
    from numba.extending import overload

    @overload(_like)
    def _like_numba(r, x):
        if x == types.float32:
            return lambda r, x: numba.float32(r)
        return lambda r, x: r

    compile_kernels(globals(), _SCALAR_HELPERS, [k for k in __all__ if k not in INTEGER_KERNELS])


def compile_kernels(names: dict, helpers: list, kernels: list) -> None:
    """In the module whose globals are `names`: its scalar helpers as njit functions, its
    kernels as numba ufuncs (vectorize), each cached on disk."""
    import numba
    for name in helpers:
        names[name] = numba.njit(cache=True)(names[name])
    for name in kernels:
        names[name] = numba.vectorize(cache=True)(names[name])


try:
    import numba as _numba  # noqa: F401
except ImportError:          # numba is optional: only generated code uses these kernels
    HAVE_NUMBA = False
else:
    HAVE_NUMBA = True
    _compile()
