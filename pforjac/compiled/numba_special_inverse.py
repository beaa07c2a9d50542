"""Scalar kernels of the numba backend for the inverses of the normal and error functions:
scipy.special's ndtri, erfinv and erfcinv (see numba_special.py, whose helpers they use).
"""
from __future__ import annotations

import math

from .numba_special import (HAVE_NUMBA, _INF, _LOG_SQRT_TWO_PI, _NAN, _SQRT_HALF, _f64, _like,
                            _log_ndtr, _ndtr, compile_kernels)

__all__ = ["ndtri", "erfinv", "erfcinv"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_TINY = 2.2250738585072014e-308        # (the smallest normal float64)

# Acklam's rational approximation of the normal quantile (relative error < 1.2e-9), refined
# by a Halley step on ndtr: the central region's numerator and denominator, then the tail's
_ACKLAM_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
_ACKLAM_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
             6.680131188771972e+01, -1.328068155288572e+01, 1.0)
_ACKLAM_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
_ACKLAM_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
             3.754408661907416e+00, 1.0)
_SQRT_TWO_PI = math.sqrt(2.0 * math.pi)


def _horner(coefficients, t):
    total = 0.0
    for c in coefficients:
        total = total * t + c
    return total


def _ndtri_lower(p):
    """The normal quantile for 0 < p < 1/2, refined twice by Halley steps: against the
    tail's ndtr (erfc, accurate relative to p) below 0.02425, against erf and p - 1/2
    (exact) in the central region (accurate relative to the quantile near 0)."""
    central = p >= 0.02425
    q = p - 0.5
    if central:
        x = q * _horner(_ACKLAM_A, q * q) / _horner(_ACKLAM_B, q * q)
    else:
        r = math.sqrt(-2.0 * math.log(p))
        x = _horner(_ACKLAM_C, r) / _horner(_ACKLAM_D, r)
        if p < _TINY:
            return _ndtri_log(math.log(p), x)
    for _ in range(2):
        e = 0.5 * math.erf(x * _SQRT_HALF) - q if central else _ndtr(x) - p
        u = e * _SQRT_TWO_PI * math.exp(0.5 * x * x)
        if not math.isfinite(u):
            break
        x -= u / (1.0 + 0.5 * x * u)
    return x


def _ndtri_log(log_p, x):
    """The quantile of a subnormal p from its log, by Newton steps on log_ndtr from `x`:
    ndtr's values there are subnormal too, with a few bits left, where log_ndtr's (and
    log(p)) keep all of theirs (ndtri(1.5e-323) was 1e12 ulps off through ndtr)."""
    for _ in range(3):
        log_cdf = _log_ndtr(x)
        x -= (log_cdf - log_p) / math.exp(-0.5 * x * x - _LOG_SQRT_TWO_PI - log_cdf)
    return x


def _ndtri(p):
    if not 0.0 < p < 1.0:
        return -_INF if p == 0.0 else (_INF if p == 1.0 else _NAN)
    if p > 0.5:
        return -_ndtri_lower(1.0 - p)      # (exact: Sterbenz)
    return 0.0 if p == 0.5 else _ndtri_lower(p)


def ndtri(x):
    return _like(_ndtri(_f64(x)), x)


def _erfcinv_small(y):
    """x with erfc(x) = y for 0 < y <= 1/2: -ndtri(y / 2) / sqrt(2), Newton steps on erfc
    (none for a subnormal y: erfc has a few bits left there; scipy's ndtri(y / 2) alone)."""
    x = -_ndtri(0.5 * y) * _SQRT_HALF
    if y < _TINY:
        return x
    for _ in range(2):
        step = (math.erfc(x) - y) / (_TWO_OVER_SQRT_PI * math.exp(-x * x))
        if not math.isfinite(step):
            break
        x += step
    return x


def _erfinv_small(y):
    """x with erf(x) = y for |y| <= 1/2: Newton steps on erf (relative accuracy near 0)."""
    if y == 0.0:
        return 0.0                         # (+0 for -0, as scipy)
    x = math.copysign(-_ndtri(0.5 - 0.5 * abs(y)) * _SQRT_HALF, y)
    for _ in range(2):
        x -= (math.erf(x) - y) / (_TWO_OVER_SQRT_PI * math.exp(-x * x))
    return x


def _erfinv(y):
    if y != y or abs(y) > 1.0:
        return _NAN
    if abs(y) <= 0.5:
        return _erfinv_small(y)
    if abs(y) == 1.0:
        return math.copysign(_INF, y)
    return math.copysign(_erfcinv_small(1.0 - abs(y)), y)     # (1 - |y| exact: Sterbenz)


def erfinv(x):
    return _like(_erfinv(_f64(x)), x)


def _erfcinv(y):
    """erfcinv by the branch where its argument is exact: erfc's tail near 0 and 2
    (erfcinv(y) = -erfcinv(2 - y)), erfinv(1 - y) in between."""
    if not 0.0 < y < 2.0:
        return _INF if y == 0.0 else (-_INF if y == 2.0 else _NAN)
    if y <= 0.5:
        return _erfcinv_small(y)
    if y >= 1.5:
        return -_erfcinv_small(2.0 - y)
    return -0.0 if y == 1.0 else _erfinv_small(1.0 - y)      # (scipy's -0 at 1)


def erfcinv(x):
    return _like(_erfcinv(_f64(x)), x)


_SCALAR_HELPERS = ["_horner", "_ndtri_log", "_ndtri_lower", "_ndtri", "_erfcinv_small", "_erfinv_small",
                   "_erfcinv", "_erfinv"]

if HAVE_NUMBA:               # numba is optional: only generated code uses these kernels
    compile_kernels(globals(), _SCALAR_HELPERS, __all__)
