"""`pforjac.scipy.stats`: scipy.stats's distributions people write likelihoods with, on
pforjac Tensors, with scipy's names, signatures and values.

    import pforjac.scipy.stats as pst
    pst.norm.logpdf(x, loc=mu, scale=sigma), pst.t.logpdf(x, df), pst.poisson.logpmf(k, mu)
    pst.multivariate_normal.logpdf(x, mean, cov), pst.norm(mu, sigma).cdf(x)

Each method is a composite of pforjac ops (the scipy.special primitives: gammaln, betaln,
ndtr, log_ndtr, xlogy, gammainc, betainc, ...), so it is differentiable in the data and the
parameters, on every path (tapes, pfor, pforjac.function). Outside the support the
log-density is -inf; invalid parameters (scale <= 0, p > 1, ...) give NaN, as scipy's.
See docs/stats.md.
"""
from __future__ import annotations

from ._continuous import (beta, cauchy, chi2, expon, gamma, laplace, logistic,  # noqa: F401
                          lognorm, norm, t, uniform)
from ._discrete import bernoulli, binom, geom, nbinom, poisson  # noqa: F401
from ._multivariate import dirichlet, multivariate_normal  # noqa: F401

__all__ = ["norm", "t", "gamma", "chi2", "beta", "expon", "laplace", "cauchy", "lognorm", "logistic",
           "uniform", "poisson", "binom", "bernoulli", "nbinom", "geom", "multivariate_normal",
           "dirichlet"]
