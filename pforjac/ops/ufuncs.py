"""numpy's other differentiable ufuncs (autograd's set and a few more): one line each, on
the elementwise family helpers, so they share its broadcasting converter and facts; numpy's
forward, bit for bit. And its elementwise predicates (isnan, ...), bool and not
differentiable.
"""
from __future__ import annotations

import numpy as np

from ..tensor import as_operands, as_tensor
from ._family import declare_elementwise
from .elementwise import (_binary, _unary, abs as abs_, cast, coerce, cos, divide, equal, floor,
                          greater_equal, less_equal, logical_not, logical_or, not_equal, ones_like,
                          power, reciprocal, square, where, zeros_like)

__all__ = ["exp2", "deg2rad", "rad2deg", "radians", "degrees", "cbrt", "sinc", "trunc", "fabs",
           "hypot", "logaddexp2", "fmax", "fmin", "fmod", "remainder", "mod", "floor_divide",
           "copysign",
           "heaviside", "float_power", "isnan", "isinf", "isfinite", "signbit"]

_LN2 = float(np.log(2.0))


def _predicate(name: str, impl):
    return declare_elementwise(name, impl, differentiable=False, domain=("real",))


isnan_p = _predicate("isnan", np.isnan)
isinf_p = _predicate("isinf", np.isinf)
isfinite_p = _predicate("isfinite", np.isfinite)
signbit_p = _predicate("signbit", np.signbit)


def isnan(x): return isnan_p.bind(x)
def isinf(x): return isinf_p.bind(x)
def isfinite(x): return isfinite_p.bind(x)
def signbit(x): return signbit_p.bind(x)


def _sinc_derivative(ans, x):
    """(cos(pi x) - sinc(x)) / x, and near 0, where that cancels, its Taylor series to x**5
    (relative error below 1e-12 either side of |x| = 0.01), so second derivatives at 0 are
    right too (-pi**2 / 3). float16 and float32 are computed in float64 (from sinc in float64,
    not `ans`, whose rounding the difference would magnify) and rounded back."""
    if x.dtype in (np.float16, np.float32):
        wide = cast(x, np.float64)
        return cast(_sinc_derivative(sinc(wide), wide), x.dtype)
    small = less_equal(abs_(x), 0.01)
    safe = where(small, ones_like(x), x)
    formula = (cos(np.pi * x) - ans) / safe
    x2 = square(x)
    series = x * (-np.pi ** 2 / 3 + x2 * (np.pi ** 4 / 30 - x2 * (np.pi ** 6 / 840)))
    return where(small, series, formula)


exp2_p = _unary("exp2", np.exp2, lambda ans, x: ans * _LN2)
deg2rad_p = _unary("deg2rad", np.deg2rad, lambda ans, x: np.pi / 180.0, zero_preserving=True)
rad2deg_p = _unary("rad2deg", np.rad2deg, lambda ans, x: 180.0 / np.pi, zero_preserving=True)
# cbrt's derivative is infinite at 0; a zero cotangent stays zero there, as sqrt's
cbrt_p = _unary("cbrt", np.cbrt, lambda ans, x: reciprocal(3.0 * square(ans)),
                zero_stays_zero=("vjp",), domain="nonzero", zero_preserving=True)
sinc_p = _unary("sinc", np.sinc, _sinc_derivative)
trunc_p = _unary("trunc", np.trunc, lambda ans, x: zeros_like(x), zero_preserving=True)


def exp2(x): return exp2_p.bind(x)
def deg2rad(x): return deg2rad_p.bind(x)
def rad2deg(x): return rad2deg_p.bind(x)
def cbrt(x): return cbrt_p.bind(x)
def sinc(x): return sinc_p.bind(x)
def trunc(x): return trunc_p.bind(x)


radians, degrees = deg2rad, rad2deg


def fabs(x):
    """np.fabs: |x| for real x, as a float (numpy's float type for integers); complex x
    is refused, as numpy refuses it."""
    x = as_tensor(x)
    if x.dtype.kind == "c":
        raise TypeError("fabs: complex input is not supported (numpy's fabs refuses it too); "
                        "use pforjac.abs for the modulus")
    out = np.fabs(np.zeros((), x.dtype)).dtype
    return abs_(x if x.dtype == out else cast(x, out))


def _mask(cond, g):
    return g * cast(cond, g.dtype)


def _first(fmax_or_fmin_keeps_x):
    """fmax/fmin: x where it wins (ties go to x, as maximum's) or y is NaN, else y."""
    return lambda x, y: logical_or(fmax_or_fmin_keeps_x(x, y), not_equal(y, y))


_fmax_keeps_x, _fmin_keeps_x = _first(greater_equal), _first(less_equal)


def _sign_product(x, y):
    """+1 where x and y have the same sign bit, else -1: d copysign(x, y) / dx."""
    same = equal(signbit(x), signbit(y))
    return 2.0 * cast(same, x.dtype) - 1.0


def _over_hypot(v, a):
    """v / hypot, 0 at the origin (where v is 0 too): JAX's subgradient there, as abs's."""
    return v / where(equal(a, 0.0), ones_like(a), a)


hypot_p = _binary("hypot", np.hypot, lambda g, a, x, y: g * _over_hypot(x, a),
                  lambda g, a, x, y: g * _over_hypot(y, a), domain=("nonzero", "nonzero"))
logaddexp2_p = _binary("logaddexp2", np.logaddexp2, lambda g, a, x, y: g * exp2(x - a),
                       lambda g, a, x, y: g * exp2(y - a))
fmax_p = _binary("fmax", np.fmax, lambda g, a, x, y: _mask(_fmax_keeps_x(x, y), g),
                 lambda g, a, x, y: _mask(logical_not(_fmax_keeps_x(x, y)), g))
fmin_p = _binary("fmin", np.fmin, lambda g, a, x, y: _mask(_fmin_keeps_x(x, y), g),
                 lambda g, a, x, y: _mask(logical_not(_fmin_keeps_x(x, y)), g))
# x - trunc(x / y) y and x - floor(x / y) y: the quotient is a step, so d/dy is minus it
fmod_p = _binary("fmod", np.fmod, lambda g, a, x, y: g,
                 lambda g, a, x, y: -g * trunc(divide(x, y)), domain=("real", "nonzero"))
remainder_p = _binary("remainder", np.remainder, lambda g, a, x, y: g,
                      lambda g, a, x, y: -g * floor(divide(x, y)), domain=("real", "nonzero"))
# floor(x / y) as numpy computes it (exactly, not by rounding x / y): a step in both
floor_divide_p = _binary("floor_divide", np.floor_divide, lambda g, a, x, y: zeros_like(g),
                         lambda g, a, x, y: zeros_like(g), domain=("real", "nonzero"))
copysign_p = _binary("copysign", np.copysign, lambda g, a, x, y: g * _sign_product(x, y),
                     lambda g, a, x, y: zeros_like(g), domain=("nonzero", "nonzero"))
# heaviside(x1, x2) is x2 where x1 == 0, else a step: its x1 derivative is 0
heaviside_p = _binary("heaviside", np.heaviside, lambda g, a, x, y: zeros_like(g),
                      lambda g, a, x, y: _mask(equal(x, 0.0), g), domain=("nonzero", "real"))


def _pair(prim):
    return lambda x, y: prim.bind(*coerce(x, y))


hypot, logaddexp2, fmax, fmin = _pair(hypot_p), _pair(logaddexp2_p), _pair(fmax_p), _pair(fmin_p)
fmod, remainder, copysign, heaviside = (_pair(fmod_p), _pair(remainder_p), _pair(copysign_p),
                                        _pair(heaviside_p))
floor_divide = _pair(floor_divide_p)
mod = remainder
for _fn, _name in [(hypot, "hypot"), (logaddexp2, "logaddexp2"), (fmax, "fmax"), (fmin, "fmin"),
                   (fmod, "fmod"), (remainder, "remainder"), (copysign, "copysign"),
                   (heaviside, "heaviside"), (floor_divide, "floor_divide")]:
    _fn.__name__ = _fn.__qualname__ = _name


def float_power(x, y):
    """np.float_power: x ** y computed in float64 (complex128 for complex operands); numpy's
    values up to an ulp (np.power's loop, which float_power's is not)."""
    x, y = as_operands([x, y])                   # (a Python exponent is weak: never float32)
    wide = np.float_power(np.ones((), x.dtype), np.ones((), y.dtype)).dtype
    return power(cast(x, wide), cast(y, wide))

