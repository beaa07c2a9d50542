"""Bessel functions of scipy.special as elementwise primitives (see special.py).

Derivatives are taken in x, by the recurrences J_v' = (J_{v-1} - J_{v+1}) / 2,
I_v' = (I_{v-1} + I_{v+1}) / 2, which hold for every real order (J_{-1} = -J_1), so each
rule is one line of the neighbouring orders. The order of jv, yv, iv and ive is an input
as in scipy (an array of orders broadcasts against x), without a derivative: asking for
one raises. yn's integer order is a static parameter.
"""
from __future__ import annotations

from .. import core
from ..tensor import is_float
from ._family import int_arg
from .elementwise import cast, coerce, sign
from .special import _binary_special, unary

__all__: list = []     # public through pforjac.scipy.special


def _ordered(name: str, d, domain: str = "real") -> core.Primitive:
    """`name(v, x)`, `d(ans, v, x)` its x-derivative; the order v has none."""
    return _binary_special(name, None, d, domain=("int", domain))


def _order_like(v, x) -> tuple:
    """(v, x) as tensors, the order in x's float dtype (scipy casts a Python order so too)."""
    v, x = coerce(v, x)
    return (cast(v, x.dtype) if is_float(x.dtype) and v.dtype != x.dtype else v), x


j0_p = unary("j0", lambda ans, x: -j1(x))
j1_p = unary("j1", lambda ans, x: 0.5 * (j0(x) - jv(2.0, x)), zero_preserving=True)
y0_p = unary("y0", lambda ans, x: -y1(x), domain="positive")
y1_p = unary("y1", lambda ans, x: 0.5 * (y0(x) - yn(2, x)), domain="positive")
jv_p = _ordered("jv", lambda ans, v, x: 0.5 * (jv(v - 1.0, x) - jv(v + 1.0, x)))
yv_p = _ordered("yv", lambda ans, v, x: 0.5 * (yv(v - 1.0, x) - yv(v + 1.0, x)), "positive")
yn_p = unary("yn", lambda ans, x, order: 0.5 * (yn(order - 1, x) - yn(order + 1, x)),
             order_param="order", domain="positive")
i0_p = unary("i0", lambda ans, x: i1(x))
i1_p = unary("i1", lambda ans, x: 0.5 * (i0(x) + iv(2.0, x)), zero_preserving=True)
iv_p = _ordered("iv", lambda ans, v, x: 0.5 * (iv(v - 1.0, x) + iv(v + 1.0, x)))
# the exponentially scaled ones, e^-|x| I_v(x): the scale's derivative is -sign(x) times them
# (a kink at 0, where sign(0) = 0 gives the mean of the two sides)
i0e_p = unary("i0e", lambda ans, x: i1e(x) - sign(x) * ans, domain="nonzero")
i1e_p = unary("i1e", lambda ans, x: 0.5 * (i0e(x) + ive(2.0, x)) - sign(x) * ans,
              domain="nonzero", zero_preserving=True)
ive_p = _ordered("ive", lambda ans, v, x: 0.5 * (ive(v - 1.0, x) + ive(v + 1.0, x))
                 - sign(x) * ans, "nonzero")


def j0(x): return j0_p.bind(x)
def j1(x): return j1_p.bind(x)
def y0(x): return y0_p.bind(x)
def y1(x): return y1_p.bind(x)
def i0(x): return i0_p.bind(x)
def i1(x): return i1_p.bind(x)
def i0e(x): return i0e_p.bind(x)
def i1e(x): return i1e_p.bind(x)
def jv(v, x): return jv_p.bind(*_order_like(v, x))
def yv(v, x): return yv_p.bind(*_order_like(v, x))
def iv(v, x): return iv_p.bind(*_order_like(v, x))
def ive(v, x): return ive_p.bind(*_order_like(v, x))
def yn(n, x): return yn_p.bind(x, order=int_arg(n, "yn: the order n"))


@core.defexamples(yn_p)
def _yn_examples(rng):
    return [core.Example(rng.uniform(0.5, 2.0, (2, 3)), order=n) for n in (0, 1, 3)]


def _integer_orders(interval):
    """Examples of (order, x): integer orders (a float order's derivative would be checked,
    and there is none; pforjac's tests check non-integer orders against scipy's jvp, ivp)."""
    def examples(rng):
        shapes = [((2, 3), (2, 3)), ((3,), (2, 3)), ((), (2, 3)), ((2, 1), (3,))]
        return [core.Example(rng.integers(-1, 4, sv), rng.uniform(*interval, sx))
                for sv, sx in shapes]
    return examples


for _prim, _interval in ((jv_p, (-2.0, 2.0)), (yv_p, (0.5, 2.0)), (iv_p, (-2.0, 2.0)),
                         (ive_p, (0.5, 2.0))):
    core.defexamples(_prim)(_integer_orders(_interval))
