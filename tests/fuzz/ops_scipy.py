"""The fuzzer's scipy.special ops (pforjac.scipy.special), appended to `ops.OPS`.

References: scipy's own forward on numpy, jax.scipy.special on JAX (a formula where JAX
has no such function; none at all for y0, y1, yv, yn, iv, ive: the JAX worker declines
those programs, and finite differences on scipy still check them). Like ops.py, this
module imports neither pforjac nor JAX at import.
"""
from __future__ import annotations

import math

import numpy as np

from .ops import _EDGE, _kinked, op

def special_ref(name: str, *lead):
    """B's scipy.special.<name> (its first arguments `lead`: orders, shape parameters). On
    numpy float16 is computed in float32 and rounded back, as pforjac's forward does."""
    def ref(B, *args):
        if B.jax:
            import jax.scipy.special as jsp
            return _JAX_SPECIAL.get(name, lambda *a: getattr(jsp, name)(*a))(*lead, *args)
        import scipy.special as sp
        dtypes = [np.asarray(a).dtype for a in args]
        narrow = np.result_type(*dtypes) if all(d in (np.float16, np.float32) for d in dtypes) \
            else None
        out = getattr(sp, name)(*lead, *(np.asarray(a, np.float32) if narrow else a for a in args))
        return out if narrow is None else np.asarray(out).astype(narrow)
    return ref


def _no_jax(name):
    def refuse(*args):
        raise NotImplementedError(f"jax.scipy.special has no {name}")
    return refuse


def _jn(v):
    def bessel(_order, x):
        import jax.scipy.special as jsp
        return jsp.bessel_jn(x, v=v)[v]
    return bessel


_JAX_SPECIAL = {"erfcinv": lambda x: -_jsp().ndtri(x / 2) / math.sqrt(2.0),
                "rgamma": lambda x: 1.0 / _jsp().gamma(x), "j0": lambda x: _jn(0)(0, x),
                "j1": lambda x: _jn(1)(1, x), "jv": lambda v, x: _jn(int(v))(v, x),
                **{n: _no_jax(n) for n in ("y0", "y1", "yv", "yn", "iv", "ive")}}


def _jsp():
    import jax.scipy.special as jsp
    return jsp


def _psp(pj):
    return pj.scipy.special


def _special(name, family="unary", lead=(), pre=None, prims=(), kink=None, **kw):
    """An op applying pforjac.scipy.special.<name>; `pre(B_or_pj, a)`: a map into its domain,
    `kink(B, a)`: the distance to a kink or to the domain's edge (by default its domain's)."""
    fn = special_ref(name, *lead)
    ref = (lambda B, *a: fn(B, *a)) if pre is None else (lambda B, a, *r: fn(B, pre(a), *r))
    kink = kink or (_EDGE[kw["domain"]] if family == "unary" and kw.get("domain") else None)
    pj_fn = (lambda pj, *a: getattr(_psp(pj), name)(*lead, *a)) if pre is None else \
        (lambda pj, a, *r: getattr(_psp(pj), name)(*lead, pre(a), *r))
    op(f"special_{name}", family, _kinked(ref, kink) if kink else ref, pj_fn,
       prims=(name, *prims), **kw)


for _name in ("erf", "erfc", "ndtr", "log_ndtr", "i0", "i1", "j0", "j1"):
    _special(_name)
_special("jv", lead=(2.0,))
for _name in ("i0e", "i1e"):                              # e^-|x|: a kink at 0
    _special(_name, kink=lambda B, a: a)
_special("erfinv", domain="unit")
_UNIT_TO = lambda lo, hi: lambda a: (a + 1.0) * (0.5 * (hi - lo)) + lo     # noqa: E731
for _name, _lo, _hi in (("erfcinv", 0.0, 2.0), ("ndtri", 0.0, 1.0), ("logit", 0.0, 1.0)):
    _special(_name, pre=_UNIT_TO(_lo, _hi), prims=("add", "multiply"), domain="unit")
_special("betainc", lead=(2.0, 3.0), pre=_UNIT_TO(0.0, 1.0), prims=("add", "multiply"),
         domain="unit")
for _name in ("gammaln", "gamma", "rgamma", "digamma", "entr", "y0", "y1"):
    _special(_name, domain="pos")
_special("gammasgn", domain="pos", zeroing=True)
_special("polygamma", lead=(1,), domain="pos")
_special("yn", lead=(2,), domain="pos")
for _name, _v in (("yv", 1.5), ("iv", 2.5), ("ive", 1.0)):
    _special(_name, lead=(_v,), domain="pos")
for _name, _a in (("gammainc", 2.0), ("gammaincc", 1.5)):
    _special(_name, lead=(_a,), domain="pos")
for _name in ("xlogy", "xlog1py"):                         # b: a constant in [0.5, 2]
    _special(_name, family="binary", domain="pos")
# a mapped into (0.5, 2.5]: finite differences of scipy's betaln near 1e5 are noise
for _name in ("betaln", "beta", "rel_entr", "kl_div"):
    _special(_name, family="binary", pre=lambda a: 0.5 + 2.0 / (1.0 + a * a),
             prims=("multiply", "add", "divide"), domain="pos")
