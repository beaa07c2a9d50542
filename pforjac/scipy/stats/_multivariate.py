"""multivariate_normal and dirichlet with scipy's signatures and output shapes, in pforjac ops
(differentiable in the data, the mean, the covariance and alpha)."""
from __future__ import annotations

import numpy as np

from ... import ops as pj
from ...ops import special as sp
from ._base import as_float

__all__ = ["multivariate_normal", "dirichlet"]

_LOG_2PI = float(np.log(2 * np.pi))


def _covariance(cov, d: int):
    """scipy's cov: a scalar (times the identity), the diagonal, or the matrix."""
    cov = as_float(cov)
    if cov.ndim == 0:
        return cov * np.eye(d)
    if cov.ndim == 1:
        return pj.zeros_like(pj.reshape(cov, (-1, 1)) * cov) + np.eye(d) * cov
    return cov


def _squeezed(out):
    """scipy's output: a Python-like scalar for one point, a vector for many."""
    return pj.reshape(out, ()) if out.size == 1 else out


class multivariate_normal_gen:
    """`logpdf(x, mean=None, cov=1, allow_singular=False)` and `pdf`; x of shape (..., d)
    (or a scalar or vector when d = 1, as scipy reads them)."""

    def _points(self, x, mean, cov):
        mean = as_float(0.0 if mean is None else mean)
        d = mean.shape[-1] if mean.ndim else np.shape(cov)[-1] if np.ndim(cov) else 1
        mean = pj.broadcast_to(mean, (d,))
        x = as_float(x)
        if d == 1 and (x.ndim == 0 or x.shape[-1] != 1):
            x = pj.reshape(x, tuple(x.shape) + (1,))
        return x - mean, _covariance(cov, d), d

    def logpdf(self, x, mean=None, cov=1, allow_singular=False):
        dev, cov, d = self._points(x, mean, cov)
        if allow_singular:
            return _squeezed(self._singular(dev, cov))
        chol = pj.cholesky(cov)
        solved = pj.solve_triangular(chol, pj.swapaxes(pj.reshape(dev, (-1, d)), 0, 1), lower=True)
        maha = pj.sum(pj.square(solved), axis=0)
        log_det = 2.0 * pj.sum(pj.log(pj.diagonal(chol)))
        out = -0.5 * (maha + log_det + d * _LOG_2PI)
        return _squeezed(pj.reshape(out, tuple(dev.shape[:-1])))

    def _singular(self, dev, cov):
        """The density on the support of a singular covariance: the pseudo-determinant and
        pseudo-inverse over eigenvalues above scipy's cutoff."""
        values, vectors = pj.eigh(cov)
        concrete = np.asarray(pj.stop_gradient(values).numpy()) if values._trace is None else None
        if concrete is None:
            raise TypeError("pforjac.scipy.stats.multivariate_normal: allow_singular=True "
                            "needs the covariance's value (its rank); it is a traced value here")
        cutoff = 1e6 * np.finfo(np.float64).eps * np.max(np.abs(concrete))
        keep = concrete > cutoff
        kept = pj.gather(values, np.flatnonzero(keep), 0)
        basis = pj.gather(vectors, np.flatnonzero(keep), 1)
        proj = pj.matmul(dev, basis)
        maha = pj.sum(pj.square(proj) / kept, axis=-1)
        out = -0.5 * (maha + pj.sum(pj.log(kept)) + int(keep.sum()) * _LOG_2PI)
        null = pj.gather(vectors, np.flatnonzero(~keep), 1)       # off the support: -inf
        residual = pj.sqrt(pj.sum(pj.square(pj.matmul(dev, null)), axis=-1))
        return pj.where(pj.less(residual, 1e3 * cutoff), out, -np.inf)

    def pdf(self, x, mean=None, cov=1, allow_singular=False):
        return pj.exp(self.logpdf(x, mean, cov, allow_singular))

    def entropy(self, mean=None, cov=1):
        """0.5 (d (1 + log 2 pi) + log det cov)."""
        _, cov, d = self._points(np.zeros(1), mean, cov)
        return 0.5 * (d * (1.0 + _LOG_2PI) + 2.0 * pj.sum(pj.log(pj.diagonal(pj.cholesky(cov)))))

    def __repr__(self) -> str:
        return "pforjac.scipy.stats.multivariate_normal"


class dirichlet_gen:
    """`logpdf(x, alpha)` and `pdf`; as scipy's, x holds the K components along its first axis
    (K - 1 of them: the last is 1 minus their sum)."""

    def logpdf(self, x, alpha):
        alpha, x = as_float(alpha), as_float(x)
        if x.shape[0] == alpha.shape[0] - 1:
            x = pj.concat([x, 1.0 - pj.sum(x, axis=0, keepdims=True)], 0)
        if x.shape[0] != alpha.shape[0]:
            raise ValueError(f"pforjac.scipy.stats.dirichlet: x has {x.shape[0]} components "
                             f"along its first axis, alpha {alpha.shape[0]}; pass K or K - 1")
        weights = pj.reshape(alpha, (-1,) + (1,) * (x.ndim - 1))
        norm_const = pj.sum(sp.gammaln(alpha)) - sp.gammaln(pj.sum(alpha))
        return _squeezed(pj.sum(sp.xlogy(weights - 1.0, x), axis=0) - norm_const)

    def pdf(self, x, alpha):
        return pj.exp(self.logpdf(x, alpha))

    def __repr__(self) -> str:
        return "pforjac.scipy.stats.dirichlet"


multivariate_normal, dirichlet = multivariate_normal_gen(), dirichlet_gen()
