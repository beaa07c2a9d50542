"""Discrete distributions: the log-pmf at integer k (k - loc) and the cdf, in pforjac ops.
The cdfs go through gammaincc / betainc in their last argument (the rate or probability),
so they differentiate in mu and p; the counts n are integers, constants of the formulas."""
from __future__ import annotations

import numpy as np

from ... import ops as pj
from ...ops import special as sp
from ._base import rv_discrete

__all__ = ["poisson", "binom", "bernoulli", "nbinom", "geom"]


def _probability(p):
    return pj.logical_and(pj.greater_equal(p, 0.0), pj.less_equal(p, 1.0))


class poisson_gen(rv_discrete):
    name, shapes = "poisson", ("mu",)

    def _valid(self, mu):
        return pj.greater_equal(mu, 0.0)

    def _logpmf(self, k, mu):
        return sp.xlogy(k, mu) - mu - sp.gammaln(k + 1.0)

    def _cdf(self, k, mu):
        return sp.gammaincc(k + 1.0, mu)

    def _sf(self, k, mu):
        return sp.gammainc(k + 1.0, mu)


class binom_gen(rv_discrete):
    name, shapes = "binom", ("n", "p")

    def _valid(self, n, p):
        integer = pj.logical_and(pj.greater_equal(n, 0.0), pj.equal(pj.floor(n), n))
        return pj.logical_and(integer, _probability(p))

    def _bounds(self, n, p):
        return 0.0, n

    def _logpmf(self, k, n, p):
        return (sp.gammaln(n + 1.0) - sp.gammaln(k + 1.0) - sp.gammaln(n - k + 1.0)
                + sp.xlogy(k, p) + sp.xlog1py(n - k, -p))

    def _cdf(self, k, n, p):
        return sp.betainc(n - k, k + 1.0, 1.0 - p)

    def _sf(self, k, n, p):
        return sp.betainc(k + 1.0, n - k, p)


class bernoulli_gen(binom_gen):
    name, shapes = "bernoulli", ("p",)

    def _valid(self, p):
        return _probability(p)

    def _bounds(self, p):
        return 0.0, 1.0

    def _logpmf(self, k, p):
        return sp.xlogy(k, p) + sp.xlog1py(1.0 - k, -p)

    def _cdf(self, k, p):
        return 1.0 - p + pj.zeros_like(k)     # k = 0 here (k >= 1 is past the support)

    def _sf(self, k, p):
        return p + pj.zeros_like(k)


class nbinom_gen(rv_discrete):
    name, shapes = "nbinom", ("n", "p")

    def _valid(self, n, p):
        return pj.logical_and(pj.greater(n, 0.0), _probability(p))

    def _logpmf(self, k, n, p):
        return (sp.gammaln(k + n) - sp.gammaln(n) - sp.gammaln(k + 1.0)
                + sp.xlogy(n, p) + sp.xlog1py(k, -p))

    def _cdf(self, k, n, p):
        return sp.betainc(n, k + 1.0, p)

    def _sf(self, k, n, p):
        return sp.betainc(k + 1.0, n, 1.0 - p)


class geom_gen(rv_discrete):
    name, shapes, support = "geom", ("p",), (1, np.inf)
    inside_point = 1.0

    def _valid(self, p):
        return pj.logical_and(pj.greater(p, 0.0), pj.less_equal(p, 1.0))

    def _logpmf(self, k, p):
        return sp.xlog1py(k - 1.0, -p) + pj.log(p)

    def _cdf(self, k, p):
        return -pj.expm1(k * pj.log1p(-p))

    def _sf(self, k, p):
        return pj.exp(k * pj.log1p(-p))

    def _logsf(self, k, p):
        return k * pj.log1p(-p)


poisson, binom, bernoulli, nbinom, geom = (poisson_gen(), binom_gen(), bernoulli_gen(),
                                           nbinom_gen(), geom_gen())
