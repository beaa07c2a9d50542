"""Bessel functions of scipy.special as elementwise primitives (see special.py).

The order (jv's v, yn's n) is a static parameter: derivatives are taken in x only, by the
recurrences J_v' = (J_{v-1} - J_{v+1}) / 2, I_v' = (I_{v-1} + I_{v+1}) / 2, which hold for
every real order (J_{-1} = -J_1), so every order's rule is one line of the next orders.
"""
from __future__ import annotations

from .. import core
from ._family import int_arg
from .elementwise import sign
from .special import unary

__all__: list = []     # public through pforjac.scipy.special


def _order(v, op: str) -> float:
    """A Bessel order as a Python float, or a TypeError naming the op (no arrays of orders)."""
    try:
        return float(v)
    except TypeError:
        raise TypeError(f"pforjac.scipy.special.{op}: the order must be a constant number, got "
                        f"{type(v).__name__}; for several orders call {op} once per order and "
                        f"stack the results") from None


j0_p = unary("j0", lambda ans, x: -j1(x))
j1_p = unary("j1", lambda ans, x: 0.5 * (j0(x) - jv(2.0, x)), zero_preserving=True)
y0_p = unary("y0", lambda ans, x: -y1(x), domain="positive")
y1_p = unary("y1", lambda ans, x: 0.5 * (y0(x) - yn(2, x)), domain="positive")
jv_p = unary("jv", lambda ans, x, v: 0.5 * (jv(v - 1.0, x) - jv(v + 1.0, x)), order_param="v")
yv_p = unary("yv", lambda ans, x, v: 0.5 * (yv(v - 1.0, x) - yv(v + 1.0, x)), order_param="v",
             domain="positive")
yn_p = unary("yn", lambda ans, x, order: 0.5 * (yn(order - 1, x) - yn(order + 1, x)),
             order_param="order",
             domain="positive")
i0_p = unary("i0", lambda ans, x: i1(x))
i1_p = unary("i1", lambda ans, x: 0.5 * (i0(x) + iv(2.0, x)), zero_preserving=True)
iv_p = unary("iv", lambda ans, x, v: 0.5 * (iv(v - 1.0, x) + iv(v + 1.0, x)), order_param="v")
# the exponentially scaled ones, e^-|x| I_v(x): the scale's derivative is -sign(x) times them
# (a kink at 0, where sign(0) = 0 gives the mean of the two sides)
i0e_p = unary("i0e", lambda ans, x: i1e(x) - sign(x) * ans, domain="nonzero")
i1e_p = unary("i1e", lambda ans, x: 0.5 * (i0e(x) + ive(2.0, x)) - sign(x) * ans,
              domain="nonzero", zero_preserving=True)
ive_p = unary("ive", lambda ans, x, v: 0.5 * (ive(v - 1.0, x) + ive(v + 1.0, x)) - sign(x) * ans,
              order_param="v", domain="nonzero")


def j0(x): return j0_p.bind(x)
def j1(x): return j1_p.bind(x)
def y0(x): return y0_p.bind(x)
def y1(x): return y1_p.bind(x)
def i0(x): return i0_p.bind(x)
def i1(x): return i1_p.bind(x)
def i0e(x): return i0e_p.bind(x)
def i1e(x): return i1e_p.bind(x)
def jv(v, x): return jv_p.bind(x, v=_order(v, "jv"))
def yv(v, x): return yv_p.bind(x, v=_order(v, "yv"))
def iv(v, x): return iv_p.bind(x, v=_order(v, "iv"))
def ive(v, x): return ive_p.bind(x, v=_order(v, "ive"))
def yn(n, x): return yn_p.bind(x, order=int_arg(n, "yn: the order n"))


def _orders(name: str, *cases):
    """Examples of an op with an order parameter: (order, x's interval) per case."""
    def examples(rng):
        return [core.Example(rng.uniform(*interval, (2, 3)), **{name: o}) for o, interval in cases]
    return examples


_REAL, _POSITIVE = (-2.0, 2.0), (0.5, 2.0)      # non-integer orders are real for x > 0 only
core.defexamples(jv_p)(_orders("v", (0.0, _REAL), (1.0, _REAL), (-1.0, _REAL), (2.5, _POSITIVE)))
core.defexamples(yv_p)(_orders("v", (0.0, _POSITIVE), (1.5, _POSITIVE), (3.0, _POSITIVE)))
core.defexamples(yn_p)(_orders("order", (0, _POSITIVE), (1, _POSITIVE), (3, _POSITIVE)))
core.defexamples(iv_p)(_orders("v", (0.0, _REAL), (1.0, _REAL), (2.5, _POSITIVE)))
core.defexamples(ive_p)(_orders("v", (0.0, (0.5, 2.0)), (1.0, (-2.0, -0.5)), (2.5, _POSITIVE)))
