"""scipy.special's functions as elementwise primitives: forwards call scipy, rules are ops.

Each primitive's forward is the scipy.special ufunc of its name, imported on first call
(pforjac imports without scipy; a call without it raises an ImportError that says how
to install it). Its derivative is written in pforjac ops (erf' = 2/sqrt(pi) exp(-x^2),
digamma' = polygamma(1, x), ...), so second derivatives, Jacobians of Jacobians and
forward mode come from the same one-line rules. dtypes are scipy's (float32 stays
float32, integers become float64), except that float16 is computed in float32 and
rounded back, as pforjac's other float16 kernels are: a derivative's dtype is its input's.

The public names, with scipy's signatures, are `pforjac.scipy.special`; the Bessel
functions are in `bessel.py`.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import core
from ..core import defjvp, defvjp
from ._family import declare_elementwise, int_arg
from .broadcasting import unbroadcast
from .elementwise import (_binary, _fit, coerce, cos, equal, exp, less, log, log1p, reciprocal,
                          sin, square, where, zeros_like)

__all__: list = []     # public through pforjac.scipy.special, with scipy's names

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0
_SQRT_TWO_PI = math.sqrt(2.0 * math.pi)


def scipy_special():
    """The scipy.special module, or an ImportError saying how to get it."""
    try:
        import scipy.special
    except ImportError:
        raise ImportError("pforjac's special functions (erf, gammaln, the Bessel functions, ...) "
                          "run scipy.special, which is not installed: pip install "
                          "pforjac[scipy] (or pip install scipy)") from None
    return scipy.special


@functools.lru_cache(maxsize=None)
def _scipy_function(name: str):
    return getattr(scipy_special(), name)


_NARROW = frozenset({np.dtype(np.float16), np.dtype(np.float32)})


def _narrow(args) -> np.dtype | None:
    """float16 or float32 when every argument is one of them (their result type), else None."""
    dtypes = {np.asarray(a).dtype for a in args}
    return np.result_type(*dtypes) if dtypes and dtypes <= _NARROW else None


@functools.lru_cache(maxsize=None)
def forward(name: str, order_param: str | None = None):
    """The forward of scipy.special.<name> (`order_param`: the parameter passed as its first
    argument, jv's v). float16 is computed in float32 and rounded back; float32 stays
    float32 (scipy's polygamma, a Python function, would widen it)."""
    def impl(*args, **params):
        fn = _scipy_function(name)
        lead = (params[order_param],) if order_param else ()
        narrow = _narrow(args)
        if narrow is None:
            return fn(*lead, *args)
        out = fn(*lead, *(np.asarray(a, np.float32) for a in args))
        return np.asarray(out).astype(narrow, copy=False)
    impl.__name__ = f"scipy_special_{name}"
    return impl


def unary(name: str, deriv=None, domain: str = "real", order_param: str | None = None,
          zero_preserving: bool = False) -> core.Primitive:
    """A unary special function; `deriv(ans, x, **params)` is its derivative in pforjac ops
    (`order_param`: the name of its static order parameter, scipy's first argument)."""
    prim = declare_elementwise(name, forward(name, order_param), domain=(domain,),
                               zero_preserving=zero_preserving)
    if deriv is not None:
        defvjp(prim, lambda g, ans, x, **params: g * deriv(ans, x, **params))
        defjvp(prim, lambda t, ans, x, **params: t * deriv(ans, x, **params))
    return prim


def _binary_special(name: str, dx, dy, domain=("positive", "positive")) -> core.Primitive:
    """A binary special function; `dx(ans, x, y)`, `dy(ans, x, y)`: its partial derivatives
    (None: it has none, and asking for it raises)."""
    return _binary(name, forward(name), _times(name, dx, 0), _times(name, dy, 1), domain=domain)


def _times(name: str, d, k: int):
    if d is None:
        return lambda g, ans, *args: _no_derivative(name, k)
    return lambda g, ans, x, y: g * d(ans, x, y)


def _no_derivative(name: str, k: int):
    raise NotImplementedError(
        f"pforjac.scipy.special.{name}: no derivative with respect to argument {k} (scipy "
        f"has no closed form, nor does pforjac); pass it as a constant (an array, or "
        f"pforjac.stop_gradient of the tensor) and differentiate the others")


def _safe_div(x, y):
    """x / y, and 0 where x == 0 (even where y == 0): the y-derivative of x log y."""
    zero = equal(x, 0.0)
    return where(zero, 0.0, x / where(zero, 1.0, y))


# -- the error function and the normal distribution --------------------------------------------
erf_p = unary("erf", lambda ans, x: _TWO_OVER_SQRT_PI * exp(-square(x)), zero_preserving=True)
erfc_p = unary("erfc", lambda ans, x: -_TWO_OVER_SQRT_PI * exp(-square(x)))
erfinv_p = unary("erfinv", lambda ans, x: _SQRT_PI_OVER_TWO * exp(square(ans)), domain="unit",
                 zero_preserving=True)
erfcinv_p = unary("erfcinv", lambda ans, x: -_SQRT_PI_OVER_TWO * exp(square(ans)))
ndtr_p = unary("ndtr", lambda ans, x: exp(-0.5 * square(x)) / _SQRT_TWO_PI)
# exp(-x^2/2 - log_ndtr(x)): no 0/0 in the left tail, where ndtr underflows
log_ndtr_p = unary("log_ndtr", lambda ans, x: exp(-0.5 * square(x) - ans) / _SQRT_TWO_PI)
ndtri_p = unary("ndtri", lambda ans, x: _SQRT_TWO_PI * exp(0.5 * square(ans)))
logit_p = unary("logit", lambda ans, x: reciprocal(x * (1.0 - x)))

# -- gamma and beta ------------------------------------------------------------------------------
digamma_p = unary("digamma", lambda ans, x: polygamma(1, x), domain="positive")
polygamma_p = unary("polygamma", lambda ans, x, order: polygamma(order + 1, x),
                    domain="positive", order_param="order")
gammaln_p = unary("gammaln", lambda ans, x: digamma(x), domain="positive")
gamma_p = unary("gamma", lambda ans, x: ans * digamma(x), domain="positive")
rgamma_p = unary("rgamma", lambda ans, x: _rgamma_derivative(ans, x), domain="real")
gammasgn_p = unary("gammasgn", lambda ans, x: zeros_like(x), domain="positive")
betaln_p = _binary_special("betaln", lambda ans, a, b: digamma(a) - digamma(a + b),
                           lambda ans, a, b: digamma(b) - digamma(a + b))
beta_p = _binary_special("beta", lambda ans, a, b: ans * (digamma(a) - digamma(a + b)),
                         lambda ans, a, b: ans * (digamma(b) - digamma(a + b)))


def _gammainc_dx(ans, a, x):
    """x^(a-1) e^-x / Gamma(a), in logs (no overflow of the power or of Gamma)."""
    return exp(xlogy(a - 1.0, x) - x - gammaln(a))


gammainc_p = _binary_special("gammainc", None, _gammainc_dx)
gammaincc_p = _binary_special("gammaincc", None, lambda ans, a, x: -_gammainc_dx(ans, a, x))


betainc_p = declare_elementwise("betainc", forward("betainc"),
                                domain=("positive", "positive", "unit"))


def _betainc_dx(ans, a, b, x):
    return exp(xlogy(a - 1.0, x) + xlog1py(b - 1.0, -x) - betaln(a, b))


defvjp(betainc_p, lambda g, ans, a, b, x: _no_derivative("betainc", 0),
       lambda g, ans, a, b, x: _no_derivative("betainc", 1),
       lambda g, ans, a, b, x: unbroadcast(g * _betainc_dx(ans, a, b, x), x.shape))
defjvp(betainc_p, lambda t, ans, a, b, x: _no_derivative("betainc", 0),
       lambda t, ans, a, b, x: _no_derivative("betainc", 1),
       lambda t, ans, a, b, x: _fit(t * _betainc_dx(ans, a, b, x), ans.shape))

# -- information theory -------------------------------------------------------------------------
xlogy_p = _binary_special("xlogy", lambda ans, x, y: log(y), lambda ans, x, y: _safe_div(x, y),
                          domain=("real", "positive"))
xlog1py_p = _binary_special("xlog1py", lambda ans, x, y: log1p(y),
                            lambda ans, x, y: _safe_div(x, y + 1.0), domain=("real", "positive"))
entr_p = unary("entr", lambda ans, x: -(log(x) + 1.0), domain="positive", zero_preserving=True)
rel_entr_p = _binary_special("rel_entr", lambda ans, x, y: log(x) - log(y) + 1.0,
                             lambda ans, x, y: -_safe_div(x, y))
kl_div_p = _binary_special("kl_div", lambda ans, x, y: log(x) - log(y),   # rel_entr - x + y
                           lambda ans, x, y: 1.0 - _safe_div(x, y))


def _rgamma_derivative(ans, x):
    """(1/Gamma)' = -psi(x) / Gamma(x), which is 0 * inf at 0, -1, -2, ..., where 1/Gamma is
    smooth with derivative (-1)^n n!. Below 1/2 the reflection 1/Gamma(x) = sin(pi x)
    Gamma(1 - x) / pi gives it without the poles: cos(pi x) Gamma(1 - x) - sin(pi x)
    Gamma(1 - x) psi(1 - x) / pi. Each branch reads its input only where it is taken (a
    safe point elsewhere), so second derivatives have no 0 * inf either."""
    left = less(x, 0.5)
    xl, xr = where(left, x, 0.0), where(left, 1.0, x)
    g = gamma(1.0 - xl)
    reflected = cos(np.pi * xl) * g - sin(np.pi * xl) * g * digamma(1.0 - xl) / np.pi
    return where(left, reflected, -rgamma(xr) * digamma(xr))


def erf(x): return erf_p.bind(x)
def erfc(x): return erfc_p.bind(x)
def erfinv(x): return erfinv_p.bind(x)
def erfcinv(x): return erfcinv_p.bind(x)
def ndtr(x): return ndtr_p.bind(x)
def log_ndtr(x): return log_ndtr_p.bind(x)
def ndtri(x): return ndtri_p.bind(x)
def logit(x): return logit_p.bind(x)
def digamma(x): return digamma_p.bind(x)
def gammaln(x): return gammaln_p.bind(x)
def gamma(x): return gamma_p.bind(x)
def rgamma(x): return rgamma_p.bind(x)
def gammasgn(x): return gammasgn_p.bind(x)
def entr(x): return entr_p.bind(x)


def polygamma(n, x):
    """The n-th derivative of digamma (n a constant int >= 0; 0 is digamma itself)."""
    n = int_arg(n, "polygamma: n (the order, a constant)")
    if n < 0:
        raise ValueError(f"polygamma: the order n must be >= 0, got {n}")
    return digamma(x) if n == 0 else polygamma_p.bind(x, order=n)


def betaln(a, b): return betaln_p.bind(*coerce(a, b))
def beta(a, b): return beta_p.bind(*coerce(a, b))
def gammainc(a, x): return gammainc_p.bind(*coerce(a, x))
def gammaincc(a, x): return gammaincc_p.bind(*coerce(a, x))
def xlogy(x, y): return xlogy_p.bind(*coerce(x, y))
def xlog1py(x, y): return xlog1py_p.bind(*coerce(x, y))
def rel_entr(x, y): return rel_entr_p.bind(*coerce(x, y))
def kl_div(x, y): return kl_div_p.bind(*coerce(x, y))
def betainc(a, b, x): return betainc_p.bind(*_coerce3(a, b, x))


def _coerce3(a, b, x):
    a, x = coerce(a, x)
    b, x = coerce(b, x)
    return a, b, x


# -- examples for the generated checks (where a domain alone would be wrong) --------------------
@core.defexamples(erfcinv_p)
def _erfcinv_examples(rng):
    return [core.Example(rng.uniform(0.2, 1.8, s)) for s in ((2, 3), ())]


@core.defexamples(ndtri_p)
def _ndtri_examples(rng):
    return [core.Example(rng.uniform(0.1, 0.9, s)) for s in ((2, 3), ())]


@core.defexamples(logit_p)
def _logit_examples(rng):
    return [core.Example(rng.uniform(0.1, 0.9, s)) for s in ((2, 3), ())]


@core.defexamples(polygamma_p)
def _polygamma_examples(rng):
    return [core.Example(rng.uniform(0.5, 2.0, (2, 3)), order=n) for n in (1, 2, 3)]


def _constant_first(rng, shapes, draw_x):
    """Examples whose first argument (a shape parameter without a derivative) is an int array."""
    return [core.Example(rng.integers(1, 4, sa), draw_x(sx)) for sa, sx in shapes]


@core.defexamples(gammainc_p)
def _gammainc_examples(rng):
    return _constant_first(rng, [((2, 3), (2, 3)), ((3,), (2, 3)), ((), (2,))],
                           lambda s: rng.uniform(0.5, 3.0, s))


@core.defexamples(gammaincc_p)
def _gammaincc_examples(rng):
    return _gammainc_examples(rng)


@core.defexamples(betainc_p)
def _betainc_examples(rng):
    return [core.Example(rng.integers(1, 4, sa), rng.integers(1, 4, sb), rng.uniform(0.1, 0.9, sx))
            for sa, sb, sx in [((2, 3), (3,), (2, 3)), ((), (2, 1), (3,))]]
