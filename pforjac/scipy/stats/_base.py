"""What every univariate distribution shares: scipy's argument parsing (shape parameters, then
`loc` and `scale`, positional or by keyword), the support, NaN for invalid parameters, and
the methods built from a few standardized formulas.

A distribution states its standardized log-density (or log-pmf) and cdf, and optionally its
logcdf, sf and logsf where a direct formula is more accurate in a tail; the rest follow
(pdf = exp(logpdf), sf = 1 - cdf, ...). Values outside the support are substituted by a
point inside before the formula runs and replaced after, so no NaN or infinity leaks into a
derivative from a branch that was not taken.
"""
from __future__ import annotations

import numpy as np

from ... import ops as pj
from ...tensor import Tensor, constant

__all__ = ["as_float", "rv_continuous", "rv_discrete"]


def as_float(v):
    """A Tensor of `v`, float64 unless it already is a floating Tensor (scipy computes in
    float64; pforjac's Python-float constants would be float32)."""
    if isinstance(v, Tensor):
        return v if v.dtype.kind in "fc" else pj.cast(v, np.float64)
    if isinstance(v, (list, tuple)) and any(isinstance(e, Tensor) for e in v):
        return as_float(pj.stack([as_float(e) for e in v]))
    return constant(np.asarray(v, np.float64))


def _log_of_smaller(p, q):
    """log(p) where p = 1 - q: log(p) while p < 1/2, else log1p(-q), which keeps the digits
    of a p near 1 (log(cdf) far in the upper tail); each branch sees only its own values, so
    the other's infinities never reach a derivative."""
    lower = pj.less(p, 0.5)
    return pj.where(lower, pj.log(pj.where(lower, p, 0.5)), pj.log1p(-pj.where(lower, 0.5, q)))


def _nan_unless(valid, out):
    return out if valid is True else pj.where(valid, out, np.nan)


class _Distribution:
    """Shared by continuous and discrete: the names of the shape parameters, the support in
    standardized units and the validity of parameters."""
    name = ""
    shapes: tuple = ()
    support = (-np.inf, np.inf)
    inside_point = 0.0              # where outside values are moved before a formula runs
    closed = True                   # whether the density's formula holds at the support's ends

    def _valid(self, *shapes):
        return True

    def _bounds(self, *shapes):
        return self.support

    def _bind(self, args, kwds, keys):
        """scipy's parsing: the shape parameters, then `keys` (loc, scale), positional or by
        keyword, loc 0 and scale 1 by default."""
        names = list(self.shapes) + list(keys)
        if len(args) > len(names):
            raise TypeError(f"pforjac.scipy.stats.{self.name}: at most {len(names)} "
                            f"parameters ({', '.join(names)}) after the data, got {len(args)}")
        values = dict(zip(names, args))
        for key, value in kwds.items():
            if key not in names or key in values:
                raise TypeError(f"pforjac.scipy.stats.{self.name}: unexpected or repeated "
                                f"parameter {key!r}; it takes {', '.join(names)}")
            values[key] = value
        missing = [n for n in self.shapes if n not in values]
        if missing:
            raise TypeError(f"pforjac.scipy.stats.{self.name}: missing shape parameter(s) "
                            f"{', '.join(missing)}")
        defaults = {"loc": 0.0, "scale": 1.0}
        return [as_float(values.get(n, defaults.get(n))) for n in names]

    # the tail functions of both kinds: the standardized ones from `_cdf`, the public ones
    # through the kind's `_tail` (support bounds, invalid parameters)
    def _logcdf(self, z, *s):
        return _log_of_smaller(self._cdf(z, *s), self._sf(z, *s))

    def _sf(self, z, *s):
        return 1.0 - self._cdf(z, *s)

    def _logsf(self, z, *s):
        return _log_of_smaller(self._sf(z, *s), self._cdf(z, *s))

    def cdf(self, x, *args, **kwds):
        return self._tail(self._cdf, 0.0, 1.0, x, args, kwds)

    def logcdf(self, x, *args, **kwds):
        return self._tail(self._logcdf, -np.inf, 0.0, x, args, kwds)

    def sf(self, x, *args, **kwds):
        return self._tail(self._sf, 1.0, 0.0, x, args, kwds)

    def logsf(self, x, *args, **kwds):
        return self._tail(self._logsf, 0.0, -np.inf, x, args, kwds)

    def __call__(self, *args, **kwds):
        """The frozen distribution, as scipy's `norm(loc, scale)`."""
        return _Frozen(self, args, kwds)

    def __repr__(self) -> str:
        return f"pforjac.scipy.stats.{self.name}"


class _Frozen:
    def __init__(self, dist, args, kwds):
        self.dist, self.args, self.kwds = dist, args, kwds

    def __getattr__(self, method: str):
        bound = getattr(self.dist, method)
        return lambda x: bound(x, *self.args, **self.kwds)


class rv_continuous(_Distribution):
    """A continuous distribution from its standardized `_logpdf` and `_cdf` (z = (x - loc) /
    scale, shape parameters after it)."""

    def _standard(self, x, args, kwds):
        *shapes, loc, scale = self._bind(args, kwds, ("loc", "scale"))
        valid, positive = self._valid(*shapes), pj.greater(scale, 0.0)
        valid = positive if valid is True else pj.logical_and(valid, positive)
        scale = pj.where(positive, scale, 1.0)          # (its results become NaN)
        return (as_float(x) - loc) / scale, shapes, scale, valid

    def _density(self, x, args, kwds):
        z, shapes, scale, valid = self._standard(x, args, kwds)
        lo, hi = self._bounds(*shapes)
        above, below = (pj.greater_equal, pj.less_equal) if self.closed else (pj.greater, pj.less)
        inside = pj.logical_and(above(z, lo), below(z, hi))
        moved = pj.where(inside, z, self.inside_point)
        out = pj.where(inside, self._logpdf(moved, *shapes) - pj.log(scale), -np.inf)
        return _nan_unless(valid, out)

    def _tail(self, method, below, above, x, args, kwds):
        z, shapes, _, valid = self._standard(x, args, kwds)
        lo, hi = self._bounds(*shapes)
        inside = pj.logical_and(pj.greater(z, lo), pj.less(z, hi))
        moved = pj.where(inside, z, self.inside_point)
        out = pj.where(inside, method(moved, *shapes), pj.where(pj.less_equal(z, lo), below, above))
        return _nan_unless(valid, out)

    def logpdf(self, x, *args, **kwds):
        return self._density(x, args, kwds)

    def pdf(self, x, *args, **kwds):
        return pj.exp(self._density(x, args, kwds))



class rv_discrete(_Distribution):
    """A discrete distribution from its `_logpmf` and `_cdf` at integer k (k - loc), shape
    parameters after it; support in integers, its upper end possibly a parameter."""
    support = (0, np.inf)

    def _standard(self, k, args, kwds):
        *shapes, loc = self._bind(args, kwds, ("loc",))
        return as_float(k) - loc, shapes, self._valid(*shapes)

    def logpmf(self, k, *args, **kwds):
        k, shapes, valid = self._standard(k, args, kwds)
        lo, hi = self._bounds(*shapes)
        inside = pj.logical_and(pj.logical_and(pj.greater_equal(k, lo), pj.less_equal(k, hi)),
                                pj.equal(pj.floor(k), k))
        moved = pj.where(inside, k, self.inside_point)
        return _nan_unless(valid, pj.where(inside, self._logpmf(moved, *shapes), -np.inf))

    def pmf(self, k, *args, **kwds):
        return pj.exp(self.logpmf(k, *args, **kwds))

    def _tail(self, method, below, above, k, args, kwds):
        k, shapes, valid = self._standard(k, args, kwds)
        k = pj.floor(k)
        lo, hi = self._bounds(*shapes)
        inside = pj.logical_and(pj.greater_equal(k, lo), pj.less(k, hi))
        moved = pj.where(inside, k, self.inside_point)
        out = pj.where(inside, method(moved, *shapes), pj.where(pj.less(k, lo), below, above))
        return _nan_unless(valid, out)

