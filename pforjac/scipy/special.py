"""`pforjac.scipy.special`: scipy.special's names, signatures and defaults on pforjac Tensors.

    import pforjac.scipy.special as psp
    psp.erf(t), psp.gammaln(t), psp.logsumexp(t, axis=0, b=w), psp.jv(2, t)

scipy.special's ufuncs called on a Tensor (`scipy.special.erf(t)`) run these functions
too (NEP 13): they are registered in `numpy_dispatch.UFUNCS` as soon as scipy.special is
loaded (at once if it already is, else on the first call of a ufunc pforjac does not yet
know, so `import pforjac` never pays for importing scipy). scipy's Python-level functions
(`logsumexp`, `softmax`, `log_softmax`, `polygamma`, `multigammaln`) convert their
arguments with `np.asarray`, which refuses a Tensor a derivative needs: call them from here.

Every function differentiates in its tensor arguments to any order, except the shape
parameters of `gammainc`, `gammaincc` and `betainc` (no closed form: asking raises) and
the orders of the Bessel functions and of `polygamma`, which are constants. Without scipy,
the functions that call it raise an ImportError naming `pip install pforjac[scipy]`.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from .. import numpy_dispatch
from .. import ops as pj
from ..ops._family import int_arg, normalize_axes
from ..ops.reductions import _stable_shift
from ..tensor import as_tensor

__all__ = ["erf", "erfc", "erfinv", "erfcinv", "ndtr", "log_ndtr", "ndtri", "expit", "logit",
           "log_expit", "gamma", "gammaln", "rgamma", "gammasgn", "digamma", "psi", "polygamma",
           "multigammaln", "beta", "betaln", "gammainc", "gammaincc", "betainc", "xlogy",
           "xlog1py", "entr", "rel_entr", "kl_div", "logsumexp", "softmax", "log_softmax",
           "j0", "j1", "y0", "y1", "jv", "jn", "yv", "yn", "i0", "i1", "i0e", "i1e", "iv", "ive"]

from ..ops.special import (erf, erfc, erfinv, erfcinv, ndtr, log_ndtr, ndtri, logit,  # noqa: E402
                           gamma, gammaln, rgamma, gammasgn, digamma, polygamma, beta, betaln,
                           gammainc, gammaincc, betainc, xlogy, xlog1py, entr, rel_entr,
                           kl_div)
from ..ops.bessel import j0, j1, y0, y1, jv, yv, yn, i0, i1, i0e, i1e, iv, ive  # noqa: E402

expit = pj.sigmoid
psi = digamma
jn = jv


def log_expit(x):
    """log(expit(x)) = -softplus(-x), without overflow in either tail."""
    return -pj.softplus(-as_tensor(x))


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension d (a constant int):
    d (d - 1) / 4 log(pi) + sum_j gammaln(a - j / 2), j = 0 .. d - 1. scipy requires
    a > (d - 1) / 2; an eager `a` is checked, a traced one cannot be (gammaln is real below)."""
    d = int_arg(d, "multigammaln: d (the dimension, a constant)")
    if d < 1:
        raise ValueError(f"multigammaln: the dimension d must be >= 1, got {d}")
    a = as_tensor(a)
    if a._trace is None and np.any(a._value <= 0.5 * (d - 1)):
        raise ValueError(f"multigammaln: every a must be > (d - 1) / 2 = {0.5 * (d - 1)}")
    terms = pj.stack([gammaln(a - 0.5 * j) for j in range(d)])
    return pj.sum(terms, axis=0) + 0.25 * d * (d - 1) * float(np.log(np.pi))


def softmax(x, axis=None):
    """exp(x) / sum(exp(x)) over `axis` (None: every axis, as scipy's default)."""
    return pj.softmax(x, axis=_axes(x, axis, "softmax"))


def log_softmax(x, axis=None):
    """x - logsumexp(x) over `axis` (None: every axis, as scipy's default)."""
    return pj.log_softmax(x, axis=_axes(x, axis, "log_softmax"))


def _axes(x, axis, op: str) -> tuple:
    return normalize_axes(axis, as_tensor(x).ndim, op)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) over `axis`, shifted by the max for stability. With `b` (weights,
    broadcast against `a`, differentiable too) the sum may be negative: `return_sign=True`
    gives (log|sum|, sign), else a negative sum gives NaN, as scipy's. The shift is the max
    of every `a` (scipy's skips those whose weight is 0): a zero-weighted entry more than ~700
    above all the others makes the sum underflow to -inf, where scipy's is finite, but
    every derivative, the weights' at their zeros among them, is exact."""
    a = as_tensor(a)
    if b is None:
        out = pj.logsumexp(a, axis=_axes(a, axis, "logsumexp"), keepdims=keepdims)
        return (out, pj.ones_like(out)) if return_sign else out
    a, b = pj.coerce(a, b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    a, b = pj.broadcast_to(a, shape), pj.broadcast_to(b, shape)
    axes = _axes(a, axis, "logsumexp")
    shift = _stable_shift(a, axes)
    total = pj.sum(b * pj.exp(a - shift), axis=axes, keepdims=True)
    out, sign = pj.log(pj.abs(total)) + shift, pj.sign(total)
    if not keepdims:
        out, sign = pj.squeeze(out, axes), pj.squeeze(sign, axes)
    if return_sign:
        return out, sign
    return pj.where(pj.less(sign, 0.0), np.nan, out)


# -- scipy.special's ufuncs on Tensors ---------------------------------------------------------
_registering = threading.Lock()


def register_ufuncs() -> bool:
    """Registers each function of `__all__` that is a ufunc in scipy.special (psi and
    digamma, jn and jv are one ufunc each) with numpy_dispatch, once scipy.special is
    loaded; False (nothing done) while it is not: it is never imported here. `__all__` is
    the one list: a function added there dispatches too."""
    module = sys.modules.get("scipy.special")
    if module is None:
        return False
    with _registering:                  # two threads meeting their first scipy ufunc at once
        for name in __all__:
            ufunc = getattr(module, name, None)
            if isinstance(ufunc, np.ufunc) and ufunc not in numpy_dispatch.UFUNCS:
                numpy_dispatch.implements(ufunc)(globals()[name])
    return True


if not register_ufuncs():
    numpy_dispatch.PENDING.append(register_ufuncs)
