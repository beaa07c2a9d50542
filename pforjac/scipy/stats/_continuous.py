"""Continuous distributions, each its standardized formulas in pforjac ops (z = (x - loc) /
scale). Derivatives follow from the ops: in the data, loc, scale and the shape parameters,
except where a formula goes through the shape parameters of gammainc or betainc (the cdf
family of t, gamma and beta in df, a, b), whose derivative pforjac does not have (asking for
it raises)."""
from __future__ import annotations

import numpy as np

from ... import ops as pj
from ...ops import special as sp
from ._base import rv_continuous

__all__ = ["norm", "t", "gamma", "chi2", "beta", "expon", "laplace", "cauchy", "lognorm", "logistic",
           "uniform"]

_LOG_2PI = float(np.log(2 * np.pi))
_LOG_2 = float(np.log(2.0))


class norm_gen(rv_continuous):
    name = "norm"
    _logpdf = staticmethod(lambda z: -0.5 * pj.square(z) - 0.5 * _LOG_2PI)
    _cdf = staticmethod(sp.ndtr)
    _logcdf = staticmethod(sp.log_ndtr)
    _sf = staticmethod(lambda z: sp.ndtr(-z))
    _logsf = staticmethod(lambda z: sp.log_ndtr(-z))


class t_gen(rv_continuous):
    name, shapes = "t", ("df",)

    def _valid(self, df):
        return pj.greater(df, 0.0)

    def _logpdf(self, z, df):
        return (_log_gamma_ratio(0.5 * df) - 0.5 * (pj.log(df) + float(np.log(np.pi)))
                - 0.5 * (df + 1.0) * pj.log1p(pj.square(z) / df))

    def _cdf(self, z, df):
        return self._sf(-z, df)

    def _sf(self, z, df):
        """P(T > z) from betainc at x = df / (df + z^2), or, where x is so near 1 that
        1 - x would lose more digits than the tail loses against 1/2, from the complementary
        form at z^2 / (df + z^2); within 1e-8 of the center, the line through 1/2 with the
        pdf's slope (the next term is z^3: exact in float64). Each form sees only values it
        is chosen for, so no infinity of the other reaches a derivative."""
        tiny = pj.less(pj.abs(z), 1e-8)
        zc = pj.where(tiny, 1.0, z)
        y = pj.square(zc) / (df + pj.square(zc))
        inner = 0.5 - 0.5 * sp.betainc(pj.zeros_like(df) + 0.5, 0.5 * df, y)
        use_inner = pj.logical_or(tiny, pj.greater(inner, y))    # (the digits each keeps)
        zo = pj.where(use_inner, pj.sqrt(df), z)
        outer = 0.5 * sp.betainc(0.5 * df, pj.zeros_like(df) + 0.5, df / (df + pj.square(zo)))
        half = pj.where(use_inner, inner, outer)                 # P(T > |z|)
        line = 0.5 - pj.exp(self._logpdf(pj.zeros_like(z), df)) * z
        return pj.where(tiny, line, pj.where(pj.greater(z, 0.0), half, 1.0 - half))


def _log_gamma_ratio(a):
    """log(Gamma(a + 1/2) / Gamma(a)); past a = 1000, where the difference of gammaln's
    loses digits (1e-12 there, 4e-10 at a = 5e5), its asymptotic series 0.5 log(a) - 1/(8a)
    + 1/(192 a^3), whose next term is below 1e-17 there."""
    big = pj.greater(a, 1000.0)
    ab, a_s = pj.where(big, a, 2000.0), pj.where(big, 1.0, a)
    series = 0.5 * pj.log(ab) - 0.125 / ab + 1.0 / (192.0 * ab * ab * ab)
    return pj.where(big, series, sp.gammaln(a_s + 0.5) - sp.gammaln(a_s))


class gamma_gen(rv_continuous):
    name, shapes, support, inside_point = "gamma", ("a",), (0.0, np.inf), 1.0

    def _valid(self, a):
        return pj.greater(a, 0.0)

    def _logpdf(self, z, a):
        return sp.xlogy(a - 1.0, z) - z - sp.gammaln(a)

    def _cdf(self, z, a):
        return sp.gammainc(a, z)

    def _sf(self, z, a):
        return sp.gammaincc(a, z)


class chi2_gen(rv_continuous):
    name, shapes, support, inside_point = "chi2", ("df",), (0.0, np.inf), 1.0

    def _valid(self, df):
        return pj.greater(df, 0.0)

    def _logpdf(self, z, df):
        half = 0.5 * df
        return sp.xlogy(half - 1.0, z) - 0.5 * z - sp.gammaln(half) - half * _LOG_2

    def _cdf(self, z, df):
        return sp.gammainc(0.5 * df, 0.5 * z)

    def _sf(self, z, df):
        return sp.gammaincc(0.5 * df, 0.5 * z)


class beta_gen(rv_continuous):
    name, shapes, support, inside_point = "beta", ("a", "b"), (0.0, 1.0), 0.5

    def _valid(self, a, b):
        return pj.logical_and(pj.greater(a, 0.0), pj.greater(b, 0.0))

    def _logpdf(self, z, a, b):
        return sp.xlogy(a - 1.0, z) + sp.xlog1py(b - 1.0, -z) - sp.betaln(a, b)

    def _cdf(self, z, a, b):
        return sp.betainc(a, b, z)

    def _sf(self, z, a, b):
        return sp.betainc(b, a, 1.0 - z)


class expon_gen(rv_continuous):
    name, support, inside_point = "expon", (0.0, np.inf), 1.0
    _logpdf = staticmethod(lambda z: -z)
    _cdf = staticmethod(lambda z: -pj.expm1(-z))
    _sf = staticmethod(lambda z: pj.exp(-z))
    _logsf = staticmethod(lambda z: -z)


class laplace_gen(rv_continuous):
    name = "laplace"
    _logpdf = staticmethod(lambda z: -pj.abs(z) - _LOG_2)

    # Each side written with its own sign of z (not |z|, whose derivative at 0 is 0): the
    # cdf is smooth at 0 with slope 1/2; the other side's z is clamped to 0 so its exp
    # can't overflow into the masked branch's gradient.
    @staticmethod
    def _cdf(z):
        below = pj.less(z, 0.0)
        return pj.where(below, 0.5 * pj.exp(pj.where(below, z, 0.0)),
                        1.0 - 0.5 * pj.exp(-pj.where(below, 0.0, z)))

    def _sf(self, z):
        return self._cdf(-z)

    @staticmethod
    def _logcdf(z):
        below = pj.less(z, 0.0)
        return pj.where(below, pj.where(below, z, 0.0) - _LOG_2,
                        pj.log1p(-0.5 * pj.exp(-pj.where(below, 0.0, z))))

    def _logsf(self, z):
        return self._logcdf(-z)


class cauchy_gen(rv_continuous):
    name = "cauchy"
    _logpdf = staticmethod(lambda z: -pj.log1p(pj.square(z)) - float(np.log(np.pi)))
    _cdf = staticmethod(lambda z: 0.5 + pj.arctan(z) / np.pi)
    _sf = staticmethod(lambda z: 0.5 - pj.arctan(z) / np.pi)


class lognorm_gen(rv_continuous):
    name, shapes, support, inside_point = "lognorm", ("s",), (0.0, np.inf), 1.0
    closed = False                  # density 0 at 0, where the formula is inf - inf

    def _valid(self, s):
        return pj.greater(s, 0.0)

    def _logpdf(self, z, s):
        log_z = pj.log(z)
        return -pj.square(log_z / s) * 0.5 - log_z - pj.log(s) - 0.5 * _LOG_2PI

    def _cdf(self, z, s):
        return sp.ndtr(pj.log(z) / s)

    def _logcdf(self, z, s):
        return sp.log_ndtr(pj.log(z) / s)

    def _sf(self, z, s):
        return sp.ndtr(-pj.log(z) / s)

    def _logsf(self, z, s):
        return sp.log_ndtr(-pj.log(z) / s)


class logistic_gen(rv_continuous):
    name = "logistic"
    _logpdf = staticmethod(lambda z: -pj.abs(z) - 2.0 * pj.log1p(pj.exp(-pj.abs(z))))
    _cdf = staticmethod(pj.sigmoid)
    _logcdf = staticmethod(lambda z: -pj.softplus(-z))
    _sf = staticmethod(lambda z: pj.sigmoid(-z))
    _logsf = staticmethod(lambda z: -pj.softplus(z))


class uniform_gen(rv_continuous):
    name, support, inside_point = "uniform", (0.0, 1.0), 0.5
    _logpdf = staticmethod(lambda z: pj.zeros_like(z))
    _cdf = staticmethod(lambda z: z)
    _sf = staticmethod(lambda z: 1.0 - z)


norm, t, gamma, chi2, beta = norm_gen(), t_gen(), gamma_gen(), chi2_gen(), beta_gen()
expon, laplace, cauchy, lognorm = expon_gen(), laplace_gen(), cauchy_gen(), lognorm_gen()
logistic, uniform = logistic_gen(), uniform_gen()
